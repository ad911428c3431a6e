#!/usr/bin/env python3
"""W1 of BENCHMARKS.md on a CUDA GPU: 20 queries against sp500k, BLOSUM62, gap 11 + (k-1).

Measures, per query and in total (GCUPS = |query| x total database residues / seconds):

* kernel-only: the database already on the GPU in the engine's layout (length-sorted pairs,
  built once per database, as CUDASW++4.0 prepares its database once), then per query
  everything ``swdask.gpu.inter_task.search`` does: query profile, forward kernel, 32-bit
  recompute of saturated rows, reverse kernel for starts, scatter to row order. For scores
  only, scores + end cells, and scores + start and end cells. Wall clock around a
  synchronised call; the first (compiling) call of each kernel variant is done before.
* end-to-end: ``swdask.align(query, series, backend="gpu")`` from a pandas Series of strings
  to the result DataFrame (encoding, upload, layout, kernels, download, frame).
* exactness: GPU results against swdask's CPU engine (run on all cores of the machine): every
  row of the shortest queries (all five columns), a sample of rows of every other query,
  and a constructed set whose scores overflow 16 bits. ``checked`` counts the (query, row)
  results compared (each once, though both the scores + ends run and the scores + starts +
  ends run are compared), ``mismatches`` the results differing in any column.

Writes ``W1-<device-slug>-<date>.json`` into --out: the headline (kernel-only, scores + end
positions) at the top level with the fields BENCHMARKS.md lists, every measurement under
"runs". Prints a table last.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import swdask  # noqa: E402
from swdask import _engine  # noqa: E402
from swdask._api import prepare_query  # noqa: E402
from swdask._scoring import make_scoring  # noqa: E402
from swdask._sequences import EncodedSequences, encode  # noqa: E402
from swdask.gpu import inter_task  # noqa: E402

COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")


def read_fasta(path):
    """(names, sequences); the headers' first words are the names."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    names, seqs, chunks = [], [], None
    with opener(path, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                if chunks is not None:
                    seqs.append("".join(chunks))
                names.append(line[1:].split()[0])
                chunks = []
            else:
                chunks.append(line.strip())
    if chunks is not None:
        seqs.append("".join(chunks))
    return names, seqs


def short_name(header: str) -> str:
    parts = header.split("|")
    return parts[3].split(".")[0] if len(parts) > 3 else (parts[1] if len(parts) > 1 else header)


class Timer:
    def __init__(self, cupy):
        self.cupy = cupy

    def __call__(self, fn):
        self.cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        out = fn()
        self.cupy.cuda.Device().synchronize()
        return time.perf_counter() - start, out


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


def cpu_reference(prepared, encoded, scoring, state):
    """The CPU engine's results (mode "full"); should the engine fail (the CPU kernels are
    another work in progress), the scalar int64 reference kernel of swdask._cpu directly."""
    if state.get("reference") != "scalar":
        try:
            result = _engine.align_many(prepared, encoded, scoring, positions="full",
                                        backend="cpu")
            state["reference"] = "swdask CPU engine (numba), all cores of the machine"
            return result
        except Exception as exc:  # noqa: BLE001 - recorded in the JSON
            print(f"CPU engine failed ({exc!r}); using the scalar reference", flush=True)
            state["reference"] = "scalar"
            state["engine_error"] = repr(exc)
    from swdask import _cpu

    n = len(encoded)
    outputs = [np.full(n, -1, dtype=np.int64) for _ in COLUMNS]
    lengths = np.diff(encoded.offsets)
    rows = np.flatnonzero(encoded.valid & (lengths > 0))
    order = rows[np.argsort(-lengths[rows], kind="stable")]
    profile = np.ascontiguousarray(scoring.matrix.astype(np.int64)[:, prepared.codes])
    _cpu._scalar_one_to_many(profile, len(prepared.codes), encoded.residues, encoded.offsets,
                             order, scoring.gap_open, scoring.gap_extend, True, *outputs)
    outputs[0][outputs[0] < 0] = 0
    return _engine._finish(outputs, encoded.valid, "full")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA")
    parser.add_argument("--queries", required=True, help="cudasw_queries.fasta")
    parser.add_argument("--out", required=True, help="folder for the JSON")
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--check-full", type=int, default=5,
                        help="this many shortest queries are checked on every row")
    parser.add_argument("--sample", type=int, default=4000,
                        help="rows checked for each other query")
    parser.add_argument("--reps", type=int, default=2, help="timed repeats (kernel, ends)")
    parser.add_argument("--e2e-modes", default="end,full")
    parser.add_argument("--shapes", default="", help="extra 16-bit shapes to time, G,R;G,R")
    parser.add_argument("--scores-kernel", action="store_true",
                        help="also time scores only through the scores-only kernel variant")
    args = parser.parse_args()

    import cupy
    import pandas as pd

    timer = Timer(cupy)
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    device_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    slug = device_name.lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    print(f"device: {device_name}, {props['multiProcessorCount']} SMs, "
          f"cc {props['major']}{props['minor']}", flush=True)

    scoring = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    q_names, q_seqs = read_fasta(args.queries)
    t0 = time.perf_counter()
    _, db = read_fasta(args.db)
    series = pd.Series(db, name="sequence")
    read_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    encoded = encode(series, scoring)
    encode_seconds = time.perf_counter() - t0
    total_residues = int(encoded.offsets[-1])
    print(f"db: {len(db)} rows, {total_residues} residues (read {read_seconds:.1f} s, "
          f"encode {encode_seconds:.2f} s)", flush=True)

    alphabet = scoring.matrix.shape[0]
    upload_seconds, device_encoded = timer(lambda: (cupy.asarray(encoded.residues),
                                                    cupy.asarray(encoded.offsets)))
    prepare_seconds, targets = timer(lambda: inter_task.prepare_targets(
        device_encoded[0], device_encoded[1], encoded.valid, alphabet_size=alphabet))
    print(f"db on GPU: upload {upload_seconds:.3f} s, layout {prepare_seconds:.3f} s", flush=True)

    # compile every variant this run needs, on a small slice
    t0 = time.perf_counter()
    few = min(3000, len(db))
    warm = inter_task.prepare_targets(encoded.residues[:int(encoded.offsets[few])],
                                      encoded.offsets[:few + 1], alphabet_size=alphabet)
    shapes = [None] + [tuple(int(v) for v in s.split(",")) for s in args.shapes.split(";") if s]
    for codes in {len(s): scoring.encode(s) for s in q_seqs}.values():
        for mode in ("none", "end", "full"):
            for shape in shapes:
                inter_task.search(warm, codes, scoring, mode, shape=shape)
        if args.scores_kernel:
            os.environ["SWDASK_GPU_SCORES_KERNEL"] = "scores"
            inter_task.search(warm, codes, scoring, "none")
            del os.environ["SWDASK_GPU_SCORES_KERNEL"]
    cupy.cuda.Device().synchronize()
    print(f"warm-up (compiles) {time.perf_counter() - t0:.1f} s", flush=True)

    runs = []
    kept = {}  # (query index, mode) -> host results, for the exactness checks
    check = {"checked": None, "mismatches": None, "details": []}
    date = dt.date.today().isoformat()

    def write_result():
        """The JSON so far (rewritten after every stage, so a cut-off run leaves results)."""
        head = runs[0] if runs else {"seconds_total": None, "gcups_total": None,
                                     "per_query": []}
        result = {
            "workload": "W1", "mode": "kernel", "positions": "end",
            "device": device_name, "gpus": 1, "date": date, "commit": args.commit,
            "seconds_total": head["seconds_total"], "gcups_total": head["gcups_total"],
            "per_query": head["per_query"], "checked": check["checked"],
            "mismatches": check["mismatches"], "check_details": check["details"],
            "check_reference": check.get("reference"),
            "check_engine_error": check.get("engine_error"),
            "database": {"file": Path(args.db).name, "rows": len(db),
                         "residues": total_residues, "upload_seconds": upload_seconds,
                         "layout_seconds": prepare_seconds, "encode_seconds": encode_seconds},
            "scoring": "BLOSUM62, a gap of length k scores -(11 + (k-1))",
            "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                     "cupy": cupy.__version__},
            "runs": runs,
        }
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"W1-{slug}-{date}.json"
        target.write_text(json.dumps(result, indent=1))
        return target

    def kernel_run(mode, reps, shape=None, keep=False):
        per_query, total = [], 0.0
        for k, (name, seq) in enumerate(zip(q_names, q_seqs)):
            codes = scoring.encode(seq)
            times = []
            for _ in range(reps):
                seconds, found = timer(lambda: inter_task.search(targets, codes, scoring, mode,
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
                              "shape": list(shape or inter_task.choose_shape(
                                  len(seq), 2, targets.backend.compute_capability))})
        cells = sum(len(s) for s in q_seqs) * total_residues
        run = {"mode": "kernel", "positions": mode, "shape_override": shape,
               "seconds_total": total, "gcups_total": cells / total / 1e9, "reps": reps,
               "per_query": per_query}
        print(f"kernel {mode:4s} {str(shape or ''):8s} {total:7.3f} s "
              f"{cells / total / 1e12:6.3f} TCUPS", flush=True)
        return run

    runs.append(kernel_run("end", args.reps, keep=True))
    runs.append(kernel_run("none", 1))
    runs.append(kernel_run("full", 1, keep=True))
    for shape in shapes[1:]:
        runs.append(kernel_run("end", 1, shape=shape))
    if args.scores_kernel:  # scores only through the scores-only kernel variant
        os.environ["SWDASK_GPU_SCORES_KERNEL"] = "scores"
        run = kernel_run("none", 1)
        run["kernel"] = "scores-only variant (TRACK_END=false)"
        runs.append(run)
        del os.environ["SWDASK_GPU_SCORES_KERNEL"]
    write_result()

    # ------------------------------------------------------------------ exactness vs the CPU
    checked = mismatches = overflow_rows = 0
    details = []
    order = np.argsort([len(s) for s in q_seqs], kind="stable")
    full_check = set(order[:args.check_full].tolist())
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for k, seq in enumerate(q_seqs):
        prepared = prepare_query(seq, scoring)
        if k in full_check:
            rows = None
            cpu = cpu_reference(prepared, encoded, scoring, check)
        else:
            rows = np.sort(rng.choice(len(db), min(args.sample, len(db)), replace=False))
            sub = encode(series.iloc[rows], scoring)
            cpu = cpu_reference(prepared, sub, scoring, check)
        for mode in ("full", "end"):
            cols = COLUMNS if mode == "full" else ("score", "query_end", "target_end")
            bad = mismatched_rows(kept[(k, mode)], cpu, rows, cols)
            count = len(db) if rows is None else len(rows)
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
              long_query[::-1], long_query[:4000] + db[0] + long_query[4000:]]
    mutated = []
    for k in range(40):
        arr = np.frombuffer(long_query.encode(), dtype=np.uint8).copy()
        hit = rng.random(arr.size) < 0.02 * (k % 5)
        arr[hit] = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)[
            rng.integers(0, 20, int(hit.sum()))]
        mutated.append(arr.tobytes().decode())
    overflow_targets = pieces + mutated + [db[i] for i in rng.choice(len(db), min(3000, len(db)), replace=False)]
    over = encode(overflow_targets, scoring)
    prepared = prepare_query(long_query, scoring)
    over_targets = inter_task.prepare_targets(over.residues, over.offsets, over.valid,
                                              alphabet_size=alphabet)
    gpu = to_host(inter_task.search(over_targets, prepared.codes, scoring, "full"), cupy)
    cpu = cpu_reference(prepared, over, scoring, check)
    bad = mismatched_rows(gpu, cpu)
    overflow_rows = int((cpu.score > 32767).sum())
    checked += len(overflow_targets)
    mismatches += len(bad)
    details.append({"query": "two longest joined", "positions": "full",
                    "rows": len(overflow_targets), "mismatches": int(len(bad)),
                    "rows_over_32767": overflow_rows, "max_score": int(cpu.score.max())})
    check_seconds = time.perf_counter() - t0
    check.update(checked=checked, mismatches=mismatches, details=details,
                 seconds=check_seconds)
    print(f"checked {checked} (query,row) results against the CPU engine "
          f"({os.cpu_count()} cores, {check_seconds:.0f} s): {mismatches} mismatches; "
          f"{overflow_rows} rows over 32767", flush=True)

    write_result()

    # end-to-end from the pandas Series
    for mode in [m for m in args.e2e_modes.split(",") if m]:
        positions = {"end": "end", "full": True, "none": False}[mode]
        per_query, total = [], 0.0
        for name, seq in zip(q_names, q_seqs):
            seconds, frame = timer(lambda: swdask.align(seq, series, positions=positions,
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
        write_result()

    path = write_result()
    print(f"wrote {path}")
    print(f"\n{'query':10s} {'len':>5s} {'end s':>8s} {'GCUPS':>7s} {'none':>7s} {'full':>7s}")
    for a, b, c in zip(runs[0]["per_query"], runs[1]["per_query"], runs[2]["per_query"]):
        print(f"{a['name']:10s} {a['length']:5d} {a['seconds']:8.4f} {a['gcups']:7.0f} "
              f"{b['gcups']:7.0f} {c['gcups']:7.0f}")
    for run in runs:
        shape = run.get("shape_override")
        print(f"{run['mode']:10s} {run['positions']:4s} {str(shape or ''):8s} "
              f"{run['seconds_total']:8.3f} s {run['gcups_total'] / 1000:6.3f} TCUPS")
    print(f"checked {checked}, mismatches {mismatches}")


if __name__ == "__main__":
    main()
