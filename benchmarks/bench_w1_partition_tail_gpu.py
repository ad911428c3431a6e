#!/usr/bin/env python3
"""W1 kernel-only on a whole database and on its partitions: the longest targets' tail.

A Dask partition is one launch of the inter-task kernel, and a launch lasts at least as long
as its longest target pair takes on one thread group, however few rows the partition has.
This measures, for sp500k's first 100%, 50% and 25% of rows (a partition of a 1-, 2- or
4-GPU job), ``swdask.lowlevel.search(mode="end")`` over all 20 W1 queries (seconds, GCUPS),
for several length-bucket configurations (the setting ``swdask.gpu.buckets``: "4" is one
launch of G = 4; "4:2000,8" runs pairs of 2,000+ letters with G = 8 on a second stream, side
by side; G is 4 or 8). Every configuration's scores and end cells must equal those of "4" on
every row. ``--stacked 1,4,8`` times the many-queries search's scan instead: the 20 queries
in stacks against the database cut into 1, 4 and 8 partitions (issue 13's "8 partitions at
0.9 x of one").

Writes ``W1-partition-tail-<device>-<date>.json`` into --out.
"""
from __future__ import annotations

import argparse
import time

import dask
import numpy as np

import swdask
from _common import (add_commit_argument, read_fasta, read_sequences, stamp, synchronize,
                     timed, write_result)
from swdask.lowlevel import (EncodedSequences, encode, failed_checks, get_backend, prepare_query,
                             prepare_targets, search)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    add_commit_argument(parser)
    parser.add_argument("--configs", default="4;4:2000,8;4:1000,8;4:3000,8")
    parser.add_argument("--fractions", default="1,0.5,0.25")
    parser.add_argument("--partitions", type=int, default=0,
                        help="also cut the whole database into this many partitions of "
                             "consecutive rows and search them one after another")
    parser.add_argument("--stacked", default="",
                        help="comma-separated partition counts (e.g. 1,4,8): the whole database "
                             "cut into that many partitions, each searched by every query in "
                             "stacks, as the many-queries search runs them (the default "
                             "buckets only)")
    args = parser.parse_args()

    import cupy

    scoring = swdask.make_scoring("BLOSUM62")
    _, queries = read_sequences(args.queries)
    db = read_fasta(args.db)["sequence"]
    encoded = encode(db, scoring)
    residues = cupy.asarray(encoded.residues)
    offsets = cupy.asarray(encoded.offsets)
    alphabet = scoring.matrix.shape[0]
    configs = [c for c in args.configs.split(";") if c]
    report = {"benchmark": "W1 kernel-only by partition size and length buckets",
              **stamp(args.commit), "queries": [len(q) for q in queries], "runs": []}
    for fraction in (float(f) for f in args.fractions.split(",") if f):
        rows = int(len(db) * fraction)
        last = int(encoded.offsets[rows])
        targets = prepare_targets(residues[:last], offsets[:rows + 1], encoded.valid[:rows],
                                  alphabet_size=alphabet)
        cells = sum(len(q) for q in queries) * last
        reference = None
        for config in configs:
            with dask.config.set({"swdask.gpu.buckets": config}):
                for q in {len(q): q for q in queries}.values():  # compile
                    search(targets, prepare_query(q, scoring).codes, scoring, "end")
                seconds, mismatched, found_all = 0.0, 0, []
                for query in queries:
                    codes = prepare_query(query, scoring).codes
                    took, found = timed(lambda: search(targets, codes, scoring, "end"))
                    seconds += took
                    found_all.append({k: cupy.asnumpy(found[k])
                                      for k in ("score", "query_end", "target_end")})
            if reference is None:
                reference = found_all
            else:
                for got, want in zip(found_all, reference):
                    mismatched += int(sum((got[k] != want[k]).sum() for k in got))
            run = {"fraction": fraction, "rows": rows, "residues": last, "buckets": config,
                   "seconds": seconds, "gcups": cells / seconds / 1e9,
                   "mismatched_cells_vs_4": mismatched}
            report["runs"].append(run)
            print(f"{fraction:5.2f} {config:<12} {seconds:8.3f} s {run['gcups']:7.0f} GCUPS "
                  f"mismatches {mismatched}", flush=True)
        del targets
        cupy.get_default_memory_pool().free_all_blocks()
    if args.partitions > 1:
        partitioned(args, queries, scoring, encoded, residues, offsets, configs, report, cupy)
    if args.stacked:
        counts = [int(c) for c in args.stacked.split(",") if c]
        stacked(counts, queries, scoring, encoded, residues, offsets, report, cupy)
    print(f"wrote {write_result(args.out, 'W1-partition-tail', report, indent=2)}")


def queued(parts, codes_list, scoring, keep: bool):
    """Seconds to search every query against each partition ``(first row, end row,
    targets)`` in turn (partition by partition), queued with the checks deferred, and the
    results by (first row, end row, query index) if ``keep`` (else each is dropped when the
    next search is queued, as the search job keeps only its top rows)."""
    synchronize()
    start = time.perf_counter()
    checks, found = [], {}
    for a, b, targets in parts:
        for k, codes in enumerate(codes_list):
            result = search(targets, codes, scoring, "end", checks=checks)
            found[(a, b, k)] = result if keep else None
    for key, again in zip(list(found), failed_checks(checks)):
        if again:  # a 16-bit lane may have wrapped: searched again, as the search job does
            a, b, k = key
            targets = next(t for first, _, t in parts if first == a)
            result = search(targets, codes_list[k], scoring, "end")
            found[key] = result if keep else None
    synchronize()
    return time.perf_counter() - start, found


def partitioned(args, queries, scoring, encoded, residues, offsets, configs, report, cupy):
    """The whole database cut into ``args.partitions`` partitions of consecutive rows (each
    laid out once, before timing), every query searched against each in turn: the summed
    seconds against the same configuration's whole-database run (``x_one_partition``), and
    every partition's scores and end cells against that run's rows. Then both again queued
    (:func:`queued`): each search above waits for its checks, so the GPU idles while the
    host prepares the next one; the search job defers them."""
    alphabet = scoring.matrix.shape[0]
    n = len(encoded.offsets) - 1
    bounds = [n * k // args.partitions for k in range(args.partitions + 1)]
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        first, last = int(encoded.offsets[a]), int(encoded.offsets[b])
        parts.append((a, b, prepare_targets(residues[first:last], offsets[a:b + 1] - first,
                                            encoded.valid[a:b], alphabet_size=alphabet)))
    cells = sum(len(q) for q in queries) * int(encoded.offsets[-1])
    whole_runs = {run["buckets"]: run for run in report["runs"] if run["fraction"] == 1.0}
    whole = prepare_targets(residues, offsets, encoded.valid, alphabet_size=alphabet)
    for config in configs:
        with dask.config.set({"swdask.gpu.buckets": config}):
            for q in {len(q): q for q in queries}.values():  # compile
                search(parts[0][2], prepare_query(q, scoring).codes, scoring, "end")
            seconds, mismatched = 0.0, 0
            for query in queries:
                codes = prepare_query(query, scoring).codes
                want = search(whole, codes, scoring, "end")
                for a, b, targets in parts:
                    took, found = timed(lambda: search(targets, codes, scoring, "end"))
                    seconds += took
                    mismatched += int(sum(int((found[k] != want[k][a:b]).sum())
                                          for k in ("score", "query_end", "target_end")))
            # queued as the many-queries search queues them: the checks deferred, nothing
            # read back until the last search of the run (then any saturated one again)
            codes_list = [prepare_query(q, scoring).codes for q in queries]
            whole_queued, whole_found = queued([(0, n, whole)], codes_list, scoring, True)
            parts_queued, parts_found = queued(parts, codes_list, scoring, True)
            queued_mismatched = 0
            for (a, b, k), found in parts_found.items():
                want = whole_found[(0, n, k)]
                queued_mismatched += int(sum(int((found[c] != want[c][a:b]).sum())
                                             for c in ("score", "query_end", "target_end")))
            del whole_found, parts_found
            whole_dropped, _ = queued([(0, n, whole)], codes_list, scoring, False)
            parts_dropped, _ = queued(parts, codes_list, scoring, False)
        one = whole_runs.get(config)
        run = {"partitions": args.partitions, "buckets": config, "seconds": seconds,
               "gcups": cells / seconds / 1e9, "mismatched_cells_vs_whole": mismatched,
               "x_one_partition": one["seconds"] / seconds if one else None,
               "queued": {"whole_seconds": whole_queued, "partitions_seconds": parts_queued,
                          "x_one_partition": whole_queued / parts_queued,
                          "mismatched_cells_vs_whole": queued_mismatched,
                          "results_dropped": {"whole_seconds": whole_dropped,
                                              "partitions_seconds": parts_dropped,
                                              "x_one_partition": whole_dropped / parts_dropped}}}
        report["runs"].append(run)
        print(f"{args.partitions} partitions {config:<16} {seconds:8.3f} s "
              f"{run['gcups']:7.0f} GCUPS x one partition "
              f"{run['x_one_partition'] if one else float('nan'):.3f} mismatches {mismatched}; "
              f"queued: whole {whole_queued:.3f} s, partitions {parts_queued:.3f} s, x one "
              f"partition {whole_queued / parts_queued:.3f}, mismatches {queued_mismatched}; "
              f"results dropped: whole {whole_dropped:.3f} s, partitions {parts_dropped:.3f} s, "
              f"x one partition {whole_dropped / parts_dropped:.3f}", flush=True)
    del whole, parts
    cupy.get_default_memory_pool().free_all_blocks()


def stacked(counts, queries, scoring, encoded, residues, offsets, report, cupy):
    """The many-queries search's scan (issue 13: "a search split into 4 and 8 partitions on
    one GPU keeps its throughput"): for each count, the database cut into that many
    partitions of consecutive rows, and every partition searched in turn by all queries
    through the GPU backend as the search runs them (``many_against_many``: the
    partition's layout cached by a warm run first, the queries in stacks, each stack's
    results finished behind the next one's launches, the checks read once at the end, then
    any saturated search again), with the default buckets. Seconds of two repeats,
    ``x_one_partition`` against the first count's best (1 for the whole), and every
    partition's scores and end cells against that count's."""
    backend = get_backend("gpu")
    n = len(encoded.offsets) - 1
    prepared = [prepare_query(q, scoring) for q in queries]
    cells = sum(len(q) for q in queries) * int(encoded.offsets[-1])

    class Partition:  # the owner of a partition's cached layout
        pass

    reference, first_best = None, None
    for count in counts:
        bounds = [n * k // count for k in range(count + 1)]
        parts = []
        for a, b in zip(bounds, bounds[1:]):
            first, last = int(encoded.offsets[a]), int(encoded.offsets[b])
            parts.append((a, Partition(), EncodedSequences(
                residues[first:last], offsets[a:b + 1] - first, encoded.valid[a:b])))

        def run():
            checks, found = [], []
            for a, owner, part in parts:
                listed = [[] for _ in prepared]
                found += [(a, k, result) for k, result in enumerate(backend.many_against_many(
                    prepared, part, "end", owner=owner, fingerprint=("partition",),
                    checks=listed))]
                checks += listed
            for position, again in enumerate(backend.failed_checks(checks)):
                if again:  # a 16-bit lane may have wrapped: searched again alone
                    a, k, _ = found[position]
                    owner, part = next((o, p) for first, o, p in parts if first == a)
                    found[position] = (a, k, backend.one_against_many(
                        prepared[k], part, "end", owner=owner, fingerprint=("partition",)))
            return found

        run()  # lay the partitions out, compile (every stack's shapes) and warm
        times = []
        for _ in range(2):
            took, found = timed(run)
            times.append(took)
        rows = {}
        for a, k, result in found:
            for key in ("score", "query_end", "target_end"):
                rows.setdefault((k, key), [None] * len(parts))[bounds.index(a)] = (
                    cupy.asnumpy(result.columns[key]))
        whole = {key: np.concatenate(pieces) for key, pieces in rows.items()}
        mismatched = 0
        if reference is None:
            reference = whole
        else:
            mismatched = int(sum(int((whole[key] != reference[key]).sum()) for key in whole))
        best = min(times)
        first_best = first_best or best
        run_record = {"stacked_partitions": count, "seconds": times,
                      "gcups": cells / best / 1e9, "x_one_partition": first_best / best,
                      "mismatched_cells_vs_first": mismatched}
        report["runs"].append(run_record)
        print(f"stacked, {count} partitions: {', '.join(f'{t:.3f}' for t in times)} s, "
              f"{run_record['gcups']:.0f} GCUPS, x one partition "
              f"{run_record['x_one_partition']:.3f}, mismatches {mismatched}", flush=True)
        del parts, found, rows, whole
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
