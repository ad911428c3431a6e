"""The cells metric: every ``sw-align`` task reports |query| x |target| summed over its rows as
a Dask fine performance metric (unit "cells"), so GCUPS can be read off the dashboard.

Expected counts are computed here from the test data's own parse (conftest.read_fasta) and
plain Python lengths, never with swdask's counting helpers.
"""
from __future__ import annotations

import logging
import subprocess
import sys
import time

import dask.dataframe as dd
import pandas as pd
import pytest

import swdask
from swdask import _metrics

from .conftest import DATA, read_fasta

COLUMNS = ["score", "query_start", "query_end", "target_start", "target_end"]


def expected_one_to_many(query: str, targets) -> int:
    return sum(len(query) * len(t) for t in targets if isinstance(t, str))


def expected_pairs(queries, targets) -> int:
    return sum(len(q) * len(t) for q, t in zip(queries, targets)
               if isinstance(q, str) and isinstance(t, str))


@pytest.fixture(scope="module")
def frame(protein_db, protein_queries):
    """Real proteins with nulls and empty strings, and a per-row query column."""
    targets = list(protein_db.iloc[:160])
    targets[3] = None
    targets[40] = ""
    reads = [protein_queries[k % 5][1][: 30 + 3 * k] for k in range(len(targets))]
    reads[5] = None
    reads[6] = ""
    return pd.DataFrame({"sequence": targets, "read": reads},
                        index=pd.Index(protein_db.index[:160], name="accession"))


# --------------------------------------------------------------------------- counting


def test_cell_counts_match_plain_python(frame):
    query = "MKTAYIAKQRQISFVKSHFSRQ"
    for dtype in (object, pd.StringDtype("pyarrow"), "str"):
        targets = frame["sequence"].astype(dtype)
        reads = frame["read"].astype(dtype)
        assert _metrics.one_to_many_cells(len(query), targets) == \
            expected_one_to_many(query, frame["sequence"])
        assert _metrics.pair_cells(reads, targets) == \
            expected_pairs(frame["read"], frame["sequence"])
    empty = pd.Series([], dtype=object)
    assert _metrics.one_to_many_cells(10, empty) == 0
    assert _metrics.pair_cells(empty, empty) == 0
    assert _metrics.one_to_many_cells(10, pd.Series([None, None], dtype=object)) == 0


def test_pair_cells_pair_by_position_not_by_label():
    # a repeated and differing index must not make pandas align (and multiply) by label
    queries = pd.Series(["AAAA", "CC"], index=[1, 1])
    targets = pd.Series(["GGG", "TTTTT"], index=[1, 0])
    assert _metrics.pair_cells(queries, targets) == 4 * 3 + 2 * 5


def test_reported_through_the_context_meter(frame):
    """With Dask's local scheduler the partition functions digest the exact cells to whatever
    callback is installed (on a worker: the worker's ledger); with none, nothing happens."""
    from distributed.metrics import context_meter

    query = read_fasta(DATA / "proteins_query.fasta")[1][1]
    lazy = dd.from_pandas(frame, npartitions=4, sort=False)
    seen = []
    with context_meter.add_callback(lambda label, value, unit: seen.append((label, value, unit))):
        lazy.sw.align(query).compute(scheduler="sync")
        lazy.sw.align_pairs(query="read", target="sequence").compute(scheduler="sync")
    cells = [(label, value) for label, value, unit in seen if unit == "cells"]
    assert {label for label, _ in cells} == {"cells"}
    assert sum(value for _, value in cells) == (
        expected_one_to_many(query, frame["sequence"])
        + expected_pairs(frame["read"], frame["sequence"]))
    # no callback installed: the same computation runs and reports nowhere
    pd.testing.assert_frame_equal(lazy.sw.align(query).compute(scheduler="sync")[COLUMNS],
                                  frame.sw.align(query)[COLUMNS], check_index_type=False)


def test_no_distributed_import_for_a_pandas_run():
    """A partition function called without distributed loaded does not import it."""
    code = (
        "import sys, pandas as pd, swdask\n"
        "from swdask._dask import _series_partition\n"
        "from swdask._options import Options\n"
        "from swdask._sequences import prepare_query\n"
        "options = Options.parse()\n"
        "prepared = prepare_query('MKVL', options.scoring)\n"
        "out = _series_partition(pd.Series(['MKVLA', None]), prepared, options)\n"
        "assert int(out['score'].iloc[0]) > 0\n"
        "assert 'distributed' not in sys.modules, 'distributed was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --------------------------------------------------------------------------- a real cluster


def _scheduler_cells(dask_scheduler) -> dict:
    """Cells per task prefix as the scheduler sums them from the workers' heartbeats."""
    out = {}
    for key, value in dask_scheduler.cumulative_worker_metrics.items():
        if isinstance(key, tuple) and key[0] == "execute" and key[-2:] == ("cells", "cells"):
            out[key[-3]] = out.get(key[-3], 0) + value
    return out


def _worker_cells(dask_worker) -> dict:
    """Cells per task prefix as the worker itself keeps them (key: execute, span, prefix, ...)."""
    out = {}
    for key, value in dask_worker.digests_total.items():
        if isinstance(key, tuple) and key[0] == "execute" and key[-2:] == ("cells", "cells"):
            out[key[-3]] = out.get(key[-3], 0) + value
    return out


def _dashboard_units(dask_scheduler) -> list:
    """The units the dashboard's Fine Performance Metrics page offers."""
    from distributed.dashboard.components.scheduler import FinePerformanceMetrics

    page = FinePerformanceMetrics(dask_scheduler)
    page.update()
    return list(page.unit_selector.options)


def _wait_for(get, expected: dict, timeout: float = 20.0) -> dict:
    """Poll ``get()`` until every expected prefix has at least its count (heartbeats carry the
    workers' metrics to the scheduler about once a second), then return what it says."""
    deadline = time.monotonic() + timeout
    while True:
        seen = get()
        if all(seen.get(k, 0) >= v for k, v in expected.items()) or time.monotonic() > deadline:
            return seen
        time.sleep(0.2)


def test_cells_on_a_local_cluster(frame, protein_queries):
    distributed = pytest.importorskip("distributed")
    query = protein_queries[2][1]
    database = swdask.read_fasta(DATA / "proteins_db.fasta", blocksize=8000)
    assert database.npartitions > 4
    reference_db = [sequence for _, sequence in read_fasta(DATA / "proteins_db.fasta")]
    lazy = dd.from_pandas(frame, npartitions=3, sort=False)
    expected = {
        # frame align (read_fasta partitions) + series align (the frame's partitions)
        "sw-align": expected_one_to_many(query, reference_db)
        + expected_one_to_many(query, frame["sequence"]),
        "sw-align-pairs": expected_pairs(frame["read"], frame["sequence"]),
    }
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster) as client:
            aligned = client.compute(database.sw.align(query)).result()
            series = client.compute(lazy["sequence"].sw.align(query)).result()
            pairs = client.compute(lazy.sw.align_pairs(query="read", target="sequence")).result()
            # the results themselves are the pandas ones
            assert (aligned["score"].tolist()
                    == swdask.align(query, reference_db)["score"].tolist())
            pd.testing.assert_frame_equal(series[COLUMNS],
                                          frame["sequence"].sw.align(query)[COLUMNS],
                                          check_index_type=False)
            pd.testing.assert_frame_equal(
                pairs[COLUMNS], frame.sw.align_pairs(query="read", target="sequence")[COLUMNS],
                check_index_type=False)

            def on_workers():
                per_worker = client.run(_worker_cells)
                total = {}
                for cells in per_worker.values():
                    for prefix, value in cells.items():
                        total[prefix] = total.get(prefix, 0) + value
                return total

            assert _wait_for(on_workers, expected) == expected
            on_scheduler = _wait_for(lambda: client.run_on_scheduler(_scheduler_cells), expected)
            assert on_scheduler == expected
            assert "cells" in client.run_on_scheduler(_dashboard_units)
