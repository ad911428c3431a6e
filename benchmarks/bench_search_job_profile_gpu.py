"""Where the time of one ``swdask search`` job on the GPU goes, from the process's start to
the file written: a diagnosis, not a benchmark (``bench_search_job.py --gpu`` times the job).

    python3 benchmarks/bench_search_job_profile_gpu.py --db sp500k.fa \\
        --queries cudasw_queries.fasta

1. the import tree of ``swdask.cli`` (``python -X importtime``), the largest entries;
2. a warm run of the job as a user runs it (``python -m swdask search ... --verbose``):
   its wall clock and phases;
3. the same job again in a new process that samples every thread's stack every 5 ms from
   the first line on (before any import) and runs the job under cProfile
   (``swdask.lowlevel.run_command``: the command line inside this process, after the
   imports of ``swdask.lowlevel``): a timeline of what each thread was doing (the innermost
   swdask, CuPy or numba frame, or the module being imported), then cProfile's largest
   cumulative entries (the main thread).
"""
from __future__ import annotations

import time

_START = time.perf_counter()

import argparse  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

_INTERVAL = 0.005
_BUCKET = 0.1


def _sample(samples: list, stop: threading.Event) -> None:
    me = threading.get_ident()
    while not stop.wait(_INTERVAL):
        names = {t.ident: t.name for t in threading.enumerate()}
        now = time.perf_counter() - _START
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            samples.append((now, names.get(ident, str(ident)), _where(frame)))


def _where(frame) -> str:
    """The innermost frame worth naming: swdask's, CuPy's, numba's, or an import's."""
    importing = None
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        if "/swdask/" in path:
            return f"swdask/{path.rsplit('/swdask/', 1)[1]}:{code.co_name}"
        if code.co_name == "_find_and_load" and importing is None:
            importing = frame.f_locals.get("name")
        for package in ("cupy", "numba", "pandas", "pyarrow"):
            if f"/{package}/" in path:
                return f"{package}:{code.co_name}"
        frame = frame.f_back
    return f"import {importing}" if importing else "other"


def _timeline(samples) -> None:
    threads = sorted({name for _, name, _ in samples})
    for thread in threads:
        print(f"\n-- thread {thread}: buckets of {_BUCKET:.1f} s, the most sampled places")
        buckets: dict[int, dict[str, int]] = {}
        for when, name, where in samples:
            if name == thread:
                counts = buckets.setdefault(int(when / _BUCKET), {})
                counts[where] = counts.get(where, 0) + 1
        for bucket in sorted(buckets):
            counts = sorted(buckets[bucket].items(), key=lambda item: -item[1])[:3]
            text = "; ".join(f"{where} x{count}" for where, count in counts)
            print(f"{bucket * _BUCKET:5.1f} s  {text}")


def _inner(argv) -> None:
    """The job in this process, sampled and under cProfile (``--inner``)."""
    import cProfile
    import io
    import pstats

    samples: list = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(samples, stop), daemon=True)
    sampler.start()
    profile = cProfile.Profile()
    profile.enable()
    from swdask.lowlevel import run_command

    code = run_command(argv)
    profile.disable()
    stop.set()
    sampler.join()
    print(f"job in process (sampled, profiled): exit {code}, "
          f"{time.perf_counter() - _START:.2f} s from the interpreter's start")
    _timeline(samples)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(45)
    print("\n-- cProfile, main thread, cumulative\n" + text.getvalue())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        _inner(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--backend", default="gpu")
    parser.add_argument("--output", default="/tmp/profile-hits.tsv")
    args = parser.parse_args()
    job = ["search", args.queries, args.db, "-o", args.output, "--backend", args.backend,
           "--verbose"]
    imports = subprocess.run([sys.executable, "-X", "importtime", "-c", "import swdask.cli"],
                             capture_output=True, text=True).stderr.splitlines()
    rows = []
    for line in imports:
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print("-- import swdask.cli: the largest cumulative entries (ms)")
    for micros, name in sorted(rows, reverse=True)[:30]:
        print(f"{micros / 1000:8.1f}  {name}")
    for label in ("first run (caches)", "warm run"):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "swdask", *job], capture_output=True,
                              text=True)
        print(f"\n-- {label}: exit {done.returncode}, {time.perf_counter() - start:.2f} s")
        print(done.stderr[-2000:])
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--inner", *job],
                          capture_output=True, text=True)
    print(f"\n-- sampled run: {time.perf_counter() - start:.2f} s (the sampler and cProfile "
          "slow it down)")
    print(done.stdout)
    print(done.stderr[-3000:])


if __name__ == "__main__":
    main()
