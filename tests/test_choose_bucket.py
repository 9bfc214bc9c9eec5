"""`vidload choose` on videos in a bucket (issue 23): DATA a URL with `--storage-option`s, the
sample found by listing and copied to local disk, measured as from a local folder; the errors
a URL DATA can meet. Smoke runs only (one round, a few clips): no timing is asserted."""

from __future__ import annotations

import json

import pytest
from media import make_video

from vidload.choose import StorageSpec, choose
from vidload.cli import main


@pytest.fixture(scope="module")
def footage(tmp_path_factory):
    root = tmp_path_factory.mktemp("footage")
    for c in range(2):
        for i in range(2):
            make_video(root / f"class{c}" / f"v{i}.mp4", 12, options={"g": "6"})
    (root / "notes.txt").write_text("not a video")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.mp4").write_bytes((root / "class0" / "v0.mp4").read_bytes())
    return root


def _options(s3_bucket) -> list[str]:
    opts = s3_bucket.storage_options
    client = opts["client_kwargs"]
    return [
        *("--storage-option", f"key={opts['key']}"),
        *("--storage-option", f"secret={opts['secret']}"),
        *("--storage-option", f"client_kwargs.endpoint_url={client['endpoint_url']}"),
        *("--storage-option", f"client_kwargs.region_name={client['region_name']}"),
    ]


def test_choose_measures_a_bucket_s_videos_like_a_local_folder(footage, s3_bucket, tmp_path):
    url = s3_bucket.upload(footage, "videos")
    js = tmp_path / "r.json"
    quick = ["--quick", "--storages", "original,hdf5:q90", "--no-cold", "-q"]
    assert main(["choose", url, *quick, "--json", str(js), *_options(s3_bucket)]) == 0
    remote = json.loads(js.read_text())
    assert main(["choose", str(footage), *quick, "--json", str(tmp_path / "l.json")]) == 0
    local = json.loads((tmp_path / "l.json").read_text())
    assert remote["data"]["path"] == url
    for key in ("videos", "bytes"):
        assert remote["data"][key] == local["data"][key]
    assert remote["data"]["videos"] == 4  # neither notes.txt nor the hidden folder's video
    assert remote["sample"] == local["sample"]
    assert [r["storage"] for r in remote["rows"]] == ["original", "hdf5:q90"]
    for r, want in zip(remote["rows"], local["rows"], strict=True):
        assert r["bytes_per_video"] == want["bytes_per_video"]  # the same files, copied
        assert r["clips_per_s_per_core"] > 0
    assert any("DATA is in a bucket" in note for note in remote["notes"])


def test_choose_library_takes_storage_options(footage, s3_bucket):
    url = s3_bucket.upload(footage, "videos")
    result = choose(
        url, storage_options=s3_bucket.storage_options, sample=1,
        storages=[StorageSpec("hdf5", quality=80)], clips=2, rounds=1, min_time=0,
        psnr_frames=2, cold=False, jobs=1, progress=False,
    )  # fmt: skip
    assert result.data["videos"] == 4 and len(result.sample) == 1
    with pytest.raises(ValueError, match=r"storage_options are for a DATA URL"):
        choose(footage, storage_options={"anon": True})


def test_choose_url_errors(footage, s3_bucket, http_dir, capsys):
    rc = main(["choose", f"{s3_bucket.url}/nothing", "-q", *_options(s3_bucket)])
    err = capsys.readouterr().err
    assert rc == 1 and f"VideoReadError: {s3_bucket.url}/nothing: not found" in err
    s3_bucket.put("empty/notes.txt", b"no videos here")
    rc = main(["choose", f"{s3_bucket.url}/empty", "-q", *_options(s3_bucket)])
    err = capsys.readouterr().err
    assert rc == 1 and "no video files (" in err
    assert f"found under DATA ('{s3_bucket.url}/empty')" in err
    rc = main(["choose", http_dir.url, "-q"])
    err = capsys.readouterr().err
    assert rc == 1 and "http:// folder cannot be listed" in err
    rc = main(["choose", str(footage), "--storage-option", "anon=true"])
    err = capsys.readouterr().err
    assert rc == 2 and "--storage-option is for a DATA URL" in err
