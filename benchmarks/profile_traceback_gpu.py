"""Where the time of row-wise pairs with alignments goes on the GPU (issue 11's W2-dna-reads
figure): the pairs alone, then the same call with alignments under cProfile (the device
synchronises where results come back, so a kernel's time shows in the copy that follows it).
A diagnosis, not a benchmark: ``bench_w2_gpu.py run --alignment`` times it.

    python3 benchmarks/profile_traceback_gpu.py --data /tmp/w2data [--set W2-dna-reads]
        [--repeats 9 --no-profile]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np

import bench_w2_gpu as w2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--set", default="W2-dna-reads")
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed calls of each mode after the warm-up (min and median)")
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    from pathlib import Path

    from swdask.lowlevel import align_pairs

    scoring = w2.scoring_for(args.set)
    q, t = w2.load(Path(args.data), w2.file_of(args.set), scoring)
    for mode in ("full", "alignment"):  # warm-up
        align_pairs(q, t, scoring, mode, backend="gpu")
    seconds = {"full": [], "alignment": []}
    for _ in range(args.repeats):
        for mode in seconds:
            start = time.perf_counter()
            align_pairs(q, t, scoring, mode, backend="gpu")
            seconds[mode].append(time.perf_counter() - start)
    cells = int((np.diff(q.offsets) * np.diff(t.offsets)).sum())
    for mode, values in seconds.items():
        print(f"{mode}: min {min(values):.4f} s, median {float(np.median(values)):.4f} s, "
              f"{cells / float(np.median(values)) / 1e9:.1f} GCUPS (median of "
              f"{len(values)})", flush=True)
    if args.no_profile:
        return
    profile = cProfile.Profile()
    profile.enable()
    align_pairs(q, t, scoring, "alignment", backend="gpu")
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
    print(text.getvalue())


if __name__ == "__main__":
    main()
