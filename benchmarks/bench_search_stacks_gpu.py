"""Where the scan of many queries spends its GPU time: a diagnosis, not a benchmark
(``bench_search.py --gpu`` times the job).

In one process, the database (sp500k) laid out once on the GPU, the ``--sample`` proteins
drawn from DB.fasta.gz (the search-1000 set's seed) are scanned as the many-queries search
scans them (``_many_queries.search_encoded``, scores only, top 10, no start positions), under
several stack limits (``inter_task.STACK_ROWS`` / ``STACK_QUERIES``; ``1`` query: every
query alone, as before stacking). For each: the scan's wall clock (synchronised) and the
GPU time of the forward launches alone (CUDA events around ``_run_forward``), so the rest
(scatter, checks, top rows, the host between launches) is the difference; TCUPS of both;
and the GPU seconds between events around the scatter of the kernels' slots to rows, the
results' ``finish`` and the top rows' selection.

    python3 benchmarks/profile_stacks_gpu.py --db sp500k.fa --sample-from DB.fasta.gz
"""
from __future__ import annotations

import argparse
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--sample-from", required=True)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--limits", default="8192x64,16384x128,4096x32,1x1",
                        help="ROWSxQUERIES stack limits to run, in order")
    parser.add_argument("--stack-bytes", type=float, default=None,
                        help="GiB the results of one stack may take (inter_task.STACK_BYTES; "
                             "default: the library's)")
    args = parser.parse_args()

    import cupy
    import numpy as np

    from swdask import _many_queries
    from swdask._fasta import read_fasta_frame, whole_plain_text
    from swdask._scoring import make_scoring
    from swdask._sequences import prepare_query
    from swdask.gpu import inter_task
    from swdask.gpu._runtime import get_runtime
    from swdask.gpu._encode import encode_fasta_text

    scoring = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    runtime = get_runtime()
    path, text = whole_plain_text(args.db)
    encoded, _headers = encode_fasta_text(text, path, scoring, runtime)
    residues = int(encoded.offsets[-1])
    pool = read_fasta_frame(args.sample_from, blocksize=None, threads=1)
    rng = np.random.default_rng(args.seed)
    chosen = np.sort(rng.choice(len(pool), size=min(args.sample, len(pool)), replace=False))
    queries = [prepare_query(s, scoring) for s in pool["sequence"].iloc[chosen]]
    cells = sum(len(q) for q in queries) * residues
    print(f"{len(queries)} queries, {sum(len(q) for q in queries)} letters; database "
          f"{residues} residues; {cells:.3e} cells", flush=True)

    from swdask.gpu import _backend

    regions = {"forward": [], "scatter": [], "finish": [], "top rows": []}

    def timed(function, name):
        def run(*a, **k):
            start = cupy.cuda.Event()
            start.record()
            found = function(*a, **k)
            end = cupy.cuda.Event()
            end.record()
            regions[name].append((start, end))
            return found
        return run

    # the GPU time between events around each region (the stream is busy throughout, so
    # it is the region's kernels; idle gaps would count too)
    events = regions["forward"]
    inter_task._run_forward = timed(inter_task._run_forward, "forward")
    inter_task._scatter = timed(inter_task._scatter, "scatter")
    _backend.finish = timed(_backend.finish, "finish")
    _many_queries.top_candidates = timed(_many_queries.top_candidates, "top rows")
    owner = encoded
    # the layout cached, the kernels loaded: one short stack first
    _many_queries.search_encoded(queries[:3], encoded, 10, "none", backend="gpu", owner=owner,
                                 fingerprint=("profile",))
    cupy.cuda.Device().synchronize()
    if args.stack_bytes:
        inter_task.STACK_BYTES = int(args.stack_bytes * (1 << 30))
    print(f"results of one stack at most {inter_task.STACK_BYTES / (1 << 30):.2f} GiB")
    for limit in args.limits.split(","):
        rows, count = (int(v) for v in limit.split("x"))
        inter_task.STACK_ROWS, inter_task.STACK_QUERIES = rows, count
        for found in regions.values():
            found.clear()
        start = time.perf_counter()
        _many_queries.search_encoded(queries, encoded, 10, "none", backend="gpu", owner=owner,
                                     fingerprint=("profile",))
        cupy.cuda.Device().synchronize()
        wall = time.perf_counter() - start
        kernel = sum(cupy.cuda.get_elapsed_time(a, b) for a, b in events) / 1000
        print(f"stacks of <= {rows} rows, <= {count} queries: scan {wall:.2f} s "
              f"({cells / wall / 1e12:.3f} TCUPS), forward launches {kernel:.2f} s "
              f"({cells / kernel / 1e12:.3f} TCUPS) in {len(events)} calls; the rest "
              f"{wall - kernel:.2f} s", flush=True)
        print("  GPU seconds by region: " + ", ".join(
            f"{name} {sum(cupy.cuda.get_elapsed_time(a, b) for a, b in found) / 1000:.2f} "
            f"({len(found)} calls)" for name, found in regions.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
