#!/usr/bin/env python3
"""W1 of BENCHMARKS.md on a CUDA GPU: 20 queries against sp500k, BLOSUM62, gap 11 + (k-1).

Measures, per query and in total (GCUPS = |query| x total database residues / seconds):

* kernel-only: the database already on the GPU in the engine's layout (length-sorted pairs,
  built once per database, as CUDASW++4.0 prepares its database once), then per query
  everything ``swdask.lowlevel.search`` does: query profile, forward kernel, 32-bit
  recompute of saturated rows, reverse kernel for starts, scatter to row order. For scores
  only, scores + end cells, and scores + start and end cells. Wall clock around a
  synchronised call; the first (compiling) call of each kernel variant is done before.
* scan: the 20 queries together (and the ``--scan-short`` shortest alone) through the
  many-queries search's engine (``swdask.lowlevel.get_backend("gpu").many_against_many``:
  stacked forward launches, end cells of every row, the targets' layout cached as a search
  keeps it), with the search's query lanes on (its default on sm_90) and off. Its results
  are compared, every row, with the per-query kernel-only run's (``differing``).
* end-to-end: ``swdask.align(query, series, backend="gpu")`` from a pandas Series of strings
  to the result DataFrame (encoding, upload, layout, kernels, download, frame).
* exactness: GPU results against swdask's CPU engine (``swdask.lowlevel.align_many``,
  ``backend="cpu"``, on all cores of the machine): every row of the shortest queries (all
  five columns), a sample of rows of every other query, and a constructed set whose scores
  overflow 16 bits. ``checked`` counts the (query, row) results compared (each once, though
  both the scores + ends run and the scores + starts + ends run are compared),
  ``mismatches`` the results differing in any column.

Writes ``W1-<device-slug>-<date>.json`` into --out: the headline (kernel-only, scores + end
positions) at the top level with the fields BENCHMARKS.md lists, every measurement under
"runs". Prints a table last.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import dask
import numpy as np

import swdask
from _common import (add_commit_argument, gpu_properties, read_fasta, read_sequences,
                     short_name, stamp, timed, timed_repeats, write_result)
from swdask.lowlevel import (EncodedSequences, align_many, encode, forward_launches,
                             forward_shape, get_backend, prepare_query, prepare_targets, search)

COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")


def to_host(found, cupy):
    return {k: cupy.asnumpy(v).astype(np.int64) for k, v in found.items()}


def mismatched_rows(gpu: dict, cpu, rows=None, columns=COLUMNS) -> np.ndarray:
    """Rows (indices into ``rows`` or all) where the GPU's inclusive cells differ from the
    engine's API results (0-based, end-exclusive ends)."""
    bad = None
    for name in columns:
        want = getattr(cpu, name)
        if want is None:
            continue
        got = gpu[name] if rows is None else gpu[name][rows]
        if name in ("query_end", "target_end"):
            got = np.where(got >= 0, got + 1, -1)
        diff = got != want
        bad = diff if bad is None else bad | diff
    return np.flatnonzero(bad)


class _ScanOwner:
    """What a scan's targets belong to (the many-queries search caches the layout by it)."""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA")
    parser.add_argument("--queries", required=True, help="cudasw_queries.fasta")
    parser.add_argument("--out", required=True, help="folder for the JSON")
    add_commit_argument(parser)
    parser.add_argument("--check-full", type=int, default=5,
                        help="this many shortest queries are checked on every row")
    parser.add_argument("--sample", type=int, default=4000,
                        help="rows checked for each other query")
    parser.add_argument("--reps", type=int, default=2, help="timed repeats (kernel, ends)")
    parser.add_argument("--e2e-modes", default="end,full")
    parser.add_argument("--shapes", default="", help="extra 16-bit shapes to time, G,R;G,R")
    parser.add_argument("--scan-short", type=int, default=5,
                        help="also scan this many shortest queries together (0: not)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the CPU check (timing runs of A/B comparisons only)")
    args = parser.parse_args()

    import cupy

    props = gpu_properties()
    if props is None:
        raise SystemExit("W1 on the GPU needs CuPy and a CUDA GPU")
    print(f"device: {props['name']}, {props['multiProcessorCount']} SMs, "
          f"cc {props['major']}{props['minor']}", flush=True)
    header = stamp(args.commit, device=props["name"])

    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    q_names, q_seqs = read_sequences(args.queries)
    t0 = time.perf_counter()
    series = read_fasta(args.db)["sequence"]
    read_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    encoded = encode(series, scoring)
    encode_seconds = time.perf_counter() - t0
    total_residues = int(encoded.offsets[-1])
    rows_total = len(series)
    print(f"db: {rows_total} rows, {total_residues} residues (read {read_seconds:.1f} s, "
          f"encode {encode_seconds:.2f} s)", flush=True)

    alphabet = scoring.matrix.shape[0]
    upload_seconds, device_encoded = timed(lambda: (cupy.asarray(encoded.residues),
                                                    cupy.asarray(encoded.offsets)))
    prepare_seconds, targets = timed(lambda: prepare_targets(
        device_encoded[0], device_encoded[1], encoded.valid, alphabet_size=alphabet))
    print(f"db on GPU: upload {upload_seconds:.3f} s, layout {prepare_seconds:.3f} s", flush=True)

    # compile every variant this run needs, on a small slice
    t0 = time.perf_counter()
    few = min(3000, rows_total)
    warm = prepare_targets(encoded.residues[:int(encoded.offsets[few])],
                           encoded.offsets[:few + 1], alphabet_size=alphabet)
    shapes = [None] + [tuple(int(v) for v in s.split(",")) for s in args.shapes.split(";") if s]
    for codes in {len(s): prepare_query(s, scoring).codes for s in q_seqs}.values():
        for mode in ("none", "end", "full"):
            for shape in shapes:
                search(warm, codes, scoring, mode, shape=shape)
    cupy.cuda.Device().synchronize()
    print(f"warm-up (compiles) {time.perf_counter() - t0:.1f} s", flush=True)

    runs = []
    kept = {}  # (query index, mode) -> host results, for the exactness checks
    check = {"checked": None, "mismatches": None, "details": []}

    def write_w1():
        """The JSON so far (rewritten after every stage, so a cut-off run leaves results)."""
        head = runs[0] if runs else {"seconds_total": None, "gcups_total": None,
                                     "per_query": []}
        result = {
            "workload": "W1", "mode": "kernel", "positions": "end",
            "device": header["device"], "gpus": 1, "date": header["date"],
            "commit": header["commit"],
            "seconds_total": head["seconds_total"], "gcups_total": head["gcups_total"],
            "per_query": head["per_query"], "checked": check["checked"],
            "mismatches": check["mismatches"], "check_details": check["details"],
            "check_reference": check.get("reference"),
            "check_engine_error": check.get("engine_error"),
            "database": {"file": Path(args.db).name, "rows": rows_total,
                         "residues": total_residues, "upload_seconds": upload_seconds,
                         "layout_seconds": prepare_seconds, "encode_seconds": encode_seconds},
            "scoring": "BLOSUM62, a gap of length k scores -(11 + (k-1))",
            "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                     "cupy": cupy.__version__},
            "runs": runs,
        }
        return write_result(args.out, "W1", result)

    def kernel_run(mode, reps, shape=None, keep=False):
        per_query, total = [], 0.0
        for k, (name, seq) in enumerate(zip(q_names, q_seqs)):
            codes = prepare_query(seq, scoring).codes
            times = []
            for _ in range(reps):
                seconds, found = timed(lambda: search(targets, codes, scoring, mode,
                                                      shape=shape))
                times.append(seconds)
            if keep:
                kept[(k, mode)] = to_host(found, cupy)
            del found
            best = min(times)
            total += best
            cells = len(seq) * total_residues
            per_query.append({"name": short_name(name), "length": len(seq), "seconds": best,
                              "gcups": cells / best / 1e9, "all_seconds": times,
                              "shape": list(shape or forward_shape(
                                  len(seq), targets.runtime.compute_capability)),
                              # the (G, R) of each launch of the plan, longest targets first
                              "launches": [list(launch[2:]) for launch in forward_launches(
                                  targets, len(seq), shape=shape)]})
        cells = sum(len(s) for s in q_seqs) * total_residues
        run = {"mode": "kernel", "positions": mode, "shape_override": shape,
               "seconds_total": total, "gcups_total": cells / total / 1e9, "reps": reps,
               "per_query": per_query}
        print(f"kernel {mode:4s} {str(shape or ''):8s} {total:7.3f} s "
              f"{cells / total / 1e12:6.3f} TCUPS", flush=True)
        return run

    def scan_run(query_lanes: bool, reps: int, chosen=None):
        chosen = list(range(len(q_seqs))) if chosen is None else list(chosen)
        backend = get_backend("gpu")
        database = EncodedSequences(device_encoded[0], device_encoded[1], encoded.valid)
        owner = _ScanOwner()  # the layout's cache key, as a search's partition
        prepared = [prepare_query(q_seqs[k], scoring) for k in chosen]

        def scan():
            checks = [[] for _ in prepared]
            found = list(backend.many_against_many(prepared, database, "end", owner=owner,
                                                   fingerprint=("W1",), checks=checks))
            again = backend.failed_checks(checks)
            for k in np.flatnonzero(again):  # 16-bit lanes saturated: as the search does
                found[k] = backend.one_against_many(prepared[k], database, "end")
            return found, int(np.sum(again))

        with dask.config.set({"swdask.gpu.query-lanes": query_lanes}):
            scan()  # lays the targets out (cached for the owner), compiles
            times, (found, again) = timed_repeats(scan, reps)
        differing = 0
        for k, result in zip(chosen, found):
            want = kept[(k, "end")]
            got = {name: cupy.asnumpy(result.columns[name]).astype(np.int64)
                   for name in ("score", "query_end", "target_end")}
            for name in ("query_end", "target_end"):  # the API's ends are exclusive
                got[name] = np.where(got[name] >= 0, got[name] - 1, -1)
            differing += int(np.sum((got["score"] != want["score"])
                                    | (got["query_end"] != want["query_end"])
                                    | (got["target_end"] != want["target_end"])))
        del found
        cells = sum(len(q_seqs[k]) for k in chosen) * total_residues
        best = min(times)
        print(f"scan end query-lanes={query_lanes} ({len(chosen)} queries) {best:7.3f} s "
              f"{cells / best / 1e12:6.3f} TCUPS, {differing} of "
              f"{len(chosen) * rows_total} results differing from the per-query run", flush=True)
        return {"mode": "scan", "positions": "end", "query_lanes": query_lanes,
                "queries": [short_name(q_names[k]) for k in chosen],
                "seconds_total": best, "gcups_total": cells / best / 1e9, "reps": reps,
                "all_seconds": times, "redone_queries": again, "differing": differing,
                "compared": len(chosen) * rows_total}

    runs.append(kernel_run("end", args.reps, keep=True))
    runs.append(kernel_run("none", 1))
    runs.append(kernel_run("full", 1, keep=True))
    for shape in shapes[1:]:
        runs.append(kernel_run("end", 1, shape=shape))
    write_w1()
    for query_lanes in (True, False):
        runs.append(scan_run(query_lanes, args.reps))
    if args.scan_short:  # the shortest queries alone, as a search of short queries runs them
        shortest = np.argsort([len(s) for s in q_seqs], kind="stable")[:args.scan_short]
        runs.append(scan_run(True, args.reps, sorted(int(k) for k in shortest)))
    write_w1()

    # ------------------------------------------------------------------ exactness vs the CPU
    t0 = time.perf_counter()
    try:
        if args.no_check:
            raise RuntimeError("--no-check")
        checked, mismatches, overflow_rows, details = exactness(
            args, q_names, q_seqs, series, encoded, scoring, kept, cupy)
    except Exception as exc:  # noqa: BLE001 - recorded in the JSON; the timings stand
        print(f"CPU check failed ({exc!r}); results not checked", flush=True)
        check["engine_error"] = repr(exc)
        checked = mismatches = None
    else:
        check_seconds = time.perf_counter() - t0
        check.update(checked=checked, mismatches=mismatches, details=details,
                     seconds=check_seconds,
                     reference="swdask CPU engine (numba), all cores of the machine")
        print(f"checked {checked} (query,row) results against the CPU engine "
              f"({os.cpu_count()} cores, {check_seconds:.0f} s): {mismatches} mismatches; "
              f"{overflow_rows} rows over 32767", flush=True)

    write_w1()

    # end-to-end from the pandas Series
    for mode in [m for m in args.e2e_modes.split(",") if m]:
        positions = {"end": "end", "full": True, "none": False}[mode]
        per_query, total = [], 0.0
        for name, seq in zip(q_names, q_seqs):
            seconds, frame = timed(lambda: swdask.align(seq, series, positions=positions,
                                                        backend="gpu"))
            assert len(frame) == len(series)
            del frame
            total += seconds
            per_query.append({"name": short_name(name), "length": len(seq), "seconds": seconds,
                              "gcups": len(seq) * total_residues / seconds / 1e9})
        cells = sum(len(s) for s in q_seqs) * total_residues
        runs.append({"mode": "end_to_end", "positions": mode, "seconds_total": total,
                     "gcups_total": cells / total / 1e9, "per_query": per_query,
                     "from": "pandas Series of str (pyarrow-backed), to a DataFrame"})
        print(f"end-to-end {mode:4s} {total:7.3f} s {cells / total / 1e12:6.3f} TCUPS",
              flush=True)
        write_w1()

    path = write_w1()
    print(f"wrote {path}")
    print(f"\n{'query':10s} {'len':>5s} {'end s':>8s} {'GCUPS':>7s} {'none':>7s} {'full':>7s}")
    for a, b, c in zip(runs[0]["per_query"], runs[1]["per_query"], runs[2]["per_query"]):
        print(f"{a['name']:10s} {a['length']:5d} {a['seconds']:8.4f} {a['gcups']:7.0f} "
              f"{b['gcups']:7.0f} {c['gcups']:7.0f}")
    for run in runs:
        shape = run.get("shape_override")
        if run["mode"] == "scan":
            shape = f"lanes={'q' if run['query_lanes'] else 't'} x{len(run['queries'])}"
        print(f"{run['mode']:10s} {run['positions']:4s} {str(shape or ''):8s} "
              f"{run['seconds_total']:8.3f} s {run['gcups_total'] / 1000:6.3f} TCUPS")
    print(f"checked {checked}, mismatches {mismatches}")


def exactness(args, q_names, q_seqs, series, encoded, scoring, kept, cupy):
    """The kept GPU results against the CPU engine (see the module docstring):
    ``(checked, mismatches, rows over 32767, details)``."""
    checked = mismatches = 0
    details = []
    rows_total = len(series)
    order = np.argsort([len(s) for s in q_seqs], kind="stable")
    full_check = set(order[:args.check_full].tolist())
    rng = np.random.default_rng(1)
    for k, seq in enumerate(q_seqs):
        prepared = prepare_query(seq, scoring)
        if k in full_check:
            rows = None
            cpu = align_many(prepared, encoded, "full", backend="cpu")
        else:
            rows = np.sort(rng.choice(rows_total, min(args.sample, rows_total), replace=False))
            sub = encode(series.iloc[rows], scoring)
            cpu = align_many(prepared, sub, "full", backend="cpu")
        for mode in ("full", "end"):
            cols = COLUMNS if mode == "full" else ("score", "query_end", "target_end")
            bad = mismatched_rows(kept[(k, mode)], cpu, rows, cols)
            count = rows_total if rows is None else len(rows)
            if mode == "full":  # count each (query, row) once; both GPU runs are compared
                checked += count
            mismatches += len(bad)
            details.append({"query": short_name(q_names[k]), "positions": mode, "rows": count,
                            "mismatches": int(len(bad))})
            if len(bad):
                print("MISMATCH", k, mode, bad[:5], flush=True)
    # 16-bit overflow: the two longest queries joined (self score far above 32767)
    long_query = q_seqs[order[-1]] + q_seqs[order[-2]]
    pieces = [long_query, long_query[: len(long_query) // 2], long_query[3000:],
              long_query[::-1], long_query[:4000] + series.iloc[0] + long_query[4000:]]
    mutated = []
    for k in range(40):
        arr = np.frombuffer(long_query.encode(), dtype=np.uint8).copy()
        hit = rng.random(arr.size) < 0.02 * (k % 5)
        arr[hit] = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)[
            rng.integers(0, 20, int(hit.sum()))]
        mutated.append(arr.tobytes().decode())
    sampled = rng.choice(rows_total, min(3000, rows_total), replace=False)
    overflow_targets = pieces + mutated + series.iloc[sampled].tolist()
    over = encode(overflow_targets, scoring)
    prepared = prepare_query(long_query, scoring)
    over_targets = prepare_targets(over.residues, over.offsets, over.valid,
                                   alphabet_size=scoring.matrix.shape[0])
    gpu = to_host(search(over_targets, prepared.codes, scoring, "full"), cupy)
    cpu = align_many(prepared, over, "full", backend="cpu")
    bad = mismatched_rows(gpu, cpu)
    overflow_rows = int((cpu.score > 32767).sum())
    checked += len(overflow_targets)
    mismatches += len(bad)
    details.append({"query": "two longest joined", "positions": "full",
                    "rows": len(overflow_targets), "mismatches": int(len(bad)),
                    "rows_over_32767": overflow_rows, "max_score": int(cpu.score.max())})
    return checked, mismatches, overflow_rows, details


if __name__ == "__main__":
    main()
