"""The ``.sw`` accessor on cuDF equals the pandas CPU path, row for row.

Marked ``gpu``; skipped where cuDF (or a CUDA GPU) is missing. Every cuDF result is compared
with the same call on the pandas copy of the data with ``backend="cpu"`` (itself checked
against parasail/Biopython in ``test_reference.py``): values, nulls, index and order, on
random sequences with nulls/empties/lowercase/unknown letters, sliced Series (a non-zero
column offset), a DataFrame with ``column=``/``prefix=``, ``align_pairs``, and real proteins.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.gpu

cudf = pytest.importorskip("cudf")
cupy = pytest.importorskip("cupy")
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("needs a CUDA GPU", allow_module_level=True)
except Exception:  # noqa: BLE001 - no driver
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import swdask  # noqa: E402
from swdask import _cudf  # noqa: E402
from swdask._sequences import SequenceError  # noqa: E402

swdask.register_cudf()

ALPHABET = "ARNDCQEGHILKMFPSTWYVXBZarndc"
QUERY = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEG"


@pytest.fixture(autouse=True)
def _real_runtime(setting):
    """The CUDA runtime, whatever the environment says (not the host emulation)."""
    setting("gpu.runtime", "cuda")


def random_sequences(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for row in range(n):
        if row % 11 == 3:
            out.append(None)
        elif row % 13 == 5:
            out.append("")
        else:
            length = int(rng.integers(1, 400))
            out.append("".join(rng.choice(list(ALPHABET), length)))
    return out


def as_pandas(frame) -> pd.DataFrame:
    """A cuDF result on the host, with nullable Int64 columns and a plain pandas index."""
    host = frame.to_pandas(nullable=True)
    for name in host.columns:
        if pd.api.types.is_integer_dtype(host[name].dtype):
            host[name] = host[name].astype("Int64")
    return host


def assert_same(gpu_frame, cpu_frame: pd.DataFrame) -> None:
    host = as_pandas(gpu_frame)
    assert list(host.columns) == list(cpu_frame.columns)
    assert list(host.index) == list(cpu_frame.index)
    for name in cpu_frame.columns:
        if name in ("score", "query_start", "query_end", "target_start", "target_end") or \
                name.startswith("sw_"):
            assert host[name].isna().tolist() == cpu_frame[name].isna().tolist(), name
            pd.testing.assert_series_equal(host[name], cpu_frame[name], check_index_type=False,
                                           check_names=False, check_dtype=False)


def test_series_random_with_nulls_and_empties():
    values = random_sequences(300, seed=1)
    index = [f"r{k}" for k in range(len(values))]
    host = pd.Series(values, index=index)
    series = cudf.Series(values, index=index)
    result = series.sw.align(QUERY)
    assert isinstance(result, cudf.DataFrame)
    # nullable int64 on the GPU (cuDF 26.10 with pandas 3 reports it as pandas' Int64)
    assert str(result["score"].dtype).lower() == "int64"
    assert result["score"].isna().sum() == host.isna().sum() > 0  # nulls stay nulls on the GPU
    assert_same(result, host.sw.align(QUERY, backend="cpu"))


@pytest.mark.parametrize("start", [1, 3, 57])
def test_sliced_series_reads_the_column_offset(start):
    values = random_sequences(200, seed=2)
    host = pd.Series(values)
    series = cudf.Series(values)
    sliced = series.iloc[start:150]
    chars, offsets, valid, _ = _cudf.device_layout(sliced)
    # the device view starts at the slice's first row: the same bytes pandas/Arrow hold
    expected = "".join(v for v in values[start:150] if v)
    assert bytes(cupy.asnumpy(chars)).decode() == expected
    assert valid.tolist() == [v is not None for v in values[start:150]]
    # the offsets (device, from 0) delimit each row of the slice
    host_offsets = cupy.asnumpy(offsets)
    assert host_offsets[0] == 0 and host_offsets[-1] == len(expected.encode())
    assert (host_offsets[1:] - host_offsets[:-1]).tolist() == [
        len(v) if v else 0 for v in values[start:150]]
    assert_same(sliced.sw.align(QUERY, positions="end"),
                host.iloc[start:150].sw.align(QUERY, positions="end", backend="cpu"))


def test_empty_series():
    result = cudf.Series([], dtype="str").sw.align(QUERY)
    assert len(result) == 0
    assert list(result.columns) == ["score", "query_start", "query_end", "target_start",
                                    "target_end"]


def test_all_null_series():
    result = cudf.Series([None, None, None], dtype="str").sw.align(QUERY)
    assert result["score"].isna().all()


def test_dataframe_column_prefix_and_align_pairs(protein_db):
    proteins = list(protein_db.iloc[:120])
    targets = list(protein_db.iloc[120:240])
    proteins[7] = None
    targets[9] = ""
    index = pd.Index(np.arange(1000, 1120) * 3)
    host = pd.DataFrame({"id": np.arange(120), "sequence": proteins, "target": targets},
                        index=index)
    frame = cudf.DataFrame(host)
    got = frame.sw.align(QUERY, column="sequence", prefix="sw_")
    assert list(got.columns)[:3] == ["id", "sequence", "target"]
    assert_same(got, host.sw.align(QUERY, column="sequence", prefix="sw_", backend="cpu"))
    pairs = frame.sw.align_pairs(query="sequence", target="target")
    assert_same(pairs, host.sw.align_pairs(query="sequence", target="target", backend="cpu"))


def test_real_proteins_each_query(protein_db, protein_queries):
    series = cudf.Series(list(protein_db), index=list(protein_db.index))
    for _, query in protein_queries[:3]:
        assert_same(series.sw.align(query), protein_db.sw.align(query, backend="cpu"))


def test_bad_residue_names_the_row_label():
    series = cudf.Series(["MKT", "AK Q", "WW"], index=["a", "b", "c"])
    with pytest.raises(SequenceError, match="target row 'b'"):
        series.sw.align(QUERY)
