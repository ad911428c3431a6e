"""Few, long rows on the CPU (issue 13): a 1,500-residue DNA query against the 330 kb of
hmmer-examples' ``dna_target.fa`` (one record), match 2, mismatch -3, a gap of length k
scoring -(5 + (k-1) x 2), one thread each, side by side in one run:

* swdask: ``swdask.lowlevel.align_many`` (``backend="cpu"``, numba threads set to 1) from
  the encoded target, modes ``none`` (score), ``end`` and ``full`` (start and end): fewer
  rows than a batch of lanes, so the striped kernel over the query;
* parasail: ``sw_striped_16`` (score and end cell), ``sw_striped_profile_16`` with the
  profile built once outside the timing.

The query is the target's residues 100,000-101,499 with every 37th letter replaced (seed 1),
so the alignment is long and real. The functions run in turns, ``--repeat`` rounds of one
call each, so that a slow spell of a shared machine falls on all of them; each figure is a
function's fastest call, and ``end_over_parasail_paired`` the median over rounds of
parasail's time over swdask's. The scores (and ends, 0-based inclusive in parasail) must
agree. The record names the CPU's family, model and SIMD flags.

Beside the kernels, the whole job a user runs, in the same run: ``swdask search query.fa
dna_target.fa --dna --match 2 --mismatch -3 --gap-open 5 --gap-extend 2 --top 1`` as a new
process with one numba thread, process start to hits file written (``job``: its wall
clock, the phases it reports, its score).

    python benchmarks/bench_long_row_cpu.py --out benchmarks/results/w3-cpu
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import add_commit_argument, cpu_flags, cpu_model, stamp, write_result

TARGET = Path("/usr/share/doc/hmmer/examples/tutorial/dna_target.fa")


def _in_turns(functions: dict, repeats: int) -> tuple[dict, dict]:
    """Each function called once per round, ``repeats`` rounds: ``(seconds, value)`` with
    every function's times (in rounds) and last value."""
    seconds = {name: [] for name in functions}
    values = {}
    for _ in range(repeats):
        for name, fn in functions.items():
            start = time.perf_counter()
            values[name] = fn()
            seconds[name].append(time.perf_counter() - start)
    return seconds, values


def _job(query: str, target: Path, repeats: int) -> dict:
    """The ``swdask search`` process on this case (one numba thread): best wall clock of
    ``repeats`` (the first run, which may load compiled kernels, included), its phases and
    the score it wrote."""
    import os
    import sys
    import tempfile

    import pandas as pd

    from _common import run_process
    from bench_search_job import _phases

    with tempfile.TemporaryDirectory() as work:
        query_file, output = Path(work) / "query.fa", Path(work) / "hits.tsv"
        query_file.write_text(f">query\n{query}\n")
        env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
        runs = []
        for _ in range(repeats):
            seconds, stderr = run_process(
                [sys.executable, "-m", "swdask", "search", query_file, target, "-o", output,
                 "--dna", "--match", "2", "--mismatch", "-3", "--gap-open", "5",
                 "--gap-extend", "2", "--top", "1", "--no-progress", "--verbose"], env=env)
            runs.append((seconds, _phases(stderr)))
        hits = pd.read_csv(output, sep="\t")
    best = min(runs, key=lambda run: run[0])
    return {"wall_seconds": best[0], "wall_seconds_all": [run[0] for run in runs],
            "phases": best[1], "score": int(hits["score"].iloc[0])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=str(TARGET))
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--out", default="benchmarks/results/w3-cpu")
    add_commit_argument(parser)
    args = parser.parse_args()

    import numba
    import parasail

    import swdask
    from swdask.lowlevel import align_many, encode, prepare_query

    numba.set_num_threads(1)
    text = Path(args.target).read_text().split("\n", 1)[1]
    target = "".join(text.split())
    rng = np.random.default_rng(1)
    letters = list(target[100_000:101_500])
    for k in range(0, len(letters), 37):
        letters[k] = "ACGT"[rng.integers(4)]
    query = "".join(letters)
    scoring = swdask.make_scoring(None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
    encoded = encode([target], scoring)
    prepared = prepare_query(query, scoring)
    cells = len(query) * len(target)
    record = {**stamp(args.commit, device=cpu_model()), "workload": "long-row-cpu",
              "threads": 1, "query_length": len(query), "target_length": len(target),
              "scoring": "match 2, mismatch -3, gaps 5 + (k-1) x 2"}
    matrix = parasail.matrix_create("ACGT", 2, -3)
    profile = parasail.profile_create_16(query, matrix)
    functions = {mode: (lambda mode=mode: align_many(prepared, encoded, mode, backend="cpu"))
                 for mode in ("none", "end", "full")}
    functions["sw_striped_16"] = lambda: parasail.sw_striped_16(query, target, 5, 2, matrix)
    functions["sw_striped_profile_16"] = lambda: parasail.sw_striped_profile_16(
        profile, target, 5, 2)
    for fn in functions.values():
        fn()  # compiled / loaded
    times, values = _in_turns(functions, args.repeat)
    fastest = {name: min(seconds) for name, seconds in times.items()}
    swdask_figures = {}
    for mode in ("none", "end", "full"):
        found = values[mode]
        swdask_figures[mode] = {"seconds": fastest[mode], "gcups": cells / fastest[mode] / 1e9,
                                "score": int(found.score[0]),
                                "query_end": None if found.query_end is None
                                else int(found.query_end[0]),
                                "target_end": None if found.target_end is None
                                else int(found.target_end[0])}
    result = values["sw_striped_16"]
    seconds, seconds_profile = fastest["sw_striped_16"], fastest["sw_striped_profile_16"]
    paired = np.median(np.array(times["sw_striped_16"]) / np.array(times["end"]))
    record.update(
        **cpu_flags(), rounds=args.repeat,
        swdask=swdask_figures,
        parasail_sw_striped_16={"seconds": seconds, "gcups": cells / seconds / 1e9,
                                "score": result.score, "query_end": result.end_query + 1,
                                "target_end": result.end_ref + 1},
        parasail_sw_striped_profile_16={"seconds": seconds_profile,
                                        "gcups": cells / seconds_profile / 1e9},
        end_over_parasail=seconds / swdask_figures["end"]["seconds"],
        end_over_parasail_paired=float(paired),
        full_over_parasail=seconds / swdask_figures["full"]["seconds"],
        agree=all(swdask_figures[m]["score"] == result.score for m in swdask_figures)
        and swdask_figures["end"]["query_end"] == result.end_query + 1
        and swdask_figures["end"]["target_end"] == result.end_ref + 1)
    for mode, figure in swdask_figures.items():
        print(f"swdask {mode}: {figure['seconds']:.4f} s, {figure['gcups']:.2f} GCUPS")
    print(f"parasail sw_striped_16: {seconds:.4f} s, {cells / seconds / 1e9:.2f} GCUPS "
          f"(profile_16 {seconds_profile:.4f} s); swdask end {record['end_over_parasail']:.2f}"
          f" x (paired rounds {paired:.2f} x), full {record['full_over_parasail']:.2f} x; "
          f"scores and ends agree: "
          f"{record['agree']}")
    record["job"] = _job(query, Path(args.target), 5)
    print(f"swdask search job (new process, one thread): {record['job']['wall_seconds']:.2f} s"
          f" {record['job']['phases']}, score {record['job']['score']}")
    record["agree"] = record["agree"] and record["job"]["score"] == result.score
    path = write_result(args.out, "long-row-cpu", record)
    print(f"wrote {path}")
    return 0 if record["agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
