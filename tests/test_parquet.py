"""Parquet round trips: read_fasta frames and ``.sw.align`` results survive
``to_parquet`` / ``dd.read_parquet`` with values, nulls, index, dtypes and order intact.

CPU tests use pandas partitions. The ``gpu`` tests do the same with cuDF partitions and
compare with the pandas path; they skip where dask-cudf (or a CUDA GPU) is missing.
"""
from __future__ import annotations

from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import swdask

DB = Path(__file__).parent / "data" / "proteins_db.fasta"  # 300 real UniProt proteins
QUERIES = Path(__file__).parent / "data" / "proteins_query.fasta"
RESULT_COLUMNS = ["score", "query_start", "query_end", "target_start", "target_end"]


def compute(collection):
    return collection.compute(scheduler="sync")


def dtype_names(frame) -> dict[str, str]:
    return {name: str(dtype) for name, dtype in frame.dtypes.items()}


def query_sequence() -> str:
    text = QUERIES.read_text().split(">")[1]
    return "".join(text.splitlines()[1:])[:120]


def _with_nulls(part: pd.DataFrame) -> pd.DataFrame:
    """Every 7th record's sequence null, every 11th empty (score 0, null positions)."""
    part = part.copy()
    record = np.asarray(part.index)
    part["sequence"] = part["sequence"].mask(record % 7 == 3)
    part.loc[record % 11 == 5, "sequence"] = ""
    return part


def sequences_with_nulls(blocksize=6000):
    ddf = swdask.read_fasta(DB, blocksize=blocksize)
    return ddf.map_partitions(_with_nulls, meta=ddf._meta)


def check_results_have_nulls(results: pd.DataFrame) -> None:
    """The nulls the round trip must keep are there in the first place."""
    null_sequence = results["sequence"].isna()
    assert null_sequence.sum() > 10
    assert results.loc[null_sequence, RESULT_COLUMNS].isna().all().all()
    zero = results["score"].eq(0).fillna(False).astype(bool)
    assert zero.sum() > 10  # the empty sequences (and any target without a positive pair)
    assert results.loc[zero, RESULT_COLUMNS[1:]].isna().all().all()
    assert (results["score"].dropna() > 0).sum() > 100


# ------------------------------------------------------------------ CPU, pandas partitions


def test_sequences_round_trip(tmp_path):
    ddf = swdask.read_fasta(DB, blocksize=5000)
    original = compute(ddf)
    ddf.to_parquet(tmp_path / "db")

    back = dd.read_parquet(tmp_path / "db", calculate_divisions=True)
    assert back.known_divisions
    assert back.divisions == ddf.divisions
    assert back.npartitions == ddf.npartitions
    frame = compute(back)
    pd.testing.assert_frame_equal(frame, original, check_index_type=False)
    assert frame.index.tolist() == list(range(len(original)))  # the record numbers
    assert dtype_names(frame) == dtype_names(original)
    assert frame["sequence"].dtype.storage == "pyarrow"

    # without calculate_divisions the rows, index and dtypes still come back, not divisions
    plain = dd.read_parquet(tmp_path / "db")
    assert not plain.known_divisions
    pd.testing.assert_frame_equal(compute(plain), original, check_index_type=False)


def test_alignment_results_round_trip_with_nulls(tmp_path):
    query = query_sequence()
    results = sequences_with_nulls().sw.align(query, column="sequence")
    expected = compute(results)
    check_results_have_nulls(expected)
    assert all(str(expected[c].dtype) == "Int64" for c in RESULT_COLUMNS)

    results.to_parquet(tmp_path / "hits")
    back = dd.read_parquet(tmp_path / "hits", calculate_divisions=True)
    assert back.divisions == results.divisions
    frame = compute(back)
    pd.testing.assert_frame_equal(frame, expected, check_index_type=False)
    assert dtype_names(frame) == dtype_names(expected)
    for column in RESULT_COLUMNS:  # NA stays NA, not NaN in a float column nor 0
        assert frame[column].isna().tolist() == expected[column].isna().tolist()


def test_end_only_results_of_a_series_round_trip(tmp_path):
    """Series.sw.align gives only result columns; positions='end' has fewer of them."""
    query = query_sequence()
    results = sequences_with_nulls(blocksize=20_000)["sequence"].sw.align(query, positions="end")
    expected = compute(results)
    results.to_parquet(tmp_path / "ends")
    frame = compute(dd.read_parquet(tmp_path / "ends"))
    pd.testing.assert_frame_equal(frame, expected, check_index_type=False)
    assert dtype_names(frame) == dtype_names(expected)
    assert frame["score"].isna().sum() > 10


# ------------------------------------------------------------------ GPU, cuDF partitions


def _cudf_stack():
    pytest.importorskip("dask_cudf")
    cudf = pytest.importorskip("cudf")
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("needs a CUDA GPU")
    except Exception:  # noqa: BLE001 - no driver
        pytest.skip("needs a CUDA GPU")
    swdask.register_cudf()
    return cudf


def as_pandas(frame) -> pd.DataFrame:
    """A computed cuDF frame on the host with the pandas path's dtypes: nullable Int64
    integers and ``string[pyarrow]`` strings."""
    host = frame.to_pandas(nullable=True)
    for name in host.columns:
        if pd.api.types.is_integer_dtype(host[name].dtype):
            host[name] = host[name].astype("Int64")
        elif pd.api.types.is_string_dtype(host[name].dtype):
            host[name] = host[name].astype(pd.StringDtype("pyarrow"))
    return host


@pytest.mark.gpu
def test_cudf_sequences_round_trip(tmp_path):
    cudf = _cudf_stack()
    expected = compute(swdask.read_fasta(DB, blocksize=5000))
    ddf = swdask.read_fasta(DB, blocksize=5000, backend="cudf")
    ddf.to_parquet(tmp_path / "db")
    with dask.config.set({"dataframe.backend": "cudf"}):
        back = dd.read_parquet(tmp_path / "db", calculate_divisions=True)
    assert back.divisions == ddf.divisions
    frame = back.compute()
    assert isinstance(frame, cudf.DataFrame)
    pd.testing.assert_frame_equal(as_pandas(frame), expected, check_index_type=False)
    # and pandas reads what cuDF wrote
    pd.testing.assert_frame_equal(compute(dd.read_parquet(tmp_path / "db")), expected,
                                  check_index_type=False)


@pytest.mark.gpu
def test_cudf_alignment_results_round_trip(tmp_path):
    cudf = _cudf_stack()
    query = query_sequence()
    expected = compute(sequences_with_nulls().sw.align(query, column="sequence",
                                                       backend="cpu"))
    check_results_have_nulls(expected)
    on_gpu = sequences_with_nulls().to_backend("cudf")
    results = on_gpu.sw.align(query, column="sequence")
    assert isinstance(results.partitions[0].compute(), cudf.DataFrame)
    pd.testing.assert_frame_equal(as_pandas(results.compute()), expected,
                                  check_index_type=False)

    results.to_parquet(tmp_path / "hits")
    with dask.config.set({"dataframe.backend": "cudf"}):
        back = dd.read_parquet(tmp_path / "hits", calculate_divisions=True)
    assert back.divisions == results.divisions
    frame = back.compute()
    assert isinstance(frame, cudf.DataFrame)
    host = as_pandas(frame)
    pd.testing.assert_frame_equal(host, expected, check_index_type=False)
    for column in RESULT_COLUMNS:
        assert host[column].isna().tolist() == expected[column].isna().tolist()
