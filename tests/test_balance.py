"""swdask.balance_by_residues: equal residues per partition, rows and order untouched.

The expected residues are counted here in plain Python (``len`` of each string, 0 for a
null) from the pandas frame, independently of the function's own length pass.
"""
from __future__ import annotations

from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import swdask

DB = Path(__file__).parent / "data" / "proteins_db.fasta"  # 300 real UniProt proteins


def compute(collection):
    return collection.compute(scheduler="sync")


def residues(values) -> int:
    return sum(0 if v is None or v is pd.NA else len(v) for v in values)


def partition_residues(collection, column="sequence") -> list[int]:
    out = []
    for k in range(collection.npartitions):
        part = compute(collection.partitions[k])
        strings = part if isinstance(part, pd.Series) else part[column]
        out.append(residues(strings.tolist()))
    return out


def check_balanced(balanced, original: pd.DataFrame | pd.Series, npartitions: int,
                   column="sequence") -> list[int]:
    """Same rows/index/order/dtypes; every partition within the longest row of its share."""
    got = compute(balanced)
    if isinstance(original, pd.Series):
        pd.testing.assert_series_equal(got, original)
        strings = original
    else:
        pd.testing.assert_frame_equal(got, original)
        strings = original[column]
    lengths = [0 if v is None or v is pd.NA else len(v) for v in strings.tolist()]
    per_partition = partition_residues(balanced, column)
    assert sum(per_partition) == sum(lengths)
    ideal = sum(lengths) / npartitions
    for share in per_partition:
        assert abs(share - ideal) <= max(lengths), (per_partition, ideal, max(lengths))
    assert balanced.known_divisions
    return per_partition


@pytest.fixture(scope="module")
def proteins():
    ddf = swdask.read_fasta(DB, blocksize=5000)
    return ddf, compute(ddf)


@pytest.mark.parametrize("npartitions", [1, 2, 3, 7, 16])
def test_real_proteins_balanced_rows_unchanged(proteins, npartitions):
    ddf, frame = proteins
    balanced = swdask.balance_by_residues(ddf, npartitions)
    assert balanced.npartitions == npartitions
    check_balanced(balanced, frame, npartitions)


def test_skewed_lengths_beat_row_partitions():
    """A few very long rows: equal-row partitions are far apart, balanced ones are not."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(10, 60, 400)
    lengths[[5, 9, 17, 30]] = 3000  # the long ones all near the start
    frame = pd.DataFrame({"sequence": pd.array(["A" * int(n) for n in lengths],
                                                dtype="string[pyarrow]"),
                          "other": np.arange(400)})
    ddf = dd.from_pandas(frame, npartitions=4, sort=True)
    by_rows = partition_residues(ddf)
    assert max(by_rows) > 3 * min(by_rows)  # the problem the function solves
    balanced = swdask.balance_by_residues(ddf, 4)
    per_partition = check_balanced(balanced, frame, 4)
    assert max(per_partition) - min(per_partition) <= 2 * int(lengths.max())


def test_nulls_and_empty_strings_count_zero():
    values = ["MKV" * 40 if k % 5 else None for k in range(60)]
    values[7] = ""
    frame = pd.DataFrame({"sequence": pd.array(values, dtype="string[pyarrow]")})
    ddf = dd.from_pandas(frame, npartitions=3, sort=True)
    balanced = swdask.balance_by_residues(ddf, 4)
    check_balanced(balanced, frame, 4)
    assert compute(balanced)["sequence"].isna().sum() == 12


def test_series_input_and_string_index():
    """A Series is balanced on its own values; any sorted index works (here accessions)."""
    frame = compute(swdask.read_fasta(DB)).set_index("id").sort_index()
    ddf = dd.from_pandas(frame, npartitions=5, sort=True)
    balanced = swdask.balance_by_residues(ddf["sequence"], 3)
    assert isinstance(balanced, dd.Series)
    check_balanced(balanced, frame["sequence"], 3)


def test_datetime_index():
    """Divisions stay index labels (Timestamps here), not numpy's integer view of them."""
    frame = pd.DataFrame({"sequence": pd.array(["W" * k for k in range(1, 41)],
                                                dtype="string[pyarrow]")},
                         index=pd.date_range("2020-01-01", periods=40, freq="D"))
    balanced = swdask.balance_by_residues(dd.from_pandas(frame, npartitions=2, sort=True), 3)
    assert all(isinstance(d, pd.Timestamp) for d in balanced.divisions)
    check_balanced(balanced, frame, 3)

def test_more_partitions_than_rows():
    frame = pd.DataFrame({"sequence": pd.array(["AC", "GGGG", "T", "", "AAAAA"],
                                                dtype="string[pyarrow]")})
    ddf = dd.from_pandas(frame, npartitions=2, sort=True)
    balanced = swdask.balance_by_residues(ddf, 10)
    assert balanced.npartitions <= len(frame)
    pd.testing.assert_frame_equal(compute(balanced), frame)
    parts = [compute(balanced.partitions[k]) for k in range(balanced.npartitions)]
    assert all(len(p) >= 1 for p in parts[:-1])


def test_no_residues_spreads_rows():
    frame = pd.DataFrame({"sequence": pd.array([""] * 10 + [None] * 10,
                                                dtype="string[pyarrow]")})
    ddf = dd.from_pandas(frame, npartitions=1, sort=True)
    balanced = swdask.balance_by_residues(ddf, 4)
    pd.testing.assert_frame_equal(compute(balanced), frame)
    sizes = [len(compute(balanced.partitions[k])) for k in range(balanced.npartitions)]
    assert sizes == [5, 5, 5, 5]


def test_empty_frame(proteins):
    ddf, frame = proteins
    nothing = ddf[ddf["sequence"].str.len() > 10**9]
    assert nothing.known_divisions
    balanced = swdask.balance_by_residues(nothing, 4)
    assert balanced.npartitions == 1
    got = compute(balanced)
    assert len(got) == 0
    assert list(got.columns) == list(frame.columns)
    assert (got.dtypes == frame.dtypes).all()


def test_duplicate_index_values_are_never_split():
    labels = np.repeat(np.arange(8), [1, 30, 2, 25, 1, 1, 40, 3])  # long runs of equal labels
    frame = pd.DataFrame({"sequence": pd.array(["ACDEFGHIK"] * labels.size,
                                                dtype="string[pyarrow]")}, index=labels)
    ddf = dd.from_pandas(frame, npartitions=2, sort=True)
    for npartitions in (2, 3, 5, 20):
        balanced = swdask.balance_by_residues(ddf, npartitions)
        divisions = balanced.divisions
        assert list(divisions[:-1]) == sorted(set(divisions[:-1]))  # distinct, increasing
        pd.testing.assert_frame_equal(compute(balanced), frame)
        seen = set()
        for k in range(balanced.npartitions):
            part_labels = set(compute(balanced.partitions[k]).index.tolist())
            assert not part_labels & seen  # every label in exactly one partition
            seen |= part_labels
        assert seen == set(labels.tolist())


def test_alignment_after_balancing_is_unchanged(proteins):
    ddf, frame = proteins
    query = frame["sequence"].iloc[42][:60]
    direct = compute(ddf.sw.align(query, positions="end"))
    balanced = compute(swdask.balance_by_residues(ddf, 3).sw.align(query, positions="end"))
    pd.testing.assert_frame_equal(balanced, direct)


# ------------------------------------------------------------------ errors


def test_unknown_divisions_are_refused_with_the_fix(proteins):
    ddf, _ = proteins
    with pytest.raises(ValueError, match="divisions are unknown.*reset_index"):
        swdask.balance_by_residues(ddf.clear_divisions(), 2)


@pytest.mark.parametrize("npartitions", [0, -3, 2.5, "4", True, None])
def test_bad_npartitions(proteins, npartitions):
    ddf, _ = proteins
    with pytest.raises(ValueError, match="npartitions must be a positive int"):
        swdask.balance_by_residues(ddf, npartitions)


def test_bad_frame_and_column(proteins):
    ddf, frame = proteins
    with pytest.raises(TypeError, match="Dask DataFrame or Series.*from_pandas"):
        swdask.balance_by_residues(frame, 2)
    with pytest.raises(KeyError, match="column='seq' is not a column"):
        swdask.balance_by_residues(ddf, 2, column="seq")
    numbers = dd.from_pandas(pd.DataFrame({"sequence": np.arange(10)}), npartitions=2)
    with pytest.raises(TypeError, match="must hold strings"):
        swdask.balance_by_residues(numbers, 2)



@pytest.mark.gpu
def test_cudf_partitions_balance_like_pandas(proteins):
    """The same cuts on cuDF partitions (the function uses only methods both share)."""
    pytest.importorskip("dask_cudf")
    cudf = pytest.importorskip("cudf")
    ddf, frame = proteins
    values = frame["sequence"].tolist()
    values[5] = None  # a null on the GPU too
    with_null = frame.assign(sequence=pd.array(values, dtype="string[pyarrow]"))
    pandas_ddf = dd.from_pandas(with_null, npartitions=4, sort=True)
    gpu_ddf = pandas_ddf.to_backend("cudf")
    expected = swdask.balance_by_residues(pandas_ddf, 5)
    balanced = swdask.balance_by_residues(gpu_ddf, 5)
    assert balanced.divisions == expected.divisions
    part = balanced.partitions[1].compute()
    assert isinstance(part, cudf.DataFrame)
    got = balanced.compute().to_pandas()
    assert got.index.tolist() == with_null.index.tolist()
    assert got["sequence"].isna().tolist() == with_null["sequence"].isna().tolist()
    assert got["sequence"].dropna().tolist() == with_null["sequence"].dropna().tolist()
