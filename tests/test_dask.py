"""The Dask ``.sw`` accessor: same rows as pandas, correct meta, ``sw-align`` tasks, the
prepared query once in the graph, eager parameter errors, and a real multi-process cluster."""
from __future__ import annotations

import io
import logging
import pickle

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import swdask
from swdask._sequences import PreparedQuery

from .conftest import Scheme, check_against_reference, parasail_score

COLUMNS = ["score", "query_start", "query_end", "target_start", "target_end"]
NPARTITIONS = 5


@pytest.fixture(scope="module")
def frame(protein_db, protein_queries):
    """Real proteins with nulls and empties, unsorted string index, a query column."""
    targets = protein_db.iloc[:120].astype(object).copy()
    targets.iloc[[4, 50, 51]] = None
    targets.iloc[[7, 99]] = ""
    reads = [protein_queries[k % 5][1][: 40 + k] for k in range(len(targets))]
    reads[8] = None
    frame = pd.DataFrame({"sequence": targets.to_numpy(), "read": reads,
                          "weight": range(len(targets))},
                         index=pd.Index(targets.index[::-1], name="accession"))
    return frame.sample(frac=1.0, random_state=3)  # an unsorted index, kept as is by Dask


@pytest.fixture(scope="module")
def lazy_frame(frame):
    return dd.from_pandas(frame, npartitions=NPARTITIONS, sort=False)


@pytest.fixture(scope="module")
def seen_by_dask(lazy_frame, frame):
    """The frame as Dask holds it (Dask may convert object strings and the index to Arrow
    strings): the pandas results to compare with are computed on this."""
    seen = lazy_frame.compute()
    assert list(seen.index) == list(frame.index)
    return seen


def _prepared_queries_in(value) -> int:
    """How many PreparedQuery objects pickling ``value`` would write (each task is pickled
    on its way to a worker, so this is what would travel)."""
    found = []

    class Counter(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, PreparedQuery):
                found.append(obj)
            return None

    Counter(io.BytesIO(), protocol=5).dump(value)
    return len(found)


def _pandas_dtypes(frame: pd.DataFrame) -> dict:
    return {column: str(dtype) for column, dtype in frame.dtypes.items()}


# --------------------------------------------------------------------------- results


def test_frame_align_equals_pandas(frame, lazy_frame, seen_by_dask, protein_queries):
    query = protein_queries[2][1]
    lazy = lazy_frame.sw.align(query, column="sequence")
    assert lazy.npartitions == NPARTITIONS
    computed = lazy.compute()
    pd.testing.assert_frame_equal(computed, seen_by_dask.sw.align(query))
    assert list(computed.index) == list(frame.index)  # rows, index and order preserved
    assert _pandas_dtypes(lazy._meta) == _pandas_dtypes(computed)
    assert list(lazy.columns) == list(computed.columns)
    rows = [k for k, t in enumerate(frame["sequence"]) if pd.notna(t)]
    check_against_reference(computed[COLUMNS].iloc[rows], query,
                            frame["sequence"].iloc[rows].tolist(), Scheme(),
                            reference=parasail_score)


def test_series_align_equals_pandas(frame, lazy_frame, seen_by_dask, protein_queries):
    query = protein_queries[0][1]
    options = dict(matrix="PAM70", gap_open=10, gap_extend=1, positions="end")
    lazy = lazy_frame["sequence"].sw.align(query, **options)
    computed = lazy.compute()
    pd.testing.assert_frame_equal(computed,
                                  swdask.align(query, seen_by_dask["sequence"], **options))
    assert list(computed.columns) == ["score", "query_end", "target_end"]
    assert _pandas_dtypes(lazy._meta) == _pandas_dtypes(computed)
    assert list(computed.index) == list(frame.index)


def test_align_pairs_equals_pandas(frame, lazy_frame, seen_by_dask):
    lazy = lazy_frame.sw.align_pairs(query="read", target="sequence", prefix="sw_")
    computed = lazy.compute()
    pd.testing.assert_frame_equal(
        computed, seen_by_dask.sw.align_pairs(query="read", target="sequence", prefix="sw_"))
    # and the same numbers as on the original pandas frame
    expected = frame.sw.align_pairs(query="read", target="sequence", prefix="sw_")
    assert (computed[[f"sw_{c}" for c in COLUMNS]].to_numpy().tolist()
            == expected[[f"sw_{c}" for c in COLUMNS]].to_numpy().tolist())
    assert list(computed.index) == list(frame.index)
    assert _pandas_dtypes(lazy._meta) == _pandas_dtypes(computed)


def test_dna_and_empty_partitions(dna_region):
    windows = [dna_region[k:k + 30 + k % 200] for k in range(0, 6000, 150)]
    frame = pd.DataFrame({"sequence": windows, "keep": [k % 3 == 0 for k in range(len(windows))]})
    lazy = dd.from_pandas(frame, npartitions=6)
    filtered = lazy[lazy["keep"] & (lazy.index > 30)]  # some partitions become empty
    options = dict(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
    query = dna_region[3000:3300]
    computed = filtered.sw.align(query, **options).compute()
    expected = frame[frame["keep"] & (frame.index > 30)].sw.align(query, **options)
    pd.testing.assert_frame_equal(computed[COLUMNS], expected[COLUMNS])


# --------------------------------------------------------------------------- the graph


def test_task_names_and_one_task_per_partition(lazy_frame):
    for lazy in (lazy_frame.sw.align("MKTAYIAKQR"),
                 lazy_frame["sequence"].sw.align("MKTAYIAKQR"),
                 lazy_frame.sw.align_pairs(query="read", target="sequence")):
        assert lazy._name.startswith("sw-align")
        graph = dict(lazy.__dask_graph__())
        own = [key for key in graph if isinstance(key, tuple) and key[0] == lazy._name]
        assert len(own) == NPARTITIONS
        assert all(key[0].startswith("sw-align") for key in lazy.__dask_keys__())


def test_prepared_query_is_in_the_graph_once(lazy_frame, monkeypatch):
    """One graph node holds the prepared query (with its profile); the partition tasks only
    refer to it, so it is shipped once rather than once per partition, and its profile is
    built once, when the graph is built, not per partition."""
    from swdask import _cpu

    query = "MKTAYIAKQRQISFVKSHFSRQ" * 10
    lazy = lazy_frame.sw.align(query)
    graph = dict(lazy.__dask_graph__())
    holders = {key: _prepared_queries_in(task) for key, task in graph.items()}
    assert sum(holders.values()) == 1, holders
    (holder,) = [key for key, count in holders.items() if count]
    assert holder[0] != lazy._name  # not inside a partition task
    # its profile was built when the graph was built: computing builds none
    built = []
    original = _cpu.query_profile
    monkeypatch.setattr(_cpu, "query_profile", lambda *a: built.append(1) or original(*a))
    with dask.config.set(scheduler="sync"):
        lazy.compute()
    assert built == []


def test_parameter_errors_are_raised_at_graph_build(lazy_frame):
    """Nothing is computed: each call below fails when the graph is built."""
    cases = [
        (lambda: lazy_frame.sw.align("MKT", matrix="BLOSUM63"), swdask.ScoringError, "matrix"),
        (lambda: lazy_frame.sw.align("MKT", gap_open=-1), swdask.ScoringError, "gap_open"),
        (lambda: lazy_frame.sw.align("MKT", gap_extend=1.5), swdask.ScoringError, "gap_extend"),
        (lambda: lazy_frame.sw.align("MKT", match=1, mismatch=-1), swdask.ScoringError,
         "matrix=None"),
        (lambda: lazy_frame.sw.align(""), swdask.ScoringError, "query"),
        (lambda: lazy_frame.sw.align(7), swdask.ScoringError, "query"),
        (lambda: lazy_frame.sw.align("MK T"), swdask.SequenceError, "query"),
        (lambda: lazy_frame.sw.align("MKT", positions="start"), ValueError, "positions"),
        (lambda: lazy_frame.sw.align("MKT", backend="tpu"), ValueError, "backend"),
        (lambda: lazy_frame.sw.align("MKT", column="seq"), KeyError, "column='seq'"),
        (lambda: lazy_frame.sw.align("MKT", gap_penalty=3), TypeError, "gap_penalty"),
        (lambda: lazy_frame.assign(score=1).sw.align("MKT"), ValueError, "prefix"),
        (lambda: lazy_frame["sequence"].sw.align("MKT", on_unknown="skip"), swdask.ScoringError,
         "on_unknown"),
        (lambda: lazy_frame.sw.align_pairs(query="read", target="contig"), KeyError, "target="),
        (lambda: lazy_frame.sw.align_pairs(query="read", target="sequence", gap_open=True),
         swdask.ScoringError, "gap_open"),
        (lambda: lazy_frame.sw.align_pairs(query="read", target="sequence", positions=3),
         ValueError, "positions"),
    ]
    for build, error, message in cases:
        with pytest.raises(error, match=message):
            build()


def test_bad_sequence_in_a_partition_names_the_row(frame):
    bad = frame.copy()
    label = bad.index[-1]
    bad.loc[label, "sequence"] = "MKT AY"
    lazy = dd.from_pandas(bad, npartitions=NPARTITIONS, sort=False).sw.align("MKTAY")
    with pytest.raises(swdask.SequenceError, match=f"target row '{label}'"):
        lazy.compute(scheduler="sync")


# --------------------------------------------------------------------------- a real cluster


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def test_local_cluster_with_worker_processes(cluster_client, frame, protein_queries):
    workers = cluster_client.scheduler_info()["workers"]
    assert len(workers) == 2
    from distributed import get_task_stream

    query = protein_queries[3][1]
    lazy = dd.from_pandas(frame, npartitions=NPARTITIONS, sort=False).sw.align(query)
    with get_task_stream(cluster_client) as stream:
        computed = cluster_client.compute(lazy).result()
    expected = frame.sw.align(query)
    pd.testing.assert_frame_equal(computed[COLUMNS], expected[COLUMNS], check_index_type=False)
    assert list(computed.index) == list(frame.index)
    # the work ran in the worker processes, one sw-align task per partition
    ours = [record for record in stream.data if "sw-align" in str(record["key"])]
    assert len(ours) == NPARTITIONS
    assert {record["worker"] for record in ours} <= set(workers)
    pairs = dd.from_pandas(frame, npartitions=NPARTITIONS, sort=False).sw.align_pairs(
        query="read", target="sequence", matrix="BLOSUM80", gap_open=10, gap_extend=1)
    pd.testing.assert_frame_equal(
        cluster_client.compute(pairs).result()[COLUMNS],
        frame.sw.align_pairs(query="read", target="sequence", matrix="BLOSUM80", gap_open=10,
                             gap_extend=1)[COLUMNS], check_index_type=False)


def _ready_state():
    """On a worker: whether the reader's numba scan is loaded in this process (nothing
    waited for: a worker with the preload joins once it is ready)."""
    from swdask import _fasta

    return _fasta._compiled_scan.cache_info().currsize


@pytest.mark.parametrize("preload", [True, False])
def test_a_worker_with_the_preload_is_readied_as_it_starts(preload):
    """``dask worker --preload swdask.preload``: a new worker process loads what its first
    swdask task needs (here, without a GPU, the FASTA reader's numba scan) before it joins
    the scheduler, so it is there as soon as the worker is; a worker without it has loaded
    nothing."""
    distributed = pytest.importorskip("distributed")
    extra = {"preload": ["swdask.preload"]} if preload else {}
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR,
                                  **extra) as cluster:
        with distributed.Client(cluster) as client:
            assert list(client.run(_ready_state).values()) == [1 if preload else 0]


def _preload_names(dask_worker):
    return [preload.name for preload in dask_worker.preloads]


def test_the_local_cluster_readies_its_workers_and_keeps_configured_preloads():
    """``swdask.cluster()`` starts its worker processes with :mod:`swdask.preload` (so they
    load the kernels as they start, as above), beside a preload the user configured in
    ``distributed.worker.preload``, which is kept, not replaced."""
    pytest.importorskip("distributed")
    import dask

    import swdask

    with dask.config.set({"distributed.worker.preload": ["json"]}):
        with swdask.cluster(n_workers=1, gpu=False, dashboard_address=":0",
                            report=None) as client:
            assert list(client.run(_preload_names).values()) == [["json", "swdask.preload"]]
            assert list(client.run(_ready_state).values()) == [1]
