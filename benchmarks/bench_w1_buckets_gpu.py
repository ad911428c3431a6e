#!/usr/bin/env python3
"""W1 (sp500k): threads per target pair (G) by target-length bucket, kernel-only.

Two measurements of the 16-bit forward kernel (end tracking, as W1's "end" and "none"
modes run it), targets already on the GPU:

1. ``ranges``: for a few W1 queries, each range of target (pair) lengths on its own launch
   with G = 1, 2, 4, 8 (R chosen for G by ``inter_task.rows_for``); seconds by CUDA events,
   best of ``--reps``. The fastest G per range, adjacent ranges merged, is the "derived"
   bucket configuration.
2. ``configs``: ``inter_task.search(mode="end")`` over all 20 queries for several bucket
   configurations (``SWDASK_GPU_BUCKETS``; "4" = one launch of G = 4, the engine's
   default), repetitions interleaved. Every configuration's score and end cells must equal
   the "4" run on every row of every query, and both equal the CPU engine on a sample of
   rows (``--cpu-rows`` random ones plus the shortest and longest) for three queries.

Writes ``W1-buckets-<device>-<date>.json`` into --out; not a results/ file of record.

    python3 benchmarks/bench_w1_buckets_gpu.py --db sp500k.fa --queries cudasw_queries.fasta \\
        --out OUT
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_w1_gpu import read_fasta  # noqa: E402
from swdask import _engine  # noqa: E402
from swdask._api import PreparedQuery  # noqa: E402
from swdask._scoring import make_scoring  # noqa: E402
from swdask._sequences import EncodedSequences, encode  # noqa: E402
from swdask.gpu import _kernels, inter_task  # noqa: E402

EDGES = (0, 64, 128, 192, 256, 320, 384, 512, 768, 1024, 1536, 2048, 4096)
CONFIGS = ["4", "8", "2:256,4", "4:1024,8", "2:256,4:1024,8", "1:128,2:384,4"]


def _compile(names):
    backend = inter_task.get_runtime()
    for name in names:
        backend.function("inter_task.cu", name)
    return len(names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lengths", type=int, nargs="+", default=[144, 464, 1000, 2005, 5478])
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cpu-rows", type=int, default=3000)
    parser.add_argument("--budget", type=float, default=200.0, help="seconds for it all")
    parser.add_argument("--commit", default=os.environ.get("SWDASK_COMMIT", "unknown"))
    args = parser.parse_args()
    t_start = time.perf_counter()

    import multiprocessing as mp

    import cupy
    import pandas as pd

    scoring = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    q_names, q_seqs = read_fasta(args.queries)
    _, db = read_fasta(args.db)
    encoded = encode(pd.Series(db), scoring)
    backend = inter_task.get_runtime()
    cc = backend.compute_capability
    targets = inter_task.prepare_targets(cupy.asarray(encoded.residues),
                                         cupy.asarray(encoded.offsets), encoded.valid,
                                         alphabet_size=scoring.matrix.shape[0])
    layout = targets.pairs
    total_residues = int(encoded.offsets[-1])
    lengths = np.diff(encoded.offsets)
    plen = np.asarray(layout.pair_len_host, dtype=np.int64)
    slot_rows = cupy.asnumpy(layout.slot_rows).reshape(-1, 2)
    pair_residues = np.where(slot_rows >= 0, lengths[np.maximum(slot_rows, 0)], 0).sum(axis=1)
    print(f"db: {len(db)} rows, {total_residues} residues, {layout.num_pairs} pairs, "
          f"long rows apart: {int(targets.long_rows.shape[0])}; "
          f"{time.perf_counter() - t_start:.1f} s", flush=True)

    # compile every variant used below at once (CuPy keeps them on disk)
    ms = sorted({len(s) for s in q_seqs})
    names = sorted({_kernels.forward_name(2, g, inter_task.rows_for(m, g, cc), True)
                    for m in ms for g in args.groups})
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(min(16, len(names))) as pool:
        pool.map(_compile, [names[k::16] for k in range(16)])
    print(f"compiled {len(names)} variants in {time.perf_counter() - t0:.1f} s", flush=True)

    descending = -plen
    ranges = []
    for lo, hi in zip(EDGES, list(EDGES[1:]) + [None]):
        end = int(np.searchsorted(descending, -lo, side="right"))
        start = 0 if hi is None else int(np.searchsorted(descending, -hi, side="right"))
        if start < end:
            ranges.append((lo, hi, start, end, int(pair_residues[start:end].sum())))

    alpha1 = scoring.matrix.shape[0] + 1
    start_event, stop_event = cupy.cuda.Event(), cupy.cuda.Event()

    def forward_seconds(plan, m, profile, pad):
        times = []
        for _ in range(args.reps + 1):  # the first is a warm-up
            start_event.record()
            inter_task._run_forward(backend, layout, profile, pad, m, alpha1, scoring, plan,
                                    True)
            stop_event.record()
            stop_event.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start_event, stop_event) / 1e3)
        return min(times[1:])

    # 1. per length range and G
    picks = sorted({int(np.argmin([abs(len(s) - L) for s in q_seqs])) for L in args.lengths},
                   key=lambda k: len(q_seqs[k]))
    range_rows = []
    for lo, hi, start, end, residues in ranges:
        row = {"from": lo, "below": hi, "pairs": end - start, "residues": residues,
               "seconds": {}, "per_query": {}}
        for g in args.groups:
            total = 0.0
            for k in picks:
                codes = scoring.encode(q_seqs[k])
                m = len(codes)
                profile, pad = inter_task._profile(backend, np.asarray(scoring.matrix), codes,
                                                   scoring.gap_open, 2)
                seconds = forward_seconds([(start, end, g, inter_task.rows_for(m, g, cc))],
                                          m, profile, pad)
                row["per_query"].setdefault(str(m), {})[str(g)] = round(seconds, 6)
                total += seconds
            row["seconds"][str(g)] = round(total, 6)
        cells = residues * sum(len(q_seqs[k]) for k in picks)
        row["gcups"] = {g: round(cells / s / 1e9, 1) for g, s in row["seconds"].items()}
        row["best"] = int(min(row["seconds"], key=row["seconds"].get))
        range_rows.append(row)
        print(f"range [{lo}, {hi}): {end - start} pairs, {residues} residues; GCUPS by G "
              + "  ".join(f"{g}: {v}" for g, v in row["gcups"].items())
              + f"  best G={row['best']}", flush=True)
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
    sample_keys = sorted({int(np.argmin([len(s) for s in q_seqs])),
                          int(np.argmin([abs(len(s) - 1000) for s in q_seqs])),
                          int(np.argmax([len(s) for s in q_seqs]))})
    kept = {}
    reps_done = 0
    for rep in range(args.reps):
        if rep and time.perf_counter() - t_start > args.budget * 0.8:
            break
        for config in configs:
            os.environ["SWDASK_GPU_BUCKETS"] = config
            for k, seq in enumerate(q_seqs):
                codes = scoring.encode(seq)
                if rep == 0:  # warm-up (and the results kept for the checks)
                    found = inter_task.search(targets, codes, scoring, "end")
                    got = {key: found[key] for key in ("score", "query_end", "target_end")}
                    if config == "4":
                        baseline[k] = got
                    else:
                        mismatches[config] += sum(int((got[key] != baseline[k][key]).sum())
                                                  for key in got)
                    if k in sample_keys:
                        kept[(config, k)] = {key: cupy.asnumpy(v) for key, v in got.items()}
                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                inter_task.search(targets, codes, scoring, "end")
                cupy.cuda.Device().synchronize()
                seconds[config][k].append(time.perf_counter() - t0)
        reps_done += 1
        print(f"rep {rep}: " + "  ".join(
            f"{c}: {sum(min(s) for s in seconds[c]):.4f} s" for c in configs)
            + f"; {time.perf_counter() - t_start:.1f} s", flush=True)
    os.environ.pop("SWDASK_GPU_BUCKETS", None)
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
    sample = np.unique(np.concatenate([rng.choice(len(db), args.cpu_rows, replace=False),
                                       order[:200], order[-200:]]))
    pieces = [encoded.residues[encoded.offsets[r]:encoded.offsets[r + 1]] for r in sample]
    sub_offsets = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
    subset = EncodedSequences(np.concatenate(pieces), sub_offsets,
                              np.ones(len(sample), dtype=bool))
    cpu_mismatches, cpu_checked = 0, 0
    for k in sample_keys:
        codes = scoring.encode(q_seqs[k])
        want = _engine.align_many(PreparedQuery(codes, scoring), subset, scoring,
                                  positions="end", backend="cpu")
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

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    device = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    slug = device.lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    out = Path(args.out) / f"W1-buckets-{slug}-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "device": device, "commit": args.commit, "residues": total_residues,
        "range_queries": [len(q_seqs[k]) for k in picks], "ranges": range_rows,
        "derived": derived, "configs": config_rows, "reps": reps_done,
        "cpu_checked": cpu_checked, "cpu_mismatches": cpu_mismatches,
        "mismatches_vs_4": sum(mismatches.values())}, indent=1))
    print(f"wrote {out}")
    sys.exit(1 if cpu_mismatches or any(mismatches.values()) else 0)


if __name__ == "__main__":
    main()
