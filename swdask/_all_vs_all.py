"""All against all: a column searched against itself, each unordered pair scored once
(:func:`search_all_vs_all`, what ``swdask.all_vs_all``, ``.sw.all_vs_all`` and ``swdask search
DB.fa DB.fa --all-vs-all`` run).

Clustering and orthology start from a database searched against itself. Searching every row
as a query would score each pair twice; the scores are symmetric (score(a, b) = score(b, a)
for a symmetric substitution matrix in the modes that treat both sequences alike: local,
global, overlap), so each unordered pair is scored once and counts for both of its rows:

1. The rows are cut into blocks of ``block_rows``; each block pair (I, J) with I <= J is a
   task (on Dask one task per block of the triangle, named ``all-vs-all-I-J`` on the
   dashboard). Off the diagonal the rows of I are scanned against block J as one batch (the
   backend's many-queries scan, scores only: on the GPU stacks of queries per launch); on
   the diagonal the CPU scans each row against the rows after it in the block (a contiguous
   slice of the encoded column: no copy), the GPU groups of
   ``swdask.all-vs-all.gpu-group-rows`` rows against the rows from the group's first on
   (the pairs inside a group scored twice, counted once).
2. Each task keeps, for every row of I and of J, its ``top`` best partners among the pairs
   it scored: score descending, then the partner's row (record order, the search's rule).
   Every partner of a row is scored in exactly one task, so the ``top`` best of those
   candidates over all tasks are the row's ``top`` best of all: exact, as a search of the
   row against the whole column.
3. The hits (row, partner) then go through the search's own last step
   (:func:`swdask._many_queries.with_hits`: one row-wise batch for the positions and
   alignments, each row as the query) and ranking (:func:`~swdask._many_queries.rank_hits`:
   ranks, statistics against the whole column). Positions are the row's own: the end cell's
   tie rule is not symmetric, so they are never taken from the pair's other orientation.

The self hit (a row against itself) is left out unless ``include_self``; null and empty
rows have no hits. Rows scoring 0 are not hits.

Refused: ``mode`` query-global and target-global (one row's free ends are the other's
fixed ones: not symmetric), ``strand="both"`` (not built yet), a substitution matrix that
is not symmetric, fitted statistics (``statistics="search"``: they count every score of a
query, which this scores half of).

Floors: beside :mod:`swdask._many_queries`, whose last steps it runs; below the accessors.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import _engine, _settings
from ._api import column_targets, is_cudf, takes_options
from ._options import document
from ._many_queries import (add_composition, check_top, database_totals, hit_statistics,
                            hits_frame, no_hits, rank_hits, with_hits)
from ._results import PartialHits, host_array
from ._sequences import EncodedSequences, PreparedQuery
from ._timing import stage

#: The modes whose score is the same with query and target swapped.
SYMMETRIC_MODES = ("local", "global", "overlap")


def check_symmetric(options) -> None:
    """A ValueError naming what makes an all-against-all search of ``options`` score a pair
    differently from its two sides (see the module docstring), else nothing."""
    scoring = options.scoring
    if scoring.alignment_mode not in SYMMETRIC_MODES:
        raise ValueError(f"all_vs_all scores each pair once, for both of its rows, and "
                         f"mode={scoring.alignment_mode!r} frees the ends of one side only; "
                         f"use mode 'local', 'global' or 'overlap', or search the rows as "
                         f"queries (.sw.search)")
    if options.both_strands:
        raise ValueError("all_vs_all does not take strand='both' yet; search the rows as "
                         "queries (.sw.search) for both strands")
    if not np.array_equal(scoring.matrix, scoring.matrix.T):
        raise ValueError(f"all_vs_all scores each pair once, and {scoring.name} is not "
                         f"symmetric (score(a, b) != score(b, a)); search the rows as queries "
                         f"(.sw.search) instead")


def _block_rows(block_rows) -> int:
    value = _settings.get("all-vs-all.block-rows") if block_rows is None else block_rows
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"block_rows (setting swdask.all-vs-all.block-rows) must be a "
                         f"positive whole number of rows, got {value!r}")
    return int(value)


def _rows(encoded: EncodedSequences, first: int, stop: int) -> EncodedSequences:
    """Rows ``first..stop`` of ``encoded`` as a column of their own, views of its arrays."""
    offsets = encoded.offsets[first:stop + 1]
    return EncodedSequences(encoded.residues[int(offsets[0]):int(offsets[-1])],
                            offsets - offsets[0], encoded.valid[first:stop])


def _best(owners, partners, scores, top: int):
    """The ``top`` best ``(owner, partner, score)`` of each owner: score descending, then the
    partner's row; the owners in order."""
    order = np.lexsort((partners, -scores, owners))
    owners, partners, scores = owners[order], partners[order], scores[order]
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    place = np.arange(owners.size) - np.repeat(starts, np.diff(np.r_[starts, owners.size]))
    keep = place < top
    return owners[keep], partners[keep], scores[keep]


def _scores(chosen, queries: list, targets: EncodedSequences) -> list:
    """Each of ``queries`` scanned against ``targets`` (scores only, ``int64`` host arrays):
    one batch (on the GPU: stacks of queries per launch, read back once the batch is queued;
    a query whose fast path could not tell is scanned again, checked at once)."""
    checks = [[] for _ in queries]
    with stage("scan"):
        found = [result.columns["score"] for result in chosen.many_against_many(
            queries, targets, "none", checks=checks)]
        for k, again in enumerate(chosen.failed_checks(checks)):
            if again:
                found[k] = chosen.one_against_many(queries[k], targets, "none").columns["score"]
        return [np.asarray(host_array(score), dtype=np.int64) for score in found]


def _block(encoded, queries, backend, first_i, stop_i, first_j, stop_j, top, include_self):
    """One task: the pairs of rows ``first_i..stop_i`` with rows ``first_j..stop_j`` (each
    unordered pair once: on the diagonal, each row with the rows after it, and itself with
    ``include_self``), as ``(owner, partner, score)`` arrays of every row's ``top`` best among
    them (scores above 0)."""
    chosen = _engine.get_backend(backend, encoded.residues)
    owners, partners, scores = [], [], []
    diagonal = first_i == first_j
    # on the diagonal the CPU scans one row at a time against the rows after it (every pair
    # once); the GPU scans a group of rows as one batch against the rows from the group's
    # first on (the pairs inside the group scored twice, counted once), since a batch per
    # row would leave it waiting on the host
    if not diagonal:
        group = stop_i - first_i  # the whole block as one batch
    elif chosen.name == "gpu":
        group = max(1, int(_settings.get("all-vs-all.gpu-group-rows")))
    else:
        group = 1
    with chosen.own_pool():
        column = None if diagonal else _rows(encoded, first_j, stop_j)
        for start in range(first_i, stop_i, group):
            rows = [row for row in range(start, min(start + group, stop_i))
                    if len(queries[row])]
            first = (start + (0 if include_self or group > 1 else 1)) if diagonal else first_j
            if not rows or first >= stop_j:
                continue
            targets = _rows(encoded, first, stop_j) if diagonal else column
            partner = np.arange(first, stop_j, dtype=np.int64)
            for row, score in zip(rows, _scores(chosen, [queries[r] for r in rows], targets)):
                keep = score > 0
                if diagonal:
                    keep &= (partner > row) | ((partner == row) & include_self)
                owners.append(np.full(np.count_nonzero(keep), row, dtype=np.int64))
                partners.append(partner[keep])
                scores.append(score[keep])
    if not owners:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    owners, partners, scores = (np.concatenate(a) for a in (owners, partners, scores))
    # each pair counts for both rows (the self pair once)
    other = owners != partners
    return _best(np.concatenate([owners, partners[other]]),
                 np.concatenate([partners, owners[other]]),
                 np.concatenate([scores, scores[other]]), top)


def pair_tasks(encoded: EncodedSequences, queries, backend: str, top: int,
               include_self: bool, block_rows: int) -> list:
    """The triangle's block tasks (``dask.delayed``, named ``all-vs-all-I-J``), the encoded
    column and the queries passed to each as one shared object."""
    import dask  # not at import: `import swdask` stays without Dask

    rows = len(encoded)
    cuts = list(range(0, rows, block_rows)) + [rows]
    shared_encoded, shared_queries = dask.delayed(encoded, pure=False), dask.delayed(queries)
    block = dask.delayed(_block, pure=True)
    tasks = []
    for a in range(len(cuts) - 1):
        for b in range(a, len(cuts) - 1):
            tasks.append(block(shared_encoded, shared_queries, backend, cuts[a], cuts[a + 1],
                               cuts[b], cuts[b + 1], top, include_self,
                               dask_key_name=f"all-vs-all-{a}-{b}"))
    return tasks


def search_all_vs_all(column, ids, options, top: int = 10, *, include_self: bool = False,
                      statistics="auto", kept=None, block_rows=None,
                      client=None) -> pd.DataFrame:
    """Each row's ``top`` best hits among the other rows of ``column`` (pandas, in memory),
    each unordered pair scored once (module docstring): the frame ``.sw.search`` gives for
    the rows as queries (``ids`` their ``query_id``s), without the self hits unless
    ``include_self``. ``kept``: a frame of the column's rows whose columns each hit copies.
    The block tasks run on ``client`` (a ``distributed.Client``) where given, else in this
    process one after another (the kernels use every core)."""
    top = check_top(top)
    check_symmetric(options)
    if statistics == "search":
        raise ValueError("all_vs_all scores each pair once, and statistics='search' fits "
                         "each query to all of its scores; use statistics='blast', 'auto' "
                         "or None")
    if is_cudf(column):
        column = column.to_pandas()
    encoded, backend, _owner, _fingerprint, _library = column_targets(
        column, options.scoring, options, what="row")
    host_codes = np.asarray(host_array(encoded.residues))
    host_offsets = np.asarray(host_array(encoded.offsets))
    queries = [PreparedQuery(host_codes[host_offsets[k]:host_offsets[k + 1]], options.scoring)
               for k in range(len(encoded))]
    tasks = pair_tasks(encoded, queries, backend, top, include_self,
                       _block_rows(block_rows))
    if client is not None:
        results = client.gather(client.compute(tasks))
    else:
        import dask

        results = dask.compute(*tasks, scheduler="sync")
    owners, partners, scores = (np.concatenate([r[k] for r in results]) for k in range(3))
    owners, partners, scores = _best(owners, partners, scores, top)
    chosen = _engine.get_backend(backend, encoded.residues)
    stats = hit_statistics(statistics, options.scoring, queries)
    # composition-based statistics need each hit's gap cost: the hits are traced
    compositions = bool(stats and stats.composition)
    mode = "alignment" if compositions else options.mode
    strings = options.aligned_strings and not compositions
    with chosen.own_pool():
        found = with_hits(no_hits(mode, strings, False), queries, encoded, chosen, mode,
                          strings, False, owners, partners, {"score": scores})
    frame = hits_frame(found, ids, column, options, kept)
    if compositions:
        add_composition(frame, queries, found, column, options.scoring)
    residues, sequences = database_totals(column)
    return rank_hits(PartialHits(frame, {}, residues, sequences), top, stats)


def frame_rows(sequences, keep=()):
    """``(column, ids, kept)`` of ``all_vs_all``'s input: a Series (ids: its index), a list
    (ids 0, 1, ...) or a DataFrame with a ``sequence`` column (ids: its ``id`` column, else
    its index; ``keep``: its columns each hit copies), pandas or cuDF."""
    if is_cudf(sequences):
        sequences = sequences.to_pandas()
    if isinstance(sequences, pd.DataFrame):
        if "sequence" not in sequences.columns:
            raise KeyError(f"the frame has no 'sequence' column (columns: "
                           f"{', '.join(map(str, sequences.columns))}); pass a frame with "
                           f"'id' and 'sequence' columns, as swdask.read_fasta gives, or a "
                           f"Series")
        missing = [name for name in keep if name not in sequences.columns]
        if missing:
            raise KeyError(f"keep names column(s) the frame does not have: "
                           f"{', '.join(map(str, missing))}")
        ids = (sequences["id"] if "id" in sequences.columns else sequences.index).tolist()
        return sequences["sequence"], ids, sequences[list(keep)]
    if keep:
        raise ValueError("keep= copies columns of a DataFrame; a Series or list has none")
    column = sequences if isinstance(sequences, pd.Series) else pd.Series(list(sequences))
    return column, column.index.tolist(), None


@document
@takes_options
def all_vs_all(sequences, top: int = 10, *, include_self: bool = False, statistics="auto",
               keep=(), block_rows=None, client=None, options):
    """Every sequence searched against all the others, each unordered pair scored once.

    Args:
        sequences: a pandas or cuDF Series or list of sequence strings (nulls allowed: they
            have no hits), or a DataFrame with a ``sequence`` column (and an ``id`` column
            for the hits' ``query_id``, as :func:`swdask.read_fasta` gives).
        top: each row's best hits kept (by score, then the partners' order).
        include_self: also each row's hit against itself (left out by default).
        statistics: as ``.sw.search``'s (``"auto"``, ``"blast"``, ``"composition"`` or
            ``None``; not ``"search"``): E-values for the row's length against the whole
            column.
        keep: columns of a DataFrame copied for each hit (its target's values).
        block_rows: rows per block of the triangle, one task per block pair (default: the
            setting ``swdask.all-vs-all.block-rows``).
        client: a ``distributed.Client`` to run the block tasks on (named
            ``all-vs-all-I-J`` on its dashboard); default: in this process.
{scoring}

    Returns:
        The frame ``.sw.search`` gives with the rows as queries (``query_id``, ``rank``,
        ``target_index``, ``score``, ``bitscore``/``evalue`` where published, the positions:
        0-based, end-exclusive, each row as the query), without the self hits unless
        ``include_self``. Modes ``"local"``, ``"global"`` and ``"overlap"``, symmetric
        matrices and one strand only: the pair's score must be the same from both sides.
    """
    column, ids, kept = frame_rows(sequences, keep)
    return search_all_vs_all(column, ids, options, top, include_self=include_self,
                             statistics=statistics, kept=kept, block_rows=block_rows,
                             client=client)
