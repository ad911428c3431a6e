"""The Dask ``.sw`` accessor on frames backed by cuDF: partitions stay cuDF, results are cuDF
columns on the GPU, and every row equals the pandas CPU path (values, nulls, index, order).
Also: a LocalCUDACluster started by ``swdask.cluster(gpu=True)`` runs the ``sw-align`` tasks
and reports their cells, and a device memory cap (RMM) far below a column's needs still gives
exact results (the search runs in chunks and retries smaller ones).

Marked ``gpu``; skipped where cuDF, dask_cudf or a CUDA GPU is missing.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.gpu

cudf = pytest.importorskip("cudf")
dask_cudf = pytest.importorskip("dask_cudf")
cupy = pytest.importorskip("cupy")
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("needs a CUDA GPU", allow_module_level=True)
except Exception:  # noqa: BLE001 - no driver
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402

import swdask  # noqa: E402
from swdask.gpu import _backend  # noqa: E402

from .test_cudf import QUERY, as_pandas, assert_same, random_sequences  # noqa: E402

COLUMNS = ["score", "query_start", "query_end", "target_start", "target_end"]


@pytest.fixture(autouse=True)
def _real_runtime(setting):
    """The CUDA runtime, whatever the environment says (not the host emulation)."""
    setting("gpu.runtime", "cuda")


@pytest.fixture(scope="module")
def host_frame(protein_db):
    values = list(protein_db.iloc[:300])
    values[3] = None
    values[10] = ""
    values[200] = None
    return pd.DataFrame({"sequence": values, "weight": np.arange(300)},
                        index=pd.Index(np.arange(300) * 7 + 5, name="record"))


def test_dask_cudf_frame_align_equals_pandas(host_frame, protein_queries):
    gpu_frame = dd.from_pandas(host_frame, npartitions=4).to_backend("cudf")
    for positions in (True, "end", False):
        lazy = gpu_frame.sw.align(protein_queries[0][1], column="sequence", prefix="sw_",
                                  positions=positions)
        assert isinstance(lazy._meta, cudf.DataFrame)
        assert all(key[0].startswith("sw-align") for key in lazy.__dask_keys__())
        got = lazy.compute()
        assert isinstance(got, cudf.DataFrame)
        want = host_frame.sw.align(protein_queries[0][1], column="sequence", prefix="sw_",
                                   positions=positions, backend="cpu")
        assert_same(got, want)


def test_dask_cudf_series_and_pairs(host_frame, protein_queries):
    series = dd.from_pandas(host_frame["sequence"], npartitions=3).to_backend("cudf")
    got = series.sw.align(QUERY).compute()
    assert isinstance(got, cudf.DataFrame)
    assert_same(got, host_frame["sequence"].sw.align(QUERY, backend="cpu"))
    pairs = host_frame.assign(read=[q[1][:50 + k % 40] if k % 17 else None
                                    for k, q in enumerate(protein_queries * 60)][:300])
    lazy = dd.from_pandas(pairs, npartitions=3).to_backend("cudf")
    got = lazy.sw.align_pairs(query="read", target="sequence").compute()
    assert_same(got, pairs.sw.align_pairs(query="read", target="sequence", backend="cpu"))


def test_many_queries_against_a_persisted_frame_reuse_the_layout(host_frame, protein_queries):
    _backend.clear_cache()
    gpu_frame = dd.from_pandas(host_frame, npartitions=2).to_backend("cudf").persist()
    lazy = [gpu_frame.sw.align(q, column="sequence") for _, q in protein_queries[:4]]
    results = dask.compute(*lazy, scheduler="sync")
    for (_, query), got in zip(protein_queries[:4], results):
        assert_same(got, host_frame.sw.align(query, column="sequence", backend="cpu"))
    assert len(_backend.TARGETS_CACHE) == 2  # one layout per partition, kept


def test_cuda_cluster_runs_sw_align_tasks(host_frame, protein_queries):
    with swdask.cluster(gpu=True, n_workers=1, dashboard_address=":0", report=None) as client:
        gpu_frame = dd.from_pandas(host_frame, npartitions=3).to_backend("cudf")
        got = gpu_frame.sw.align(protein_queries[1][1], column="sequence").compute()
        assert_same(got, host_frame.sw.align(protein_queries[1][1], column="sequence",
                                             backend="cpu"))
        residues = int(host_frame["sequence"].str.len().sum())
        totals = swdask.task_totals(client)
        assert totals["cells"] == len(protein_queries[1][1]) * residues


def _capped(limit):
    """RMM limited to ``limit`` bytes with CuPy allocating through it; returns a restorer."""
    import rmm
    from rmm.allocators.cupy import rmm_cupy_allocator

    previous_resource = rmm.mr.get_current_device_resource()
    previous_allocator = cupy.cuda.get_allocator()
    rmm.mr.set_current_device_resource(rmm.mr.LimitingResourceAdaptor(previous_resource,
                                                                      limit))
    cupy.cuda.set_allocator(rmm_cupy_allocator)

    def restore():
        cupy.cuda.set_allocator(previous_allocator)
        rmm.mr.set_current_device_resource(previous_resource)

    return restore


def test_memory_cap_far_below_the_column_still_exact(protein_db, protein_queries):
    # 12,000 real proteins: the search of the whole column plans ~15 bytes a residue, five
    # times what the cap leaves once the column and its codes are in, so it runs in chunks
    values = (list(protein_db) * 40)
    values[5] = None
    host = pd.Series(values)
    query = protein_queries[2][1]
    want = host.sw.align(query, backend="cpu")
    _backend.clear_cache()
    series = cudf.Series(values)
    cupy.get_default_memory_pool().free_all_blocks()
    need = int(host.str.len().sum())
    restore = _capped(3 * need + (16 << 20))
    try:
        from swdask.gpu._runtime import get_runtime

        assert get_runtime().free_bytes() < 20 * need  # the cap is seen
        got = series.sw.align(query)
    finally:
        restore()
    assert_same(got, want)


def test_results_stay_on_the_gpu(host_frame, protein_queries):
    series = cudf.Series(host_frame["sequence"].tolist())
    got = series.sw.align(protein_queries[0][1])
    assert isinstance(got, cudf.DataFrame)
    assert all(str(got[name].dtype) == "int64" for name in COLUMNS)
    host = as_pandas(got)
    assert host["score"].isna().sum() == 2  # the two null rows
    assert host.loc[host["score"] == 0, "query_end"].isna().all()
    random = cudf.Series(random_sequences(50, seed=4))
    assert_same(random.sw.align(QUERY), pd.Series(random_sequences(50, seed=4))
                .sw.align(QUERY, backend="cpu"))


def test_search_job_on_cudf_partitions():
    # `swdask search --backend cudf`: the database as cuDF partitions on a LocalCUDACluster,
    # each partition's hits ranked on the GPU; the same table as the CPU job
    from pathlib import Path

    from swdask._search import search

    data = Path(__file__).resolve().parents[1] / "examples" / "data"
    quiet = dict(progress=False, report=lambda line: None)
    want = search(data / "queries.fasta", data / "db.fasta", top=7, backend="cpu",
                  n_workers=1, **quiet)
    got = search(data / "queries.fasta", data / "db.fasta", top=7, backend="cudf", n_workers=1,
                 **quiet)
    assert len(want) > 0
    pd.testing.assert_frame_equal(got, want)
