#!/usr/bin/env python3
"""The README's GPU recipe as a script (issue 44): a LocalCUDACluster, the database read as
cuDF partitions and persisted with equal residues per GPU, then ``db.sw.search(queries,
top=10)``, and the same search again on the persisted database.

    python benchmarks/bench_search_recipe_gpu.py QUERIES.fasta DB.fasta --hits hits.tsv

Prints one line, ``recipe {json}``: the seconds of each step (``imports``: swdask and its
Dask modules; ``cluster``: ``swdask.cluster(gpu=True)``; ``read_persist``: ``read_fasta``
with ``backend="cudf"`` and ``persist_balanced``; ``search``: the first search, to the
hits in this process; ``search_again``), the partitions and workers, and for each search
(``inside``) each worker's seconds by swdask stage (``swdask.lowlevel.stage_seconds``) and
its seconds computing the ``sw-search`` tasks (the task stream); with ``--json PATH`` the
same record is also written there (a device call brings back only a few of its files, and
a long printed line may be cut). The hits go to
``--hits`` as the search job writes them (query_id, rank, target_id, score, positions), to
compare with it. Its whole wall clock is the caller's to time (``bench_search_job.py
--recipe-gpus`` runs it as a new process, as a user would). Run it as a script file: the
cluster starts processes that import ``__main__``.
"""
from __future__ import annotations

import time

START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries")
    parser.add_argument("database")
    parser.add_argument("--hits", required=True)
    parser.add_argument("--blocksize", default="64MB", help="read_fasta's (its default)")
    parser.add_argument("--json", help="also write the record to this file")
    args = parser.parse_args()

    from distributed import get_task_stream

    import swdask
    from swdask.lowlevel import stage_seconds

    seconds = {"imports": time.perf_counter() - START}
    mark = time.perf_counter()
    with swdask.cluster(gpu=True) as client:
        seconds["cluster"] = time.perf_counter() - mark
        mark = time.perf_counter()
        queries = swdask.read_fasta(args.queries, blocksize=None).compute()
        db = swdask.read_fasta(args.database, blocksize=args.blocksize, backend="cudf")
        db = swdask.persist_balanced(db, client)
        seconds["read_persist"] = time.perf_counter() - mark
        inside = {}
        client.run(stage_seconds)  # from zero
        for name in ("search", "search_again"):
            with get_task_stream(client) as stream:
                mark = time.perf_counter()
                hits = db.sw.search(queries, top=10, keep=["id"]).compute()
                seconds[name] = time.perf_counter() - mark
            inside[name] = {"stages": client.run(stage_seconds),
                            "computing": _computing(stream.data)}
        workers = len(client.scheduler_info()["workers"])
        partitions = db.npartitions
    hits = hits.rename(columns={"id": "target_id"})
    hits[["query_id", "rank", "target_id", "score", "query_start", "query_end",
          "target_start", "target_end"]].to_csv(args.hits, sep="\t", index=False)
    record = {"seconds": seconds, "workers": workers, "partitions": partitions,
              "inside": inside}
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)
    print("recipe " + json.dumps(record), flush=True)
    return 0


def _computing(records) -> dict:
    """Seconds each worker computed the search's tasks (``sw-search``), by worker, from the
    task stream's records."""
    found = {}
    for record in records:
        if not str(record["key"]).startswith("('sw-search"):
            continue
        for span in record["startstops"]:
            if span["action"] == "compute":
                found[record["worker"]] = (found.get(record["worker"], 0.0)
                                           + span["stop"] - span["start"])
    return found


if __name__ == "__main__":
    raise SystemExit(main())
