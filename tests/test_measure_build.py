"""`vidload._measure.build`: one storage built from the user's videos, as bench and choose
both build theirs, and what their manifests say failed."""

from __future__ import annotations

from media import make_video

from vidload._measure.build import BuildJob, build_storage, conversion_failures


def test_a_storage_is_built_fresh_and_its_failures_named_by_the_first_storage(tmp_path):
    videos = tmp_path / "videos"
    make_video(videos / "a" / "good.mp4", 6, width=32, height=24)
    (videos / "a" / "bad.mp4").write_bytes(b"not a video")
    stale = tmp_path / "npy" / "a" / "gone.npy"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"stale")

    built = {}
    for kind in ("npy", "hdf5"):
        job = BuildJob(kind, videos, tmp_path / kind, {"to": kind, "quality": 90})
        built[kind] = build_storage(job)
        assert built[kind].name == kind and built[kind].out == tmp_path / kind
        assert built[kind].converted == ("a/good.mp4",)
        assert built[kind].cpu_s > 0
    assert not stale.exists()  # emptied first: no stale container lingers

    failed = conversion_failures({name: b.out for name, b in built.items()})
    assert list(failed) == ["a/bad.mp4"]
    assert failed["a/bad.mp4"].startswith("cannot be converted to npy: ")
