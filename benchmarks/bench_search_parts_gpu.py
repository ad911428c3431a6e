#!/usr/bin/env python3
"""The 1,000-query search against a column cut into parts, one GPU, one process.

What a Dask search does on each GPU, without Dask: sp500k read into a pandas column, the
1,000 proteins of bench_search_job.py's ``search-1000`` (``--sample-from``, seed 10) searched
with ``Series.sw.search(top=10, backend="gpu")`` against the whole column and against its
``k`` slices of equal residues, one after another (``--parts 1,4,16``), in ``--rounds``
rounds, under each of ``--configs`` (swdask settings, e.g.
``"defaults;gpu.long-rows-per-sm=0"``: the defaults, then no long rows on the intra-task
kernel); prints seconds, TCUPS (cells / seconds) and swdask's stages
(``swdask.lowlevel.stage_seconds``: scan, positions) for each. An untimed search of one 16th
first loads every kernel variant.

Measured with it (docs/notes/gpu-several-gpus-and-dask.md, "A column cut into parts, no
Dask"): 4 parts ran at 0.94 of the whole column, 16 parts at 0.29 (the long-row split; see
the notes).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from _common import read_fasta, sample_proteins


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA")
    parser.add_argument("--sample-from", required=True, help="mmseqs2's DB.fasta.gz")
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--parts", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", default="defaults",
                        help="';'-separated settings, each 'key=value,...' or 'defaults'")
    args = parser.parse_args()

    import dask
    import yaml

    from swdask.lowlevel import stage_seconds

    column = read_fasta(args.db)["sequence"]
    queries = sample_proteins(args.sample_from, args.sample, 10)[["id", "sequence"]]
    ends = np.concatenate([[0], np.cumsum(column.str.len().to_numpy())])
    cells = int(queries["sequence"].str.len().sum()) * int(ends[-1])

    def slices(count):
        cuts = [0] + [int(np.searchsorted(ends, ends[-1] * j / count))
                      for j in range(1, count)] + [len(column)]
        return [column.iloc[a:b] for a, b in zip(cuts[:-1], cuts[1:])]

    slices(16)[0].sw.search(queries, top=10, backend="gpu")
    stage_seconds()
    for number in range(args.rounds):
        for config in args.configs.split(";"):
            settings = {} if config == "defaults" else {
                f"swdask.{key}": yaml.safe_load(value)
                for key, value in (item.split("=", 1) for item in config.split(","))}
            with dask.config.set(settings):
                for count in (int(v) for v in args.parts.split(",")):
                    start = time.perf_counter()
                    for part in slices(count):
                        part.sw.search(queries, top=10, backend="gpu")
                    seconds = time.perf_counter() - start
                    stages = {name: round(v, 2) for name, v in stage_seconds().items()}
                    print(f"round {number} [{config}] parts {count:2d}: {seconds:7.2f} s  "
                          f"{cells / seconds / 1e12:.3f} TCUPS  {stages}", flush=True)


if __name__ == "__main__":
    main()
