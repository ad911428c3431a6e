"""Where the scan of many queries spends its GPU time: a diagnosis, not a benchmark
(``bench_search_job.py --gpu`` times the job).

In one process, the database (sp500k) encoded once on the GPU, the ``--sample`` proteins
drawn from DB.fasta.gz (the search-1000 set's seed) are scanned as the many-queries search
scans them (``swdask.lowlevel.search_many``, scores only, top 10, no start positions), under
several stack limits (``swdask.lowlevel.stack_limits``: most query rows and queries in one
stack; ``1`` query: every query alone, as before stacking). For each: the scan's wall clock
(synchronised) and the GPU time of the forward launches alone (CUDA events around the stage
``forward``, ``swdask.lowlevel.timed_stages``), so the rest (scatter, checks, top rows, the
host between launches) is the difference; TCUPS of both; and the GPU seconds between events
around the scatter of the kernels' slots to rows, the results' ``finish`` and the top rows'
selection.

    python3 benchmarks/bench_search_stacks_gpu.py --db sp500k.fa --sample-from DB.fasta.gz
"""
from __future__ import annotations

import argparse
import time

from _common import read_fasta, sample_proteins

#: the stages timed (swdask.lowlevel.STAGES), the forward launches first
REGIONS = ("forward", "scatter", "finish", "top rows")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--sample-from", required=True)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--limits", default="8192x64,16384x128,4096x32,1x1",
                        help="ROWSxQUERIES stack limits to run, in order")
    parser.add_argument("--stack-bytes", type=float, default=None,
                        help="GiB the results of one stack may take (default: the library's)")
    args = parser.parse_args()

    import cupy

    import swdask
    from swdask.lowlevel import (get_backend, prepare_query, search_many, stack_limits,
                                 timed_stages)

    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    encoded = get_backend("gpu").encode(read_fasta(args.db)["sequence"], scoring,
                                        what="target row")
    residues = int(encoded.offsets[-1])
    pool = sample_proteins(args.sample_from, args.sample, args.seed)
    queries = [prepare_query(s, scoring) for s in pool["sequence"]]
    cells = sum(len(q) for q in queries) * residues
    print(f"{len(queries)} queries, {sum(len(q) for q in queries)} letters; database "
          f"{residues} residues; {cells:.3e} cells", flush=True)

    def scan(chosen):
        search_many(chosen, encoded, 10, "none", backend="gpu", owner=encoded,
                    fingerprint=("profile",))

    def gpu_seconds(found) -> float:
        return sum(cupy.cuda.get_elapsed_time(a, b) for a, b in found) / 1000

    scan(queries[:3])  # the layout cached, the kernels loaded: one short stack first
    cupy.cuda.Device().synchronize()
    stack_bytes = int(args.stack_bytes * (1 << 30)) if args.stack_bytes else None
    with stack_limits(result_bytes=stack_bytes) as (_, _, in_force):
        print(f"results of one stack at most {in_force / (1 << 30):.2f} GiB")
        for limit in args.limits.split(","):
            rows, count = (int(v) for v in limit.split("x"))
            # the GPU time between events around each region (the stream is busy throughout,
            # so it is the region's kernels; idle gaps would count too)
            with stack_limits(rows, count), timed_stages(*REGIONS, gpu=True) as regions:
                start = time.perf_counter()
                scan(queries)
                cupy.cuda.Device().synchronize()
                wall = time.perf_counter() - start
            events = regions["forward"]
            kernel = gpu_seconds(events)
            print(f"stacks of <= {rows} rows, <= {count} queries: scan {wall:.2f} s "
                  f"({cells / wall / 1e12:.3f} TCUPS), forward launches {kernel:.2f} s "
                  f"({cells / kernel / 1e12:.3f} TCUPS) in {len(events)} calls; the rest "
                  f"{wall - kernel:.2f} s", flush=True)
            print("  GPU seconds by region: " + ", ".join(
                f"{name} {gpu_seconds(found):.2f} ({len(found)} calls)"
                for name, found in regions.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
