"""The search job's one pipeline (``swdask._runners``): the runner each job gets, one merge of
the runners' partial results, and the Dask workers readying their GPUs beside the reads."""
from __future__ import annotations

import threading

import distributed  # noqa: F401 - its configuration defaults loaded before any config.set
import numpy as np
import pandas as pd
import pytest

from swdask import _dask, _engine, _local_gpus, _runners
from swdask._many_queries import hit_statistics, prepare_queries, search_part
from swdask._options import Options
from swdask._search import search
from swdask._timing import Phases


@pytest.mark.parametrize("backend, scheduler, workers, kind", [
    ("cpu", None, None, _runners.InProcess), ("auto", None, None, _runners.InProcess),
    ("gpu", None, None, _local_gpus.LocalGpus), ("cudf", None, None, _local_gpus.LocalGpus),
    ("cpu", None, 2, _runners.OnCluster), ("cudf", None, 1, _runners.OnCluster),
    ("gpu", "tcp://127.0.0.1:1", None, _runners.OnCluster)])
def test_each_job_gets_its_runner(monkeypatch, backend, scheduler, workers, kind):
    """No cluster asked for: the CPU engine in this process, the GPU engine (gpu and cudf
    alike) on the local GPUs; a cluster (--workers, --scheduler) for any engine."""
    monkeypatch.setattr(_local_gpus, "quick_gpu_count", lambda: 2)
    runner = _runners.pick_runner(backend, scheduler, workers)
    assert type(runner) is kind
    if kind is _local_gpus.LocalGpus:
        assert runner.likely == 2


class SlicesRunner:
    """A runner written for this test: the database in memory, cut into ``parts`` slices,
    each searched by ``search_part`` (what a new runner needs, and nothing else)."""

    def __init__(self, frame, parts):
        self.frame, self.parts, self.events = frame, parts, []

    def start(self):
        self.events.append("start")

    def stop(self):
        self.events.append("stop")

    def partials(self, job):
        self.events.append("partials")
        bounds = np.linspace(0, len(self.frame), self.parts + 1).astype(int)
        found = []
        for number, (first, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
            piece = self.frame.iloc[first:stop]
            found.append(search_part(number, (piece["sequence"], piece[["id"]]), job.prepared,
                                     job.ids, job.options, job.top, job.stats))
        return found[::-1]  # in any order: the merge ranks by part and row


@pytest.mark.parametrize("parts", [1, 3, 7])
@pytest.mark.parametrize("statistics", [None, "blast", "search"])
def test_any_runner_gives_the_hits_of_one_column(protein_db, protein_queries, parts,
                                                 statistics):
    """The one merge (``_runners.run``): the partial results of any runner, in any number
    of parts and in any order, ranked together equal the search of the whole column in
    memory, statistics included (the E-values' search space summed over the parts)."""
    frame = pd.DataFrame({"id": [f"t{k}" for k in range(200)],
                          "sequence": protein_db.iloc[:200].tolist()})
    queries = pd.DataFrame({"id": [f"q{k}" for k in range(4)],
                            "sequence": [s for _, s in protein_queries[:4]]})
    options = Options.parse(matrix="BLOSUM62", gap_open=11, gap_extend=1, positions=True,
                            backend="cpu")
    ids, prepared = prepare_queries(queries, options.scoring)
    job = _runners.SearchJob(
        database=None, queries=queries, ids=ids, prepared=prepared, top=5, options=options,
        statistics=statistics, stats=hit_statistics(statistics, options.scoring, prepared),
        blocksize="auto", strip_gaps=False, progress=False, phases=Phases(),
        report=lambda line: None)
    runner = SlicesRunner(frame, parts)
    got = _runners.run(job, runner)
    want = frame.sw.search(queries, top=5, keep=["id"], statistics=statistics,
                           matrix="BLOSUM62", gap_open=11, gap_extend=1, backend="cpu")
    assert len(got) > 0
    pd.testing.assert_frame_equal(got, want)
    assert runner.events == ["partials"]
    assert "search" in job.phases.seconds


def test_the_job_stops_its_runner_after_a_failure(tmp_path, monkeypatch):
    """``search`` starts the runner before the queries are read and stops it whatever
    happens: here the queries hold a bad letter."""
    runner = SlicesRunner(pd.DataFrame({"id": [], "sequence": []}), 1)
    monkeypatch.setattr("swdask._search.pick_runner", lambda *args: runner)
    queries = tmp_path / "q.fasta"
    queries.write_text(">bad\nMK1LV\n")
    database = tmp_path / "db.fasta"
    database.write_text(">t\nMKLV\n")
    with pytest.raises(ValueError, match="'bad'"):
        search(queries, database, backend="cpu", progress=False, report=lambda line: None)
    assert runner.events == ["start", "stop"]


class HeldWarmUp:
    """A backend whose warm-up waits until the test lets it go, and records what it
    readied."""

    def __init__(self):
        self.readied, self.go = [], threading.Event()

    def warm_up(self, lengths, scoring):
        self.go.wait(timeout=30)
        self.readied.append((tuple(lengths), scoring.name))


def test_search_tasks_wait_for_the_workers_warm_up(monkeypatch):
    """``warm_workers`` starts each worker's warm-up for the job's queries on a thread
    (``Client.run``, which returns once the threads are started, not finished); a search
    task waits for it before it searches, so no kernel is loaded twice at once."""
    from distributed import Client, LocalCluster

    backend = HeldWarmUp()
    monkeypatch.setattr(_engine, "get_backend", lambda name="auto", *arrays: backend)
    scoring = Options.parse(matrix="BLOSUM62", backend="cpu").scoring
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        _dask.warm_workers(client, [120, 300], scoring)  # returns with the warm-up held
        assert backend.readied == []
        assert [t for t in threading.enumerate() if t.name == "swdask-warm-up"]
        backend.go.set()
        _dask._wait_for_warm_up()  # what each search task does first
        assert backend.readied == [((120, 300), "BLOSUM62")]
        assert not _dask._WARM_UP
