"""W3 (benchmarks protocol, ../shared/BENCHMARKS.md): swdask's CPU engine against parasail.

All of mmseqs2's example DB.fasta.gz (20,000 proteins, 9,055,569 residues) against queries of
144, 464, 1000 and 2504 residues from the CUDASW++ query set, BLOSUM62, a gap of length k
scoring -(11 + (k-1) x 1), measured side by side in one run on the same cores:

* swdask: ``swdask.lowlevel.align_many`` (``backend="cpu"``) from targets already encoded
  (the Arrow layout) to result arrays, numba threads on every core, for each positions mode
  asked for
  (``full``: score, start and end; ``end``: score and end; ``none``: score only);
* parasail: ``sw_striped_profile_sat`` (8-bit, then 16-bit where that saturates), one
  process per core (a ``multiprocessing`` pool over chunks of the database), the query
  profile built once per chunk; scores only;
* ssearch36 (Debian package fasta3, when installed): the whole program per query,
  ``ssearch36 -T <cores> -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0 query.fa DB.fasta`` (the
  database decompressed once beforehand), as a user runs it: reading the database, every
  score, statistics and the alignments of its 10 best hits. Not a kernel figure, so it is
  recorded beside the others, not in their ratios.

Each figure is the fastest of ``--repeat`` runs (the machine is shared and noisy); swdask
and parasail alternate query by query. GCUPS = |query| x database residues / seconds / 1e9.

Exactness: every swdask score (in every mode) is compared with parasail's; a sample of
targets per query (``--check-sample``) is also scored with parasail's 32-bit
``sw_striped_profile_32``, which can neither saturate nor overflow, so both programs are
held to an exact reference. ``checked``/``mismatches`` in the JSON count swdask scores.

Usage::

    python benchmarks/bench_w3_cpu.py                      # full W3, writes the JSON
    python benchmarks/bench_w3_cpu.py --subset 2000 --no-write   # a quick look
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import parasail

import swdask
from _common import (ROOT, cpu_flags, cpu_model, git_commit, git_dirty, nearest,
                     read_sequences, run_process, slug, today, write_json)
from swdask.lowlevel import align_many, encode, get_backend, prepare_query

DB_PATH = Path("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
QUERIES_PATH = ROOT.parent / "shared" / "data" / "cudasw_queries.fasta"
if not QUERIES_PATH.exists():
    QUERIES_PATH = Path("/work/shared/data/cudasw_queries.fasta")
GAP_OPEN, GAP_EXTEND = 11, 1

# parasail worker state (filled by the pool initialiser, inherited on fork)
_DB: list[str] = []


# ----------------------------------------------------------------------------- parasail


def _parasail_init(db):
    global _DB
    _DB = db


def _parasail_chunk(task):
    query, start, stop = task
    profile = parasail.profile_create_sat(query, parasail.blosum62)
    return [parasail.sw_striped_profile_sat(profile, _DB[k], GAP_OPEN, GAP_EXTEND).score
            for k in range(start, stop)]


def _parasail_exact(task):
    query, indices = task
    profile = parasail.profile_create_32(query, parasail.blosum62)
    return [parasail.sw_striped_profile_32(profile, _DB[k], GAP_OPEN, GAP_EXTEND).score
            for k in indices]


def chunk_bounds(lengths: np.ndarray, n_chunks: int) -> list[tuple[int, int]]:
    """Contiguous chunks of about equal residues."""
    cumulative = np.cumsum(lengths)
    cuts = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, n_chunks) / n_chunks)
    edges = [0, *sorted(set(int(c) + 1 for c in cuts)), len(lengths)]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="144,464,1000,2504",
                        help="query lengths to pick from the CUDASW++ set (closest match)")
    parser.add_argument("--subset", type=int, default=0,
                        help="use only the first N database records (0: all)")
    parser.add_argument("--positions", default="full,end,none",
                        help="swdask positions modes to time (full, end, none)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (fastest kept)")
    parser.add_argument("--check-sample", type=int, default=300,
                        help="targets per query also scored with parasail's 32-bit function")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="parasail processes (default: one per core)")
    parser.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/"
                        "w3-cpu/W3-<cpu>-<date>.json)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)

    _, db = read_sequences(DB_PATH)
    if args.subset:
        db = db[: args.subset]
    db_lengths = np.array([len(s) for s in db], dtype=np.int64)
    residues_total = int(db_lengths.sum())
    query_names, query_seqs = read_sequences(QUERIES_PATH)
    queries = []
    for wanted in (int(x) for x in args.lengths.split(",")):
        k = nearest(query_seqs, wanted)
        queries.append((query_names[k], query_seqs[k]))
    modes = [m.strip() for m in args.positions.split(",") if m.strip()]

    scoring = swdask.make_scoring("BLOSUM62", gap_open=GAP_OPEN, gap_extend=GAP_EXTEND)
    encoded = encode(db, scoring, labels=None, what="target row")

    import numba

    threads = numba.get_num_threads()
    load_before = os.getloadavg()
    print(f"W3: {len(db)} targets, {residues_total} residues; queries "
          f"{[len(q) for _, q in queries]}; swdask numba threads {threads}, parasail processes "
          f"{args.workers}; CPU {cpu_model()}, {os.cpu_count()} logical CPUs", flush=True)

    # warm-up: numba (JIT or cache load) and the pool
    warm = prepare_query(queries[0][1], scoring)
    small = encode(db[:64], scoring, labels=None, what="target row")
    for mode in modes:
        align_many(warm, small, mode, backend="cpu")
    context = mp.get_context("fork")
    pool = context.Pool(args.workers, initializer=_parasail_init, initargs=(db,))
    chunks = chunk_bounds(db_lengths, args.workers * 4)
    pool.map(_parasail_chunk, [(queries[0][1], a, min(b, a + 8)) for a, b in chunks])

    ssearch = shutil.which("ssearch36")
    work = Path(tempfile.mkdtemp(prefix="w3-"))
    if ssearch:  # the database as ssearch36 reads it (the subset too), and its first run
        (work / "db.fasta").write_text("".join(f">t{k}\n{sequence}\n"
                                               for k, sequence in enumerate(db)))
        ssearch_command = [ssearch, "-T", str(os.cpu_count() or 1), "-f", "-11", "-g", "-1",
                           "-s", "BL62", "-m", "8", "-b", "10", "-d", "0"]
        (work / "q.fasta").write_text(f">q\n{queries[0][1]}\n")
        run_process(ssearch_command + [work / "q.fasta", work / "db.fasta"])

    rng = np.random.default_rng(0)
    per_query = []
    ssearch_seconds = []
    checked = mismatches = 0
    peer_checked = peer_mismatches = 0
    best_seconds = {mode: [] for mode in modes}
    peer_seconds = []
    for name, query in queries:
        # the query's CPU profile, built once per query, outside the timing
        prepared = get_backend("cpu").prepare(prepare_query(query, scoring))
        times = {mode: [] for mode in modes}
        peer_times = []
        results = {}
        peer_scores = None
        for _ in range(args.repeat):
            for mode in modes:
                start = time.perf_counter()
                result = align_many(prepared, encoded, mode, backend="cpu")
                times[mode].append(time.perf_counter() - start)
                results[mode] = result
            start = time.perf_counter()
            parts = pool.map(_parasail_chunk, [(query, a, b) for a, b in chunks], chunksize=1)
            peer_times.append(time.perf_counter() - start)
            peer_scores = np.array([s for part in parts for s in part], dtype=np.int64)
        # exactness: parasail sat everywhere, parasail 32-bit on a sample
        sample = np.sort(rng.choice(len(db), size=min(args.check_sample, len(db)),
                                    replace=False))
        exact_parts = pool.map(_parasail_exact, [(query, part.tolist()) for part in
                                                 np.array_split(sample, args.workers * 2)])
        exact = np.array([s for part in exact_parts for s in part], dtype=np.int64)
        peer_checked += len(sample)
        peer_mismatches += int((peer_scores[sample] != exact).sum())
        row = {"name": name, "length": len(query)}
        for mode in modes:
            score = results[mode].score
            checked += len(score) + len(sample)
            mismatches += int((score != peer_scores).sum()) + int((score[sample] != exact).sum())
            seconds = min(times[mode])
            best_seconds[mode].append(seconds)
            row[f"seconds_{mode}"] = round(seconds, 4)
            row[f"gcups_{mode}"] = round(len(query) * residues_total / seconds / 1e9, 3)
        seconds_peer = min(peer_times)
        peer_seconds.append(seconds_peer)
        row["peer_seconds"] = round(seconds_peer, 4)
        row["peer_gcups"] = round(len(query) * residues_total / seconds_peer / 1e9, 3)
        if ssearch:
            (work / "q.fasta").write_text(f">q\n{query}\n")
            seconds = min(run_process(ssearch_command + [work / "q.fasta", work / "db.fasta"])[0]
                          for _ in range(args.repeat))
            ssearch_seconds.append(seconds)
            row["ssearch36_seconds"] = round(seconds, 4)
            row["ssearch36_gcups"] = round(len(query) * residues_total / seconds / 1e9, 3)
        headline = modes[0]
        row["seconds"] = row[f"seconds_{headline}"]
        row["gcups"] = row[f"gcups_{headline}"]
        per_query.append(row)
        line = "  ".join(f"{mode} {row[f'gcups_{mode}']:6.2f}" for mode in modes)
        print(f"{name[:40]:40s} {len(query):5d}  swdask GCUPS {line}  |  parasail "
              f"{row['peer_gcups']:6.2f}  ratio({headline}) "
              f"{row[f'gcups_{headline}'] / row['peer_gcups']:.2f}  |  ssearch36 "
              f"{row.get('ssearch36_gcups', float('nan')):6.2f}", flush=True)
    pool.close()
    pool.join()
    shutil.rmtree(work, ignore_errors=True)

    cells = sum(len(q) for _, q in queries) * residues_total
    peer_gcups_total = cells / sum(peer_seconds) / 1e9
    totals = {}
    for mode in modes:
        seconds = sum(best_seconds[mode])
        totals[mode] = {"seconds_total": round(seconds, 4),
                        "gcups_total": round(cells / seconds / 1e9, 3),
                        "ratio_to_peer": round(cells / seconds / 1e9 / peer_gcups_total, 3)}
    print(f"total: parasail {peer_gcups_total:.2f} GCUPS; " + "; ".join(
        f"swdask {mode} {t['gcups_total']:.2f} GCUPS (x{t['ratio_to_peer']:.2f})"
        for mode, t in totals.items()))
    if ssearch_seconds:
        print(f"ssearch36 (whole program): {cells / sum(ssearch_seconds) / 1e9:.2f} GCUPS")
    print(f"exactness: swdask {checked} scores checked, {mismatches} mismatches; parasail sat "
          f"{peer_checked} checked against 32-bit, {peer_mismatches} mismatches")

    headline = modes[0]
    report = {
        "workload": "W3",
        "mode": "kernel",
        "positions": headline,
        "device": cpu_model(),
        **cpu_flags(),
        "logical_cpus": os.cpu_count(),
        "numba_threads": threads,
        "date": today(),
        "commit": git_commit(),
        "uncommitted_changes": git_dirty(),
        "database": {"path": str(DB_PATH), "records": len(db), "residues": residues_total},
        "scoring": {"matrix": "BLOSUM62", "gap_open": GAP_OPEN, "gap_extend": GAP_EXTEND},
        "statistic": f"fastest of {args.repeat} runs",
        "seconds_total": totals[headline]["seconds_total"],
        "gcups_total": totals[headline]["gcups_total"],
        "by_positions": totals,
        "per_query": per_query,
        "checked": checked,
        "mismatches": mismatches,
        "peer": "parasail",
        "peer_function": f"sw_striped_profile_sat, {args.workers} processes",
        "peer_version": getattr(parasail, "__version__", "unknown"),
        "peer_gcups_total": round(peer_gcups_total, 3),
        "peer_seconds_total": round(sum(peer_seconds), 4),
        "peer_checked": peer_checked,
        "peer_mismatches": peer_mismatches,
        "ssearch36": ({"command": "ssearch36 -T {cores} -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0 "
                                  "query.fasta db.fasta (whole program: reading, every score, "
                                  "statistics, the 10 best hits' alignments)",
                       "seconds_total": round(sum(ssearch_seconds), 4),
                       "gcups_total": round(cells / sum(ssearch_seconds) / 1e9, 3)}
                      if ssearch_seconds else None),
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "python": platform.python_version(),
        "numba": numba.__version__,
    }
    if not args.no_write:
        out = Path(args.out) if args.out else (
            ROOT / "benchmarks" / "results" / "w3-cpu"
            / f"W3-{slug(report['device'])}-{os.cpu_count()}cpu-{report['date']}.json")
        print(f"wrote {write_json(out, report, indent=2)}")
    return 1 if mismatches or peer_mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
