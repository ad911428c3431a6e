#!/usr/bin/env python3
"""W1 (sp500k): threads per target pair (G) by target-length bucket, kernel-only.

Two measurements of the 16-bit forward kernel, targets already on the GPU, for G = 4 and 8
(``GROUPS``; the engine has 16 and 32 besides, for the longest targets; G = 1 and 2 were
measured with an earlier version of this script, docs/notes/gpu-inter-task.md "Length
buckets", and removed):

1. ``ranges``: for a few W1 queries, the rows of each range of target lengths laid out on
   their own (``swdask.lowlevel.prepare_targets``, no row set apart for the intra-task
   kernel) and searched with scores and ends (``swdask.lowlevel.search``) in one launch of
   G threads per pair (the setting ``swdask.gpu.buckets: "G"``; R chosen for G by the
   engine); wall clock around synchronised calls, best of ``--reps`` after a warm-up. (The
   earlier version timed the forward kernel alone, with CUDA events.) The fastest G per
   range, adjacent ranges merged, is the "derived" bucket configuration.
2. ``configs``: ``search(mode="end")`` over all 20 queries and the whole database for
   several bucket configurations (``swdask.gpu.buckets``; "4" = one launch of G = 4),
   repetitions interleaved. Every configuration's score and end cells must equal the "4"
   run on every row of every query, and both equal the CPU engine on a sample of rows
   (``--cpu-rows`` random ones plus the shortest and longest) for three queries.

Writes ``W1-buckets-<device>-<date>.json`` into --out; not a results/ file of record.

    python3 benchmarks/bench_w1_buckets_gpu.py --db sp500k.fa --queries cudasw_queries.fasta \\
        --out OUT
"""
from __future__ import annotations

import argparse
import sys
import time

import dask
import numpy as np

import swdask
from _common import (add_commit_argument, compile_kernels, engine_variants, gpu_properties,
                     nearest, read_fasta, read_sequences, stamp, take_rows, timed,
                     timed_repeats, write_result)
from swdask.lowlevel import (align_many, encode, get_backend, prepare_query, prepare_targets,
                             search)

EDGES = (0, 64, 128, 192, 256, 320, 384, 512, 768, 1024, 1536, 2048, 4096)
CONFIGS = ["4", "8", "4:1024,8", "4:2000,8", "4:3000,8"]
GROUPS = (4, 8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lengths", type=int, nargs="+", default=[144, 464, 1000, 2005, 5478])
    parser.add_argument("--groups", type=int, nargs="+", default=list(GROUPS),
                        choices=GROUPS)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cpu-rows", type=int, default=3000)
    parser.add_argument("--budget", type=float, default=200.0, help="seconds for it all")
    add_commit_argument(parser)
    args = parser.parse_args()
    t_start = time.perf_counter()

    import cupy

    props = gpu_properties()
    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    alphabet = scoring.matrix.shape[0]
    _, q_seqs = read_sequences(args.queries)
    encoded = encode(read_fasta(args.db)["sequence"], scoring)
    targets = prepare_targets(cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets),
                              encoded.valid, alphabet_size=alphabet)
    total_residues = int(encoded.offsets[-1])
    lengths = np.diff(encoded.offsets)
    rows_total = len(lengths)
    print(f"db: {rows_total} rows, {total_residues} residues, long rows apart: "
          f"{int(targets.long_rows.shape[0])}; {time.perf_counter() - t_start:.1f} s", flush=True)

    # compile every 16-bit forward variant at once (CuPy keeps them on disk)
    compute_capability = get_backend("gpu").runtime.compute_capability
    t0 = time.perf_counter()
    done, failed = compile_kernels(engine_variants(compute_capability, {"inter_task.cu"}))
    print(f"compiled {done} variants in {time.perf_counter() - t0:.1f} s"
          + "".join(f"\nFAILED {line}" for line in failed), flush=True)

    # 1. per length range and G
    picks = sorted({nearest(q_seqs, length) for length in args.lengths},
                   key=lambda k: len(q_seqs[k]))
    range_rows = []
    for lo, hi in zip(EDGES, list(EDGES[1:]) + [None]):
        rows = np.flatnonzero((lengths >= lo) & ((lengths < hi) if hi is not None else True))
        if not rows.size:
            continue
        sub = take_rows(encoded, rows)
        sub_targets = prepare_targets(sub.residues, sub.offsets, sub.valid,
                                      alphabet_size=alphabet, long_row_min=None)
        residues = int(sub.offsets[-1])
        row = {"from": lo, "below": hi, "rows": len(rows), "residues": residues,
               "seconds": {}, "per_query": {}}
        for g in args.groups:
            total = 0.0
            with dask.config.set({"swdask.gpu.buckets": str(g)}):
                for k in picks:
                    codes = prepare_query(q_seqs[k], scoring).codes
                    search(sub_targets, codes, scoring, "end")  # warm-up
                    times, _ = timed_repeats(lambda: search(sub_targets, codes, scoring, "end"),
                                             args.reps)
                    seconds = min(times)
                    row["per_query"].setdefault(str(len(codes)), {})[str(g)] = round(seconds, 6)
                    total += seconds
            row["seconds"][str(g)] = round(total, 6)
        cells = residues * sum(len(q_seqs[k]) for k in picks)
        row["gcups"] = {g: round(cells / s / 1e9, 1) for g, s in row["seconds"].items()}
        row["best"] = int(min(row["seconds"], key=row["seconds"].get))
        range_rows.append(row)
        print(f"range [{lo}, {hi}): {row['rows']} rows, {residues} residues; GCUPS by G "
              + "  ".join(f"{g}: {v}" for g, v in row["gcups"].items())
              + f"  best G={row['best']}", flush=True)
        del sub_targets
    buckets = []
    for row in range_rows[::-1]:  # longest first; merge ranges with the same best G
        if buckets and buckets[-1][0] == row["best"]:
            buckets[-1][1] = row["from"]
        else:
            buckets.append([row["best"], row["from"]])
    buckets = buckets[::-1]
    derived = ",".join(f"{g}:{buckets[k + 1][1]}" for k, (g, _) in enumerate(buckets[:-1]))
    derived = (derived + "," if derived else "") + str(buckets[-1][0])
    print(f"derived buckets: {derived}; {time.perf_counter() - t_start:.1f} s", flush=True)

    # 2. whole searches, every configuration, repetitions interleaved
    configs = list(dict.fromkeys([*CONFIGS, derived]))
    seconds = {c: [[] for _ in q_seqs] for c in configs}
    mismatches = {c: 0 for c in configs}
    baseline = {}
    sample_keys = sorted({int(np.argmin([len(s) for s in q_seqs])), nearest(q_seqs, 1000),
                          int(np.argmax([len(s) for s in q_seqs]))})
    kept = {}
    reps_done = 0
    for rep in range(args.reps):
        if rep and time.perf_counter() - t_start > args.budget * 0.8:
            break
        for config in configs:
            with dask.config.set({"swdask.gpu.buckets": config}):
                for k, seq in enumerate(q_seqs):
                    codes = prepare_query(seq, scoring).codes
                    if rep == 0:  # warm-up (and the results kept for the checks)
                        found = search(targets, codes, scoring, "end")
                        got = {key: found[key] for key in ("score", "query_end", "target_end")}
                        if config == "4":
                            baseline[k] = got
                        else:
                            mismatches[config] += sum(int((got[key] != baseline[k][key]).sum())
                                                      for key in got)
                        if k in sample_keys:
                            kept[(config, k)] = {key: cupy.asnumpy(v) for key, v in got.items()}
                    took, _ = timed(lambda: search(targets, codes, scoring, "end"))
                    seconds[config][k].append(took)
        reps_done += 1
        print(f"rep {rep}: " + "  ".join(
            f"{c}: {sum(min(s) for s in seconds[c]):.4f} s" for c in configs)
            + f"; {time.perf_counter() - t_start:.1f} s", flush=True)
    cells = sum(len(s) for s in q_seqs) * total_residues
    config_rows = []
    for config in configs:
        total = sum(min(s) for s in seconds[config])
        config_rows.append({"buckets": config, "seconds": round(total, 5),
                            "tcups": round(cells / total / 1e12, 4),
                            "per_query_seconds": [round(min(s), 6) for s in seconds[config]],
                            "mismatches_vs_4": mismatches[config]})
        print(f"config {config:24s} {total:.4f} s {cells / total / 1e12:.4f} TCUPS "
              f"mismatches vs 4: {mismatches[config]}", flush=True)

    # 3. CPU engine on a sample of rows
    rng = np.random.default_rng(3)
    order = np.argsort(lengths, kind="stable")
    sample = np.unique(np.concatenate([rng.choice(rows_total, min(args.cpu_rows, rows_total),
                                                  replace=False), order[:200], order[-200:]]))
    subset = take_rows(encoded, sample)
    cpu_mismatches, cpu_checked = 0, 0
    for k in sample_keys:
        want = align_many(prepare_query(q_seqs[k], scoring), subset, "end", backend="cpu")
        hit = want.score > 0
        want_cells = {"score": want.score, "query_end": np.where(hit, want.query_end - 1, -1),
                      "target_end": np.where(hit, want.target_end - 1, -1)}
        for config in configs:
            got = kept[(config, k)]
            cpu_mismatches += sum(int((got[key][sample] != want_cells[key]).sum())
                                  for key in want_cells)
            cpu_checked += len(sample)
    print(f"CPU engine: {cpu_checked} (query, row, configuration) results, "
          f"{cpu_mismatches} differences; {time.perf_counter() - t_start:.1f} s", flush=True)

    record = {**stamp(args.commit, device=props["name"]), "residues": total_residues,
              "range_queries": [len(q_seqs[k]) for k in picks], "ranges": range_rows,
              "derived": derived, "configs": config_rows, "reps": reps_done,
              "cpu_checked": cpu_checked, "cpu_mismatches": cpu_mismatches,
              "mismatches_vs_4": sum(mismatches.values())}
    print(f"wrote {write_result(args.out, 'W1-buckets', record)}")
    sys.exit(1 if cpu_mismatches or any(mismatches.values()) else 0)


if __name__ == "__main__":
    main()
