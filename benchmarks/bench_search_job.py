"""The whole ``swdask search`` job, timed as a user sees it: a new process from the shell to
the hits file written, with the phases the job reports (``--verbose``), beside the peer's
whole program on the same data in the same run.

CPU sets (issue 10): the first N queries of mmseqs2-examples' QUERY.fasta.gz against its
DB.fasta (decompressed once), top 10, BLOSUM62, gaps 11 + (k-1); the peer is
``ssearch36 -T <cores> -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0`` (Debian package fasta3), which
also computes alignments and E-values. Writes ``search-<device>-<date>.json`` with a list
``runs``: ``workload``, ``backend``, ``device``, ``gpus``, ``date``, ``commit``, ``queries``,
``wall_seconds`` (each repeat, and the best), ``phases`` (seconds by phase, of the best
run), ``effective_tcups`` (cells / best wall / 1e12; cells = sum of query lengths x database
residues), ``ssearch36_wall_seconds``, and in the same run the engine alone
(``engine_seconds``, ``engine_gcups``: ``swdask.lowlevel`` search of the encoded database in
this process, no cluster, no reading or writing; best of the repeats).

    python benchmarks/bench_search_job.py --sets 10 100 --out benchmarks/results/search-cpu

GPU sets (``--gpu``, on the GPU machine: ``ci/gpu_run.sh``'s ``search`` step), for each
``--backends`` (``gpu``; ``cudf`` where cuDF and dask-cuda are importable):

* ``search-W1``: the 20 queries of ``cudasw_queries.fasta`` against sp500k, top 10. The first
  run is a fresh machine's (empty CuPy and numba caches: ``wall_seconds_cold``), then
  ``--repeats`` warm runs. Beside it, in the same run: reading sp500k alone
  (``read_seconds``, ``read_mb_per_s``: ``swdask.read_fasta(blocksize=None)`` into one
  pandas frame with a ``str`` sequence column; ``read_default_seconds``,
  ``read_default_mb_per_s``: ``swdask.read_fasta(path).compute()`` as a user calls it, its
  default partitions read on threads; the fastest of three, all three in
  ``read_default_seconds_all``; the one frame the faster of two), the same file gzipped
  (``read_gzip_*``: ``read_fasta(path.gz).compute()``, one partition, beside
  ``gunzip_*``, the decompression alone: the read decompresses the file twice, once to
  plan its partition and once to parse it), the engine
  alone (``engine_seconds``: search of the encoded database in this process), and the check
  that the job's hits equal the per-query ``.sw.align`` (full positions) + ranking on every
  query (``check_mismatches``).
  For ``cudf`` (where cuDF is installed) the same record holds ``import_seconds``: new
  processes that import swdask, CuPy and cuDF (what cuDF frames would add to the job,
  which makes none).
* ``search-1000``: ``--sample`` proteins drawn from ``--sample-from`` (mmseqs2's DB.fasta.gz,
  ``seed`` in the JSON) against sp500k, top 10, ``--repeats`` runs (the first may compile
  kernel variants W1's runs did not), the fastest in ``wall_seconds``; the first 100 of
  them are also searched against the sample's source with the GPU and the CPU backends and
  the hits compared (``exactness``).

With ``--gpu-counts 1 2``, each job (``gpu`` and ``cudf``: with no cluster both run on the
local GPUs, cuDF not needed) runs again on 2 GPUs of the machine (one record each with
``gpus``, ``over_one_gpu``, ``x_linear``, ``equal_to_one_gpu``); every one-GPU job sees only
the first GPU (``CUDA_VISIBLE_DEVICES=0``). With ``--scheduler-gpus N``, each ``gpu`` job
also runs with ``--scheduler`` on a Dask scheduler with one plain ``dask worker`` per GPU
(``runner: "scheduler"``). Where cuDF and dask-cuda are installed, each ``gpu`` job also
runs with cuDF partitions on a LocalCUDACluster of N GPUs for each N of ``--recipe-gpus``:
``--backend cudf --workers N`` (``runner: "cluster"``) and the README's recipe as a script
(``bench_search_recipe_gpu.py``, ``runner: "recipe"``, its steps in ``phases``).

``kernel_tcups`` is the W1 kernel-only figure of the same run (``--w1-json``, the W1 JSON
that ``bench_w1_gpu.py`` wrote in the same device call).
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (add_commit_argument, read_fasta, run_process, sample_proteins, stamp,
                     write_result)


def _engine_seconds(queries, database, repeats: int, backend: str = "cpu") -> float:
    """The search engine alone: every query against the encoded database, top 10, all
    positions, in this process (best of ``repeats``)."""
    import swdask
    from swdask.lowlevel import encode, search_many, prepare_query

    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    encoded = encode(database["sequence"], scoring)
    prepared = [prepare_query(q, scoring) for q in queries["sequence"]]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        search_many(prepared, encoded, 10, "full", backend=backend)
        best = min(best, time.perf_counter() - start)
    return best

MMSEQS = Path("/usr/share/doc/mmseqs2/example-data")


def _compile_swdask() -> str:
    """swdask's modules compiled to bytecode once, as ``pip install`` does (what the JSON's
    ``bytecode`` says). Where ``PYTHONDONTWRITEBYTECODE`` is set, as on the development
    machine, every job otherwise compiled the checkout's modules from source: the 10-query
    job's imports took 1.24-1.43 s, and 0.68-0.96 s once compiled (2-core AMD EPYC,
    2026-11-26), a cost no installed copy pays. (``ci/gpu_run.sh`` does the same on the
    GPU machine.)"""
    import compileall

    import swdask

    compileall.compile_dir(str(Path(swdask.__file__).parent), quiet=1)
    return "compiled once before the runs, as pip install does"


def _write_fasta(path: Path, frame) -> None:
    with open(path, "w") as out:
        for name, sequence in zip(frame["id"], frame["sequence"]):
            out.write(f">{name}\n{sequence}\n")


def _phases(stderr: str) -> dict[str, float]:
    """The job's phases (``--verbose``); stages inside its tasks, when it reports them, as
    ``task_<stage>`` (thread-seconds)."""
    line = next((ln for ln in stderr.splitlines() if ln.startswith("swdask: phases:")), "")
    job, _, tasks = line.partition(":")[2].partition(":")[2].partition(";")
    found = {name: float(value) for name, value in re.findall(r"(\w+) ([0-9.]+) s", job)}
    found.update({f"task_{name}": float(value) for name, value in
                  re.findall(r"(\w+) ([0-9.]+) s", tasks.partition(":")[2])})
    return found


def _job(query_file, database, output, backend, env=None, extra=()) -> tuple[float, dict]:
    """One ``swdask search`` process: its wall clock and the phases it reports."""
    seconds, stderr = run_process([sys.executable, "-m", "swdask", "search", query_file,
                                   database, "--top", "10", "-o", output, "--backend", backend,
                                   "--no-progress", "--verbose", *extra], env=env)
    return seconds, _phases(stderr)


def _cold_env(work: Path) -> dict:
    """The environment of a fresh machine's run: empty CuPy and numba caches (one GPU)."""
    cold = work / "cold-caches"
    shutil.rmtree(cold, ignore_errors=True)
    return {**_gpus_env(1), "CUPY_CACHE_DIR": str(cold / "cupy"),
            "NUMBA_CACHE_DIR": str(cold / "numba")}


def _gpus_env(count: int) -> dict:
    """The environment of a job that sees the machine's first ``count`` GPUs."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(map(str, range(count)))}


def _have_cudf() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("cudf", "dask_cudf", "dask_cuda"))


def _import_seconds(repeats: int = 3) -> dict:
    """Wall seconds of new processes that only start Python and import (best of
    ``repeats``): what a job that built cuDF frames would pay for cuDF's import beside
    swdask's (``--backend cudf`` on one GPU makes none: it runs the ``gpu`` job)."""
    programs = {"python": "pass", "swdask": "import swdask",
                "swdask_cupy": "import swdask, cupy",
                "swdask_cupy_cudf": "import swdask, cupy, cudf, dask_cudf"}
    best = {}
    for name, program in programs.items():
        best[name] = min(run_process([sys.executable, "-c", program], env=_gpus_env(1))[0]
                         for _ in range(repeats))
    return {"import_seconds": best}


#: The columns the checks compare (the job also writes bitscore, evalue, the description).
_KEY_COLUMNS = ["query_id", "rank", "target_id", "score", "query_start", "query_end",
                "target_start", "target_end"]


def _hits_key(path) -> "object":
    import pandas as pd

    hits = pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str)
    return hits[_KEY_COLUMNS].reset_index(drop=True)


def _per_query_hits(queries, database, top: int = 10):
    """The hits of each query by ``.sw.align`` (GPU, every position) of the whole database,
    ranked (score descending, then record order), as the job writes them."""
    import pandas as pd

    import swdask  # noqa: F401 - registers .sw

    tables = []
    for query_id, sequence in zip(queries["id"], queries["sequence"]):
        found = database["sequence"].sw.align(sequence, matrix="BLOSUM62", gap_open=11,
                                              gap_extend=1, backend="gpu")
        found = found[found["score"] > 0]
        found = found.assign(_row=found.index)
        found = found.sort_values(["score", "_row"], ascending=[False, True]).head(top)
        tables.append(pd.DataFrame({
            "query_id": query_id, "rank": range(1, len(found) + 1),
            "target_id": database["id"].to_numpy()[found.index.to_numpy()],
            **{c: found[c].to_numpy() for c in ("score", "query_start", "query_end",
                                                "target_start", "target_end")}}))
    table = pd.concat(tables, ignore_index=True)
    return table.astype(str)


def _gzip_read(db_path: Path, work: Path, size_mb: float) -> dict:
    """The database gzipped (``gzip -6``, in ``work``) and read back: ``read_fasta(path.gz)
    .compute()`` (one partition: a gzip stream cannot be split) beside the decompression
    alone (``zlib``, the same library the read uses), each the faster of two, in MB/s of the
    uncompressed text."""
    import zlib

    packed = work / (db_path.name + ".gz")
    with open(packed, "wb") as handle:
        subprocess.run(["gzip", "-6", "-c", str(db_path)], stdout=handle, check=True)
    import swdask

    read, inflate = float("inf"), float("inf")
    for _ in range(2):
        start = time.perf_counter()
        swdask.read_fasta(str(packed)).compute()
        read = min(read, time.perf_counter() - start)
        start = time.perf_counter()
        with open(packed, "rb") as handle:
            zlib.decompress(handle.read(), wbits=31)
        inflate = min(inflate, time.perf_counter() - start)
    print(f"gzip: read_fasta {read:.2f} s ({size_mb / read:.0f} MB/s), decompression alone "
          f"{inflate:.2f} s ({size_mb / inflate:.0f} MB/s)")
    return {"read_gzip_seconds": read, "read_gzip_mb_per_s": size_mb / read,
            "gunzip_seconds": inflate, "gunzip_mb_per_s": size_mb / inflate,
            "gzip_mb": packed.stat().st_size / 1e6}


def _gpu_sets(args, work: Path, header: dict) -> list[dict]:
    import gzip as gz
    import json

    runs = []
    kernel_tcups = None
    if args.w1_json and Path(args.w1_json).exists():
        kernel_tcups = json.loads(Path(args.w1_json).read_text())["gcups_total"] / 1000
    import swdask  # imported before the read is timed

    db_path = Path(args.db)
    read_seconds = float("inf")
    for _ in range(2):  # the second read finds the file in the page cache, as the jobs do
        start = time.perf_counter()
        db_frame = read_fasta(db_path)
        read_seconds = min(read_seconds, time.perf_counter() - start)
    default_all = []
    for _ in range(3):  # the public call with its default partitions (issue 10's read)
        start = time.perf_counter()
        swdask.read_fasta(str(db_path)).compute()
        default_all.append(time.perf_counter() - start)
    default_seconds = min(default_all)
    residues = int(db_frame["sequence"].str.len().sum())
    size_mb = db_path.stat().st_size / 1e6
    gzip_figures = _gzip_read(db_path, work, size_mb)
    # the one-GPU job reads on threads: its own "read" phase is in each record's phases
    common = {**header, "gpus": 1, "database": db_path.name, "database_residues": residues,
              "database_mb": size_mb, "kernel_tcups": kernel_tcups,
              "kernel_source": args.w1_json, "read_seconds": read_seconds,
              "read_mb_per_s": size_mb / read_seconds,
              "read_default_seconds": default_seconds,
              "read_default_seconds_all": default_all,
              "read_default_mb_per_s": size_mb / default_seconds, **gzip_figures}
    print(f"read {db_path.name}: {size_mb:.0f} MB in {read_seconds:.2f} s "
          f"({size_mb / read_seconds:.0f} MB/s) by read_fasta(blocksize=None); "
          f"{default_seconds:.2f} s ({size_mb / default_seconds:.0f} MB/s) by "
          "read_fasta(path).compute()")
    sets = []
    if "W1" in args.gpu_sets:
        sets.append(("search-W1", read_fasta(args.gpu_queries), None))
    if "1000" in args.gpu_sets:
        with gz.open(args.sample_from, "rt") if args.sample_from.endswith(".gz") else \
                open(args.sample_from) as handle:
            source_text = handle.read()
        source = work / "sample-source.fasta"
        source.write_text(source_text)
        sets.append((f"search-{args.sample}", sample_proteins(source, args.sample, args.seed),
                     source))
    for workload, queries, source in sets:
        query_file = work / f"{workload}.fasta"
        _write_fasta(query_file, queries)
        cells = int(queries["sequence"].str.len().sum()) * residues
        # --backend cudf with no cluster runs on the local GPUs as gpu does (no cuDF needed)
        for backend in args.backends:
            output = work / f"{workload}-{backend}.tsv"
            record = {"workload": workload, **common, "backend": backend,
                      "queries": len(queries), "cells": cells}
            if workload == "search-W1":
                cold, cold_phases = _job(query_file, db_path, output, backend, _cold_env(work))
                record.update(wall_seconds_cold=cold, phases_cold=cold_phases)
                print(f"{workload} {backend} cold: {cold:.2f} s {cold_phases}")
            walls, phases = [], {}
            # every set runs --repeats times: the 1,000 queries' first run may compile kernel
            # variants that W1's runs did not (its positions: 1.92 s against 0.10 s, H100)
            for _ in range(args.repeats):
                seconds, found = _job(query_file, db_path, output, backend, _gpus_env(1))
                if not walls or seconds < min(walls):
                    phases = found
                walls.append(seconds)
            wall = min(walls)
            record.update(wall_seconds=wall, wall_seconds_all=walls, phases=phases,
                          effective_tcups=cells / wall / 1e12)
            if kernel_tcups:
                record["effective_over_kernel"] = cells / wall / 1e12 / kernel_tcups
            print(f"{workload} {backend}: {wall:.2f} s {phases}, "
                  f"{cells / wall / 1e12:.2f} TCUPS effective (kernel {kernel_tcups})")
            if workload == "search-W1" and backend == "gpu":  # issue 11: with alignments
                traced = []
                for _ in range(args.repeats):
                    traced.append(_job(query_file, db_path, work / "aligned.tsv", backend,
                                       _gpus_env(1), extra=("--alignment",)))
                best = min(traced, key=lambda run: run[0])
                record.update(wall_seconds_alignment=best[0], phases_alignment=best[1],
                              wall_seconds_alignment_all=[run[0] for run in traced],
                              alignment_over_plain=best[0] / wall,
                              alignment_hits_equal=bool(_hits_key(work / "aligned.tsv")
                                                        .equals(_hits_key(output))))
                print(f"{workload} {backend} --alignment: {best[0]:.2f} s "
                      f"({best[0] / wall:.3f} x without) {best[1]}")
                engine = _engine_seconds(queries, db_frame, 2, backend="gpu")
                record.update(engine_seconds=engine, engine_tcups=cells / engine / 1e12)
                print(f"  engine alone {engine:.2f} s ({cells / engine / 1e12:.2f} TCUPS)")
                expected = _per_query_hits(queries, db_frame)
                got = _hits_key(output)
                same = got.shape == expected.shape and bool((got.values == expected.values)
                                                            .all())
                record.update(check="per-query .sw.align (GPU, full) + ranking, every query",
                              check_rows=len(expected),
                              check_mismatches=0 if same else
                              int((got.values != expected.values).any(axis=1).sum())
                              if got.shape == expected.shape else len(expected))
                print(f"  check against per-query align: {record['check_mismatches']} "
                      f"mismatching rows of {len(expected)}")
            if backend == "cudf" and workload == "search-W1" and _have_cudf():
                record.update(_import_seconds())
                print(f"  new processes: {record['import_seconds']}")
            if backend != "gpu" and (work / f"{workload}-gpu.tsv").exists():
                same = _hits_key(output).equals(_hits_key(work / f"{workload}-gpu.tsv"))
                record["equal_to_gpu_backend"] = bool(same)
                print(f"  hits equal to --backend gpu's: {same}")
            if source is not None and backend == "gpu":
                record["seed"] = args.seed
                first = work / "exactness-queries.fasta"
                subset = queries.iloc[:100]
                _write_fasta(first, subset)
                gpu_hits, cpu_hits = work / "exact-gpu.tsv", work / "exact-cpu.tsv"
                _job(first, source, gpu_hits, "gpu", _gpus_env(1))
                _job(first, source, cpu_hits, "cpu")
                a, b = _hits_key(gpu_hits), _hits_key(cpu_hits)
                record["exactness"] = {
                    "queries": len(subset), "database": "sample source (mmseqs2 DB.fasta.gz)",
                    "rows": len(b), "equal": bool(a.shape == b.shape and (a.values == b.values)
                                                  .all())}
                print(f"  exactness GPU vs CPU: {record['exactness']}")
            if backend == "gpu" and workload != "search-W1" and args.variant:
                # the same job under other settings, alternating with the default (A/B)
                record["variants"] = _variants(args, query_file, db_path, work, wall)
            runs.append(record)
            # the same job on several GPUs of this machine: local processes, and a
            # scheduler with one plain worker per GPU
            runs.extend(_several_gpus(args, record, query_file, db_path, output, work))
            if backend == "gpu" and args.scheduler_gpus:
                runs.append(_on_scheduler(args, record, query_file, db_path, output, work))
            if backend == "gpu" and _have_cudf():  # cuDF partitions on a LocalCUDACluster
                runs.extend(_on_cudf_cluster(args, record, query_file, db_path, output,
                                             work))
    return runs


def _variants(args, query_file, db_path, work: Path, default_wall: float) -> dict:
    """Each ``--variant KEY=VALUE`` (a swdask setting, e.g. ``gpu.query-streams=1``): the
    one-GPU job under it and again under the defaults, alternating (``--variant-repeats``
    rounds); wall seconds of each run and whether its hits equal the defaults'."""
    found = {}
    for variant in args.variant:
        key, _, value = variant.partition("=")
        name = "DASK_SWDASK__" + key.upper().replace(".", "__").replace("-", "_")
        env = {**_gpus_env(1), name: value}
        walls, defaults, equal = [], [default_wall], True
        for _ in range(args.variant_repeats):
            output = work / "variant.tsv"
            walls.append(_job(query_file, db_path, output, "gpu", env)[0])
            equal = equal and bool(_hits_key(output).equals(
                _hits_key(work / f"{query_file.stem}-gpu.tsv")))
            defaults.append(_job(query_file, db_path, work / "default.tsv", "gpu",
                                 _gpus_env(1))[0])
        found[variant] = {"wall_seconds": walls, "default_wall_seconds": defaults,
                          "hits_equal": equal}
        print(f"  variant {variant}: {walls} s; defaults {defaults} s; hits equal: {equal}")
    return found


def _several_gpus(args, one, query_file, db_path, one_output, work: Path) -> list[dict]:
    """The job of record ``one`` (one GPU) again on each of ``--gpu-counts`` GPUs,
    ``--repeats`` runs each as for one GPU, the fastest kept (the first may compile kernel
    variants the one-GPU runs never launched: a further GPU's process takes other batches),
    all in ``wall_seconds_all``: ``over_one_gpu`` (the one-GPU wall over this one),
    ``x_linear`` (that over the GPU count) and whether the hits equal the one-GPU job's."""
    present = int(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
                  .stdout.count("GPU "))
    runs = []
    for count in [c for c in args.gpu_counts if c > 1]:
        if count > present:
            print(f"{one['workload']} on {count} GPUs skipped: this machine has {present}")
            continue
        output = work / f"{one['workload']}-{count}gpus.tsv"
        timed = [_job(query_file, db_path, output, one["backend"], _gpus_env(count))
                 for _ in range(max(1, args.repeats))]
        record = _several_gpus_record(one, count, timed, output, one_output)
        print(f"{one['workload']} {one['backend']} on {count} GPUs: "
              f"{record['wall_seconds']:.2f} s {record['phases']}, "
              f"{record['over_one_gpu']:.2f} x one GPU ({one['wall_seconds']:.2f} s), hits "
              f"equal: {record['equal_to_one_gpu']}")
        runs.append(record)
    return runs


def _several_gpus_record(one, count: int, timed, output, one_output, **fields) -> dict:
    """The record of the job of record ``one`` (one GPU) run on ``count`` GPUs: ``timed``
    its runs (seconds, phases), the fastest kept; ``over_one_gpu``, ``x_linear`` and whether
    its hits (``output``) equal the one-GPU job's (``one_output``); ``fields`` added."""
    seconds, phases = min(timed, key=lambda run: run[0])
    over = one["wall_seconds"] / seconds
    record = {key: one[key] for key in ("workload", "backend", "device", "date", "commit",
                                        "database", "database_residues", "queries", "cells",
                                        "kernel_tcups", "seed") if key in one}
    record.update(fields)
    record.update(gpus=count, wall_seconds=seconds, phases=phases,
                  wall_seconds_all=[run[0] for run in timed],
                  effective_tcups=one["cells"] / seconds / 1e12,
                  one_gpu_wall_seconds=one["wall_seconds"], over_one_gpu=over,
                  x_linear=over / count,
                  equal_to_one_gpu=bool(_hits_key(output).equals(_hits_key(one_output))))
    return record


@contextlib.contextmanager
def scheduler_with_workers(count: int, env: dict | None = None, preload: bool = False):
    """A Dask scheduler and ``count`` plain ``dask worker`` processes (one thread each, GPU
    ``k`` alone for worker ``k``; ``env`` added to their environment; with ``preload``,
    ``--preload swdask.preload``), started here and stopped on exit; yields the scheduler's
    address once every worker has joined."""
    address = "tcp://127.0.0.1:8797"
    started = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                 "--port", "8797", "--dashboard-address", ":0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for device in range(count):
            started.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads",
                 "1", "--no-dashboard", "--name", f"gpu{device}",
                 *(("--preload", "swdask.preload") if preload else ())],
                env={**os.environ, **(env or {}), "CUDA_VISIBLE_DEVICES": str(device)},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=120) as client:
            client.wait_for_workers(count, timeout=120)
        yield address
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=60)


def _on_scheduler(args, one, query_file, db_path, one_output, work: Path) -> dict:
    """The job of record ``one`` (``--backend gpu``, one GPU) on a Dask scheduler with one
    plain ``dask worker`` per GPU (``CUDA_VISIBLE_DEVICES`` one GPU each, one thread), as a
    user runs a cluster job: ``swdask search --scheduler``. The scheduler and workers start
    before the timed jobs (``--repeats`` runs, the fastest kept; the first loads the
    workers' kernels); ``runner`` is ``"scheduler"``."""
    count = args.scheduler_gpus
    with scheduler_with_workers(count) as address:
        output = work / f"{one['workload']}-scheduler.tsv"
        timed = [_job(query_file, db_path, output, "gpu", extra=("--scheduler", address))
                 for _ in range(max(1, args.repeats))]
    record = _several_gpus_record(one, count, timed, output, one_output, runner="scheduler")
    print(f"{one['workload']} on a scheduler with {count} GPU workers: "
          f"{record['wall_seconds']:.2f} s {record['phases']}, {record['over_one_gpu']:.2f} x "
          f"one GPU, hits equal: {record['equal_to_one_gpu']}")
    return record


def _on_cudf_cluster(args, one, query_file, db_path, one_output, work: Path) -> list[dict]:
    """The job of record ``one`` (``--backend gpu``, one GPU) with cuDF partitions on a
    LocalCUDACluster of N GPUs, for each N of ``--recipe-gpus``: ``swdask search --backend
    cudf --workers N`` (``runner: "cluster"``) and the README's recipe as a script
    (``bench_search_recipe_gpu.py``, ``runner: "recipe"``, with its steps), each a new
    process timed from the shell, ``--repeats`` runs, the fastest kept; hits compared with
    the one-GPU job's."""
    import json

    runs = []
    for count in args.recipe_gpus:
        env = _gpus_env(count)
        ways = {
            "cluster": lambda output: _job(query_file, db_path, output, "cudf", env,
                                           extra=("--workers", str(count))),
            "recipe": lambda output: _recipe(query_file, db_path, output, env)}
        for runner, job in ways.items():
            output = work / f"{one['workload']}-{runner}-{count}.tsv"
            try:
                timed = [job(output) for _ in range(max(1, args.repeats))]
            except RuntimeError as exc:  # reported, and the other runs go on
                print(f"{one['workload']} {runner} on {count} GPUs failed: {exc}")
                continue
            record = _several_gpus_record(one, count, timed, output, one_output,
                                          backend="cudf", runner=runner)
            print(f"{one['workload']} cudf {runner} on {count} GPUs: "
                  f"{record['wall_seconds']:.2f} s {json.dumps(record['phases'])}, "
                  f"{record['over_one_gpu']:.2f} x one GPU's gpu job, hits equal: "
                  f"{record['equal_to_one_gpu']}")
            runs.append(record)
    return runs


def _recipe(query_file, db_path, output, env) -> tuple[float, dict]:
    """One run of ``bench_search_recipe_gpu.py`` as a new process: its wall clock and the
    seconds of its steps."""
    import json

    script = Path(__file__).with_name("bench_search_recipe_gpu.py")
    printed = Path(output).with_suffix(".out")
    with open(printed, "w") as stdout:
        seconds, _ = run_process([sys.executable, script, query_file, db_path, "--hits",
                                  output], stdout=stdout, env=env)
    line = next(line for line in printed.read_text().splitlines()
                if line.startswith("recipe "))
    found = json.loads(line[len("recipe "):])
    return seconds, {**found["seconds"], "partitions": found["partitions"],
                     "workers": found["workers"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, nargs="+", default=[10, 100],
                        help="numbers of queries (the first N of the query file)")
    parser.add_argument("--queries", default=str(MMSEQS / "QUERY.fasta.gz"))
    parser.add_argument("--db", default=str(MMSEQS / "DB.fasta.gz"))
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/search-cpu")
    add_commit_argument(parser)
    parser.add_argument("--gpu", action="store_true", help="the GPU sets (see above)")
    parser.add_argument("--alignment", action="store_true",
                        help="CPU sets: the job with --alignment (every hit traced back)")
    parser.add_argument("--gpu-sets", nargs="+", default=["W1", "1000"])
    parser.add_argument("--backends", nargs="+", default=["gpu", "cudf"])
    parser.add_argument("--gpu-queries", help="W1's queries (cudasw_queries.fasta)")
    parser.add_argument("--sample-from", default=str(MMSEQS / "DB.fasta.gz"))
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--w1-json", help="the same run's W1 kernel-only JSON")
    parser.add_argument("--variant", nargs="*", default=[],
                        help="KEY=VALUE swdask settings: the non-W1 one-GPU jobs again under "
                             "each, alternating with the defaults")
    parser.add_argument("--variant-repeats", type=int, default=1)
    parser.add_argument("--recipe-gpus", type=int, nargs="*", default=[1],
                        help="where cuDF is installed: the cudf cluster job and the README's "
                        "recipe on these numbers of GPUs")
    parser.add_argument("--scheduler-gpus", type=int, default=0,
                        help="also run the gpu jobs on a Dask scheduler with one worker per "
                        "GPU, on this many GPUs")
    parser.add_argument("--gpu-counts", type=int, nargs="+", default=[1],
                        help="GPU sets: also run --backend gpu on these many GPUs of the "
                             "machine (CUDA_VISIBLE_DEVICES), one warm run each")
    args = parser.parse_args()
    if args.gpu:
        work = Path(tempfile.mkdtemp(prefix="swdask-bench-search-"))
        runs = _gpu_sets(args, work, stamp(args.commit))
        path = write_result(args.out, "search", {**stamp(args.commit), "runs": runs})
        print(f"wrote {path}")
        shutil.rmtree(work, ignore_errors=True)
        return 0
    ssearch = shutil.which("ssearch36")
    cores = len(os.sched_getaffinity(0))
    queries = read_fasta(args.queries)
    work = Path(tempfile.mkdtemp(prefix="swdask-bench-search-"))
    database = work / "DB.fasta"
    opener = gzip.open if args.db.endswith(".gz") else open
    with opener(args.db, "rb") as source, open(database, "wb") as target:
        shutil.copyfileobj(source, target)
    db_frame = read_fasta(database)
    residues = int(db_frame["sequence"].str.len().sum())
    runs = []
    header = stamp(args.commit)
    bytecode = _compile_swdask()
    for count in args.sets:
        subset = queries.iloc[:count]
        query_file = work / f"queries-{count}.fasta"
        _write_fasta(query_file, subset)
        cells = int(subset["sequence"].str.len().sum()) * residues
        walls, phases = [], {}
        for _ in range(args.repeats):
            seconds, stderr = run_process([sys.executable, "-m", "swdask", "search", str(query_file),
                                    str(database), "--top", "10", "-o", str(work / "hits.tsv"),
                                    "--backend", args.backend, "--no-progress", "--verbose",
                                    *(["--alignment"] if args.alignment else [])])
            if not walls or seconds < min(walls):
                phases = _phases(stderr)
            walls.append(seconds)
        peer = []
        if ssearch:
            for _ in range(args.repeats):
                with open(work / "ssearch.m8", "w") as out:
                    peer.append(run_process([ssearch, "-T", str(cores), "-f", "-11", "-g", "-1", "-s",
                                      "BL62", "-m", "8", "-b", "10", "-d", "0",
                                      str(query_file), str(database)], stdout=out)[0])
        engine = _engine_seconds(subset, db_frame, args.repeats)
        workload = f"search-{args.backend}-{count}" + ("-alignment" if args.alignment else "")
        record = {"workload": workload, **header, "backend": args.backend, "gpus": 0,
                  "cores": cores,
                  "queries": count, "database_residues": residues, "cells": cells,
                  "wall_seconds": min(walls), "wall_seconds_all": walls, "phases": phases,
                  "effective_tcups": cells / min(walls) / 1e12,
                  "engine_seconds": engine, "engine_gcups": cells / engine / 1e9,
                  "ssearch36_wall_seconds": min(peer) if peer else None,
                  "ssearch36_wall_seconds_all": peer,
                  "ssearch36_command": "ssearch36 -T {cores} -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0",
                  "bytecode": bytecode}
        print(f"{workload}: swdask {min(walls):.2f} s (phases {phases}; engine alone "
              f"{engine:.2f} s, {cells / engine / 1e9:.1f} GCUPS), "
              f"ssearch36 {min(peer) if peer else float('nan'):.2f} s")
        runs.append(record)
    path = write_result(args.out, "search", {**header, "runs": runs})
    print(f"wrote {path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
