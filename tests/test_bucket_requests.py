"""A whole object is one request (issue 23): s3fs asks an object's size (HEAD) before a GET
without a range, a second round trip for every manifest, sidecar and JPEG frame; vidload's
whole-object reads (`read_bytes`, `read_many`, `fetch` of None) send the GET alone. Counted at
the server (moto; the Range HTTP server for HTTP, which sent one GET already)."""

from __future__ import annotations

import pytest

from vidload._storage import Location, fetch, read_many
from vidload.errors import VideoReadError


def _methods(faults) -> list[str]:
    return [r.method for r in faults.requests()]


def test_whole_objects_are_one_get_each_in_s3(s3_bucket):
    for i in range(3):
        s3_bucket.put(f"k/{i}", bytes([i]) * (1000 + i))
    s3_bucket.put("k/empty", b"")
    opts = s3_bucket.storage_options
    locs = [Location(f"{s3_bucket.url}/k/{i}", opts) for i in range(3)]
    want = [bytes([i]) * (1000 + i) for i in range(3)]
    reads = {
        "read_bytes": (lambda: [locs[0].read_bytes()], want[:1]),
        "read_many": (lambda: read_many(locs), want),
        "fetch": (lambda: [b[0] for b in fetch([(loc, None) for loc in locs])], want),
        "empty": (lambda: [Location(f"{s3_bucket.url}/k/empty", opts).read_bytes()], [b""]),
    }
    for name, (read, expected) in reads.items():
        s3_bucket.faults.clear_log()
        assert read() == expected, name
        assert _methods(s3_bucket.faults) == ["GET"] * len(expected), name
    s3_bucket.faults.clear_log()
    with pytest.raises(VideoReadError, match=r"/k/nope: not found$"):
        Location(f"{s3_bucket.url}/k/nope", opts).read_bytes()
    assert _methods(s3_bucket.faults) == ["GET"]


def test_whole_objects_are_one_get_each_over_http(http_dir):
    for i in range(2):
        (http_dir.path / f"{i}.bin").write_bytes(bytes([i]) * 500)
    locs = [Location(f"{http_dir.url}/{i}.bin") for i in range(2)]
    http_dir.faults.clear_log()
    assert read_many(locs) == [bytes([i]) * 500 for i in range(2)]
    assert locs[0].read_bytes() == bytes(500)
    assert _methods(http_dir.faults) == ["GET"] * 3
