"""The search job behind ``swdask search``: every query against a database, best hits per query.

Each query is scored through the Dask accessor, ``database.sw.align(query)``, and each aligned
partition is cut to its ``top`` best rows by a ``sw-top-hits`` task, which the scheduler runs
where the aligned partition already is (only those few rows, without sequences, travel); the
client then merges the ``top x partitions`` candidates of each query. One ``compute`` holds every query's graph, so each
database partition is read once and the queries run in parallel over the cluster.

Ranking: score descending, ties broken by the target's place in the database (its record
number, the index of :func:`swdask.read_fasta`), so the result does not depend on the
partitioning. We sort explicitly rather than use Dask's ``nlargest``, whose choice among
equal scores follows concatenation order and is not documented as a rule. Targets that score
0 (no local alignment at all) are not hits and are left out, so a query may have fewer than
``top`` hits.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ._fasta import expand_paths, parse_blocksize
from ._options import Options
from ._scoring import ScoringError
from ._sequences import SequenceError, prepare_query

#: Columns of the hits table, in order. Positions are 0-based and end-exclusive:
#: query[query_start:query_end] and target[target_start:target_end] are the aligned segments.
HIT_COLUMNS = ("query_id", "rank", "target_id", "score", "query_start", "query_end",
               "target_start", "target_end", "target_description")
_POSITIONS = ("query_start", "query_end", "target_start", "target_end")

#: Bounds of the automatic partition size of the database.
_MIN_BLOCK = 2**20
_MAX_BLOCK = 64 * 2**20

_SCORING_KEYS = ("matrix", "gap_open", "gap_extend", "match", "mismatch", "on_unknown")


def top_of(frame: pd.DataFrame, top: int) -> pd.DataFrame:
    """The ``top`` best rows of aligned database rows (score > 0; score descending, then
    record number ascending), with columns id, description, score and the positions."""
    score = frame["score"].to_numpy(dtype=np.int64, na_value=0)
    rows = np.flatnonzero(score > 0)
    record = frame.index.to_numpy()[rows]
    order = rows[np.lexsort((record, -score[rows]))[:top]]
    return frame.iloc[order][["id", "description", "score", *_POSITIONS]]


def _partition_meta() -> pd.DataFrame:
    strings = pd.Series([], dtype=pd.StringDtype("pyarrow"))
    columns = {"id": strings, "description": strings}
    columns.update({c: pd.Series([], dtype="Int64") for c in ("score", *_POSITIONS)})
    return pd.DataFrame(columns)


def device_top_of(frame, top: int) -> pd.DataFrame:
    """:func:`top_of` for a cuDF partition: the ranking runs on the GPU (sort on score, then
    record number), and only the ``top`` rows come to host memory, as pandas."""
    hits = frame[frame["score"] > 0][["id", "description", "score", *_POSITIONS]]
    record = "__record__"
    hits[record] = hits.index  # a column to sort on (cuDF's reset_index takes no names=)
    ranked = hits.sort_values(by=["score", record], ascending=[False, True]).head(top)
    host = ranked.drop(columns=[record]).to_pandas()
    strings = pd.StringDtype("pyarrow")
    return top_of(host.astype({"id": strings, "description": strings,
                               **{c: "Int64" for c in ("score", *_POSITIONS)}}), top)


def lazy_top_hits(queries: pd.DataFrame, database, top: int, **align_options) -> list:
    """One lazy Dask frame per query: each partition's ``top`` best hits (not yet merged).

    ``queries`` has columns id and sequence; ``database`` is a Dask frame from
    :func:`swdask.read_fasta`, with pandas or cuDF partitions (ranked on the GPU, then only
    the hits come to the host). ``align_options`` go to ``database.sw.align``.
    """
    meta = _partition_meta()
    on_gpu = not isinstance(database._meta, pd.DataFrame)
    lazy = []
    for query_id, sequence in zip(queries["id"], queries["sequence"]):
        try:
            aligned = database.sw.align(sequence, column="sequence", **align_options)
        except (ScoringError, SequenceError) as exc:
            raise type(exc)(f"query {query_id!r}: {exc}") from None
        lazy.append(aligned.map_partitions(device_top_of if on_gpu else top_of, top,
                                           meta=meta, token="sw-top-hits"))
    return lazy


def merge_top_hits(queries: pd.DataFrame, per_query: list[pd.DataFrame], top: int) -> pd.DataFrame:
    """Merge each query's per-partition candidates into its final ranked ``top`` hits."""
    frames = []
    for query_id, candidates in zip(queries["id"], per_query):
        best = top_of(candidates, top)
        frames.append(pd.DataFrame({
            "query_id": pd.Series([query_id] * len(best), dtype=pd.StringDtype("pyarrow")),
            "rank": np.arange(1, len(best) + 1, dtype=np.int64),
            "target_id": best["id"].to_numpy(),
            "score": best["score"].array,
            **{c: best[c].array for c in _POSITIONS},
            "target_description": best["description"].to_numpy(),
        }))
    if not frames:
        return _empty_hits()
    hits = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return hits.astype({"target_id": pd.StringDtype("pyarrow"),
                        "target_description": pd.StringDtype("pyarrow")})


def _empty_hits() -> pd.DataFrame:
    strings = pd.StringDtype("pyarrow")
    dtypes = {"query_id": strings, "rank": "int64", "target_id": strings,
              "target_description": strings}
    return pd.DataFrame({c: pd.Series([], dtype=dtypes.get(c, "Int64")) for c in HIT_COLUMNS})


def auto_blocksize(paths, n_threads: int, n_queries: int) -> int:
    """Partition size for the database: enough partitions that queries x partitions keeps
    every thread busy (two tasks each), between 1 MiB and 64 MiB."""
    fs, paths = expand_paths(paths)
    total = sum(int(fs.size(p)) for p in paths)
    wanted_partitions = max(1, math.ceil(2 * n_threads / max(1, n_queries)))
    return int(min(_MAX_BLOCK, max(_MIN_BLOCK, math.ceil(total / wanted_partitions))))


def output_format(output: str) -> str:
    """``"parquet"``, ``"csv"`` or ``"tsv"`` from the output name (``-`` is TSV on stdout)."""
    if output == "-":
        return "tsv"
    name = Path(output).name.lower()
    for suffix in (".gz", ".bz2", ".xz", ".zst"):  # pandas compresses text by the suffix
        if name.endswith(suffix) and not name.endswith(".parquet" + suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".tsv", ".tab", ".txt")):
        return "tsv"
    raise ValueError(
        f"-o {output!r}: the suffix says neither TSV nor Parquet; name the output *.tsv "
        "(tab-separated text; also .tab, .txt, .csv, with .gz for compression) or *.parquet, "
        "or '-' for TSV on standard output"
    )


def write_hits(hits: pd.DataFrame, output: str, stdout=None) -> None:
    """Write the hits table to ``output`` in the format its suffix names."""
    import sys

    fmt = output_format(output)
    if fmt == "parquet":
        hits.to_parquet(output, index=False)
    else:
        target = (stdout or sys.stdout) if output == "-" else output
        hits.to_csv(target, sep="," if fmt == "csv" else "\t", index=False)


def search(queries_path, database_path, *, top: int = 10, blocksize="auto", n_workers=None,
           scheduler=None, progress: bool = True, backend: str = "auto", report=None,
           **scoring_options) -> pd.DataFrame:
    """Run the search on a Dask cluster (started for it, or ``scheduler``); the hits table.

    ``scoring_options`` are those of :func:`swdask.align` (matrix, gap_open, gap_extend,
    match, mismatch, on_unknown). Scoring, queries and options are checked before any cluster
    starts, so a mistake costs no start-up time.
    """
    from ._cluster import cluster, show_progress
    from ._fasta import read_fasta

    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive whole number of hits per query, got {top!r}")
    unknown = set(scoring_options) - set(_SCORING_KEYS)
    if unknown:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    scoring = Options.parse(**scoring_options).scoring  # raises now, naming the parameter
    queries = read_fasta(queries_path, blocksize=None).compute(scheduler="sync")
    if queries.empty:
        raise ValueError(f"{queries_path}: no query records (the file holds no '>' header)")
    for query_id, sequence in zip(queries["id"], queries["sequence"]):
        try:
            prepare_query(sequence, scoring)
        except (ScoringError, SequenceError) as exc:
            raise type(exc)(f"query {query_id!r} in {queries_path}: {exc}") from None
    expand_paths(database_path)  # a missing file fails here, before a cluster starts
    if blocksize != "auto":
        parse_blocksize(blocksize)
    if backend not in ("auto", "cpu", "gpu", "cudf"):
        raise ValueError(f"backend must be 'auto', 'cpu', 'gpu' or 'cudf', got {backend!r}")
    # "cudf": the database partitions live on the GPUs as cuDF frames (read_fasta's cuDF
    # backend) and the engine reads them there
    engine = "gpu" if backend == "cudf" else backend
    align_options = dict(scoring_options, positions=True, backend=engine)
    kwargs = {} if report is None else {"report": report}
    # a GPU cluster only when the GPU engine is asked for: the pandas partitions of this job
    # are aligned on the CPU otherwise, where a LocalCluster uses every core
    gpu = {"gpu": "auto", "cudf": True}.get(backend, False)
    with cluster(scheduler, n_workers, gpu=gpu, **kwargs) as client:
        if blocksize == "auto":
            n_threads = sum(client.nthreads().values())
            blocksize = auto_blocksize(database_path, max(1, n_threads), len(queries))
        database = read_fasta(database_path, blocksize=blocksize,
                              backend="cudf" if backend == "cudf" else "pandas")
        futures = client.compute(lazy_top_hits(queries, database, top, **align_options))
        if progress:
            show_progress(futures)
        per_query = client.gather(futures)
    return merge_top_hits(queries, per_query, top)
