"""Several byte ranges of one HTTP object in one request (`vidload._storage.byteranges`):
the same bytes as one request per range, one request per object where the server answers
`multipart/byteranges`, and one per range (after one refused try) where it does not."""

from __future__ import annotations

import os
import re

import pytest

from vidload._storage import Location, byteranges, fetch
from vidload._storage.faults import CHANGED
from vidload.errors import VideoReadError

pytest.importorskip("aiohttp", reason="aiohttp is not installed (fsspec's HTTP)")


@pytest.fixture(autouse=True)
def _fresh_hosts(monkeypatch):
    """What this process learned of the (session's) server is this test's alone."""
    monkeypatch.setattr(byteranges, "_UNSUPPORTED", set())


def _object(http_dir, name: str, size: int) -> tuple[bytes, Location]:
    data = os.urandom(size)
    (http_dir.path / name).write_bytes(data)
    return data, Location(f"{http_dir.url}/{name}")


RANGES = [(900_000, 900_100), (10, 20), (500_000, 540_000), (2_000_000, 2_000_007)]


def test_the_ranges_of_an_object_are_one_request(http_dir):
    data, loc = _object(http_dir, "a.bin", 3_000_000)
    http_dir.faults.clear_log()
    assert loc.read_ranges(RANGES) == [data[a:b] for a, b in RANGES]
    (request,) = http_dir.faults.requests()
    assert (request.method, request.status) == ("GET", 206)
    assert request.range.count(",") == 3  # the four ranges (none close enough to merge)


def test_a_batch_is_one_request_per_object(http_dir):
    a, la = _object(http_dir, "a.bin", 3_000_000)
    b, lb = _object(http_dir, "b.bin", 2_500_000)
    c, lc = _object(http_dir, "c.bin", 1000)
    http_dir.faults.clear_log()
    got = fetch([(la, RANGES), (lb, RANGES[:2]), (lc, None), (la, [(1_500_000, 1_500_010)])])
    assert got == [
        [a[x:y] for x, y in RANGES],
        [b[x:y] for x, y in RANGES[:2]],
        [c],
        [a[1_500_000:1_500_010]],
    ]
    paths = sorted(r.path.rsplit("/", 1)[1] for r in http_dir.faults.requests())
    assert paths == ["a.bin", "b.bin", "c.bin"]  # a.bin's two requests of the batch as one


def test_overlapping_ranges_of_a_batch_are_asked_once(http_dir):
    data, loc = _object(http_dir, "o.bin", 3_000_000)
    first = [(0, 100), (1_000_000, 1_000_100)]
    second = [(50, 150), (1_000_000, 1_000_100)]  # another clip of the same object
    http_dir.faults.clear_log()
    assert fetch([(loc, first), (loc, second)]) == [
        [data[a:b] for a, b in first],
        [data[a:b] for a, b in second],
    ]
    (request,) = http_dir.faults.requests()
    assert request.range == "bytes=0-149,1000000-1000099"  # merged, each byte asked once


def test_ranges_at_the_end_are_short_as_alone(http_dir):
    data, loc = _object(http_dir, "e.bin", 1_000_000)
    asked = [(0, 10), (999_990, 1_000_500)]
    assert loc.read_ranges(asked) == [data[:10], data[999_990:]]
    http_dir.faults.multi_ranges = False
    byteranges._UNSUPPORTED.add(http_dir.url)  # one request per range: the same answer
    assert loc.read_ranges(asked) == [data[:10], data[999_990:]]


def test_a_range_past_the_end_is_answered_as_alone(http_dir):
    data, loc = _object(http_dir, "p.bin", 1_000_000)
    asked = [(0, 10), (2_000_000, 2_000_010)]  # the second starts past the end
    with pytest.raises(VideoReadError) as multi:
        loc.read_ranges(asked)
    assert not byteranges.unsupported(http_dir.url)  # a stale range is not a refusal
    byteranges._UNSUPPORTED.add(http_dir.url)  # one request per range: the same error
    with pytest.raises(VideoReadError) as alone:
        loc.read_ranges(asked)
    assert str(multi.value) == str(alone.value)
    assert loc.read_ranges([(0, 10)]) == [data[:10]]


def test_a_server_without_multipart_answers_is_read_one_range_a_request(http_dir):
    data, loc = _object(http_dir, "a.bin", 3_000_000)
    http_dir.faults.multi_ranges = False  # a Range of several ranges answered 200, whole
    http_dir.faults.clear_log()
    assert not byteranges.unsupported(f"{http_dir.url}/a.bin")  # not yet refused
    assert loc.read_ranges(RANGES) == [data[a:b] for a, b in RANGES]
    statuses = sorted(r.status for r in http_dir.faults.requests())
    assert statuses == [200, 206, 206, 206, 206]  # the refused try, then one per range
    assert byteranges.unsupported(f"{http_dir.url}/a.bin")  # remembered from now on
    http_dir.faults.clear_log()
    assert loc.read_ranges(RANGES) == [data[a:b] for a, b in RANGES]
    assert sorted(r.status for r in http_dir.faults.requests()) == [206] * 4  # not tried again


def test_errors_are_the_objects_own(http_dir):
    data, loc = _object(http_dir, "a.bin", 3_000_000)
    http_dir.faults.fail_next(2, "503")
    assert loc.read_ranges(RANGES) == [data[a:b] for a, b in RANGES]  # retried
    assert not byteranges.unsupported(http_dir.url)  # a failure is not a refusal
    missing = Location(f"{http_dir.url}/nope.bin")
    with pytest.raises(VideoReadError, match=r"/nope\.bin: not found$"):
        missing.read_ranges(RANGES)
    (got,) = fetch([(missing, RANGES)])
    assert isinstance(got, VideoReadError) and got.reason == "not found"


def test_parse_byteranges():
    body = (
        b"\r\n--b1\r\nContent-Type: x\r\nContent-Range: bytes 5-7/100\r\n\r\nabc"
        b"\r\n--b1\r\ncontent-range: bytes 0-1/100\r\n\r\nde\r\n--b1--\r\n"
    )
    assert byteranges.parse_byteranges(body, 'multipart/byteranges; boundary="b1"') == (
        [(5, b"abc"), (0, b"de")],
        100,
    )
    assert byteranges.parse_byteranges(body, "multipart/byteranges; boundary=b1") is not None
    assert byteranges.parse_byteranges(body[:-9], "multipart/byteranges; boundary=b1") is None
    short = body.replace(b"bytes 5-7/100", b"bytes 5-9/100")  # a part shorter than it says
    assert byteranges.parse_byteranges(short, "multipart/byteranges; boundary=b1") is None
    assert byteranges.parse_byteranges(body, "multipart/byteranges") is None  # no boundary
    bare = body.replace(b"Content-Range: bytes 5-7/100\r\n", b"")
    assert byteranges.parse_byteranges(bare, "multipart/byteranges; boundary=b1") is None


def test_versioned_ranges_are_one_request_and_see_a_rewrite(http_dir):
    data, loc = _object(http_dir, "v.bin", 3_000_000)
    versioned = loc.versioned()
    http_dir.faults.clear_log()
    assert versioned.read_ranges(RANGES) == [data[a:b] for a, b in RANGES]
    assert len(http_dir.faults.requests()) == 1
    assert fetch([(versioned, RANGES[:2])]) == [[data[a:b] for a, b in RANGES[:2]]]
    other = os.urandom(len(data))  # the same size: the version is the Last-Modified here
    (http_dir.path / "v.bin").write_bytes(other)
    later = os.stat(http_dir.path / "v.bin").st_mtime + 10
    os.utime(http_dir.path / "v.bin", (later, later))
    with pytest.raises(VideoReadError, match=re.escape(CHANGED)):
        versioned.read_ranges(RANGES)
    (got,) = fetch([(versioned, RANGES)])
    assert isinstance(got, VideoReadError) and CHANGED in str(got)
    assert loc.versioned().read_ranges(RANGES) == [other[a:b] for a, b in RANGES]


def test_many_ranges_are_a_request_for_each_max_ranges(http_dir):
    data, loc = _object(http_dir, "m.bin", 200_000)
    asked = [[(k * 1000, k * 1000 + 10)] for k in range(byteranges.MAX_RANGES + 6)]
    http_dir.faults.clear_log()
    assert fetch([(loc, r) for r in asked]) == [[data[a:b] for a, b in r] for r in asked]
    counts = sorted(r.range.count(",") + 1 for r in http_dir.faults.requests())
    assert counts == [6, byteranges.MAX_RANGES]


def test_a_batch_at_one_range_a_request_is_one_round_of_merged_ranges(http_dir):
    """A server that answers one range a request (S3's shape): a batch's ranges of several
    objects go out as one round of concurrent requests (all in the server's delay at once),
    one per range left after merging the ranges of each object that lie within the gap
    (`ranges.COALESCE_GAP`), each a single range."""
    from vidload._storage.ranges import COALESCE_GAP

    objects = [_object(http_dir, f"o{k}.bin", 3_000_000) for k in range(4)]
    asked = [(10, 20), (30_000, 30_100), (1_000_000, 1_000_100), (2_900_000, 2_900_010)]
    assert asked[1][0] - asked[0][1] <= COALESCE_GAP < asked[2][0] - asked[1][1]
    http_dir.faults.multi_ranges = False
    _, first = _object(http_dir, "first.bin", 3_000_000)
    first.read_ranges(asked)  # learned at the first answer (a refused try, as tested above)
    assert byteranges.unsupported(http_dir.url)
    http_dir.faults.clear_log()
    http_dir.faults.delay_s = 1.0  # every request of the round inside it at once (loaded CI)
    try:
        got = fetch([(loc, asked) for _, loc in objects])
    finally:
        http_dir.faults.delay_s = 0.0
    assert got == [[data[a:b] for a, b in asked] for data, _ in objects]
    reqs = http_dir.faults.requests()
    assert len(reqs) == 4 * 3  # per object: the first two merged, then two alone
    assert http_dir.faults.peak_in_flight == len(reqs)  # one round
    for k in range(4):
        mine = sorted(r.range for r in reqs if r.path.endswith(f"/o{k}.bin"))
        assert mine == ["bytes=10-30099", "bytes=1000000-1000099", "bytes=2900000-2900009"]
    assert all(r.status == 206 for r in reqs)
