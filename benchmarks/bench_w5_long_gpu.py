"""W5 (issue 46): one alignment of two *Klebsiella pneumoniae* chromosomes, or slices of them,
with ``swdask.align_long``, on the GPU, beside the CPU where the slice is small enough.

Data: Debian's ``kleborate-examples`` (``/usr/share/doc/kleborate/examples/data``; or
``--data``): the first record (the chromosome) of NTUH-K2044 as the query, of MGH78578 as
the target. Scoring: match 1, mismatch -3, a gap of length k scoring -(5 + (k-1) x 2)
(CUDAlign's). A case ``Q:T`` takes the query's letters ``[query offset, + Q)`` and the
target's ``[target offset, + T)`` (``--query-offset`` 1,797,579 and ``--target-offset``
1,000,000 by default: homologous, as the whole pair's best alignment pairs query letter
797,579 with target letter 0); ``full`` the whole pair.

For each case, in one process: the GPU call (``backend="gpu"``) timed from the call to the
frame (``wall_seconds``), its score pass (the GPU's forward and reverse passes: the progress
callback fires when it ends) and the traceback (the rest, on the host); the CPU call the
same where the case has at most ``--cpu-max-cells`` cells; the two must agree on the score,
the positions and the CIGAR. ``--no-traceback`` times the score pass alone. One
``long-<case>-<device>-<date>.json`` record per case: ``workload``, ``device``, ``gpus``,
``cells``, ``score_seconds``, ``traceback_seconds``, ``wall_seconds``, ``tcups`` (cells over
the score pass), the score, positions and a SHA-256 of the CIGAR, peak GPU memory (CuPy's
pool) and the process's peak resident memory so far.

``--command``: also the whole command, ``swdask align-long --backend gpu -v`` in a new
process on FASTA files of the case's two sequences: ``command.wall_seconds`` from process
start to PAF written, its phases (``-v``), its peak resident memory and the GPU's peak used
memory (``nvidia-smi``, sampled), and its PAF checked equal to the call's result.

``--tune``: instead, the forward score pass alone (``swdask.lowlevel.run_pairs``, the
long-pair kernel forced) of each case in every shape of ``--shapes`` and blocks per
multiprocessor of ``--blocks-per-sm`` (the setting ``swdask.gpu.long-pair-blocks-per-sm``),
every result checked equal; one ``long-tune-<case>`` record.

    python benchmarks/bench_w5_long_gpu.py --out benchmarks/results/long 10000:1000000
"""
from __future__ import annotations

import argparse
import hashlib
import lzma
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import swdask
from _common import add_commit_argument, cpu_model, stamp, write_result

DATA = Path("/usr/share/doc/kleborate/examples/data")
SCORING = dict(matrix=None, match=1, mismatch=-3, gap_open=5, gap_extend=2)


def chromosome(path: Path) -> str:
    """The first record of a (xz-compressed) FASTA file."""
    opener = lzma.open if path.suffix == ".xz" else open
    letters = []
    with opener(path, "rt") as handle:
        assert handle.readline().startswith(">")
        for line in handle:
            if line.startswith(">"):
                break
            letters.append(line.strip())
    return "".join(letters).upper()


def timed_call(query: str, target: str, backend: str, traceback: bool,
               part_cells: int | None = None, band_rows: int | None = None) -> dict:
    import dask

    from swdask.lowlevel import timed_stages

    marks = {}

    def progress(done, total):
        if done == total:
            marks["score"] = time.perf_counter()

    settings = {} if part_cells is None else {"swdask.traceback.long-part-cells": part_cells}
    if band_rows is not None:
        settings["swdask.traceback.long-band-rows"] = band_rows
    with dask.config.set(settings), timed_stages("long bands", "long halves",
                                                 "long parts") as stages:
        start = time.perf_counter()
        frame = swdask.align_long(query, target, backend=backend, traceback=traceback,
                                  progress=progress, **SCORING)
        end = time.perf_counter()
    row = frame.iloc[0]
    cigar = None if not traceback else str(row["cigar"])
    score_seconds = marks["score"] - start
    return {"backend": backend, "wall_seconds": end - start, "score_seconds": score_seconds,
            "traceback_seconds": (end - marks["score"]) if traceback else None,
            "tcups": len(query) * len(target) / score_seconds / 1e12,
            "score": int(row["score"]),
            "positions": [int(row[c]) for c in ("query_start", "query_end", "target_start",
                                                 "target_end")],
            "cigar_sha256": None if cigar is None else hashlib.sha256(cigar.encode()).hexdigest(),
            "alignment_length": None if cigar is None else int(row["alignment_length"]),
            "part_cells": part_cells or dask.config.get("swdask.traceback.long-part-cells"),
            "band_rows": (dask.config.get("swdask.traceback.long-band-rows")
                          if band_rows is None else band_rows),
            "bands_seconds": sum(stages["long bands"]),
            "halves": {"calls": len(stages["long halves"]),
                       "seconds": sum(stages["long halves"]),
                       "per_call": [round(x, 3) for x in stages["long halves"]]},
            "cpu_parts_seconds": sum(stages["long parts"])}


def gpu_memory_used() -> int | None:
    """Bytes of memory in use on GPU 0 (``nvidia-smi``), or None without it."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,"
                              "nounits", "-i", "0"], capture_output=True, text=True, timeout=10)
        return int(out.stdout.split()[0]) * 2**20
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


#: The command's scoring options (SCORING).
COMMAND_SCORING = ["--dna", "--match", "1", "--mismatch", "-3", "--gap-open", "5",
                   "--gap-extend", "2"]


def case_files(folder: str, query: str, target: str) -> list[str]:
    """The two sequences as FASTA files in ``folder``."""
    paths = []
    for name, letters in (("query", query), ("target", target)):
        path = Path(folder) / f"{name}.fa"
        path.write_text(f">{name}\n" + "\n".join(letters[k:k + 80] for k in
                                                 range(0, len(letters), 80)) + "\n")
        paths.append(str(path))
    return paths


def command_phases(stderr: str, in_tasks: bool = False) -> dict:
    """The phases ``-v`` printed: ``{name: seconds}`` (``in_tasks``: the thread-seconds
    printed after them instead, ``{}`` if none)."""
    line = stderr.split("swdask: phases: ")[1].splitlines()[0]
    line, _, inside = line.partition("; inside the search (thread-seconds): ")
    line = inside if in_tasks else line
    return {part.rsplit(" ", 2)[0]: float(part.rsplit(" ", 2)[1])
            for part in line.split(", ") if part}


def check_paf(paf: Path, call: dict) -> None:
    """The command's PAF holds the call's score, positions and (if traced) CIGAR."""
    fields = paf.read_text().rstrip("\n").split("\t")
    assert int(fields[-2].removeprefix("AS:i:")) == call["score"], fields[:12]
    assert [int(fields[k]) for k in (2, 3, 7, 8)] == call["positions"], fields[:12]
    if call["cigar_sha256"]:
        cigar = fields[-1].removeprefix("cg:Z:")
        assert hashlib.sha256(cigar.encode()).hexdigest() == call["cigar_sha256"]


def timed_command(query: str, target: str, call: dict) -> dict:
    """``swdask align-long --backend gpu -v`` in a new process on the two sequences as FASTA
    files; its wall clock, phases, peak memory, and its PAF against the call's ``call``."""
    with tempfile.TemporaryDirectory() as folder:
        paths = case_files(folder, query, target)
        paf = Path(folder) / "best.paf"
        options = COMMAND_SCORING
        baseline, peak, done = gpu_memory_used(), [0], threading.Event()

        def sample():
            while not done.wait(0.2):
                peak[0] = max(peak[0], gpu_memory_used() or 0)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.perf_counter()
        finished = subprocess.run([sys.executable, "-m", "swdask", "align-long", *paths, "-o",
                                   str(paf), "--backend", "gpu", "--no-progress", "-v",
                                   *options], capture_output=True, text=True)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        assert finished.returncode == 0, finished.stderr
        phases = command_phases(finished.stderr)
        check_paf(paf, call)
    return {"wall_seconds": wall, "phases": phases,
            "peak_host_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
            "peak_gpu_used_bytes": peak[0] or None,
            "gpu_used_before_bytes": baseline, "paf_equal_to_call": True}


def tune(query: str, target: str, shapes, per_sm, out, commit, case: str) -> None:
    import cupy
    import dask

    from swdask.lowlevel import Options, encode, pairs_to_device, run_pairs

    scoring = Options.parse(**SCORING).scoring
    batch = pairs_to_device(encode([query], scoring), encode([target], scoring))
    rows, found = np.array([0]), []
    for shape in shapes:
        for blocks in per_sm:
            with dask.config.set({"swdask.gpu.long-pair-blocks-per-sm": blocks}):
                seconds = []
                for _ in range(2):
                    cupy.cuda.Device().synchronize()
                    start = time.perf_counter()
                    cells = run_pairs(batch, rows, scoring, "end", force="long", shape=shape)
                    result = [int(cells[k][0]) for k in ("score", "query_end", "target_end")]
                    seconds.append(time.perf_counter() - start)
            found.append({"shape": list(shape), "blocks_per_sm": blocks,
                          "seconds": min(seconds), "result": result,
                          "tcups": len(query) * len(target) / min(seconds) / 1e12})
            print(found[-1], flush=True)
    assert all(f["result"] == found[0]["result"] for f in found), found
    record = {"workload": f"W5-tune-{case}", **stamp(commit), "gpus": 1,
              "query_length": len(query), "target_length": len(target),
              "cells": len(query) * len(target), "scoring": SCORING,
              "what": "the forward score pass alone, long_pair.cu forced", "runs": found}
    print(write_result(out, f"long-tune-{case.replace(':', 'x')}", record))


def main() -> None:
    import cupy

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help="Q:T letter counts, or 'full'")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--query-offset", type=int, default=1_797_579)
    parser.add_argument("--target-offset", type=int, default=1_000_000)
    parser.add_argument("--cpu-max-cells", type=float, default=2e11)
    parser.add_argument("--no-traceback", action="store_true")
    parser.add_argument("--tune", action="store_true")
    parser.add_argument("--command", action="store_true",
                        help="also time the whole swdask align-long command in a new process")
    parser.add_argument("--part-cells", default="",
                        help="comma-separated values of swdask.traceback.long-part-cells to "
                             "run the GPU call with, one record each (default: the setting)")
    parser.add_argument("--band-rows", default="",
                        help="comma-separated values of swdask.traceback.long-band-rows (0: "
                             "halving only), one GPU run each (default: the setting)")
    parser.add_argument("--shapes", default="2x8,4x8,4x16,8x8,8x16")
    parser.add_argument("--blocks-per-sm", default="1,2,4")
    parser.add_argument("--out", type=Path, required=True)
    add_commit_argument(parser)
    args = parser.parse_args()
    query_all = chromosome(args.data / "NTUH-K2044.fna.xz")
    target_all = chromosome(args.data / "MGH78578.fna.xz")
    swdask.align_long("ACGTACGTAC", "ACGTACGTAC", backend="gpu", **SCORING)  # load once
    for case in args.cases:
        if case == "full":
            query, target = query_all, target_all
        else:
            q_len, t_len = (int(x) for x in case.split(":"))
            query = query_all[args.query_offset:args.query_offset + q_len]
            target = target_all[args.target_offset:args.target_offset + t_len]
        cells = len(query) * len(target)
        if args.tune:
            tune(query, target, [tuple(int(x) for x in s.split("x")) for s in
                                 args.shapes.split(",")],
                 [int(x) for x in args.blocks_per_sm.split(",")], args.out, args.commit, case)
            continue
        runs = []
        settings = [(part_cells, band_rows)
                    for part_cells in [int(float(x)) for x in args.part_cells.split(",") if x]
                    or [None]
                    for band_rows in [int(x) for x in args.band_rows.split(",") if x] or [None]]
        for part_cells, band_rows in settings:
            cupy.get_default_memory_pool().free_all_blocks()
            runs.append(timed_call(query, target, "gpu", not args.no_traceback, part_cells,
                                   band_rows))
            runs[-1]["peak_gpu_bytes"] = int(cupy.get_default_memory_pool().total_bytes())
            print({k: runs[-1][k] for k in ("part_cells", "band_rows", "wall_seconds",
                                            "score_seconds",
                                            "traceback_seconds", "bands_seconds", "halves",
                                            "cpu_parts_seconds")}, flush=True)
        gpu_runs = len(runs)
        if cells <= args.cpu_max_cells:
            runs.append(timed_call(query, target, "cpu", not args.no_traceback,
                                   runs[0]["part_cells"], runs[0]["band_rows"]))
            # every run the same score and positions; the CIGAR the same where the parts
            # are (the same setting): the rows are, so the path is too
            assert all(run[k] == runs[0][k] for run in runs for k in ("score", "positions"))
            assert all(run["cigar_sha256"] == runs[-1]["cigar_sha256"] for run in runs
                       if (run["part_cells"], run["band_rows"])
                       == (runs[-1]["part_cells"], runs[-1]["band_rows"])), runs
        if args.command:
            call = min(runs[:gpu_runs], key=lambda run: run["wall_seconds"])
            cupy.get_default_memory_pool().free_all_blocks()  # the command's GPU alone
            command = timed_command(query, target, call)
            print({"command": command}, flush=True)
        record = {"workload": f"W5-{'chromosomes' if case == 'full' else case}",
                  "peak_host_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  **stamp(
            args.commit), "gpus": 1, "cpu": cpu_model(), "query": "NTUH-K2044 chromosome",
            "target": "MGH78578 chromosome",
            "offsets": [0, 0] if case == "full" else [args.query_offset, args.target_offset],
            "query_length": len(query), "target_length": len(target), "cells": cells,
            "scoring": SCORING, "runs": runs,
            **{k: min(runs[:gpu_runs], key=lambda run: run["wall_seconds"])[k]
               for k in ("score_seconds", "traceback_seconds", "wall_seconds", "tcups",
                         "score", "positions", "cigar_sha256")},
            **({"command": command} if args.command else {})}
        path = write_result(args.out, f"long-{case.replace(':', 'x')}", record)
        print(path, {k: record[k] for k in ("cells", "score", "positions", "score_seconds",
                                            "traceback_seconds", "wall_seconds", "tcups")},
              [(r["backend"], round(r["wall_seconds"], 3)) for r in runs], flush=True)


if __name__ == "__main__":
    main()
