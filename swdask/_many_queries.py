"""Many queries against one column: the best ``top`` hits of each, in one pass over the data.

What ``.sw.search`` runs on each column (a pandas or cuDF column in memory, or each partition
of a Dask frame): the column is encoded once, and with the GPU backend laid out once, for the
whole batch of queries; each query then

1. **scans** every row for its score only (mode ``"none"``; with its end cell, ``"end"``,
   when that is the result asked for): no start positions, the costly half of a full
   alignment,
2. keeps its ``top`` best rows (:func:`swdask._results.top_candidates`: score descending, then
   record order; on the GPU for GPU data, so only ``top`` row numbers leave it, the rows of
   a few consecutive queries picked with one sort: ``backend.top_rows``),
3. and, when start positions are asked for, aligns just those rows again in full: every
   query's top rows together, as one batch of row-wise pairs.

On the GPU the scans of consecutive queries run as stacks (``backend.many_against_many``:
one forward launch for up to 256 queries, short queries sharing its passes), and nothing is
read back between queries (the kernels of the next stack queue behind the last), only once
the batch is done. The scan is told ``top``: the GPU then scouts a slice of the rows first
and gives each query a floor below which rows cannot be among its best, and skips tracking
them (``gpu/inter_task.cu``, "Floors from a scout"); not when every row's score is counted
for fitted statistics.

Exactness: a row's score and cells do not depend on the other rows, so the hits equal those
of a full alignment of every row followed by the same ranking (the tests check it). Rows
scoring 0 are not hits; a query may have fewer than ``top``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from . import _engine
from ._api import column_targets, is_cudf
from ._metrics import column_total
from ._results import (ALIGNED_STRINGS, ALIGNMENT_COLUMNS, COLUMNS, STRAND, TEXT_COLUMNS,
                       TOP_GROUP_SCORES, PartialHits, array_module, better_strand, column_array,
                       host_array, kernel_mode, result_columns)
from ._scoring import ScoringError
from ._profile import joined_queries
from ._sequences import (EncodedSequences, PreparedQuery, SequenceError, encode,
                         prepare_query, query_column, reverse_complement, stack_sequences)
from ._statistics import (SCORE_BINS, KarlinAltschul, blast_parameters, composition_ratios,
                          fit_scores, score_summary)
from ._timing import stage

def search_encoded(queries, targets, top: int, mode: str, *, backend: str = "auto",
                   owner=None, fingerprint: tuple = (), summaries: bool = False,
                   strings: bool = False, strand: str = "plus") -> dict:
    """The ``top`` best hits of each prepared query in ``queries`` against ``targets``
    (EncodedSequences, or a callable giving them): host arrays by name, ``query`` (number in
    ``queries``), ``row`` (in ``targets``), then ``mode``'s result columns (API conventions),
    each query's hits best first, queries in order. ``owner``/``fingerprint`` name the column
    for the GPU layout cache (without them the layout is kept for this batch only). With
    ``summaries``, also ``score_counts`` and ``length_sums`` (``queries x SCORE_BINS``): each
    query's :func:`~swdask._statistics.score_summary` over every row, for fitted statistics.
    With ``strings`` (mode ``"alignment"``), also the hits' aligned strings. With
    ``strand="both"`` each query's reverse complement is scanned right after it, the two
    scans merged row by row (:func:`~swdask._results.better_strand`) before the top rows
    are picked, and a hit's positions and alignment come from the strand that won, with
    ``strand`` (1: minus).

    Every query scans the column for scores and end cells; its ``top`` rows stay where the
    scan ran. Start positions (mode ``"full"``), and the alignments (``"alignment"``), then
    come from one row-wise batch of every query's top rows (``backend.pairs``: one launch
    for the whole batch rather than one small search per query; the pair kernels keep the
    same tie rule, so the positions are those a full search of the row gives).

    Both strands stay exact under the scan's floors (a backend exact only on each scan's own
    ``top`` rows): a row among the merged ``top`` has its better strand's score among that
    strand's ``top`` (every row ahead of it there is ahead of it in the merge), so that
    score is exact, and every other row's merged score is at most its own."""
    both = strand == "both"
    strands = 2 if both else 1
    with stage("encode"):
        encoded = targets() if callable(targets) else targets
    chosen = _engine.get_backend(backend, encoded.residues)
    # swdask's device memory from CuPy's pool even where cuDF left CuPy on RMM's
    # driver-backed default (the backend's own_pool; nothing on the CPU)
    with chosen.own_pool():
        if owner is None:  # keep the layout for this batch: it dies with ``encoded``
            owner, fingerprint = encoded, ("batch",)
        found = no_hits(mode, strings, both)

        def hits(query_of_hit, rows, columns):
            return with_hits(found, queries, encoded, chosen, mode, strings, both, query_of_hit,
                             rows, columns)

        with chosen.batch():  # many queries, few rows: the rows scan the queries instead
            few = None if summaries else _few_targets(queries, encoded, chosen, both)
            if few is not None:
                query_of_hit, rows, strand_of_hit, scores = _top_of_scores(few, top)
                return hits(query_of_hit, rows,
                                 {"score": scores, **({STRAND: strand_of_hit} if both else {})})
        # each query then its reverse complement (made once per query, kept with it)
        scanned_queries = ([each for query in queries for each in
                            (query, query.reverse_complement)] if both else list(queries))
        lengths = usable = None
        if summaries:  # what every query's summary counts: the rows' lengths, usable rows
            lengths = encoded.offsets[1:] - encoded.offsets[:-1]
            usable = array_module(lengths).asarray(encoded.valid, dtype=bool) & (lengths > 0)

        # the scan's cells: end cells only where they are the result (mode "end"); the top rows
        # of modes "full" and "alignment" are aligned again as pairs, so their scan needs the
        # scores alone (on the CPU a byte-lane pass, twice the lanes of the int16 one)
        scan_mode = "end" if mode == "end" else "none"
        # only the rows that can be among a query's best must be exact, unless every score
        # is counted (the summaries)
        needed = None if summaries else top

        def scan(k):  # query k searched alone (both strands, merged)
            found = [chosen.one_against_many(each, encoded, scan_mode, owner=owner,
                                             fingerprint=fingerprint, top=needed)
                     for each in scanned_queries[strands * k:strands * (k + 1)]]
            return kept([found[0] if len(found) == 1 else better_strand(*found)])[0]

        def kept(group):  # consecutive queries' top rows (and summaries), nothing read back
            picked = chosen.top_rows(group, top)
            return [(int(rows.shape[0]), rows, is_hit,
                     alignments.take(rows) if mode != "full" or both else None,
                     score_summary(alignments.columns["score"], lengths, usable, alignments.xp)
                     if summaries else None)
                    for alignments, (rows, is_hit) in zip(group, picked)]

        with chosen.batch():
            with stage("scan"):
                # queue every query's scan and top rows without reading anything back (the
                # backend's checks too, read once after the last query), so the GPU goes from
                # one query to the next without waiting for the host; the top rows of a few
                # consecutive queries are picked together (backend.top_rows)
                checks = [[] for _ in scanned_queries]
                scans, group, pending = [], [], []
                # (on the CPU grouping saves nothing: one query's rows at a time)
                most = max(1, TOP_GROUP_SCORES // max(1, len(encoded))) \
                    if chosen.name == "gpu" else 1
                for result in chosen.many_against_many(scanned_queries, encoded, scan_mode,
                                                       owner=owner, fingerprint=fingerprint,
                                                       checks=checks, top=needed):
                    pending.append(result)
                    if len(pending) < strands:
                        continue
                    group.append(pending[0] if strands == 1 else better_strand(*pending))
                    pending = []
                    if len(group) >= most:
                        scans += kept(group)
                        group = []
                scans += kept(group)
                failed = chosen.failed_checks(checks)
                for k in range(len(queries)):
                    if any(failed[strands * k:strands * (k + 1)]):
                        # its fast path could not tell: searched again, checked at once
                        scans[k] = scan(k)
                counts, picked, is_hit, scanned, summary = (list(c) for c in zip(*scans)) \
                    if scans else ([], [], [], [], [])
                if summaries:
                    found.update(_stack_summaries(summary, len(queries)))
                if not picked or not sum(counts):
                    return found
                # each query's few rows read back on their own, joined on the host (a join
                # on the GPU would be a kernel for CuPy to compile on a fresh machine)
                keep = np.concatenate([np.asarray(host_array(h), dtype=bool) for h in is_hit])
            query_of_hit = np.repeat(np.arange(len(queries), dtype=np.int64), counts)[keep]
            rows = np.concatenate([np.asarray(host_array(r), dtype=np.int64)
                                   for r in picked])[keep]
            if not rows.size:
                return found
            # what the scan kept of each hit: the score, the strand, in mode "end" the ends
            scanned_columns = result_columns(mode if mode == "end" else "none", False, both)
            columns = {name: np.concatenate([np.asarray(host_array(s.columns[name]))
                                             for s in scanned])[keep]
                       for name in scanned_columns} if mode != "full" or both else {}
            return hits(query_of_hit, rows, columns)


def no_hits(mode: str, strings: bool, both: bool) -> dict:
    """What :func:`search_encoded` returns where no query has a hit: each column empty."""
    names = ("query", "row") + result_columns(mode, strings, both) + (
        ("target_length",) if mode == "alignment" else ())
    return {name: np.zeros(0, dtype=np.int64) for name in names}


def with_hits(found: dict, queries, encoded: EncodedSequences, chosen, mode: str, strings: bool,
              both: bool, query_of_hit, rows, columns) -> dict:
    """``found`` (:func:`no_hits`) with the hits of ``queries`` (PreparedQuery) in
    ``encoded`` (each query's, best first: ``query_of_hit`` and ``rows`` of ``encoded``,
    ``columns`` what the scan gave, host arrays), what the scan did not give (start
    positions, the alignment; ends where the scan gave none) from one row-wise batch of every
    hit against the strand that won (``chosen``: the backend that scanned; ``mode``,
    ``strings``, ``both`` as in :func:`search_encoded`)."""
    if not rows.size:
        return found
    if any(name not in columns for name in result_columns(kernel_mode(mode))):
        column, scoring = joined_queries(queries)
        hit_queries = column.take(query_of_hit)
        if both:  # the minus hits' queries reverse-complemented, as one column
            minus = np.asarray(columns[STRAND], dtype=np.int64)
            hit_queries = stack_sequences(
                hit_queries, reverse_complement(hit_queries, queries[0].scoring)).take(
                np.arange(rows.size) + rows.size * minus)
        with stage("alignments" if mode == "alignment" else "positions"):
            # profiles' hits on the CPU: the GPU's row-wise kernels read a square matrix
            hits = _engine.align_pairs(
                hit_queries, chosen.take(encoded, rows), scoring, mode,
                backend="cpu" if scoring.position_specific else chosen.name,
                strings=strings).to_host()
        columns = {**columns, **hits.columns}
    found.update({"query": query_of_hit, "row": rows})
    found.update({name: columns[name] if name in TEXT_COLUMNS else
                  np.asarray(columns[name]) for name in result_columns(mode, strings,
                                                                       both)})
    if mode == "alignment":
        lengths = encoded.offsets[1:] - encoded.offsets[:-1]
        found["target_length"] = np.asarray(host_array(lengths), dtype=np.int64)[rows]
    return found


#: The transposed scan (:func:`_few_targets`): at most this many rows, and at least this
#: many queries per row; its score table (rows x queries x strands) stays this small.
FEW_TARGETS_ROWS = 256
FEW_TARGETS_QUERIES_PER_ROW = 8
FEW_TARGETS_SCORES = 1 << 25


def _few_targets(queries, encoded: EncodedSequences, chosen, both: bool):
    """Every query's score against every row, scanned the other way round, when there are
    many queries and few rows (reads against a few genomes): each row, as a query, against
    the column of the queries (the kernels' efficient direction: one query's profile over
    many rows, where the usual scan would launch once per short query over a handful of
    rows). A score does not change when the two sequences swap places if the substitution
    matrix is symmetric (and the mode swaps with them: :attr:`~swdask.Scoring.transposed`);
    with both strands each row's reverse complement scans
    the queries as given, the same score as the query's reverse complement against the row
    where complementing both letters keeps every substitution score (match/mismatch does).
    Only scores: the hits' positions and alignments come from the row-wise pairs with the
    query as the query, as in the usual scan, so the tie rule is the usual one.

    ``(scores, rows)``: ``scores[strand, k, q]`` (host int64) of row ``rows[k]`` (the valid,
    non-empty rows of ``encoded``), or None where the transposed scan does not apply."""
    scoring = queries[0].scoring
    matrix = scoring.matrix
    lengths = np.asarray(host_array(encoded.offsets[1:] - encoded.offsets[:-1]))
    rows = np.flatnonzero(np.asarray(host_array(encoded.valid), dtype=bool) & (lengths > 0))
    strands = 2 if both else 1
    if not (0 < rows.size <= FEW_TARGETS_ROWS
            and len(queries) >= FEW_TARGETS_QUERIES_PER_ROW * rows.size
            and strands * rows.size * len(queries) <= FEW_TARGETS_SCORES
            and np.array_equal(matrix, matrix.T)):
        return None
    if both:
        complement = scoring.complement_codes
        if not np.array_equal(matrix[np.ix_(complement, complement)], matrix):
            return None
    offsets = np.asarray(host_array(encoded.offsets))
    residues = host_array(encoded.residues)
    as_queries = [PreparedQuery(np.asarray(residues[offsets[r]:offsets[r + 1]]),
                                scoring.transposed) for r in rows]
    if both:
        as_queries = [each for row in as_queries for each in (row, row.reverse_complement)]
    column = query_column(queries)
    scores = np.zeros((len(as_queries), len(queries)), dtype=np.int64)
    with stage("scan"):
        # top: every query may be among a row's best (no floors); what counts is only which
        # scores are above 0 (:func:`_top_of_scores`), so the end-to-end modes may report 0
        # for the others and run on the search kernels (GpuBackend.one_against_many)
        for k, result in enumerate(chosen.many_against_many(
                as_queries, column, "none", owner=column, fingerprint=("batch",),
                top=len(queries))):
            scores[k] = np.asarray(host_array(result.columns["score"]))
    return scores.reshape(rows.size, strands, len(queries)).transpose(1, 0, 2), rows


def _top_of_scores(few, top: int):
    """:func:`_few_targets`' scores ranked as the search ranks: each query's ``top`` rows
    by its better strand's score (plus on a tie), then the row's order; rows scoring 0 are
    not hits. ``(query, row, strand, score)`` host arrays, each query's hits best first."""
    scores, rows = few
    best = scores.max(axis=0)                          # rows x queries
    strand = (scores[-1] > scores[0]).astype(np.int8)  # 1: minus strictly better
    # one key per (row, query): score descending, then the row's place
    order = np.argsort(-best, axis=0, kind="stable")[:top]   # top x queries, rows ascending
    picked_scores = np.take_along_axis(best, order, axis=0)
    query = np.broadcast_to(np.arange(best.shape[1]), order.shape)
    keep = (picked_scores > 0).T.ravel()
    order_t, query_t = order.T.ravel()[keep], query.T.ravel()[keep]
    return (query_t.astype(np.int64), rows[order_t].astype(np.int64),
            strand[order_t, query_t], picked_scores.T.ravel()[keep].astype(np.int64))


def _stack_summaries(summary, count: int) -> dict:
    if not summary:
        empty = np.zeros((count, SCORE_BINS))
        return {"score_counts": empty, "length_sums": empty.copy()}
    xp = array_module(summary[0][0])
    return {"score_counts": np.asarray(host_array(xp.stack([c for c, _ in summary]))),
            "length_sums": np.asarray(host_array(xp.stack([s for _, s in summary])))}


# ------------------------------------------------------------------------------ frames

#: Columns of the hits frame, in order. ``target_index`` is the database row's index label
#: (``hits.merge(db, left_on="target_index", right_index=True)`` brings its metadata back).
HITS_COLUMNS = ("query_id", "rank", "target_index") + COLUMNS
#: The columns a search adds to :data:`HITS_COLUMNS` as its options ask: the statistics, the
#: alignment and its strings, and the target's length.
ADDED_COLUMNS = (("bitscore", "evalue", STRAND) + ALIGNMENT_COLUMNS + ALIGNED_STRINGS
                 + ("target_length",))
#: Sort keys that travel with a column's hits until they are ranked (then dropped): the
#: query's number, the column's number (Dask partition), the row's number in it.
_KEYS = ("_query", "_partition", "_row")
#: A hit's ratio lambda' / lambda of composition-based statistics, carried with it until its
#: E-value is computed (then dropped with the keys).
LAMBDA_RATIO = "_lambda_ratio"
#: A hit's gap cost (its gaps' share of the score) and its target's length, carried with
#: the ratio.
GAP_COST = "_gap_cost"
SUBJECT_LENGTH = "_subject_length"
#: A hit's target sequence (its text), carried where the ranking adds alternative alignments
#: (``alignments_per_target``), which align it again.
TARGET_TEXT = "_target_text"
#: Everything that travels with the hits until they are ranked and their E-values computed.
CARRIED = _KEYS + (LAMBDA_RATIO, GAP_COST, SUBJECT_LENGTH, TARGET_TEXT)


def check_top(top) -> int:
    """``top`` as a positive whole number of hits per query, or a ValueError saying so."""
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive whole number of hits per query, got {top!r}")
    return int(top)


def query_table(queries) -> tuple[list, list]:
    """``(ids, sequences)`` of the queries: a list of strings (ids 0, 1, ...), a Series (ids:
    its index), or a DataFrame with a ``sequence`` column (ids: its ``id`` column, else its
    index), pandas or cuDF."""
    if is_cudf(queries):
        queries = queries.to_pandas()
    if isinstance(queries, str):
        raise TypeError("queries must be several sequences (a list, Series or DataFrame); "
                        "for one query string, pass [query] or use .sw.align(query)")
    if isinstance(queries, pd.DataFrame):
        if "sequence" not in queries.columns:
            raise KeyError(f"the queries frame has no 'sequence' column (columns: "
                           f"{', '.join(map(str, queries.columns))}); pass a frame with 'id' and "
                           "'sequence' columns, as swdask.read_fasta gives, or a Series")
        ids = queries["id"].tolist() if "id" in queries.columns else queries.index.tolist()
        sequences = queries["sequence"].tolist()
    elif isinstance(queries, pd.Series):
        ids, sequences = queries.index.tolist(), queries.tolist()
    else:
        sequences = list(queries)
        ids = list(range(len(sequences)))
    if not sequences:
        raise ValueError("queries is empty: pass at least one query sequence")
    return ids, sequences


def prepare_queries(queries, scoring) -> tuple[list, list]:
    """``(ids, prepared queries)``; a bad query raises its error naming the query's id.
    Non-empty strings are encoded as one column (100,000 reads: one lookup, not 100,000),
    each query a view of it; anything else, or a bad letter, goes one query at a time,
    whose errors name the query."""
    ids, sequences = query_table(queries)
    if all(isinstance(s, str) and s for s in sequences):
        try:
            column = encode(sequences, scoring, what="query")
        except SequenceError:
            pass  # named below, query by query
        else:
            offsets = column.offsets
            return ids, [PreparedQuery(column.residues[offsets[k]:offsets[k + 1]], scoring)
                         for k in range(len(sequences))]
    prepared = []
    for query_id, sequence in zip(ids, sequences):
        try:
            prepared.append(prepare_query(sequence, scoring))
        except (ScoringError, SequenceError) as exc:
            raise type(exc)(f"query {query_id!r}: {exc}") from None
    return ids, prepared


def search_column(queries, ids, column, options, top: int, partition: int = 0, kept=None,
                  summaries: bool = False, totals: bool = False, compositions: bool = False):
    """Each prepared query's ``top`` hits in ``column`` (pandas or cuDF, in memory), as a
    :class:`~swdask._results.PartialHits`: a pandas frame of :data:`HITS_COLUMNS` but
    ``rank``, plus the sort keys :func:`rank_hits` uses, and the columns of ``kept`` (a
    frame of the column's rows) for each hit. Only the hits leave a GPU. With
    ``summaries``, each query's score summary over the column (for statistics fitted to the
    search); with ``totals``, the column's residues and sequences (the search space, summed
    by the ranking: so a Dask search reads each partition once, for its hits and its share
    of the totals together); with ``compositions``, each hit's composition-based lambda ratio
    (:data:`LAMBDA_RATIO`, for ``statistics="composition"``)."""
    targets, backend, owner, fingerprint, _library = column_targets(column, options.scoring,
                                                                    options)
    # composition-based statistics rescale each hit's substitutions, not its gaps: the hits
    # are traced for their gap costs (the frame keeps only the columns asked for)
    found = search_encoded(queries, targets, top,
                           "alignment" if compositions else options.mode, backend=backend,
                           owner=owner, fingerprint=fingerprint, summaries=summaries,
                           strings=options.aligned_strings and not compositions,
                           strand=options.strand)
    frame = hits_frame(found, ids, column, options, kept, partition)
    if compositions:
        add_composition(frame, queries, found, column, options.scoring)
    found_summaries = {}
    if summaries:
        found_summaries = {k: (found["score_counts"][k], found["length_sums"][k])
                           for k in range(len(ids))}
    residues, sequences = database_totals(column) if totals else (0, 0)
    return PartialHits(frame, found_summaries, residues, sequences)


def hits_frame(found: dict, ids, column, options, kept=None, partition: int = 0):
    """The hits ``found`` (:func:`search_encoded`'s arrays) of the queries ``ids`` in
    ``column`` (pandas or cuDF) as :func:`search_column`'s frame: the query's id, the row's
    index label, ``options``' result columns (null positions where nothing aligned), the
    sort keys, and the columns of ``kept`` (a frame of the column's rows) for each hit."""
    rows = found["row"]
    labels = column.index.take(rows) if hasattr(column, "index") else pd.Index(rows)
    if is_cudf(labels):
        labels = labels.to_pandas()
    frame = pd.DataFrame({
        "query_id": pd.Series(np.asarray(ids, dtype=object)[found["query"]], dtype=object),
        "target_index": np.asarray(labels),
        **{name: column_array(name, found[name], np.zeros(len(rows), dtype=bool))
           for name in options.columns},
        "_query": found["query"], "_partition": np.full(len(rows), partition, np.int64),
        "_row": rows})
    if options.mode == "alignment":  # BLAST's slen, SAM's @SQ LN: the hit row's length
        lengths = found["target_length"]
        frame["target_length"] = pd.array(lengths, dtype="Int64")
    if kept is not None and len(kept.columns):
        extra = kept.take(rows)
        extra = extra.to_pandas() if is_cudf(extra) else extra
        for name in kept.columns:
            frame[name] = extra[name].array
    for name in COLUMNS[1:]:  # no position where nothing aligned
        if name not in frame.columns:
            continue
        frame.loc[frame[name] < 0, name] = pd.NA
    return frame


def add_composition(frame, queries, found: dict, column, scoring) -> None:
    """What ``statistics="composition"`` needs of each hit, added to its ``frame`` (the
    hidden :data:`CARRIED` columns): the lambda ratio of its two compositions, its gap cost
    and its target's length (``found``: mode ``"alignment"``'s columns)."""
    frame[LAMBDA_RATIO] = hit_ratios(queries, found, column, scoring)
    frame[GAP_COST] = gap_costs(found, scoring)
    frame[SUBJECT_LENGTH] = np.asarray(found["target_length"], dtype=np.int64)


def gap_costs(found: dict, scoring) -> np.ndarray:
    """Each traced hit's cost of gaps (``found``: mode ``"alignment"``'s columns): its gap
    opens and the further letters of its gaps at the scoring's costs (0 where nothing
    aligned)."""
    if not len(found["row"]):
        return np.zeros(0)
    opens = np.asarray(found["gap_opens"], dtype=np.float64)
    letters = (np.asarray(found["alignment_length"], dtype=np.float64)
               - np.asarray(found["matches"], dtype=np.float64)
               - np.asarray(found["mismatches"], dtype=np.float64))
    return np.nan_to_num(opens * scoring.gap_open + (letters - opens) * scoring.gap_extend)


def hit_ratios(queries, found: dict, column, scoring) -> np.ndarray:
    """Each hit's composition-based lambda ratio
    (:func:`~swdask._statistics.composition_ratios`): its query's codes against its row's,
    only the hits' rows taken from ``column`` (pandas or cuDF strings, encoded on the host; or
    encoded already, gathered where they live)."""
    rows = found["row"]
    if not len(rows):
        return np.zeros(0)
    if isinstance(column, EncodedSequences):
        owner = "cpu" if array_module(column.offsets) is np else "gpu"
        targets = _engine.get_backend(owner).take(column, rows)
        targets = EncodedSequences(np.asarray(host_array(targets.residues)),
                                   np.asarray(host_array(targets.offsets)), targets.valid)
    else:
        hit_rows = column.take(rows)
        targets = encode(hit_rows.to_pandas() if is_cudf(hit_rows) else hit_rows, scoring)
    offsets = targets.offsets
    return composition_ratios([queries[k].codes for k in found["query"]],
                              [targets.residues[offsets[k]:offsets[k + 1]]
                               for k in range(len(rows))], scoring)


def record_error(error: SequenceError, frame) -> SequenceError | None:
    """``error`` (a bad target row, by its index label) naming the record by the ``id``
    column of ``frame`` (a frame of the same rows), or None where it has none."""
    if frame is None or "id" not in getattr(frame, "columns", ()) or \
            error.label not in frame.index:
        return None
    record = frame["id"].loc[error.label]
    return SequenceError(f"record {record!r} (number {error.label} of the database): {error}")


def search_part(number, part, prepared, ids, options, top: int, stats=None,
                totals: bool = True) -> PartialHits:
    """The hits of one part of a database (``part``: a ``(column, kept)`` pair, see
    :func:`search_columns`), ``number`` its place in record order: :func:`search_column`'s
    partial result, with the summaries and (unless ``totals`` is False: a part searched by
    several batches of queries carries them once) the totals that ``stats``
    (:func:`hit_statistics`) needs, and a bad row's error naming its record."""
    column, kept = part
    try:
        return search_column(prepared, ids, column, options, top, partition=number, kept=kept,
                             summaries=bool(stats and stats.fitted),
                             totals=totals and stats is not None,
                             compositions=bool(stats and stats.composition))
    except SequenceError as exc:
        named = record_error(exc, kept)
        if named is None:
            raise
        raise named from None


def search_columns(parts, queries, top, options, statistics="auto", done=None,
                   alignments_per_target: int = 1) -> pd.DataFrame:
    """Each query's ``top`` best hits over ``parts`` (the parts of one database in record
    order: ``(column, kept)`` pairs, a pandas or cuDF column in memory, or EncodedSequences,
    and a frame of other columns to copy for each hit, or None), ranked together
    (:func:`rank_hits`): what ``.sw.search`` returns for one column. ``parts`` may be an
    iterator: the parts are searched one after another as they come, and only their hits
    are kept (``done`` is called after each). ``alignments_per_target`` above 1: each hit
    followed by its alternative alignments (:func:`alternatives_step`)."""
    top = check_top(top)
    count = check_alignments_per_target(alignments_per_target, options)
    if count > 1:
        options = replace(options, mode="alignment")
        parts = (with_target_text(column, kept) for column, kept in parts)
    ids, prepared = prepare_queries(queries, options.scoring)
    stats = hit_statistics(statistics, options.scoring, prepared)
    return rank_hits(search_parts(parts, prepared, ids, options, top, stats, done), top,
                     stats, alternatives_step(prepared, options.scoring, count))


def search_parts(parts, prepared, ids, options, top: int, stats=None, done=None) -> list:
    """:func:`search_part` of each of ``parts`` (an iterable of ``(column, kept)`` pairs in
    record order, numbered from 0), one after another as they come: their partial results,
    ``done()`` called after each."""
    partials = []
    for number, part in enumerate(parts):
        partials.append(search_part(number, part, prepared, ids, options, top, stats))
        if done is not None:
            done()
    return partials


@dataclass(frozen=True)
class HitStatistics:
    """What the ranking needs for ``bitscore`` and ``evalue``: the published Karlin-Altschul
    parameters (None: the columns stay null), or ``fitted`` (parameters fitted per query to
    the search's own scores, :func:`~swdask._statistics.fit_scores`), and each query's
    length, by query number."""

    parameters: KarlinAltschul | None
    query_lengths: tuple
    fitted: bool = False
    composition: bool = False


#: The ``statistics=`` choices of the search.
STATISTICS = ("auto", "blast", "search", "composition", None)


def hit_statistics(statistics, scoring, queries) -> HitStatistics | None:
    """``statistics`` of the search API: ``"auto"`` (bit scores and E-values where NCBI BLAST
    publishes the scoring's parameters, else no such columns), ``"blast"`` (those columns
    always; null, with a warning, without published parameters), ``"search"`` (parameters
    fitted to each query's scores against the whole database, for any scoring),
    ``"composition"`` (BLAST's published parameters, each hit's score first scaled by its
    composition-based lambda ratio, :func:`~swdask._statistics.composition_ratios`: BLAST's
    ``-comp_based_stats 1``; protein matrices) or ``None`` (none)."""
    if statistics is None:
        return None
    if statistics not in STATISTICS:
        raise ValueError(f"statistics must be 'auto', 'blast', 'search', 'composition' or "
                         f"None, got {statistics!r}")
    if not scoring.is_local:  # Karlin-Altschul statistics are those of local alignment
        if statistics == "auto":
            return None
        raise ValueError(f"statistics={statistics!r}: E-values are a local alignment's, and "
                         f"mode={scoring.alignment_mode!r} has none; pass statistics=None "
                         f"(or 'auto')")
    lengths = tuple(len(q) for q in queries)
    if statistics == "search":
        return HitStatistics(None, lengths, fitted=True)
    if statistics == "composition":  # a protein matrix's, checked before any work
        composition_ratios([], [], scoring)
        if any(query.scoring.position_specific for query in queries):
            raise ValueError("statistics='composition' rescales a plain query's matrix by "
                             "its composition; a profile's scores are its own (psiblast "
                             "does not adjust them either): pass statistics='blast'")
    parameters = blast_parameters(scoring, warn=statistics != "auto")
    if parameters is None and statistics == "auto":
        return None
    return HitStatistics(parameters, lengths, composition=statistics == "composition")


def fitted_parameters(summaries: dict, query_lengths) -> dict:
    """Each query's parameters fitted to its score summary summed over the parts (None for
    a query with too few scores), by query number."""
    return {int(number): fit_scores(counts, length_sums, query_lengths[int(number)])
            for number, (counts, length_sums) in summaries.items()}


def database_totals(column) -> tuple[int, int]:
    """``(residues, sequences)`` of a column (pandas, cuDF or EncodedSequences): the search
    space's database side; nulls are not sequences, empty strings are."""
    if isinstance(column, EncodedSequences):
        return int(column.offsets[-1]), int(np.count_nonzero(host_array(column.valid)))
    return column_total(column.str.len()), int(column.count())


def add_statistics(hits: pd.DataFrame, statistics: HitStatistics, residues: int,
                   sequences: int, fitted: dict | None = None) -> pd.DataFrame:
    """``hits`` with ``bitscore`` and ``evalue`` (``Float64``): each hit's query length
    against the whole database (``residues`` in ``sequences``), under the published
    parameters or each query's ``fitted`` ones (null where there are none)."""
    missing = np.ones(len(hits), dtype=bool)
    bits = np.zeros(len(hits))
    evalue = np.zeros(len(hits))
    if len(hits):
        numbers = hits["_query"].to_numpy()
        scores = hits["score"].to_numpy(dtype=np.float64, na_value=0)
        if statistics.composition:  # each substitution at its pair's composition's scale
            gaps = hits[GAP_COST].to_numpy(dtype=np.float64)
            scores = np.maximum(hits[LAMBDA_RATIO].to_numpy(dtype=np.float64) *
                                (scores + gaps) - gaps, 0.0)
            subjects = hits[SUBJECT_LENGTH].to_numpy(dtype=np.float64)
        # each query's hits as one run of positions (grouped by a stable sort, a no-op on
        # the ranking's order): slices, not a mask over every hit per query (1,000 queries'
        # 10,000 hits: 1,000 masks of 10,000)
        order = np.argsort(numbers, kind="stable")
        bounds = np.flatnonzero(np.diff(numbers[order])) + 1
        for run in np.split(order, bounds):
            number = int(numbers[run[0]])
            parameters = ((fitted or {}).get(number) if statistics.fitted
                          else statistics.parameters)
            if parameters is None:
                continue
            bits[run] = parameters.bit_score(scores[run])
            if statistics.composition and parameters.finite_size is not None:
                evalue[run] = parameters.finite_size_evalue(
                    scores[run], statistics.query_lengths[number], subjects[run], residues)
            else:
                evalue[run] = parameters.evalue(scores[run], statistics.query_lengths[number],
                                                residues, sequences)
            missing[run] = False
    return hits.assign(bitscore=pd.arrays.FloatingArray(bits, missing.copy()),
                       evalue=pd.arrays.FloatingArray(evalue, missing.copy()))


def rank_hits(partials, top: int, statistics: HitStatistics | None = None,
              alternatives=None):
    """The partial results of every part (:class:`~swdask._results.PartialHits`, one or an
    iterable, from any runner) merged into each query's ``top`` best hits: score descending,
    then record order (partition, then row); ``rank`` 1, 2, ...; queries in their order.
    With ``statistics``, the hits' ``bitscore`` and ``evalue`` after the score, for the
    whole database: the residues and sequences the partial results carry, summed.
    ``alternatives`` (:func:`alternatives_step`, or None): what adds each ranked hit's
    further alignments, before the statistics (each row's are its own score's)."""
    merged = PartialHits.merge(partials)
    hits = merged.hits
    fitted = None
    if statistics is not None and statistics.fitted:
        fitted = fitted_parameters(merged.summaries, statistics.query_lengths)
    hits = hits.sort_values(["_query", "score", "_partition", "_row"],
                            ascending=[True, False, True, True])
    rank = hits.groupby("_query", sort=False).cumcount().to_numpy() + 1
    hits = hits.assign(rank=rank)[rank <= top]
    if alternatives is not None:
        hits = alternatives(hits)
    if statistics is not None:
        hits = add_statistics(hits, statistics, merged.residues, merged.sequences, fitted)
    columns = [c for c in HITS_COLUMNS if c in hits.columns]
    columns[columns.index("score") + 1:columns.index("score") + 1] = [
        c for c in ("bitscore", "evalue") if c in hits.columns]
    if ALIGNMENT_RANK in hits.columns:  # several alignments per target: each one's number
        columns.insert(columns.index("rank") + 1, ALIGNMENT_RANK)
    kept = [c for c in hits.columns if c not in columns and c not in CARRIED]
    return hits[columns + kept].reset_index(drop=True)


# ------------------------------------------------------------ several alignments per target

#: The column that numbers a hit's alignments (1: the best, as without the option; 2, 3, ...:
#: the alternatives, :mod:`swdask._alternatives`), present only with
#: ``alignments_per_target`` above 1.
ALIGNMENT_RANK = "alignment_rank"


def check_alignments_per_target(count, options) -> int:
    """``alignments_per_target`` as a positive whole number, or a ValueError saying what it
    needs: a local alignment on the query as given, without the aligned strings."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"alignments_per_target must be a positive whole number of "
                         f"alignments per hit, got {count!r}")
    if count > 1:
        if not options.scoring.is_local:
            raise ValueError(f"alignments_per_target={count}: alternative alignments are "
                             f"local ones; mode={options.scoring.alignment_mode!r} has one "
                             f"alignment per pair, pass alignments_per_target=1")
        if options.both_strands:
            raise ValueError(f"alignments_per_target={count} is not available with "
                             f"strand='both'; search each strand with strand='plus'")
        if options.aligned_strings:
            raise ValueError(f"alignments_per_target={count} gives CIGARs, not aligned "
                             f"strings; pass aligned_strings=False")
    return int(count)


def with_target_text(column, kept):
    """``(column, kept)`` with the column's sequences among the kept columns (as
    :data:`TARGET_TEXT`), so that each hit carries its target to the ranking."""
    if isinstance(column, EncodedSequences):
        raise ValueError("alignments_per_target above 1 needs the database's sequences as "
                         "strings (a pandas or cuDF column), not a preloaded one")
    texts = column.rename(TARGET_TEXT).to_frame()
    if kept is None or not len(kept.columns):
        return column, texts
    return column, kept.assign(**{TARGET_TEXT: texts[TARGET_TEXT]})


def alternatives_step(prepared, scoring, count: int):
    """What :func:`rank_hits` runs on the ranked hits for ``count`` alignments per target
    (:func:`add_alternatives`), or None for one."""
    if count <= 1:
        return None
    return lambda hits: add_alternatives(hits, prepared, scoring, count)


def add_alternatives(hits: pd.DataFrame, prepared, scoring, count: int) -> pd.DataFrame:
    """The ranked ``hits`` (their keys and :data:`TARGET_TEXT` still there, mode
    ``"alignment"``), each followed by up to ``count - 1`` further alignments of the same
    query and target (:func:`swdask._alternatives.alternatives`), best first: copies of the
    hit's row (its ``rank`` too) with their own score, positions, CIGAR and counts, and
    :data:`ALIGNMENT_RANK` 1, 2, ... . On the CPU, whatever backend found the hits."""
    from ._alternatives import COLUMNS as ALTERNATIVE_COLUMNS, alternatives
    from ._sequences import encode_text

    hits = hits.reset_index(drop=True)
    found, made = [], np.zeros(len(hits), dtype=np.int64)
    with stage("alternatives"):
        queries = hits["_query"].to_numpy()
        for k in range(len(hits)):
            first = {name: hits[name].iat[k] for name in ("query_start", "target_start",
                                                          "cigar")}
            target = encode_text(hits[TARGET_TEXT].iat[k], scoring, what="target row")
            query = prepared[int(queries[k])]  # (a profile scores with its own rows)
            more = alternatives(query.codes, target, query.scoring, first, count - 1)
            made[k] = len(more["score"])
            found.append(more)
    primary = hits.assign(**{ALIGNMENT_RANK: pd.array(np.ones(len(hits), np.int64),
                                                      dtype="Int64")})
    if not made.sum():
        return primary
    extra = primary.iloc[np.repeat(np.arange(len(hits)), made)].reset_index(drop=True)
    joined = {name: np.concatenate([np.asarray(f[name]) for f in found if len(f["score"])])
              if name != "cigar" else
              np.concatenate([np.asarray(f[name].to_pylist(), dtype=object) for f in found
                              if len(f["score"])])
              for name in ALTERNATIVE_COLUMNS}
    missing = np.zeros(len(extra), dtype=bool)
    for name in ALTERNATIVE_COLUMNS:
        if name in extra.columns:
            extra[name] = column_array(name, joined[name], missing)
    extra[ALIGNMENT_RANK] = pd.array(np.concatenate([np.arange(2, n + 2) for n in made if n]),
                                     dtype="Int64")
    if GAP_COST in extra.columns:  # composition-based statistics: each alignment's own gaps
        extra[GAP_COST] = gap_costs({"row": joined["score"], **joined}, scoring)
    # each hit's alternatives right after it: by the hit's place, then the alignment's number
    place = np.concatenate([np.arange(len(hits)), np.repeat(np.arange(len(hits)), made)])
    both = pd.concat([primary, extra], ignore_index=True)
    order = np.lexsort((both[ALIGNMENT_RANK].to_numpy(dtype=np.int64), place))
    return both.iloc[order].reset_index(drop=True)
