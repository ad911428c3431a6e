"""``swdask.persist_balanced``: partitions persisted so that workers hold equal residues."""
from __future__ import annotations

from pathlib import Path

import dask
import distributed  # noqa: F401  (its config defaults loaded before the tests' config.set:
import pytest        # a set made before the import would drop them again on exit)

import swdask
from swdask._placement import plan_placement

EXAMPLE_DB = Path(__file__).resolve().parents[1] / "examples" / "data" / "db.fasta"


def test_plan_balances_within_one_partition():
    residues = [90, 10, 10, 10, 50, 40, 30, 5, 5, 60]
    workers = ["a", "b", "c"]
    placement = plan_placement(residues, workers)
    load = {w: sum(r for r, p in zip(residues, placement) if p == w) for w in workers}
    assert sum(load.values()) == sum(residues)
    assert max(load.values()) - min(load.values()) <= max(residues)
    # the greedy plan is as good as this: no worker above the ideal plus one partition
    assert max(load.values()) <= sum(residues) / 3 + max(residues)
    assert plan_placement([], workers) == []
    assert plan_placement([7, 7], ["only"]) == ["only", "only"]


def _where_and_residues(part):
    from distributed import get_worker

    return get_worker().address, int(part["sequence"].str.len().sum())


def test_workers_hold_equal_residues_and_results_are_unchanged():
    query = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEK"
    # no work stealing: each reading task runs where its partition lives (on a loaded
    # machine a stolen task reported the thief's address, not the holder's)
    with dask.config.set({"distributed.scheduler.work-stealing": False}), \
            swdask.cluster(gpu=False, n_workers=2, dashboard_address=":0",
                           report=None) as client:
        frame = swdask.read_fasta(EXAMPLE_DB, blocksize=40_000)
        balanced = swdask.persist_balanced(frame, client)
        assert balanced.npartitions == frame.npartitions
        assert balanced.divisions == frame.divisions
        found = dask.compute(*[dask.delayed(_where_and_residues)(part)
                               for part in balanced.to_delayed()])
        per_worker = {}
        for worker, residues in found:
            per_worker[worker] = per_worker.get(worker, 0) + residues
        assert len(per_worker) == 2
        largest = max(residues for _, residues in found)
        assert max(per_worker.values()) - min(per_worker.values()) <= largest
        got = balanced.sw.align(query, column="sequence").compute()
        want = frame.compute().sw.align(query, column="sequence")
        assert got.equals(want)
        with pytest.raises(KeyError, match="column='seq'"):
            swdask.persist_balanced(frame, client, column="seq")


@pytest.mark.parametrize("parts", [1, 3])
def test_partitions_too_coarse_for_the_workers_are_cut_one_per_worker(parts):
    """A database read in one partition, or in three of about equal residues, on a cluster
    of two workers: placed whole, one worker would stay idle, or hold twice the other's
    residues (the search waiting for it), so persist_balanced cuts the frame into two
    partitions of equal residues, one per worker; the rows and results are unchanged.
    Partitions fine enough to share out evenly are left as they are
    (test_workers_hold_equal_residues_and_results_are_unchanged). Without known divisions a
    frame cannot be cut, and where a worker would hold nothing a warning says so."""
    import dask.dataframe as dd

    from swdask._placement import _above_mean

    assert _above_mean([10, 10, 10], ["a", "b", "a"], ["a", "b"]) == pytest.approx(1 / 3)
    assert _above_mean([10, 10], ["a", "b"], ["a", "b"]) == 0
    assert _above_mean([10], ["a"], ["a", "b"]) == 1  # a worker holding nothing counts
    query = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEK"
    blocksize = None if parts == 1 else EXAMPLE_DB.stat().st_size // parts + 1
    with dask.config.set({"distributed.scheduler.work-stealing": False}), \
            swdask.cluster(gpu=False, n_workers=2, dashboard_address=":0",
                           report=None) as client:
        frame = swdask.read_fasta(EXAMPLE_DB, blocksize=blocksize)
        assert frame.npartitions == parts
        balanced = swdask.persist_balanced(frame, client)
        assert balanced.npartitions == 2
        found = dask.compute(*[dask.delayed(_where_and_residues)(part)
                               for part in balanced.to_delayed()])
        assert len({worker for worker, _ in found}) == 2
        residues = [r for _, r in found]
        longest = int(frame["sequence"].str.len().max().compute())
        assert abs(residues[0] - residues[1]) <= 2 * longest
        assert balanced.compute().equals(frame.compute())
        got = balanced.sw.align(query, column="sequence").compute()
        assert got.equals(frame.compute().sw.align(query, column="sequence"))

        if parts == 1:
            unknown = dd.from_pandas(frame.compute(), npartitions=1).clear_divisions()
            with pytest.warns(UserWarning, match="idle"):
                kept = swdask.persist_balanced(unknown, client)
            assert kept.npartitions == 1
