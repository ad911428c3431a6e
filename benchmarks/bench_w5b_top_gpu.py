"""W5b (issue 46), the GPU Gems chapter's case: a 1,000,000-letter query against about 44.6
Mbp, the best 200 alignments with their paths, by ``swdask align-long --top 200``.

Data: Debian's ``kleborate-examples`` (``/usr/share/doc/kleborate/examples/data``; or
``--data``). The query: letters 2,000,000-2,999,999 of HS11286's chromosome (the first
record of ``Klebs_HS11286.fna.xz``) with 1% substitutions and 0.1% short indels (1-3
letters, insertions and deletions alike), planted by :func:`plant` with NumPy's generator
seeded 1. The target: every record of the four files (NTUH-K2044, MGH78578, HS11286, Kp1084:
chromosomes and plasmids), then the reverse complement of each, concatenated in that order.
Scoring: match 1, mismatch -3, a gap of length k scoring -(5 + (k-1) x 2) (CUDAlign's).

One run, the whole command in a new process (``--backend gpu`` by default; ``--backend cpu``
for a small case): ``swdask align-long query.fa target.fa --top 200 -v``, its wall clock
from process start to PAF written, its phases (``-v``: read, score pass = the first pass over
the whole matrix, next alignments = the alignments' start passes and the target pieces
between them, several side by side, with the thread-seconds of starts, frames and pieces,
traceback, write), peak host memory and the GPU's peak used memory (``nvidia-smi``,
sampled).
Checked: rank 1 is the planted alignment (its target interval inside HS11286's chromosome at
letters 2,000,000-2,999,999, its query interval the whole query but for trimmed ends), every
CIGAR re-scores to its score and spans its positions, and no two alignments share a target
letter. One ``long-w5b-<device>-<date>.json`` record: ``workload``, ``device``, ``gpus``,
``cells``, ``score_seconds`` (the first pass) and ``tcups`` over it, ``next_seconds`` (and
``next_thread_seconds``),
``traceback_seconds``, ``wall_seconds``, the planted alignment's score, positions and
coverage, and per rank the score, positions and a SHA-256 of the CIGAR.

    python benchmarks/bench_w5b_top_gpu.py --out benchmarks/results/long
    python benchmarks/bench_w5b_top_gpu.py --out /tmp/x --backend cpu --query-length 20000 \\
        --target-length 200000 --top 20     # a slice of the target around the planted copy
"""
from __future__ import annotations

import argparse
import hashlib
import lzma
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from _common import add_commit_argument, cpu_model, stamp, write_result
from bench_w5_long_gpu import COMMAND_SCORING, SCORING, command_phases, gpu_memory_used

DATA = Path("/usr/share/doc/kleborate/examples/data")
FILES = ("NTUH-K2044.fna.xz", "MGH78578.fna.xz", "Klebs_HS11286.fna.xz", "Klebs_Kp1084.fna.xz")
PLANTED_FROM = 2_000_000
COMPLEMENT = str.maketrans("ACGTN", "TGCAN")


def records(path: Path) -> list[tuple[str, str]]:
    """Every record of an xz-compressed FASTA file: ``(name, letters)``, upper case."""
    found, name, letters = [], None, []
    with lzma.open(path, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                if name is not None:
                    found.append((name, "".join(letters).upper()))
                name, letters = line[1:].split()[0], []
            else:
                letters.append(line.strip())
    if name is not None:
        found.append((name, "".join(letters).upper()))
    return found


def plant(letters: str, seed: int = 1, substitutions: float = 0.01,
          indels: float = 0.001) -> str:
    """``letters`` with a substitution (another of ACGT) at each letter with probability
    ``substitutions`` and an indel of 1-3 letters (insertion of random letters or deletion,
    alike) with probability ``indels``, from NumPy's generator seeded ``seed``."""
    rng = np.random.default_rng(seed)
    bases = np.array(list("ACGT"))
    out, k = [], 0
    draws = rng.random(len(letters))
    kinds = rng.random(len(letters))
    while k < len(letters):
        if draws[k] < indels:
            size = int(rng.integers(1, 4))
            if kinds[k] < 0.5:  # insertion before letter k
                out.append("".join(rng.choice(bases, size)))
            else:  # deletion of letters k .. k + size
                k += size
                continue
        letter = letters[k]
        if draws[k] >= indels and draws[k] < indels + substitutions:
            letter = str(rng.choice(bases[bases != letter]))
        out.append(letter)
        k += 1
    return "".join(out)


def case(data: Path, query_length: int, target_length: int | None):
    """The query, the target, its records' ``(name, strand, start, end)`` and where the
    planted letters lie in it. ``target_length``: only that many letters of the target,
    centred on the planted ones (a smaller case)."""
    plus = [record for name in FILES for record in records(data / name)]
    hs11286 = records(data / "Klebs_HS11286.fna.xz")[0][0]
    query = plant(dict(plus)[hs11286][PLANTED_FROM:PLANTED_FROM + query_length])
    parts = [(name, "+", letters) for name, letters in plus] + \
        [(name, "-", letters.translate(COMPLEMENT)[::-1]) for name, letters in plus]
    layout, at = [], 0
    for name, strand, letters in parts:
        layout.append((name, strand, at, at + len(letters)))
        at += len(letters)
    target = "".join(letters for _, _, letters in parts)
    planted_at = next(start for name, strand, start, _ in layout
                      if strand == "+" and name == hs11286) + PLANTED_FROM
    if target_length is not None:
        first = max(0, planted_at + query_length // 2 - target_length // 2)
        target = target[first:first + target_length]
        layout = [(name, strand, start - first, end - first)
                  for name, strand, start, end in layout]
        planted_at -= first
    return query, target, layout, planted_at


def write_fasta(path: Path, name: str, letters: str) -> None:
    with open(path, "w") as handle:
        handle.write(f">{name}\n")
        for k in range(0, len(letters), 80):
            handle.write(letters[k:k + 80] + "\n")


def rescore(cigar: str, query: str, target: str, row: dict) -> int:
    """The CIGAR walked over the sequences: its score (asserting that ``=``/``X`` are right
    and that it spans its positions). ``N`` scores the mismatch against every letter,
    itself included (swdask's DNA scoring); ``=`` still marks it against itself."""
    i, j, score = row["query_start"], row["target_start"], 0
    for count, op in re.findall(r"(\d+)([=XID])", cigar):
        count = int(count)
        if op in "=X":
            letters = np.frombuffer(query[i:i + count].encode(), np.uint8)
            same = letters == np.frombuffer(target[j:j + count].encode(), np.uint8)
            assert same.all() if op == "=" else not same.any(), (op, i, j)
            matched = int((same & (letters != ord("N"))).sum())
            score += matched * SCORING["match"] + (count - matched) * SCORING["mismatch"]
            i, j = i + count, j + count
        else:
            score -= SCORING["gap_open"] + (count - 1) * SCORING["gap_extend"]
            i, j = (i + count, j) if op == "I" else (i, j + count)
    assert (i, j) == (row["query_end"], row["target_end"]), (i, j, row)
    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--top", type=int, default=200)
    parser.add_argument("--query-length", type=int, default=1_000_000)
    parser.add_argument("--target-length", type=int, default=None,
                        help="only this many letters of the target, centred on the planted "
                             "ones (a smaller case)")
    parser.add_argument("--out", type=Path, required=True)
    add_commit_argument(parser)
    args = parser.parse_args()
    query, target, layout, planted_at = case(args.data, args.query_length, args.target_length)
    print(f"query {len(query):,} letters, target {len(target):,} letters", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        q_path, t_path, paf = (Path(folder) / name for name in ("q.fa", "t.fa", "top.paf"))
        write_fasta(q_path, "HS11286-planted", query)
        write_fasta(t_path, "four-genomes-both-strands", target)
        baseline, peak, done = gpu_memory_used(), [0], threading.Event()

        def sample():
            while not done.wait(0.2):
                peak[0] = max(peak[0], gpu_memory_used() or 0)

        sampler = threading.Thread(target=sample, daemon=True)
        if args.backend == "gpu":
            sampler.start()
        start = time.perf_counter()
        finished = subprocess.run(
            [sys.executable, "-m", "swdask", "align-long", str(q_path), str(t_path), "-o",
             str(paf), "--top", str(args.top), "--backend", args.backend, "--no-progress",
             "-v", *COMMAND_SCORING], capture_output=True, text=True)
        wall = time.perf_counter() - start
        done.set()
        if args.backend == "gpu":
            sampler.join()
        print(finished.stderr, flush=True)
        assert finished.returncode == 0, finished.stderr
        lines = paf.read_text().splitlines()
    phases = command_phases(finished.stderr)
    hits = []
    for line in lines:
        fields = line.split("\t")
        row = {"query_start": int(fields[2]), "query_end": int(fields[3]),
               "target_start": int(fields[7]), "target_end": int(fields[8]),
               "score": int(fields[13].removeprefix("AS:i:"))}
        cigar = fields[14].removeprefix("cg:Z:")
        assert rescore(cigar, query, target, row) == row["score"], row
        record = next(f"{name}{strand}" for name, strand, first, last in layout
                      if first <= row["target_start"] < last)
        hits.append({**row, "record": record,
                     "cigar_sha256": hashlib.sha256(cigar.encode()).hexdigest()})
    spans = sorted((hit["target_start"], hit["target_end"]) for hit in hits)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "two share a target letter"
    best = hits[0]
    planted_end = planted_at + args.query_length
    overlap = min(best["target_end"], planted_end) - max(best["target_start"], planted_at)
    coverage = {"query": (best["query_end"] - best["query_start"]) / len(query),
                "target": overlap / args.query_length}
    assert coverage["target"] > 0.999 and coverage["query"] > 0.999, (best, coverage)
    cells = len(query) * len(target)
    record = {"workload": "W5b-top-200" if args.top == 200 else f"W5b-top-{args.top}",
              **stamp(args.commit), "gpus": 1 if args.backend == "gpu" else 0,
              "cpu": cpu_model(), "backend": args.backend, "query_length": len(query),
              "target_length": len(target), "cells": cells, "top": args.top,
              "alignments": len(hits), "scoring": SCORING,
              "query": f"HS11286 chromosome {PLANTED_FROM:,}-"
                       f"{PLANTED_FROM + args.query_length - 1:,} with 1% substitutions and "
                       "0.1% indels of 1-3 (seed 1)",
              "target": "every record of the four kleborate-examples assemblies, then each "
                        "reverse complement, concatenated",
              "wall_seconds": wall, "phases": phases,
              "score_seconds": phases.get("score pass"),
              "tcups": cells / phases["score pass"] / 1e12 if phases.get("score pass") else None,
              "next_seconds": phases.get("next alignments"),
              "next_thread_seconds": command_phases(finished.stderr, in_tasks=True),
              "traceback_seconds": phases.get("traceback"),
              "peak_host_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
              "peak_gpu_used_bytes": peak[0] or None, "gpu_used_before_bytes": baseline,
              "planted": {"target_start": planted_at, "target_end": planted_end,
                          "found": {k: best[k] for k in ("score", "query_start", "query_end",
                                                         "target_start", "target_end")},
                          "coverage": coverage},
              "score": best["score"],
              "positions": [best[k] for k in ("query_start", "query_end", "target_start",
                                             "target_end")],
              "cigar_sha256": best["cigar_sha256"], "hits": hits}
    name = "long-w5b" if args.target_length is None else f"long-w5b-{args.target_length}"
    path = write_result(args.out, f"{name}-{args.backend}", record)
    print(path, {k: record[k] for k in ("cells", "score", "positions", "alignments",
                                        "wall_seconds", "score_seconds", "next_seconds",
                                        "traceback_seconds", "tcups")}, flush=True)


if __name__ == "__main__":
    main()
