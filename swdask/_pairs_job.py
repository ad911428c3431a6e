"""The job behind ``swdask pairs``: record ``i`` of one file against record ``i`` of another.

The ADEPT and GASAL2 case (reads against their candidate regions, one pair per row) as a
command: both files are read whole (FASTA or FASTQ, compressed too), paired by position,
aligned by :func:`swdask.align_pairs` on the chosen backend, and written in any of the
search's formats through its writers (:func:`swdask._search.write_hits`). Every pair keeps its
row, in file order: a pair that does not align (score 0, an empty sequence) has a null
alignment in TSV, CSV and Parquet, no line in blast6 (BLAST writes hits only), and an
unmapped line in SAM (FLAG 4), so that a SAM of the reads holds every read once.
"""
from __future__ import annotations

import pandas as pd

from ._api import align_pairs_with
from ._options import Options
from ._search import read_sequences, write_hits
from ._timing import Phases

#: The pairs table's first columns; the options' result columns follow, then
#: ``target_length`` and the target's description.
PAIR_COLUMNS = ("query_id", "target_id")


def read_pairs(queries_path, targets_path, strip_gaps: bool = False):
    """``(queries, targets)``: the two files as frames of equally many records, or a
    ValueError naming both files and their counts."""
    queries = read_sequences(queries_path, strip_gaps)
    targets = read_sequences(targets_path, strip_gaps)
    if len(queries) != len(targets):
        raise ValueError(
            f"swdask pairs aligns record i of {queries_path} against record i of "
            f"{targets_path}, but they hold {len(queries)} and {len(targets)} records; "
            "give two files of the same records in the same order")
    if not len(queries):
        raise ValueError(f"{queries_path} and {targets_path} hold no records")
    return queries, targets


def pairs_table(queries: pd.DataFrame, targets: pd.DataFrame, options: Options) -> pd.DataFrame:
    """Each pair's result as the writers' table: :data:`PAIR_COLUMNS`, the options'
    columns, with alignments ``target_length``, and ``target_description`` (no rank: each
    pair is its read's one alignment, SAM's primary line)."""
    found = align_pairs_with(queries["sequence"].reset_index(drop=True),
                             targets["sequence"].reset_index(drop=True), options)
    table = pd.DataFrame(dict(zip(PAIR_COLUMNS, (queries["id"].to_numpy(),
                                                 targets["id"].to_numpy()))))
    for name in found.columns:
        table[name] = found[name].array
    if options.mode == "alignment":
        table["target_length"] = targets["sequence"].str.len().astype("Int64").to_numpy()
    table["target_description"] = targets["description"].to_numpy()
    strings = pd.StringDtype("pyarrow")
    return table.astype({"query_id": strings, "target_id": strings,
                         "target_description": strings})


def run(queries_path, targets_path, output: str, fmt: str, options: Options,
        phases: Phases | None = None, strip_gaps: bool = False, command: str = "",
        sort: bool = False) -> int:
    """Read, align and write (whole or not at all; ``sort``: a BAM coordinate-sorted and
    indexed); the number of pairs written."""
    phases = phases if phases is not None else Phases()
    with phases("read"):
        queries, targets = read_pairs(queries_path, targets_path, strip_gaps)
    with phases("align"):
        table = pairs_table(queries, targets, options)
    with phases("write"):
        write_hits(table, output, fmt, queries=queries, command=command, sort=sort)
    return len(table)
