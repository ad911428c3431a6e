"""The one-GPU job's database read, step by step (a diagnosis, not a benchmark): the file's
bytes read, uploaded, cut into records (``fasta_layout``) and encoded on the GPU
(``encode_fasta_text``), timed with the device synchronised after each step; three rounds in
one process: the first loads CuPy's kernels (from its disk cache, or compiles them), the later
ones show the steady cost; cProfile of the first round (run the script twice on a fresh
machine: the second run's first round loads the kernels from CuPy's disk cache, as a job's
parse does).

    python3 benchmarks/profile_gpu_parse.py --db sp500k.fa
"""
from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    import cupy

    from swdask import make_scoring
    from swdask._fasta import fasta_layout, whole_plain_text
    from swdask.gpu._encode import encode_fasta_text

    cupy.zeros(1).sum()
    print(f"import cupy and swdask, context: {time.perf_counter() - start:.3f} s")
    scoring = make_scoring("BLOSUM62")
    sync = cupy.cuda.Device().synchronize
    import cProfile
    import pstats

    for round_ in range(args.rounds):
        steps = {}
        mark = time.perf_counter()

        def step(name):
            nonlocal mark
            sync()
            now = time.perf_counter()
            steps[name] = now - mark
            mark = now

        profile = cProfile.Profile() if round_ == 0 else None
        if profile is not None:  # the first round: where loading CuPy's kernels goes
            profile.enable()
        path, text = whole_plain_text(args.db)
        step("read file")
        device = cupy.asarray(text)
        step("upload")
        layout = fasta_layout(device, cupy)
        step("fasta_layout")
        del layout, device
        encode_fasta_text(text, path, scoring)
        step("encode_fasta_text (upload, layout, encode, headers to host)")
        if profile is not None:
            profile.disable()
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v:.3f} s" for k, v in steps.items()))
        if profile is not None:
            print("\n-- cProfile of round 1, by own time")
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
