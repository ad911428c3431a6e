"""The ``swdask align-long`` job: two FASTA records in, their best alignment out as PAF.

Below the CLI, above :mod:`swdask._long`: reads the first record of each file, runs
:func:`swdask.align_long`, and writes the alignment as minimap2 writes PAF (12 columns, then
``tp:A:P``, ``AS:i:`` the score and ``cg:Z:`` the CIGAR), whole or not at all; ``--plot``
draws the alignments over the two sequences (matplotlib, the test extra's plotting library,
imported only then).
"""
from __future__ import annotations

import os
import sys

import pandas as pd

from ._long import run_long
from ._timing import Phases

#: PAF's twelve columns (minimap2's man page).
PAF_COLUMNS = ("query_name", "query_length", "query_start", "query_end", "strand",
               "target_name", "target_length", "target_start", "target_end", "matches",
               "alignment_length", "mapq")


def first_record(path: str, scoring, what: str):
    """``(name, sequence)`` of the first record of a FASTA file; a ValueError naming the
    file when it has none. A note on standard error says when later records are left."""
    from ._fasta import read_fasta_frame
    from ._sequences import encode_text

    records = read_fasta_frame(path, blocksize=None, threads=1)
    if records.empty:
        raise ValueError(f"{path}: no {what} record (the file holds no '>' header)")
    if len(records) > 1:
        print(f"swdask: {path}: aligning its first record, {records['id'].iloc[0]}; "
              f"{len(records) - 1} more left out", file=sys.stderr)
    name, sequence = str(records["id"].iloc[0]), str(records["sequence"].iloc[0])
    try:
        encode_text(sequence, scoring, what=f"{what} {name}")
    except ValueError as exc:
        raise type(exc)(f"{exc} (in {path})") from None
    return name, sequence


def paf_lines(hits: pd.DataFrame, query_name: str, query_length: int, target_name: str,
              target_length: int) -> list[str]:
    """One PAF line per alignment (forward strand; mapq 255: not computed)."""
    lines = []
    for row in hits.itertuples(index=False):
        fields = [query_name, query_length, row.query_start, row.query_end, "+", target_name,
                  target_length, row.target_start, row.target_end, row.matches,
                  row.alignment_length, 255, "tp:A:P", f"AS:i:{row.score}",
                  f"cg:Z:{row.cigar}"]
        lines.append("\t".join(str(field) for field in fields))
    return lines


def write_whole(output: str, text: str) -> None:
    """``text`` to ``output`` ('-': standard output), under a temporary name then renamed."""
    if output == "-":
        sys.stdout.write(text)
        return
    folder, name = os.path.split(os.path.abspath(output))
    temporary = os.path.join(folder, f".{name}.swdask-partial")
    try:
        with open(temporary, "w") as handle:
            handle.write(text)
        os.replace(temporary, output)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def plot(hits: pd.DataFrame, query_name: str, query_length: int, target_name: str,
         target_length: int, output: str) -> None:
    """A dot plot: each alignment as a segment from its start to its end cell over the
    query (x) and target (y) axes, labelled by rank."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib (pip install matplotlib)") from None
    figure, axes = plt.subplots(figsize=(6, 6))
    for row in hits.itertuples(index=False):
        axes.plot([row.query_start, row.query_end], [row.target_start, row.target_end],
                  linewidth=1.5)
        axes.annotate(str(row.rank), (row.query_end, row.target_end), fontsize=7)
    axes.set_xlim(0, query_length)
    axes.set_ylim(0, target_length)
    axes.set_xlabel(f"{query_name} ({query_length:,} letters)")
    axes.set_ylabel(f"{target_name} ({target_length:,} letters)")
    axes.set_title("swdask align-long")
    folder, name = os.path.split(os.path.abspath(output))
    temporary = os.path.join(folder, f".swdask-partial.{name}")
    try:
        figure.savefig(temporary, dpi=120, format=os.path.splitext(output)[1][1:] or "png")
        os.replace(temporary, output)
    finally:
        plt.close(figure)
        if os.path.exists(temporary):
            os.remove(temporary)


def run(query_path: str, target_path: str, output: str, *, top: int, backend: str,
        plot_path: str | None, progress: bool, phases: Phases | None = None,
        n_workers: int | None = None, scheduler: str | None = None,
        **scoring_options) -> pd.DataFrame:
    """The whole job; the alignments frame. ``phases`` times it: "read" (both files),
    "cluster" (with ``n_workers`` or ``scheduler``: a local cluster started, or the running
    one reached, whose workers take the CPU score passes' tiles), "score pass",
    "traceback", "write" and "plot"."""
    from contextlib import ExitStack

    from ._scoring import make_scoring

    phases = phases if phases is not None else Phases()
    scoring = make_scoring(**scoring_options)
    with phases("read"):
        query_name, query = first_record(query_path, scoring, "query")
        target_name, target = first_record(target_path, scoring, "target")
    report = _progress_line if progress else None
    with ExitStack() as stack:
        client = None
        if n_workers is not None or scheduler is not None:
            from ._cluster import cluster

            with phases("cluster"):
                client = stack.enter_context(cluster(scheduler, n_workers, gpu=False))
        hits = run_long(query, target, top=top, backend=backend, client=client,
                        traceback=True, progress=report, phases=phases, **scoring_options)
    if progress:
        print(file=sys.stderr)
    with phases("write"):
        write_whole(output, "".join(line + "\n" for line in paf_lines(
            hits, query_name, len(query), target_name, len(target))))
    if plot_path is not None:
        with phases("plot"):
            plot(hits, query_name, len(query), target_name, len(target), plot_path)
    return hits


def _progress_line(done: int, total: int) -> None:
    share = done / total if total else 1.0
    print(f"\rswdask: score pass {done:,} of {total:,} cells ({share:.0%})", end="",
          file=sys.stderr, flush=True)
