"""A worker process killed in the middle of a ``ddf.sw.align`` job: the job completes, and every
row equals the pandas result.

No timing is assumed: the test asks the workers what they hold and run, and kills (SIGKILL) a
worker at a moment when it holds finished ``sw-align`` results that the job still needs (they
are lost with it), is running another ``sw-align`` task, and several partitions are not done
yet. The nanny starts a new worker; the scheduler recomputes what was lost.
"""
from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

import swdask

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"
#: The example database read this many times over, one partition per copy: each ``sw-align``
#: task then aligns ~1M residues (a fifth of a second on one core), so the job lasts long
#: enough to be caught in the middle whatever the machine.
COPIES = 12
#: Partitions that must still be unfinished when the worker is killed.
UNFINISHED_AT_KILL = 4


def _worker_state(dask_worker, prefix: str) -> dict:
    """What one worker says of its ``prefix`` tasks: results it holds, tasks it is running."""
    from dask.utils import key_split

    return {
        "held": sum(1 for key in dask_worker.data if key_split(key) == prefix),
        "executing": sum(1 for task in dask_worker.state.executing
                         if key_split(task.key) == prefix),
    }


def _victim(states: dict, partitions: int) -> str | None:
    """A worker whose death now loses finished results and interrupts a running task, while
    enough partitions are unfinished (results stay on their workers until the job's last
    task, which needs them all, so held results are the finished ones)."""
    finished = sum(state["held"] for state in states.values())
    if partitions - finished < UNFINISHED_AT_KILL:
        return None
    for address, state in states.items():
        if state["held"] and state["executing"]:
            return address
    return None


@pytest.fixture(scope="module")
def job():
    """A database of COPIES x examples/data/db.fasta (real UniProt proteins), its longest
    protein of at most 2,500 residues as query, and the pandas result."""
    database = swdask.read_fasta([str(EXAMPLES / "db.fasta")] * COPIES, blocksize=None)
    assert database.npartitions == COPIES
    records = database.compute(scheduler="sync")
    lengths = records["sequence"].str.len()
    query = records["sequence"][lengths[lengths <= 2500].idxmax()]
    expected = records.sw.align(query)  # the pandas accessor on the same rows
    assert (expected["score"] > 0).all()
    return database, query, expected


def test_worker_killed_mid_job_gives_identical_results(job):
    distributed = pytest.importorskip("distributed")
    from swdask._cluster import cluster
    from swdask._dask import TASK_PREFIX

    database, query, expected = job
    # one numba thread per worker keeps each task's duration the same on any machine
    with cluster(n_workers=2, threads_per_worker=1, gpu=False, dashboard_address=":0",
                 report=None, env={"NUMBA_NUM_THREADS": "1"},
                 silence_logs=logging.ERROR) as client:
        pids = client.run(os.getpid)
        assert len(pids) == 2
        with distributed.get_task_stream(client) as stream:
            future = client.compute(database.sw.align(query))
            deadline = time.monotonic() + 60
            victim = None
            while victim is None:
                states = client.run(_worker_state, prefix=TASK_PREFIX)
                victim = _victim(states, COPIES)
                assert not future.done(), f"the job ended before a kill: {states}"
                assert time.monotonic() < deadline, f"no moment to kill a worker: {states}"
                if victim is None:
                    time.sleep(0.01)
            os.kill(pids[victim], signal.SIGKILL)
            result = future.result(timeout=120)

        pd.testing.assert_frame_equal(result, expected)
        # the killed worker is gone, its nanny started another, and the finished results it
        # held were computed again elsewhere
        client.wait_for_workers(2, timeout=60)
        assert victim not in client.scheduler_info()["workers"]
        aligned = [record for record in stream.data if TASK_PREFIX in str(record["key"])]
        assert len({str(record["key"]) for record in aligned}) == COPIES
        assert len(aligned) >= COPIES + states[victim]["held"]
