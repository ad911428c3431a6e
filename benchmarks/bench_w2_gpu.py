#!/usr/bin/env python3
"""W2 of ../shared/BENCHMARKS.md: batched row-wise pairs and long pairs on the GPU.

Sets (one sequence a line, ``NAME.qry`` queries and ``NAME.ref`` targets, row r pairs them):

* DNA, from ``make_dna_pairs.py`` (../shared/bench): W2-dna-reads ``100000 1000 250 1 r250``,
  W2-dna-150 ``100000 150 150 3 r150``, W2-dna-1000 ``100000 1000 1000 2 r1000``, W2-dna-10000
  ``10000 10000 10000 4 r10000``, W2-dna-single-100k ``1 100000 100000 5 r100k``. Scoring: match
  3, mismatch -3, a gap of length k costs 6 + (k-1).
* Protein, made here (``make-protein``) like W1's sp500k records: the real UniProt proteins of
  mmseqs2's DB.fasta.gz are concatenated in a seeded random order into one pool; each pair
  takes a random window of L residues of that pool (its "ancestor"); the target is the ancestor
  with 25% of its residues substituted at random (as make_protein_db.py makes sp500k records),
  the query an independent copy with 25% substitutions, about 1% deletions and 1% insertions,
  cut to L. W2-protein-150 (100,000 pairs), -1000 (100,000), -10000 (10,000). Scoring:
  BLOSUM62, a gap of length k costs 11 + (k-1).

Commands:

* ``make-data DIR [--sets ...]``: write the sets (DNA through make_dna_pairs.py, next to this
  script or given by --dna-script).
* ``reference --data DIR --out DIR``: the CPU engine's results (``swdask.lowlevel.align_pairs``,
  ``backend="cpu"``) for the checked rows of each set, with the data's SHA-256, as NAME.npz.
* ``run --data DIR --out DIR --commit SHA``: per set, GCUPS end to end (batch in host memory
  -> GPU -> results in host memory, ADEPT's protocol: kernels plus copies;
  ``swdask.lowlevel.align_pairs(..., backend="gpu")``) and kernel only (batch already on the
  GPU, results left there; ``swdask.lowlevel.run_pairs``), scores with start and end cells;
  then the
  exactness check of the sampled rows (>= 10,000 per set, all of smaller sets) against the CPU
  engine: from ``--reference DIR`` when its SHA-256 matches the data, else computed here. Writes
  ``<workload>-<device-slug>-<date>.json`` per set into --out.
* ``tune --data DIR``: kernel-only GCUPS of forced kernels/shapes on the first rows of each set.
* ``precompile tests W2``: compile kernel instances many at once (CuPy keeps them on disk):
  ``tests``, every kernel swdask can launch, the shapes tests force included
  (``swdask.lowlevel.kernel_variants``); a set-name prefix (``W2``), the shapes ``tune``
  forces.
* ``oneall``: the one-against-all threshold for align_long_rows (see its docstring).

GCUPS = sum over pairs of |query| x |target| / seconds / 1e9.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _common import (add_commit_argument, compile_kernels, engine_variants, pair_variants,
                     read_sequences, stamp, take_rows, timed_repeats, today, write_json,
                     write_result)

HERE = Path(__file__).resolve().parent

DNA_SETS = {  # workload: (pairs, target length, query length, seed, file)
    "W2-dna-reads": (100000, 1000, 250, 1, "r250"),
    "W2-dna-150": (100000, 150, 150, 3, "r150"),
    "W2-dna-1000": (100000, 1000, 1000, 2, "r1000"),
    "W2-dna-10000": (10000, 10000, 10000, 4, "r10000"),
    "W2-dna-single-100k": (1, 100000, 100000, 5, "r100k"),
}
PROTEIN_SETS = {  # workload: (pairs, length, seed, file)
    "W2-protein-150": (100000, 150, 11, "p150"),
    "W2-protein-1000": (100000, 1000, 12, "p1000"),
    "W2-protein-10000": (10000, 10000, 13, "p10000"),
}
ALL_SETS = list(DNA_SETS) + list(PROTEIN_SETS)
AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def as_list(column) -> list:
    """A result column's values (the CIGARs: an Arrow array since 2026-11-25, NumPy objects
    before; A/B runs load older trees)."""
    return column.to_pylist() if hasattr(column, "to_pylist") else list(column)


def scoring_for(workload: str):
    from swdask import make_scoring

    if workload.startswith("W2-dna"):
        return make_scoring(None, match=3, mismatch=-3, gap_open=6, gap_extend=1)
    return make_scoring("BLOSUM62", gap_open=11, gap_extend=1)


def file_of(workload: str) -> str:
    return (DNA_SETS.get(workload) or PROTEIN_SETS[workload])[-1]


# ------------------------------------------------------------------------------ data


def make_protein_pairs(db_path, count, length, seed, out):
    """See the module docstring (protein sets)."""
    rng = np.random.default_rng(seed)
    _, proteins = read_sequences(db_path)
    order = rng.permutation(len(proteins))
    pool = np.frombuffer("".join(proteins[k] for k in order).encode("ascii"), dtype=np.uint8)
    with open(f"{out}.ref", "wb") as fr, open(f"{out}.qry", "wb") as fq:
        for _ in range(count):
            start = int(rng.integers(0, len(pool) - length))
            ancestor = pool[start:start + length]
            target = ancestor.copy()
            hit = rng.random(length) < 0.25
            target[hit] = AMINO[rng.integers(0, 20, int(hit.sum()))]
            query = ancestor.copy()
            hit = rng.random(length) < 0.25
            query[hit] = AMINO[rng.integers(0, 20, int(hit.sum()))]
            query = query[rng.random(length) >= 0.01]
            ins = rng.random(len(query)) < 0.01
            query = np.insert(query, np.nonzero(ins)[0],
                              AMINO[rng.integers(0, 20, int(ins.sum()))])[:length]
            fr.write(target.tobytes() + b"\n")
            fq.write(query.tobytes() + b"\n")


def make_data(args):
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    script = Path(args.dna_script or HERE / "make_dna_pairs.py").resolve()
    procs = []
    for workload in args.sets:
        if workload in DNA_SETS:
            count, lt, lq, seed, name = DNA_SETS[workload]
            if args.limit:
                count = min(count, args.limit)
            procs.append(subprocess.Popen(
                [sys.executable, str(script), str(count), str(lt), str(lq), str(seed), name],
                cwd=data))
        else:
            count, length, seed, name = PROTEIN_SETS[workload]
            if args.limit:
                count = min(count, args.limit)
            pid = os.fork()
            if pid == 0:
                try:
                    make_protein_pairs(Path(args.db).resolve(), count, length, seed,
                                       str(data / name))
                finally:
                    os._exit(0)
            procs.append(pid)
    for p in procs:
        if isinstance(p, int):
            os.waitpid(p, 0)
        elif p.wait() != 0:
            raise SystemExit(f"make_dna_pairs.py failed: {p.args}")


def digest(data: Path, name: str) -> str:
    h = hashlib.sha256()
    for suffix in (".qry", ".ref"):
        with open(data / f"{name}{suffix}", "rb") as f:
            for block in iter(lambda: f.read(1 << 24), b""):
                h.update(block)
    return h.hexdigest()


def load(data: Path, name: str, scoring):
    """Both columns as EncodedSequences (numpy), straight from the line files."""
    from swdask.lowlevel import EncodedSequences

    out = []
    for suffix in (".qry", ".ref"):
        raw = np.fromfile(data / f"{name}{suffix}", dtype=np.uint8)
        ends = np.flatnonzero(raw == ord("\n"))
        starts = np.concatenate([[0], ends[:-1] + 1])
        lengths = ends - starts
        keep = np.ones(len(raw), dtype=bool)
        keep[ends] = False
        codes = scoring.lookup[raw[keep]]
        assert not (codes == 255).any(), f"{name}{suffix}: a letter outside the alphabet"
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        out.append(EncodedSequences(codes, offsets, np.ones(len(lengths), dtype=bool)))
    return out


def sample_rows(count: int, sample: int) -> np.ndarray:
    if count <= sample:
        return np.arange(count)
    return np.sort(np.random.default_rng(2026).choice(count, sample, replace=False))


def cpu_reference(q, t, scoring, rows):
    from swdask.lowlevel import align_pairs

    res = align_pairs(take_rows(q, rows), take_rows(t, rows), scoring, "full", backend="cpu")
    return np.stack([res.score, res.query_start, res.query_end, res.target_start,
                     res.target_end]).astype(np.int64)


def reference(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for workload in args.sets:
        name = file_of(workload)
        scoring = scoring_for(workload)
        q, t = load(Path(args.data), name, scoring)
        rows = sample_rows(len(q), args.sample)
        t0 = time.perf_counter()
        values = cpu_reference(q, t, scoring, rows)
        print(f"{workload}: CPU reference of {len(rows)} rows in {time.perf_counter() - t0:.1f} s",
              flush=True)
        np.savez(out / f"{workload}.npz", rows=rows, values=values,
                 sha256=digest(Path(args.data), name))


# ------------------------------------------------------------------------------ GPU


def timed(fn, repeats):
    """Median seconds of ``repeats`` synchronised calls, every call's seconds, the last
    result."""
    times, result = timed_repeats(fn, repeats)
    return float(np.median(times)), times, result


def gpu_values(res, rows):
    return np.stack([res.score[rows], res.query_start[rows], res.query_end[rows],
                     res.target_start[rows], res.target_end[rows]]).astype(np.int64)


def run(args):
    import cupy  # noqa: F401 - the timings synchronise the device

    from swdask.lowlevel import align_pairs, run_pairs
    from swdask.lowlevel import pairs_to_device as to_device

    data = Path(args.data)
    header = stamp(args.commit, date=args.date or today())
    summary = []
    for workload in args.sets:
        name = file_of(workload)
        scoring = scoring_for(workload)
        q, t = load(data, name, scoring)
        lengths_q, lengths_t = np.diff(q.offsets), np.diff(t.offsets)
        cells = int((lengths_q * lengths_t).sum())
        repeats = args.repeats if cells < 5e11 else max(2, args.repeats - 1)
        # warm-up: compiles every kernel the set needs
        warm = min(len(q), 2000)
        align_pairs(take_rows(q, np.arange(warm)), take_rows(t, np.arange(warm)), scoring,
                    "full", backend="gpu")
        # results in host memory (to_host: a no-op where the engine returns NumPy already)
        e2e, e2e_all, res = timed(lambda: align_pairs(q, t, scoring, "full",
                                                      backend="gpu").to_host(), repeats)
        batch = to_device(q, t)
        rows = np.arange(len(q))
        kern, kern_all, _ = timed(lambda: run_pairs(batch, rows, scoring, "full"), repeats)
        del batch
        # exactness
        check_rows = sample_rows(len(q), args.sample)
        ref_file = Path(args.reference) / f"{workload}.npz" if args.reference else None
        source = "computed on this machine (CPU engine)"
        sha = digest(data, name)
        want = None
        if ref_file and ref_file.exists():
            ref = np.load(ref_file)
            if str(ref["sha256"]) == sha and np.array_equal(ref["rows"], check_rows):
                want = ref["values"]
                source = "CPU engine, computed ahead on the same data (SHA-256 matched)"
        if want is None:
            t0 = time.perf_counter()
            want = cpu_reference(q, t, scoring, check_rows)
            source += f" in {time.perf_counter() - t0:.1f} s"
        got = gpu_values(res, check_rows)
        mismatched = np.flatnonzero((got != want).any(axis=0))
        record = {
            "workload": workload, "mode": "end_to_end", "device": header["device"], "gpus": 1,
            "date": header["date"], "commit": header["commit"],
            "seconds_total": round(e2e, 6), "gcups_total": round(cells / e2e / 1e9, 2),
            "kernel_seconds_total": round(kern, 6),
            "kernel_gcups_total": round(cells / kern / 1e9, 2),
            "positions": "score, start and end cells",
            "pairs": len(q), "cells": cells,
            "repeats_seconds_end_to_end": [round(x, 6) for x in e2e_all],
            "repeats_seconds_kernel": [round(x, 6) for x in kern_all],
            "checked": int(len(check_rows)), "mismatches": int(len(mismatched)),
            "reference": source, "data_sha256": sha,
            "protocol": "end_to_end: EncodedSequences in host memory -> results in host memory "
                        "(copies, kernels, forward and reverse passes); kernel: batch already "
                        "in GPU memory, results left there. Median of the repeats.",
        }
        if args.alignment:  # issue 11: the same pairs with their alignments (CIGAR, counts)
            aligned, aligned_all, traced = timed(
                lambda: align_pairs(q, t, scoring, "alignment", backend="gpu"), repeats)
            sample = check_rows[:2000]
            cpu = align_pairs(take_rows(q, sample), take_rows(t, sample), scoring, "alignment",
                              backend="cpu")
            traced_cigars = as_list(traced.columns["cigar"])
            cpu_cigars = as_list(cpu.columns["cigar"])
            differ = [k for k, row in enumerate(sample) if traced_cigars[row] != cpu_cigars[k]]
            record.update({
                "seconds_alignment": round(aligned, 6),
                "gcups_alignment": round(cells / aligned / 1e9, 2),
                "repeats_seconds_alignment": [round(x, 6) for x in aligned_all],
                "alignment_protocol": "align_pairs(mode='alignment', backend='gpu'): host "
                                      "EncodedSequences -> every column, CIGAR strings "
                                      "included, in host memory; cells as above",
                "alignment_checked": len(sample), "alignment_cigar_mismatches": len(differ)})
            print(f"{workload:20s} with alignments {record['gcups_alignment']:8.1f} GCUPS "
                  f"({aligned:.4f} s); CIGARs checked against the CPU {len(sample)}, differing "
                  f"{len(differ)}", flush=True)
        if len(mismatched):
            record["first_mismatches"] = [
                {"row": int(check_rows[k]), "gpu": got[:, k].tolist(), "cpu": want[:, k].tolist()}
                for k in mismatched[:5]]
        write_result(args.out, workload, record)
        summary.append(record)
        print(f"{workload:20s} e2e {record['gcups_total']:8.1f} GCUPS ({e2e:.4f} s)  kernel "
              f"{record['kernel_gcups_total']:8.1f} GCUPS ({kern:.4f} s)  checked "
              f"{record['checked']} mismatches {record['mismatches']}", flush=True)
    return summary


#: forced kernels and shapes the tune command compares, per set
TUNE_VARIANTS = {
    "W2-dna-reads": [("inter", s) for s in ((4, 32), (8, 32), (16, 16), (32, 8), (8, 16))],
    "W2-dna-150": [("inter", s) for s in ((4, 20), (8, 20), (16, 12), (32, 8), (8, 24))],
    "W2-dna-1000": [("inter", s) for s in ((4, 32), (8, 32), (16, 32), (32, 32), (32, 16))]
    + [("intra", (1, 16)), ("intra", (4, 8))],
    "W2-dna-10000": [("intra", s) for s in ((1, 16), (2, 16), (4, 16), (4, 8), (8, 8))]
    + [("inter", (32, 32)), ("inter", (8, 32))],
    "W2-dna-single-100k": [("long", s) for s in ((4, 4), (4, 8), (8, 4), (2, 8), (4, 16))],
    "W2-protein-150": [("inter", s) for s in ((4, 20), (8, 20), (16, 12), (32, 8))],
    "W2-protein-1000": [("inter", s) for s in ((4, 32), (8, 32), (32, 32), (32, 16))],
    "W2-protein-10000": [("intra", s) for s in ((1, 16), (4, 16), (4, 8))] + [("inter", (32, 32))],
}


def precompile(args):
    """Fill CuPy's on-disk kernel cache with many NVRTC compiles at once (one process each)."""
    from swdask.lowlevel import get_backend

    variants = []
    for what in args.what:
        if what == "tests":
            compute_capability = get_backend("gpu").runtime.compute_capability
            variants += engine_variants(compute_capability)
        else:
            variants += pair_variants([v for w in ALL_SETS if w.startswith(what)
                                       for v in TUNE_VARIANTS[w]])
    t0 = time.perf_counter()
    done, failed = compile_kernels(variants, args.processes)
    for line in failed:
        print(f"FAILED {line}", flush=True)
    print(f"compiled {done} kernel instances in {time.perf_counter() - t0:.1f} s"
          f"{f', {len(failed)} failed' if failed else ''}", flush=True)
    if failed:
        raise SystemExit(1)


def tune(args):
    """Kernel-only GCUPS of forced kernels and shapes (score only, and full) per set."""
    import cupy as cp

    from swdask.lowlevel import pairs_to_device as to_device
    from swdask.lowlevel import run_pairs

    data = Path(args.data)
    results = []
    for workload in args.sets:
        name = file_of(workload)
        scoring = scoring_for(workload)
        q, t = load(data, name, scoring)
        per_pair = float((np.diff(q.offsets) * np.diff(t.offsets)).mean())
        count = min(len(q), args.limit or len(q), max(1, int(args.max_cells // per_pair)))
        q, t = take_rows(q, np.arange(count)), take_rows(t, np.arange(count))
        cells = int((np.diff(q.offsets) * np.diff(t.offsets)).sum())
        batch = to_device(q, t)
        rows = np.arange(count)
        for kernel, shape in [("auto", None)] + TUNE_VARIANTS[workload]:
            force = None if kernel == "auto" else kernel
            try:
                for mode in ("none", "full"):
                    run_pairs(batch, rows, scoring, mode, force=force, shape=shape)
                    secs, _, _ = timed(lambda: run_pairs(batch, rows, scoring, mode,
                                                         force=force, shape=shape),
                                       args.repeats)
                    results.append((workload, count, kernel, shape, mode, secs, cells / secs / 1e9))
                    print(f"{workload:20s} {count:6d} {kernel:6s} {str(shape):9s} {mode:5s} "
                          f"{secs:9.5f} s {cells / secs / 1e9:9.1f} GCUPS", flush=True)
            except Exception as exc:  # keep tuning the others; report what broke
                print(f"{workload} {kernel} {shape}: FAILED {exc!r}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        write_json(Path(args.out) / "tune.json",
                   [dict(workload=w, pairs=c, kernel=k, shape=s, mode=m, seconds=x, gcups=g)
                    for w, c, k, s, m, x, g in results])


def oneall(args):
    """Where the intra-task kernel should take one-against-all rows (the threshold).

    One real protein query (450..550 letters) against the 20,000 proteins of DB.fasta.gz
    (those up to 1,000 letters) plus ``--long`` targets of length L (windows of the protein
    pool with 25% substitutions): (a) the inter-task search
    (``swdask.lowlevel.align_many(..., backend="gpu")``) on every row, (b) the same search on
    the short rows plus ``swdask.lowlevel.align_long_rows`` (one block per row) on the long
    ones. Both from host arrays to host results, with starts. Also checks that the two
    kernels agree on the long rows.
    """
    import cupy as cp
    import dask

    from swdask.lowlevel import align_long_rows, align_many, encode, prepare_query

    # (a) must stay all inter-task: the GPU search routes long rows itself unless told not to
    dask.config.set({"swdask.gpu.long-row-min": 0})
    scoring = scoring_for("W2-protein-150")
    rng = np.random.default_rng(7)
    _, proteins = read_sequences(args.db)
    query = next(p for p in proteins if 450 <= len(p) <= 550)
    shorts = [p for p in proteins if len(p) <= 1000]
    pool = np.frombuffer("".join(proteins).encode(), dtype=np.uint8)
    prepared = prepare_query(query, scoring)
    short_enc = encode(shorts, scoring)
    rows_out = []
    for length in args.lengths:
        longs = []
        for _ in range(args.long):
            start = int(rng.integers(0, len(pool) - length))
            window = pool[start:start + length].copy()
            hit = rng.random(length) < 0.25
            window[hit] = AMINO[rng.integers(0, 20, int(hit.sum()))]
            longs.append(window.tobytes().decode())
        all_enc = encode(shorts + longs, scoring)
        long_enc = encode(longs, scoring)
        long_rows = np.arange(len(shorts), len(shorts) + len(longs))

        def everything():
            return align_many(prepared, all_enc, "full", backend="gpu").to_host()

        def split():
            a = align_many(prepared, short_enc, "full", backend="gpu").to_host()
            b = align_long_rows(prepared.codes, cp.asarray(long_enc.residues),
                                cp.asarray(long_enc.offsets), np.arange(len(longs)),
                                scoring, "full")
            return a, {k: cp.asnumpy(v) for k, v in b.items()}

        try:
            everything(), split()  # warm-up (compiles)
            t_all, _, res_all = timed(everything, args.repeats)
            t_split, _, (_, res_long) = timed(split, args.repeats)
            agree = (np.array_equal(res_all.score[long_rows], res_long["score"])
                     and np.array_equal(res_all.query_end[long_rows], res_long["query_end"] + 1)
                     and np.array_equal(res_all.target_start[long_rows],
                                        res_long["target_start"]))
        except Exception as exc:  # the other path may be missing or broken: say so
            print(f"L={length}: FAILED {exc!r}", flush=True)
            continue
        rows_out.append(dict(length=length, long_rows=len(longs), seconds_all=t_all,
                             seconds_split=t_split, long_rows_agree=bool(agree)))
        print(f"L={length:6d} x{len(longs)}  inter-task everything {t_all * 1e3:8.2f} ms   "
              f"split (intra-task for long rows) {t_split * 1e3:8.2f} ms   agree {agree}",
              flush=True)
    if args.out:
        write_json(Path(args.out) / "oneall.json",
                   dict(query_length=len(query), short_rows=len(shorts), rows=rows_out))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make-data")
    p.add_argument("data")
    p.add_argument("--sets", nargs="+", default=ALL_SETS)
    p.add_argument("--dna-script")
    p.add_argument("--db", default="/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
    p.add_argument("--limit", type=int, default=0, help="at most this many pairs per set")
    p = sub.add_parser("reference")
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--sets", nargs="+", default=ALL_SETS)
    p.add_argument("--sample", type=int, default=10000)
    p = sub.add_parser("run")
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    add_commit_argument(p)
    p.add_argument("--date")
    p.add_argument("--sets", nargs="+", default=ALL_SETS)
    p.add_argument("--sample", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--reference")
    p.add_argument("--alignment", action="store_true",
                   help="also time the pairs with alignments (and check CIGARs vs the CPU)")
    p = sub.add_parser("tune")
    p.add_argument("--data", required=True)
    p.add_argument("--out")
    p.add_argument("--sets", nargs="+", default=ALL_SETS)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--max-cells", type=float, default=1e11, help="cells per set at most")
    p.add_argument("--repeats", type=int, default=3)
    p = sub.add_parser("oneall")
    p.add_argument("--db", default="/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
    p.add_argument("--lengths", type=int, nargs="+",
                   default=[1500, 3000, 6000, 12000, 24000, 48000])
    p.add_argument("--long", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out")
    p = sub.add_parser("precompile")
    p.add_argument("what", nargs="+", help="'tests' and/or set-name prefixes (e.g. W2)")
    p.add_argument("--processes", type=int, default=16)
    args = parser.parse_args(argv)
    {"make-data": make_data, "reference": reference, "run": run, "tune": tune,
     "precompile": precompile, "oneall": oneall}[args.command](args)


if __name__ == "__main__":
    main()
