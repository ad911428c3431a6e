"""GPU time of the traceback's own kernels in row-wise pairs with alignments (issue 11):
CUDA events around each group of :func:`swdask.gpu._traceback._launch_group` (the traceback
and the packing of its CIGARs; an event pair brackets the group's work on its stream, so
the figure excludes waiting for the forward kernels queued before it), beside the whole
call's wall clock. A diagnosis, not a benchmark.

    python3 benchmarks/time_traceback_gpu.py --data /tmp/w2data [--set W2-dna-reads]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import bench_w2_gpu as w2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--set", default="W2-dna-reads")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from pathlib import Path

    import cupy

    from swdask.gpu import _traceback
    from swdask.lowlevel import align_pairs

    scoring = w2.scoring_for(args.set)
    q, t = w2.load(Path(args.data), w2.file_of(args.set), scoring)
    events = []
    real = _traceback._launch_group

    def timed(runtime, *rest):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launched = real(runtime, *rest)
        stop.record()
        events.append((start, stop, len(rest[1])))
        return launched

    _traceback._launch_group = timed
    host = _host_clocks()
    align_pairs(q, t, scoring, "alignment", backend="gpu")  # warm-up
    for _ in range(args.repeats):
        events.clear()
        host.clear()
        begin = time.perf_counter()
        align_pairs(q, t, scoring, "alignment", backend="gpu")
        wall = time.perf_counter() - begin
        cupy.cuda.Device().synchronize()
        spans = [cupy.cuda.get_elapsed_time(a, b) / 1e3 for a, b, _ in events]
        pairs = sum(count for _, _, count in events)
        print(f"wall {wall:.4f} s; traceback kernels {sum(spans):.4f} s over {len(spans)} "
              f"groups, {pairs} pairs (per group: {', '.join(f'{s * 1e3:.1f}' for s in spans)}"
              f" ms); host seconds in: "
              + ", ".join(f"{name} {seconds:.4f}" for name, seconds in host.items()),
              flush=True)
    _traceback._launch_group = real
    cells = int((np.diff(q.offsets) * np.diff(t.offsets)).sum())
    print(f"cells {cells}")


def _host_clocks() -> dict:
    """Seconds this thread spends in the stages of ``align_pairs_gpu`` (each wrapped; a stage
    that reads results back includes the wait for the GPU)."""
    from swdask.gpu import _pairs, _traceback

    clocks: dict = {}

    def wrap(owner, name, label):
        real = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                clocks[label] = clocks.get(label, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)

    wrap(_pairs, "to_device", "upload")
    wrap(_pairs, "run_pairs", "forward launches")
    wrap(_pairs, "_trace_chunk", "trace launches (after the chunk's cells came back)")
    wrap(_traceback.PendingTraces, "collect", "trace read-back")
    wrap(_pairs, "finish", "finish")
    return clocks


if __name__ == "__main__":
    main()
