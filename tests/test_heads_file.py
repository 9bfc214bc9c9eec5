"""The sidecar of heads read by rows where it lies (`vidload.sources._heads_file`), in every
format a reader meets: 3 (digests as bytes, a fence of keys), 2 (digests as text, no fence),
deflated members (loaded whole), and a truncated file (not used)."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from vidload.sources._heads import FENCE, HeadRecord, open_heads, render_heads
from vidload.sources._heads_file import StoredArrays


def _records(n: int) -> dict[str, HeadRecord]:
    """`n` containers, each with its own size, digest, fields and frame lengths."""
    out = {}
    for i in range(n):
        rec = HeadRecord(
            1000 + i, f"{i:040x}", {"frames": 3 + i % 5}, {"fps": None if i % 2 else 25.0}
        )
        rec.lengths = np.arange(i % 7, dtype=np.uint32) + i
        out[f"c{i % 3}/v{i:05d}.h5"] = rec
    return out


def _members(raw: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _write(path, arrays: dict[str, np.ndarray], compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, arr in arrays.items():
            with z.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(arr), allow_pickle=False)


def _same(heads, records) -> None:
    assert heads is not None and len(heads) == len(records)
    for name, want in records.items():
        got = heads.get(name)
        assert got is not None, name
        assert (got.size, got.digest, got.ints, got.floats) == (
            want.size,
            want.digest,
            want.ints,
            want.floats,
        )
        assert np.array_equal(got.lengths, want.lengths)
    assert heads.get("c0/absent.h5") is None and "c0/absent.h5" not in heads


def test_rows_are_the_arrays(tmp_path):
    raw = render_heads("hdf5", _records(3 * FENCE + 5))
    (tmp_path / "h.npz").write_bytes(raw)
    stored = StoredArrays(tmp_path / "h.npz")
    for name, arr in _members(raw).items():
        assert np.array_equal(stored.whole(name), arr, equal_nan=arr.dtype.kind == "f"), name
        if arr.ndim:
            got = stored.rows(name, 2, 9)
            assert np.array_equal(got, arr[2:9], equal_nan=arr.dtype.kind == "f"), name


def test_format_3_is_read_by_rows_holding_only_the_small_members(tmp_path):
    records = _records(3 * FENCE + 5)
    (tmp_path / "h.npz").write_bytes(render_heads("hdf5", records))
    heads = open_heads(tmp_path / "h.npz", "hdf5")
    _same(heads, records)
    held = {k: a.nbytes for k, a in heads._t._arrays.items()}
    assert set(held) <= {"fence", "int_fields", "float_fields", "format", "kind"}, held
    assert open_heads(tmp_path / "h.npz", "npy") is None  # another kind's


def test_format_2_is_read_too(tmp_path):
    """A sidecar as format 2 wrote it: digests as a unicode column, no fence."""
    records = _records(2 * FENCE + 1)
    arrays = _members(render_heads("hdf5", records))
    arrays["format"] = np.array(2)
    arrays["digest"] = np.array([bytes(d).hex() for d in arrays["digest"]], dtype=str)
    del arrays["fence"]
    _write(tmp_path / "h2.npz", arrays)
    _same(open_heads(tmp_path / "h2.npz", "hdf5"), records)


def test_deflated_members_are_loaded_whole(tmp_path):
    records = _records(40)
    _write(tmp_path / "z.npz", _members(render_heads("hdf5", records)), zipfile.ZIP_DEFLATED)
    with pytest.raises(ValueError, match="not a stored .npy member"):
        StoredArrays(tmp_path / "z.npz")
    _same(open_heads(tmp_path / "z.npz", "hdf5"), records)


def test_a_truncated_sidecar_is_not_used(tmp_path):
    raw = render_heads("hdf5", _records(40))
    (tmp_path / "t.npz").write_bytes(raw[: len(raw) // 2])
    assert open_heads(tmp_path / "t.npz", "hdf5") is None
