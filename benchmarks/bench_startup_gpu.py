#!/usr/bin/env python3
"""A fresh machine's first ``swdask search --backend gpu`` against the warm job (issue 45).

(``--backend cudf``: the same with the database in cuDF partitions.)

W1 (the 20 queries of ``cudasw_queries.fasta`` against sp500k, top 10) as a user runs it, a
new process from the shell to the hits file, ``--verbose`` for its phases, on one GPU. For
each kernel source of ``--kernels``:

* ``prebuilt``: the kernels compiled ahead and shipped with the package (the default);
* ``nvrtc``: every kernel compiled on first use (``DASK_SWDASK__GPU__PREBUILT=false``), as
  before the package shipped them;

the job runs first ``cold``, with every cache a fresh machine lacks empty (new folders for
CuPy's kernel cache ``CUPY_CACHE_DIR``, numba's ``NUMBA_CACHE_DIR`` and the driver's PTX cache
``CUDA_CACHE_PATH``), then ``--repeats`` times warm with those folders as the cold run left
them.

With ``--workers`` (after those), the job also runs as a cluster job on newly started Dask
workers: a scheduler and one ``dask worker`` per GPU (``--gpus``), then ``swdask search
--scheduler`` ``1 + --repeats`` times: the first job on the new workers (``runner:
"scheduler"``, ``first_on_workers: true``) against the later ones (``over_later``). For each
of ``--workers``' settings (``plain`` workers, and workers started with ``--preload
swdask.preload``: ``preload``), two rounds of new workers: ``numba_cache: "empty"`` (a new
folder for numba's cache, whose FASTA reader the cluster job runs and the one-process job
does not; the other caches as the runs above left them) and then ``"warm"`` (as the first
round left it: a node whose disk caches are filled).

Each record: ``workload`` (``startup-search-W1``), ``backend``, ``device``, ``gpus``,
``commit``, ``date``, ``kernels``, ``runner`` (``process`` or ``scheduler``), ``cold``,
``wall_seconds``, ``phases``,
``cupy_cache_files`` (the kernels CuPy compiled into its cache by then: its own array
operations', and swdask's under NVRTC), ``over_warm`` (this run against the fastest warm run of
the same kernel source) and ``same_hits`` (the hits file equals the first run's, byte for
byte).

    python benchmarks/bench_startup_gpu.py --db /tmp/swdask-bench/sp500k.fa --out $OUT
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import tempfile
from pathlib import Path

from _common import add_commit_argument, read_fasta, stamp, write_result
from bench_search_job import _gpus_env, _job, _write_fasta, scheduler_with_workers

QUERIES_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "cudasw_queries.fasta"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k (FASTA)")
    parser.add_argument("--queries", default=str(QUERIES_PATH))
    parser.add_argument("--kernels", default="prebuilt,nvrtc")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--backend", default="gpu", choices=("gpu", "cudf"),
                        help="the job's --backend (cudf: cuDF and dask-cuda installed)")
    parser.add_argument("--workers", default="",
                        help="also the job on newly started Dask workers, for these settings "
                             "(plain,preload; see above)")
    parser.add_argument("--gpus", type=int, default=1, help="GPU workers for --workers")
    parser.add_argument("--out", default="benchmarks/results/startup")
    add_commit_argument(parser)
    args = parser.parse_args()

    header = {**stamp(args.commit), "workload": "startup-search-W1", "backend": args.backend,
              "gpus": 1, "database": Path(args.db).name}
    runs = []
    with tempfile.TemporaryDirectory(prefix="swdask-startup-") as tmp:
        work = Path(tmp)
        query_file = work / "W1.fasta"
        _write_fasta(query_file, read_fasta(args.queries))
        first_hits = None
        for kernels in args.kernels.split(","):
            caches = work / f"caches-{kernels}"
            env = {**_gpus_env(1), "CUPY_CACHE_DIR": str(caches / "cupy"),
                   "NUMBA_CACHE_DIR": str(caches / "numba"),
                   "CUDA_CACHE_PATH": str(caches / "driver"),
                   "DASK_SWDASK__GPU__PREBUILT": "true" if kernels == "prebuilt" else "false"}
            shutil.rmtree(caches, ignore_errors=True)
            mine = []
            for repeat in range(1 + args.repeats):
                output = work / f"hits-{kernels}-{repeat}.tsv"
                seconds, phases = _job(query_file, args.db, output, args.backend, env)
                first_hits = first_hits or output
                files = sum(1 for _ in (caches / "cupy").rglob("*") if _.is_file()) \
                    if (caches / "cupy").exists() else 0
                record = {**header, "kernels": kernels, "runner": "process",
                          "cold": repeat == 0,
                          "wall_seconds": seconds, "phases": phases, "cupy_cache_files": files,
                          "same_hits": filecmp.cmp(first_hits, output, shallow=False)}
                mine.append(record)
                print(f"{kernels} {'cold' if repeat == 0 else 'warm'}: {seconds:.2f} s, "
                      f"CuPy cache {files} files; {phases}", flush=True)
            warm = min(r["wall_seconds"] for r in mine if not r["cold"])
            for record in mine:
                record["over_warm"] = record["wall_seconds"] / warm
            runs += mine
            for setting in filter(None, args.workers.split(",")):
                numba = caches / f"numba-workers-{setting}"
                for numba_cache in ("empty", "warm"):
                    runs += _on_new_workers(args, header, kernels,
                                            {**env, "NUMBA_CACHE_DIR": str(numba)},
                                            query_file, work, first_hits,
                                            setting == "preload", numba_cache)
    path = write_result(args.out, "startup-gpu" if args.backend == "gpu" else "startup-cudf",
                        {**header, "runs": runs}, tag=f"-{header['commit'][:7]}")
    print(f"wrote {path}")
    return 0


def _on_new_workers(args, header, kernels, env, query_file, work, first_hits, preload: bool,
                    numba_cache: str) -> list:
    """The job on newly started Dask workers (``--workers``): the first job against the
    later ones."""
    mine = []
    with scheduler_with_workers(args.gpus, env, preload) as address:
        for repeat in range(1 + args.repeats):
            output = work / f"hits-{kernels}-workers-{repeat}.tsv"
            seconds, phases = _job(query_file, args.db, output, "gpu", env,
                                   extra=("--scheduler", address))
            mine.append({**header, "gpus": args.gpus, "kernels": kernels,
                         "runner": "scheduler", "preload": preload,
                         "numba_cache": numba_cache, "cold": False,
                         "first_on_workers": repeat == 0, "wall_seconds": seconds,
                         "phases": phases,
                         "same_hits": filecmp.cmp(first_hits, output, shallow=False)})
            print(f"{kernels} on new workers ({'preload' if preload else 'plain'}, numba "
                  f"cache {numba_cache}), job {repeat + 1}: {seconds:.2f} s; {phases}",
                  flush=True)
    later = min(r["wall_seconds"] for r in mine[1:]) if len(mine) > 1 else None
    for record in mine:
        record["over_later"] = record["wall_seconds"] / later if later else None
    return mine


if __name__ == "__main__":
    raise SystemExit(main())
