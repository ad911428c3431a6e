"""Cells computed by each ``sw-align`` task, reported as a Dask fine performance metric.

A Smith-Waterman alignment of a query of m residues against a target of n residues fills an
m x n dynamic-programming matrix: m * n *cells*. GCUPS (giga cell updates per second) is
cells / seconds / 1e9. Each partition task reports the cells of its rows through
``distributed.metrics.context_meter.digest_metric("cells", cells, "cells")``; a worker files
it under ``("execute", <span>, <task prefix>, "cells", "cells")`` next to the task's
``thread-cpu``/``thread-noncpu`` seconds, and the scheduler sums them per task prefix
(``Scheduler.cumulative_worker_metrics``). On the dashboard, page *Fine Performance Metrics*
(``/individual-fine-performance-metrics``), choose the unit "cells" to read the cells of
``sw-align``, and "seconds" for its time.

What is counted is the problem's matrix, sum over rows of |query| x |target| (the usual GCUPS
convention): a row recomputed by a wider kernel after a 16-bit saturation is counted once.
Null rows count 0. A task whose worker dies before it finishes reports nothing; the
scheduler's retry reports again, so a job that lost a worker can show more cells than its
matrix.
"""
from __future__ import annotations

import sys

import pandas as pd

#: Label and unit of the metric (the dashboard lists the unit in its unit selector).
CELLS_LABEL = "cells"
CELLS_UNIT = "cells"


def report_cells(cells: int) -> None:
    """Report ``cells`` to the Dask worker running the current task; a no-op elsewhere.

    Outside a worker (pandas, Dask's local schedulers, a client) no metric callback is set,
    so ``digest_metric`` calls nothing. A task running on a worker has ``distributed``
    imported already, so when it is not, there is no worker to report to and we skip the
    import (distributed is a large package) rather than pay for it on a pandas run.
    """
    metrics = sys.modules.get("distributed.metrics")
    if metrics is None or cells <= 0:
        return
    metrics.context_meter.digest_metric(CELLS_LABEL, float(cells), CELLS_UNIT)


def column_total(values) -> int:
    """The sum of a column of numbers (nulls skipped; 0 for none)."""
    # a reduction of the column's own library (pandas, or cuDF on the device): nulls skipped,
    # an empty or all-null column sums to 0
    total = values.sum()
    return 0 if pd.isna(total) else int(total)


def one_to_many_cells(query_length: int, targets) -> int:
    """Cells of one query of ``query_length`` residues against every row of ``targets`` (a
    pandas or cuDF Series of strings; sequences are ASCII, so characters are residues)."""
    return int(query_length) * column_total(targets.str.len())


def pair_cells(queries, targets) -> int:
    """Cells of row-by-row alignment: sum of |query_r| x |target_r| (0 where either is null).
    Rows pair by position, as in :func:`swdask.align_pairs`, not by index label."""
    query_lengths = queries.str.len().reset_index(drop=True)
    target_lengths = targets.str.len().reset_index(drop=True)
    return column_total(query_lengths * target_lengths)


def _worker_totals(dask_worker, prefix: str) -> dict:
    totals: dict = {}
    for key, value in dask_worker.digests_total.items():
        # a worker files task metrics as ("execute", span, task prefix, label, unit)
        if isinstance(key, tuple) and len(key) == 5 and key[0] == "execute" \
                and key[2] == prefix:
            totals[key[3:]] = totals.get(key[3:], 0) + value
    return totals


def task_totals(client, prefix: str = "sw-align") -> dict[str, float]:
    """Cells and seconds of the ``prefix`` tasks the cluster's workers have run, from their
    fine performance metrics: ``{"cells": ..., "seconds": ...}``.

    ``seconds`` is the tasks' wall time summed over tasks (the ``thread-cpu`` plus
    ``thread-noncpu`` seconds distributed measures around each task), so
    ``cells / seconds / 1e9`` is GCUPS per running task. Counts are since each worker
    started: a restarted worker's are gone (the scheduler's sums, which the dashboard shows,
    keep them).
    """
    cells = seconds = 0.0
    for totals in client.run(_worker_totals, prefix=prefix).values():
        cells += totals.get((CELLS_LABEL, CELLS_UNIT), 0)
        seconds += sum(totals.get((label, "seconds"), 0)
                       for label in ("thread-cpu", "thread-noncpu"))
    return {"cells": cells, "seconds": seconds}
