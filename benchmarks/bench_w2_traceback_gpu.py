"""Where the time of row-wise pairs with alignments goes on the GPU (issue 11's W2-dna-reads
figure): the pairs alone and with alignments (``--repeats`` timed calls of each), then

* with ``--events``: calls with alignments, each with the GPU time of the traceback's own
  kernels (CUDA events around each group's launches, the stage ``trace group`` of
  ``swdask.lowlevel.timed_stages``: the traceback and the packing of its CIGARs; an event
  pair brackets the group's work on its stream, so waiting for the forward kernels queued
  before it is not counted) and the host seconds spent in each stage of the GPU's
  ``align_pairs`` (:data:`HOST_STAGES`; a stage that reads results back includes the wait
  for the GPU);
* unless ``--no-profile``: one call with alignments under cProfile (the device
  synchronises where results come back, so a kernel's time shows in the copy after it).

A diagnosis, not a benchmark: ``bench_w2_gpu.py run --alignment`` times it.

    python3 benchmarks/bench_w2_traceback_gpu.py --data /tmp/w2data [--set W2-dna-reads]
        [--repeats 9] [--events] [--no-profile]
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
    parser.add_argument("--events", action="store_true",
                        help="the traceback kernels' GPU time and the host stages, per call")
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
    if args.events:
        _events(q, t, scoring, max(1, args.repeats))
    if args.no_profile:
        return
    profile = cProfile.Profile()
    profile.enable()
    align_pairs(q, t, scoring, "alignment", backend="gpu")
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
    print(text.getvalue())


#: The host stages of ``align_pairs`` on the GPU timed with ``--events``
#: (``swdask.lowlevel.STAGES``), as printed.
HOST_STAGES = {"pairs upload": "upload", "pairs forward": "forward launches",
               "trace launch": "trace launches (after the chunk's cells came back)",
               "trace read-back": "trace read-back", "pairs finish": "finish"}


def _events(q, t, scoring, repeats: int) -> None:
    import cupy

    from swdask.lowlevel import align_pairs, timed_stages

    for _ in range(repeats):
        with timed_stages("trace group", gpu=True) as groups, \
                timed_stages(*HOST_STAGES) as host:
            begin = time.perf_counter()
            found = align_pairs(q, t, scoring, "alignment", backend="gpu")
            wall = time.perf_counter() - begin
        cupy.cuda.Device().synchronize()
        spans = [cupy.cuda.get_elapsed_time(a, b) / 1e3 for a, b in groups["trace group"]]
        cigar = found.columns["cigar"]
        print(f"wall {wall:.4f} s; traceback kernels {sum(spans):.4f} s over {len(spans)} "
              f"groups, {len(cigar) - cigar.null_count} alignments (per group: "
              f"{', '.join(f'{s * 1e3:.1f}' for s in spans)} ms); host seconds in: "
              + ", ".join(f"{label} {sum(host[name]):.4f}"
                          for name, label in HOST_STAGES.items() if host[name]),
              flush=True)


if __name__ == "__main__":
    main()
