"""Persist a frame's partitions across a cluster's workers balanced by residues.

Alignment time is proportional to residues, and a task runs where its partition lives, so a
database persisted for many queries should give each worker (each GPU) the same residues.
Dask's own placement of a persisted collection follows which worker is free first, and
``Client.rebalance`` balances bytes only above memory thresholds; neither promises that. Here
the partitions are persisted, counted (residues of ``column``, in place), assigned to workers
greedily (largest first onto the least loaded worker), and those on the wrong worker are
copied once to their worker with a task pinned there.
"""
from __future__ import annotations

from ._metrics import one_to_many_cells


#: A planned placement whose busiest worker would hold more than this fraction of residues
#: above the workers' mean is cut again into one partition per worker of equal residues:
#: partitions too coarse for the cluster (sp500k's four 64 MB partitions on two GPUs hold 125
#: and 101 million residues per worker; three on two workers, twice as many on one) leave
#: every other worker waiting for the busiest.
UNEVEN = 0.05


def _residues(part, column) -> int:
    return one_to_many_cells(1, part[column])  # residues = cells of a 1-letter query


def _same(part):
    return part


def plan_placement(residues: list[int], workers: list[str]) -> list[str]:
    """The worker of each partition: largest partition first onto the least loaded worker
    (ties: the partition's index order, then the workers' order), so residues per worker
    differ by at most the largest partition."""
    load = {worker: 0 for worker in workers}
    placement = [None] * len(residues)
    for index in sorted(range(len(residues)), key=lambda k: (-residues[k], k)):
        worker = min(workers, key=lambda w: (load[w], workers.index(w)))
        placement[index] = worker
        load[worker] += residues[index]
    return placement


def persist_balanced(frame, client=None, column: str = "sequence"):
    """Persist ``frame`` (a Dask DataFrame) on ``client``'s workers (default: the current
    client) so that each worker holds about the same number of residues of ``column``.

    Returns the persisted frame: same rows, index, columns and order as ``frame``; where
    each partition is held differs, and where the partitions cannot be shared out evenly,
    how the rows are cut. The partitions go to the workers largest first, each onto the
    least loaded. Where that would leave the busiest worker more than :data:`UNEVEN` (5%)
    above the mean (partitions too coarse for the cluster: sp500k's four 64 MB partitions
    on two GPUs, or a small file read in one partition, every GPU but one idle), the frame
    is cut instead into one partition per worker of equal residues
    (:func:`~swdask.balance_by_residues`, on the persisted rows: the file is read once), so
    its divisions then differ from ``frame``'s; where that cannot be done (unknown
    divisions) and workers would hold nothing, a warning says how to fix it. One large
    partition per GPU is also what a GPU searches fastest: each partition costs every query
    of a search a pass of its own (docs/notes/gpu-several-gpus-and-dask.md, small
    partitions). Partitions moved to reach the plan are copied once between workers.
    """
    import dask
    import dask.dataframe as dd
    from distributed import default_client, futures_of, wait

    client = client or default_client()
    if column not in frame.columns:
        raise KeyError(f"column={column!r} is not a column of the frame; it has "
                       f"{list(frame.columns)}")
    persisted = client.persist(frame)
    wait(persisted)
    workers = sorted(client.scheduler_info()["workers"])
    if persisted.npartitions < len(workers):
        persisted = _one_part_per_worker(client, persisted, len(workers), column)
    residues = _count_residues(client, persisted, column)
    target = plan_placement(residues, workers)
    if (persisted.npartitions > len(workers) and persisted.known_divisions
            and _above_mean(residues, target, workers) > UNEVEN):
        persisted = _one_part_per_worker(client, persisted, len(workers), column)
        residues = _count_residues(client, persisted, column)
        target = plan_placement(residues, workers)
    futures = futures_of(persisted)
    by_index = {future.key[1]: future for future in futures}
    parts = persisted.to_delayed()
    holders = client.who_has(futures)
    placed = []
    for index, part in enumerate(parts):
        future = by_index.get(index)
        held = set(holders.get(future.key, ())) if future is not None else set()
        if future is not None and target[index] in held:
            placed.append(future)
        else:
            placed.append(client.compute(dask.delayed(_same)(part), workers=[target[index]],
                                         allow_other_workers=False))
    wait(placed)
    return dd.from_delayed(placed, meta=frame._meta, divisions=persisted.divisions,
                           verify_meta=False)


def _count_residues(client, persisted, column: str) -> list[int]:
    """The residues of ``column`` in each partition of ``persisted``, counted where it is."""
    import dask

    return client.gather(client.compute([dask.delayed(_residues)(part, column)
                                         for part in persisted.to_delayed()]))


def _above_mean(residues, placement, workers) -> float:
    """How far the busiest of ``workers`` is above their mean under ``placement``, as a
    fraction of the mean (0 where there are no residues)."""
    load = dict.fromkeys(workers, 0)
    for count, worker in zip(residues, placement):
        load[worker] += count
    mean = sum(residues) / len(workers)
    return max(load.values()) / mean - 1 if mean else 0.0


def _one_part_per_worker(client, persisted, workers: int, column: str):
    """``persisted`` cut into ``workers`` partitions of equal residues and persisted again
    (its rows are in memory, so nothing is read twice), or left as it is, with a warning
    that says what to do, where its divisions are unknown."""
    import warnings

    from distributed import wait

    from ._balance import balance_by_residues

    if not persisted.known_divisions:
        warnings.warn(
            f"persist_balanced: the frame has {persisted.npartitions} partition(s) for "
            f"{workers} workers, so {workers - persisted.npartitions} worker(s) will hold "
            "nothing and stay idle, and it cannot be cut by residues without known "
            "divisions; read it with swdask.read_fasta (smaller blocksize=) or call "
            "frame.reset_index(drop=True) first", stacklevel=3)
        return persisted
    split = client.persist(balance_by_residues(persisted, workers, column))
    wait(split)
    return split
