"""One query against many targets on a CUDA GPU: the inter-task engine.

Two levels:

* :func:`prepare_targets` + :func:`search` work on device arrays and return device arrays:
  the targets are laid out once (length-sorted pairs, :class:`DeviceTargets`), then each query
  runs the forward kernel (16-bit lanes, DPX on Hopper), recomputes in 32 bits the rows whose
  16-bit score may have wrapped, and, for start positions, runs the reverse kernel. This is
  what the benchmark times as "kernel-only".
* the GPU backend (:class:`swdask.gpu._backend.GpuBackend`) cuts a column into chunks that
  fit the GPU's memory, caches layouts, and turns these cells into the API's results.

Cell conventions, tie rules and the gap formula are those of :mod:`swdask._cpu` (a gap of
length k costs ``gap_open + (k - 1) * gap_extend``; end cell: best score, smallest target
index, then smallest query index; start cell by reverse scoring). Kernels return inclusive
cells, ``-1`` where the score is 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import _settings
from .._results import (TOP_GROUP_SCORES, Alignments, finish, host_array, kernel_mode,
                        position_mode, result_columns)
from .._scoring import end_to_end_depth, substitution_table
from . import _kernels
from ._runtime import get_runtime

# 16-bit lanes hold scores in [-32768, 32767]; costs and |substitutions| up to this keep
# every intermediate value of the recurrences in range (see sw_common.cuh).
_LANE16_COST_LIMIT = 8191
_LANE16_MAX = 32767
# 32-bit lanes: scores stay below 2**29 (so E/F's "minus infinity" and the padding work).
_LANE32_SCORE_LIMIT = 1 << 29
_LANE32_PAD = -(1 << 30)
#: Bytes of device memory per residue and per row that one search needs beyond the residues
#: (pair codes, the pass boundary, the reverse boundary, results), for chunking by memory.
BYTES_PER_RESIDUE = 15
BYTES_PER_ROW = 96


def long_row_threshold(runtime) -> int | None:
    """Target length from which a row leaves the inter-task search for the intra-task kernel.

    The setting ``swdask.gpu.long-row-min`` (12,000 letters) comes from ``bench_w2_gpu.py
    oneall``: a 460-residue query against 18,563 proteins plus N long targets of length L,
    all rows in the inter-task search against the long rows on ``_pairs.align_long_rows``
    (one block per row). With today's length buckets the split was slower up to L = 6,000
    for 4, 64 and 400 long rows; at 12,000 about even for 4 and 64 and faster for 400; and
    clearly faster at 24,000 and 48,000 (docs/notes/gpu-several-gpus-and-dask.md, the
    long-row threshold). (The first
    measurement, before the buckets, when a long pair ran on 4 threads, put the break-even
    at 1,500 to 3,000 letters: 2,000 was the default until 2026-11-26, and it sent the
    382-446 rows of 2,000+ letters of each 16th of sp500k, all under the cap below, to the
    intra-task kernel, which made the 1,000-query search in 16 parts far slower than in
    one.) A long target holds its group of the inter-task kernel for its full length,
    through every pass, while one block per row spreads it over a block of threads. ``0``
    keeps every row in the inter-task search.
    """
    value = _settings.get_int("gpu.long-row-min")
    return value if value else None


# The setting swdask.gpu.long-rows-per-sm (4): at most this many long rows per multiprocessor
# go to the intra-task kernel; beyond it they stay in the inter-task search. The threshold's
# measurement had 4 long rows: a handful of long targets hold a few groups of the inter-task
# kernel long after the others finish. Many long rows instead run side by side at the
# inter-task rate, several times the intra-task kernel's (W2-protein-10000).
# Measured with bench_w1_long_rows_gpu.py (docs/notes/gpu-several-gpus-and-dask.md, the
# long-row threshold): W1's sp500k has 6,530 rows of 2,000+ letters (8.6% of its residues);
# sending them all to the intra-task kernel made the search slower (queries of 464 to 5,478
# letters, ends and full) than keeping them. 4 per multiprocessor (528 on an H200) is a
# judgement between the two measured points (4 rows: split faster; 6,530: slower), not a
# measured break-even.


def long_rows_cap(runtime) -> int | None:
    """Most long rows one search sends to the intra-task kernel (``None``: no cap): the
    setting ``swdask.gpu.long-rows-per-sm`` (default 4, see above; ``-1``: no cap) times the
    device's multiprocessors."""
    per_sm = _settings.get_int("gpu.long-rows-per-sm")
    if per_sm is None or per_sm < 0:
        return None
    return per_sm * runtime.multiprocessors


def tile_bytes(alpha1: int, group: int, rows: int, lanes: int, query_lanes: bool) -> int:
    """Bytes of the forward kernel's shared query profile: ``alpha1`` letters of ``group``
    threads' int32 entries, each thread's ``rows`` padded (mirrors ``tile_stride``,
    ``tile_copies`` and ``LETTER`` in the .cu: with target lanes and G = 4, two copies)."""
    stride = rows + 4 if (rows // 4) % 2 == 0 else rows
    if lanes != 2 or query_lanes or group >= 8:
        return alpha1 * group * stride * 4
    letter = -(-group * stride // 32) * 32
    return (2 * alpha1 * letter + 16) * 4


def rows_for(m: int, group: int, compute_capability: int = 90, choices=None) -> int:
    """Rows per thread (R) for a query of ``m`` residues and ``group`` threads per pair, of
    ``choices`` (default: every R of the device): the cost is ~ passes x (rows + the
    per-step overhead of about 12 rows' worth of instructions), R trading the padding of
    the last pass against that fixed cost."""
    return min(choices or _kernels.rows_per_thread(compute_capability, m, group),
               key=lambda r: (math.ceil(m / (group * r)) * (r + 12), -r))


def choose_shape(m: int, lanes: int = 2, compute_capability: int = 90) -> tuple[int, int]:
    """Threads per pair (G) and rows per thread (R) for a query of ``m`` residues: the
    32-bit kernels' single shape, and the 16-bit kernels' shape when one is forced.

    G = 4 keeps the wavefront's fill short (G - 1 idle steps per pass) while a pass of
    4 x 32 rows still moves only ~0.06 byte of boundary per cell. The setting
    ``swdask.gpu.shape`` (``"G,R"``) overrides it (16-bit kernels, every target length; for
    tuning and tests).
    """
    if lanes == 1:
        return next(((g, r) for g, r in _kernels.WIDE_SHAPES if g * r >= m),
                    _kernels.WIDE_SHAPES[-1])
    override = _settings.get("gpu.shape")
    if override:
        group, rows = (int(v) for v in str(override).split(","))
        return group, rows
    group = 4
    return group, rows_for(m, group, compute_capability)


#: Length buckets of the 16-bit forward kernel: (G, pair length below which it applies),
#: shortest first, the last one without a bound. Each bucket is its own launch over its
#: contiguous range of the length-sorted pairs, with R chosen for its G (:func:`rows_for`),
#: and the launches run side by side on their own streams (:func:`_run_forward`).
#:
#: Why several: a launch lasts at least as long as its longest pair takes on one thread
#: group, however few rows it has, and a Dask partition is one launch. More threads per pair
#: cut the longest pairs' passes (G x R query rows each). sp500k cut into 8 partitions,
#: searched one after another, W1 kernel-only (scores + ends, every row equal to the whole's,
#: bench_w1_partition_tail_gpu.py --partitions 8): with G = 8 from 3,000 letters (the default
#: before) the parts kept a small share of the whole database's throughput, with 16 from
#: 3,000 and 32 from 6,000 much more, and with the buckets of :data:`QUERY_LANE_BUCKETS`
#: most of it, while the whole database took about as long as with the old ones. These
#: buckets with the rows of 4,000+ or 6,000+ letters on the intra-task kernel
#: (long-row-min) did worse. Earlier, with the buckets launched one after another, every
#: split was slower than one launch on the whole database (docs/notes/gpu-inter-task.md,
#: length buckets).
#:
#: With target lanes (two targets per register: one query) G = 4 takes only a query of one
#: pass (up to 4 x 36 rows, :func:`bucket_shape`): in more passes its launch waited on
#: memory since the profile's entries are 32-bit (inter_task.cu, "Profile words by
#: multiply-add"). W1 one query at a time is far faster with these buckets than with G = 4
#: below 800 letters, the same code (docs/notes/gpu-inter-task.md, profile words by
#: multiply-add).
LENGTH_BUCKETS: tuple[tuple[int, int | None], ...] = ((8, 1500), (16, 3000), (32, None))
#: The buckets of a stack with query lanes (inter_task.cu, "Query lanes"): W1's 20 queries
#: scanned together slightly faster with these than with :data:`LENGTH_BUCKETS`
#: (docs/notes/gpu-inter-task.md).
QUERY_LANE_BUCKETS: tuple[tuple[int, int | None], ...] = ((4, 800), (8, 1500), (16, 3000),
                                                            (32, None))


def length_buckets(query_lanes: bool = False) -> tuple[tuple[int, int | None], ...]:
    """The 16-bit forward kernel's length buckets: :data:`LENGTH_BUCKETS` (or, with query
    lanes, :data:`QUERY_LANE_BUCKETS`), or the setting ``swdask.gpu.buckets`` for both
    (tuning, tests), e.g. ``"4:1500,8"``: G = 4 for pairs shorter than 1,500 letters, G = 8
    for the rest (G is one of ``_kernels.GROUP_SIZES``)."""
    override = _settings.get("gpu.buckets")
    if not override or not str(override).strip():
        return QUERY_LANE_BUCKETS if query_lanes else LENGTH_BUCKETS
    override = str(override)
    buckets = []
    for item in override.split(","):
        group, _, below = item.strip().partition(":")
        buckets.append((int(group), int(below) if below else None))
    if buckets[-1][1] is not None or any(b is None for _, b in buckets[:-1]):
        raise ValueError(f"setting swdask.gpu.buckets={override!r}: every bucket but the last "
                         "needs a length bound (G:below), the last none (e.g. '4:1500,8')")
    if any(group not in _kernels.GROUP_SIZES for group, _ in buckets):
        raise ValueError(f"setting swdask.gpu.buckets={override!r}: threads per pair must be "
                         f"one of {_kernels.GROUP_SIZES}")
    return tuple(buckets)


def forward_plan(layout, m: int, compute_capability: int = 90, buckets=None,
                 shape: tuple[int, int] | None = None, rows: int | None = None,
                 query_lanes: bool = False) -> list[tuple[int, int, int, int]]:
    """Launches of the 16-bit forward kernel over ``layout`` (pairs longest first): a list
    of (first pair, end pair, G, R), longest bucket first, empty buckets left out; R by
    :func:`rows_for` for ``m`` query rows, or ``rows`` in every launch (a stack of queries,
    padded to that R), from the buckets of :func:`length_buckets` (``query_lanes``: a stack
    in query lanes). A given ``shape`` (or the setting ``swdask.gpu.shape``) runs every pair
    in one launch of that shape."""
    # kept per layout (every search of a layout plans again for its query's rows)
    settings = (_settings.get("gpu.shape"), _settings.get("gpu.buckets"))
    key = (m, compute_capability, tuple(buckets) if buckets else None, shape, rows,
           query_lanes, settings)
    if key not in layout._plans:
        layout._plans[key] = _plan(layout, m, compute_capability, buckets, shape, rows,
                                   query_lanes)
    return list(layout._plans[key])


def _plan(layout, m, compute_capability, buckets, shape, rows, query_lanes):
    """:func:`forward_plan`, not kept."""
    num_pairs = layout.num_pairs
    if shape is None and _settings.get("gpu.shape"):
        shape = choose_shape(m, 2, compute_capability)
    if shape is not None:
        group, per_thread = shape
        if rows is not None:
            per_thread = rows
        elif per_thread == _kernels.ONE_PASS_ROWS and m > group * per_thread:
            per_thread = max(_kernels.ROWS_PER_THREAD)  # (the one-pass R takes one pass only)
        return [(0, num_pairs, group, per_thread)] if num_pairs else []
    buckets = buckets or length_buckets(query_lanes)
    plan, end = [], num_pairs
    for group, below in buckets:  # shortest first: each takes the tail still unassigned
        # pair_len is non-increasing: pairs of at least L letters are the first count(>= L)
        start = 0 if below is None else layout.pairs_at_least(below)
        start = min(start, end)
        if start < end:
            shape = bucket_shape(m, group, compute_capability, rows)
            if plan and plan[-1][2:] == shape:  # the next shorter bucket's shape: one launch
                plan[-1] = (start, plan[-1][1]) + shape
            else:
                plan.append((start, end) + shape)
        end = start
    return plan[::-1]


def bucket_shape(m: int, group: int, compute_capability: int = 90,
                 rows: int | None = None) -> tuple[int, int]:
    """(G, R) of a length bucket of G = ``group`` for a query (or stack) of ``m`` rows: the
    fewest threads per pair, up to ``group``, that take the query in as few passes as
    ``group`` does (a short query's longest pairs on G = 32 would run one pass of 256+
    mostly padded rows), R by :func:`rows_for` (or ``rows``)."""
    def most(g):  # the most rows per thread a launch of G = g can take here
        return rows or max(_kernels.rows_per_thread(compute_capability, m, g))

    passes = math.ceil(m / (group * most(group)))
    fewest = min(g for g in _kernels.GROUP_SIZES
                 if g <= group and math.ceil(m / (g * most(g))) <= passes)
    return fewest, rows or rows_for(m, fewest, compute_capability)


#: The fewest passes a part takes on average: a part's last pass is partly padding.
PART_MIN_PASSES = 4
#: The most device memory the parts' rows above the passes take in one launch.
PART_BOUNDARY_BYTES = 256 << 20


def launch_parts(runtime, blocks: int, passes: int, queries: int, columns: int) -> int:
    """How many parts (inter_task.cu, "Parts") a forward launch of ``blocks`` blocks runs a
    stack of ``queries`` queries in, ``passes`` passes long, over pairs of ``columns``
    columns: enough parts for the setting ``swdask.gpu.part-waves`` (4; 0: never in parts)
    waves of blocks (2 blocks per multiprocessor make a wave), each at least
    :data:`PART_MIN_PASSES` passes on average, their boundaries within
    :data:`PART_BOUNDARY_BYTES`; 1 for one query.

    Why: a launch lasts at least as long as its longest pair takes through all the stack's
    passes, one after another, and a group of threads alone on its multiprocessor steps far
    slower than the kernel's rate. On a small partition that chain, not the work, sets the
    time: 200 queries against sp500k cut into 16 parts searched at about half the whole
    column's rate, with every row in the inter-task search; in parts, at clearly more. W1's
    20 queries stacked against 8 or 4 partitions kept nearly all of one partition's rate.
    The whole column's 1,000-query scan, whose longest buckets now run in parts too, and W1
    one query at a time were about as fast as without parts
    (docs/notes/gpu-several-gpus-and-dask.md, small partitions)."""
    waves = _settings.get_int("gpu.part-waves") or 0
    if queries < 2 or passes < 2 * PART_MIN_PASSES or waves <= 0:
        return 1
    wanted = math.ceil(waves * 2 * runtime.multiprocessors / max(blocks, 1))
    by_memory = PART_BOUNDARY_BYTES // max(1, 8 * columns)
    return max(1, min(wanted, passes // PART_MIN_PASSES, queries, by_memory))


def warm_up(runtime, query_lengths, scoring) -> None:
    """Create the context and load the layout kernel and the forward kernels that a search of
    queries of ``query_lengths`` launches under ``scoring``: the first query alone (it lays
    the targets out), then the others in :func:`stacks` (a stack of one alone), each with
    :func:`forward_plan`'s shapes for every bucket; the 32-bit shapes when the scoring does
    not fit 16 bits. (Loading every length's own shapes instead took 19 kernels for the
    1,000 queries of bench_search_job.py's ``search-1000``, whose stacks launch 4 of them.) A
    search that groups its queries otherwise (batches, a partition's row count) loads the
    few kernels it lacks when it first launches them."""
    runtime.xp.zeros(1)  # the device's context
    runtime.function("inter_task.cu", _kernels.PAIR_CODES_NAME)
    capability = runtime.compute_capability
    lengths = [int(length) for length in query_lengths]
    names = set()
    if not lanes16_fit(scoring):
        names.update(_kernels.forward_name(1, *choose_shape(m, 1, capability))
                     for m in set(lengths) if m)
    elif lengths:
        stacked = max(_kernels.rows_per_thread(capability))
        launches = [(lengths[0], None)]  # (rows, R): the first query alone
        for group in stacks(lengths[1:]):
            chosen = lengths[1 + group.start:1 + group.stop]
            if len(chosen) == 1:
                launches.append((chosen[0], None))
            else:
                streams = 2 if query_lanes_for(runtime, len(chosen)) else 1
                launches.append((stack_rows(chosen, stacked, streams), stacked))
        for rows, fixed in launches:
            lanes_of_queries = query_lanes_for(runtime, 2) and fixed is not None
            names.update(_kernels.forward_name(2, *bucket_shape(rows, group, capability, fixed),
                                               lanes_of_queries)
                         for group, _ in length_buckets(lanes_of_queries) if rows)
    for name in sorted(names):
        runtime.function("inter_task.cu", name)


def query_lanes_for(runtime, queries: int) -> bool:
    """Whether a stack of ``queries`` queries runs with two queries per register (the 16-bit
    lanes hold two query streams against one target; inter_task.cu, "Query lanes"): for two
    queries or more, on sm_90 (DPX; its 227 KB of shared memory per block hold the 32-bit
    profile entries of 32 x 32 rows), unless the setting ``swdask.gpu.query-lanes`` is
    false."""
    return (queries > 1 and runtime.compute_capability >= 90
            and _settings.get_bool("gpu.query-lanes"))


def lanes16_fit(scoring) -> bool:
    """Whether the scoring scheme fits the 16-bit kernels (else everything runs in 32 bits)."""
    matrix = scoring.matrix
    return (int(np.abs(matrix).max()) + scoring.gap_open <= _LANE16_COST_LIMIT
            and scoring.gap_open + scoring.gap_extend <= _LANE16_COST_LIMIT)


def _check_lanes32(scoring, m: int):
    if (max(scoring.gap_open, scoring.gap_extend, int(np.abs(scoring.matrix).max())) >= 1 << 27
            or scoring.score_bound(m, np.iinfo(np.int64).max) >= _LANE32_SCORE_LIMIT):
        raise ValueError(
            f"scores of this query (length {m}) under this scoring could exceed 2**29, beyond "
            "the GPU kernels' 32-bit lanes; use backend='cpu' (64-bit)")


# ------------------------------------------------------------------------------ target layout


@dataclass
class _PairLayout:
    """Targets grouped ``lanes`` at a time (a "pair"), longest first, codes interleaved."""

    lanes: int
    slot_rows: object      # int32[num_pairs * lanes]: row of each lane, -1 for none
    pair_len: object       # int32[num_pairs]: longest target of the pair (non-increasing)
    pair_start: object     # int64[num_pairs]: first column of the pair in pair_codes
    pair_codes: object     # uint16[columns]: both lanes' codes per column
    columns: int
    pair_len_host: np.ndarray  # pair_len on the host (counts and sizes are read there)
    upload: object             # the runtime's upload (host arrays to the device)
    slot_len_host: np.ndarray  # int32[num_pairs * lanes]: each lane's target length, 0 none
    _at_least: dict = field(default_factory=dict, repr=False)
    _first_columns: dict = field(default_factory=dict, repr=False)
    _block_lengths: dict = field(default_factory=dict, repr=False)
    _plans: dict = field(default_factory=dict, repr=False)
    _slot_len: object = field(default=None, repr=False)

    @property
    def num_pairs(self) -> int:
        return int(self.pair_len.shape[0])

    def slot_lengths(self):
        """``slot_len_host`` on the device, uploaded on first use (the end-to-end modes'
        last columns; inter_task.cu, "End-to-end modes")."""
        if self._slot_len is None:
            self._slot_len = self.upload(self.slot_len_host)
        return self._slot_len

    def pairs_at_least(self, length: int) -> int:
        """How many pairs hold ``length`` letters or more (the first ones: ``pair_len`` is
        non-increasing), counted on the host copy: nothing waits for the GPU's queued
        searches, and no reduction kernel is compiled on a fresh machine."""
        if length not in self._at_least:
            self._at_least[length] = int(np.count_nonzero(self.pair_len_host >= length))
        return self._at_least[length]

    def block_lengths(self, first: int, end: int, per_pair: int, groups_per_block: int):
        """The longest unit of each block of a launch over pairs ``first`` to ``end`` (a
        unit: a pair, or with ``per_pair`` 2 each of its targets), ``groups_per_block``
        units per block: pairs are longest first, so a block's first. Kept per launch shape:
        every search of the layout launches the same few."""
        key = (first, end, per_pair, groups_per_block)
        if key not in self._block_lengths:
            # from the host copy, uploaded: no array operation for CuPy to compile
            unit_len = np.repeat(self.pair_len_host[first:end], per_pair)
            self._block_lengths[key] = self.upload(
                np.ascontiguousarray(unit_len[::groups_per_block], dtype=np.int32))
        return self._block_lengths[key]

    def first_column(self, pair: int) -> int:
        """The first column of pair ``pair`` in ``pair_codes`` (``columns`` for
        ``num_pairs``), read back once per pair asked for (launch bounds: a few per layout)."""
        if pair not in self._first_columns:
            self._first_columns[pair] = (int(self.pair_start[pair]) if pair < self.num_pairs
                                         else self.columns)
        return self._first_columns[pair]


@dataclass
class DeviceTargets:
    """Targets on the device, laid out for :func:`search` (built by :func:`prepare_targets`).

    ``residues``/``offsets``/``lengths`` are the input (codes, int64 offsets); ``order``
    holds the rows for the inter-task kernels (valid, non-empty, shorter than
    ``long_row_min``), longest first; ``pairs`` is the 16-bit kernels' layout of them, two
    targets per pair; ``long_rows`` (ascending) are the rows of at least ``long_row_min``
    letters, aligned one block per row by ``_pairs.align_long_rows`` (see
    :func:`long_row_threshold`).
    """

    runtime: object
    residues: object
    offsets: object
    lengths: object
    valid: object
    order: object
    pairs: _PairLayout
    pad_code: int
    long_rows: object = None
    long_row_min: int | None = None
    #: the longest of ``long_rows`` (read once here, not once per query)
    longest_long_row: int = 0
    #: the lengths of ``long_rows`` on the host (read once here: each query's intra-task
    #: launches need them, and a read per query would wait for the GPU)
    long_row_lengths: object = None
    #: every row's length on the host (the 32-bit recomputes lay their rows out there)
    lengths_host: object = None

    def __len__(self) -> int:
        return int(self.lengths.shape[0])


def _pair_layout(runtime, residues, offsets, lengths, rows, lanes: int, pad_code: int):
    """The pairs of ``rows`` (host int64, longest first; ``lengths``: every row's, host)."""
    xp = runtime.xp
    n = int(rows.shape[0])
    num_pairs = (n + lanes - 1) // lanes
    slot_rows = np.full(num_pairs * lanes, -1, dtype=np.int32)
    slot_rows[:n] = rows
    slot_len_host = np.zeros(num_pairs * lanes, dtype=np.int32)
    slot_len_host[:n] = lengths[rows]
    pair_len_host = lengths[rows[::lanes]].astype(np.int32)
    # the pairs' columns are laid out on the host, from their lengths, which the counts of
    # pairs_at_least read too
    widths = (pair_len_host.astype(np.int64) + 7) // 8 * 8
    starts = np.zeros(num_pairs, dtype=np.int64)
    np.cumsum(widths[:-1], out=starts[1:])
    slot_rows, pair_start, pair_len = (runtime.upload(a) for a in (slot_rows, starts,
                                                                    pair_len_host))
    columns = int(widths.sum())
    pair_codes = xp.empty(max(columns, 1), dtype=xp.uint16)
    if num_pairs:
        function = runtime.function("inter_task.cu", _kernels.PAIR_CODES_NAME)
        runtime.launch(function, min(num_pairs, 1 << 16), min(runtime.block_threads, 128),
                       [residues, offsets, slot_rows, np.int32(lanes), pair_start, pair_len,
                        np.int32(num_pairs), np.int32(pad_code), pair_codes])
    return _PairLayout(lanes, slot_rows, pair_len, pair_start, pair_codes, columns,
                       pair_len_host, runtime.upload, slot_len_host)


def _longest_first(rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``rows`` ordered by their ``lengths``, longest first, ties in row order (a stable
    sort; NumPy's radix sort where the lengths fit 16 bits, as the inter-task rows'
    usually do)."""
    if not rows.size:
        return rows
    chosen = lengths[rows]
    if int(chosen.max()) < 1 << 16:
        keys = ((1 << 16) - 1 - chosen).astype(np.uint16)
    else:
        keys = -chosen
    return rows[np.argsort(keys, kind="stable")]


def prepare_targets(residues, offsets, valid=None, *, alphabet_size: int,
                    runtime=None, long_row_min: int | None | str = "default") -> DeviceTargets:
    """Lay targets out on the device: sort by length, pair, interleave the codes.

    ``residues`` (uint8 codes) and ``offsets`` (int64, ``n + 1``) may be NumPy (copied to the
    device) or CuPy arrays (used in place); ``valid`` (bool) marks non-null rows. Rows of at
    least ``long_row_min`` letters (default: :func:`long_row_threshold`; ``None``: none) are
    set apart for the intra-task kernel, unless there are more than :func:`long_rows_cap`.

    The rows are chosen and ordered on the host, from one copy of the offsets: a few
    milliseconds for a database of 500,000 rows, and no array operation for CuPy to compile
    on a fresh machine (docs/notes/gpu-search-job.md, warm and cold); only the codes'
    layout is a kernel's.
    """
    runtime = runtime or get_runtime()
    xp = runtime.xp
    residues = xp.ascontiguousarray(xp.asarray(residues, dtype=xp.uint8))
    offsets = xp.ascontiguousarray(xp.asarray(offsets, dtype=xp.int64))
    offsets_host = np.asarray(runtime.to_host(offsets), dtype=np.int64)
    n = int(offsets_host.shape[0]) - 1
    lengths = np.diff(offsets_host)
    valid = (np.ones(n, dtype=bool) if valid is None
             else np.asarray(runtime.to_host(valid), dtype=bool))
    active = valid & (lengths > 0)
    if long_row_min == "default":
        long_row_min = long_row_threshold(runtime)
    long_rows = np.zeros(0, dtype=np.int64)
    if long_row_min is not None:
        long_rows = np.flatnonzero(active & (lengths >= long_row_min))
        cap = long_rows_cap(runtime)
        if cap is not None and int(long_rows.shape[0]) > cap:
            long_rows = long_rows[:0]  # many long rows: the inter-task search does better
        else:
            active = active & (lengths < long_row_min)
    order = _longest_first(np.flatnonzero(active), lengths)
    pad_code = alphabet_size
    pairs = _pair_layout(runtime, residues, offsets, lengths, order, 2, pad_code)
    long_lengths = lengths[long_rows]
    longest = int(long_lengths.max()) if long_lengths.size else 0
    return DeviceTargets(runtime, residues, offsets, runtime.upload(lengths),
                         runtime.upload(valid), runtime.upload(order), pairs, pad_code,
                         runtime.upload(long_rows), long_row_min, longest, long_lengths,
                         lengths)


# ----------------------------------------------------------------------------------- kernels


def profile_shift(matrix, gap_open: int, lanes: int = 2) -> int:
    """The least that makes every ``sub + gap_open`` plus it non-negative: the 16-bit forward
    kernels keep it in HG, E and T so that lane 0's adds never leave its 16 bits
    (inter_task.cu, "Adds on the FMA pipe", "E a column ahead"): 0 for BLOSUM62 with
    gap_open 11, for instance; 0 for the 32-bit kernel, whose adds need no offsets."""
    if lanes != 2:
        return 0
    return max(0, -(int(np.min(matrix)) + int(gap_open)))


def lane16_bound(scoring) -> int:
    """A 16-bit forward lane whose best reaches this may have wrapped: it is recomputed in
    32 bits. Lane 0 holds its values offset by gap_open plus the profile's shift
    (inter_task.cu, "Adds on the FMA pipe"), which leaves it that much less room."""
    offset = scoring.gap_open + profile_shift(scoring.matrix, scoring.gap_open)
    return scoring.saturation_bound(_LANE16_MAX - offset)


#: The end-to-end forward kernels never saturate (:func:`end_to_end_bias` checks the highest
#: value first): a score limit no lane reaches.
END_TO_END_LIMIT = _LANE16_MAX + 1


def end_to_end_bias(scoring, query_length: int, target_length: int) -> int | None:
    """How much deeper than 0 every value of an end-to-end mode's forward kernel is held
    (inter_task.cu, "End-to-end modes") for queries up to ``query_length`` letters against
    targets up to ``target_length``, or None where those values may not fit 16 bits (the
    row-wise pairs' int32 kernels then take the search).

    The lowest cell of the mode lies at most :func:`~swdask._scoring.end_to_end_depth`
    below 0; T's floor sits ``gap_open`` below that and a substitution more. The highest
    cell is at most ``min(m, n)`` of the best substitution, since every path from the
    boundary (never above 0) takes at most that many diagonal steps."""
    if not lanes16_fit(scoring):
        return None
    go = scoring.gap_open
    depth = end_to_end_depth(scoring.free_query_ends, scoring.free_target_ends, go,
                             scoring.gap_extend, query_length, target_length)
    matrix = np.asarray(scoring.matrix)
    worst = int(np.abs(matrix).max())
    bias = depth + go + worst
    highest = min(query_length, target_length) * max(0, int(matrix.max()))
    room = _LANE16_MAX - (go + profile_shift(matrix, go)) - bias - worst
    return bias if highest < room else None


def _profile(runtime, matrix, codes, gap_open, lanes, end_to_end: bool = False):
    """``(profile, pad, shift)``: ``profile[a, i] = matrix[a, q_i] + gap_open`` as int32 plus a
    PAD row, as the kernels read it; a query row of code ``alphabet`` (the padding between
    stacked queries) scores PAD's score against every letter, as the rows past the stack's
    end do. PAD is a substitution of ``-gap_open`` in the 16-bit kernels (entries 0) and far
    below any score in the 32-bit one; either way a PAD cell never wins (inter_task.cu). In
    the ``end_to_end`` modes PAD scores 0 (entries ``gap_open``: inter_task.cu, "End-to-end
    modes").
    ``shift`` is :func:`profile_shift`, which the 16-bit kernels keep in HG, E and T
    instead of in the profile (inter_task.cu, "E a column ahead")."""
    shift = profile_shift(matrix, gap_open, lanes)
    pad = gap_open if end_to_end else 0 if lanes == 2 else gap_open + _LANE32_PAD
    # a row per target letter and PAD; a column per query code (the matrix's letters, or a
    # profile's positions) and the padding code after them
    table = substitution_table(matrix, (matrix.shape[0] + 1, matrix.shape[1] + 1), pad=pad,
                               offset=gap_open)
    # row-major, as the kernels read it (a column gather alone would come out column-major);
    # on the host (runtime None) or uploaded
    profile = np.ascontiguousarray(table[:, codes], dtype=np.int32)
    return (profile if runtime is None else runtime.upload(profile)), pad, shift


#: Most rows and queries of one stack of queries (:func:`search_stack`), and most bytes of
#: device memory its results may take (:data:`STACK_BYTES_PER_TARGET` per query and target:
#: the kernel's three int32 cells per slot, then the same three by row). Measured with
#: 1,000 proteins of DB.fasta against sp500k, scores only: one query per launch was the
#: slowest, and stacks of 8,192 rows and 64 queries, 16,384 and 128, 32,768 and 256 each a
#: little faster than the one before (docs/notes/gpu-search-job.md, stacks).
#: The many-queries search has two stacks in flight (:class:`PendingStack`: one finished
#: while the next one's launches run), so its results take up to twice ``STACK_BYTES``.
STACK_ROWS = 32768
STACK_QUERIES = 256
STACK_BYTES = 2 << 30
STACK_BYTES_PER_TARGET = 24


def query_streams(rows, streams: int) -> np.ndarray:
    """The stream of each query of a stack whose queries take ``rows`` rows each (padded):
    longest first, each to the stream with the fewest rows so far (the first of those), so
    that the streams end within one query of each other."""
    chosen = np.zeros(len(rows), np.int64)
    filled = [0] * streams
    for k in sorted(range(len(rows)), key=lambda k: (-int(rows[k]), k)):
        chosen[k] = min(range(streams), key=lambda stream: filled[stream])
        filled[chosen[k]] += int(rows[k])
    return chosen


def padded_rows(lengths, rows: int) -> np.ndarray:
    """Each query's rows in a stack, its length rounded up to a multiple of ``rows`` (R)."""
    return -(-np.asarray(lengths, dtype=np.int64) // rows) * rows


def stack_rows(lengths, rows: int, streams: int) -> int:
    """The profile rows of a stack of queries of ``lengths`` padded to ``rows`` (R) in
    ``streams`` streams (:func:`query_streams`): its longest stream's."""
    padded = padded_rows(lengths, rows)
    chosen = query_streams(padded, streams)
    return max(int(padded[chosen == stream].sum()) for stream in range(streams))


class _Stack:
    """Queries stacked for one forward launch (see inter_task.cu, "Stacked queries"): with
    ``rows`` (R), each query padded to a multiple of R rows; one query is not padded (any
    R: the rows past its end score PAD in the kernel).

    With ``query_lanes`` (16-bit, R given), the queries go into two streams, one per 16-bit
    lane (inter_task.cu, "Query lanes"): each query to the stream with fewer rows so far,
    longest first (so the streams end within one query of each other), in their order
    within a stream; the shorter stream is padded to the longer one's rows. ``streams[k]``
    is query k's stream, ``starts[k]`` its first row there.

    ``mode`` (an end-to-end mode's code, :data:`~swdask.gpu._kernels.MODE_CODES`; R given):
    PAD scores 0, and where target ends are free each query's padding goes before it, so
    that its last row ends a segment (inter_task.cu, "End-to-end modes"); ``starts[k]`` is
    then its first real row. ``pad`` is the kernel's PAD entry for the rows past the
    stack's end (both streams' in one word with query lanes)."""

    def __init__(self, runtime, matrix, codes_list, gap_open: int, lanes: int,
                 rows: int | None, query_lanes: bool = False, mode: int = 0):
        self.runtime = runtime
        self.lengths = [int(c.shape[0]) for c in codes_list]
        self.rows = rows
        self.query_lanes = query_lanes
        self.mode = mode
        pad_before = bool(mode & _kernels.MODE_FREE_TARGET)
        pad_code = matrix.shape[1]  # the query code after the matrix's (or profile's) own
        if rows is None:
            assert len(codes_list) == 1 and not query_lanes
            joined = [codes_list[0]]
            self.streams = np.zeros(1, np.int64)
        else:
            padded = padded_rows(self.lengths, rows)
            self.streams = query_streams(padded, 2 if query_lanes else 1)
            self.starts = np.zeros(len(codes_list), np.int64)
            joined = []
            for stream in range(2 if query_lanes else 1):
                members = np.flatnonzero(self.streams == stream)
                ends = np.cumsum(padded[members])
                self.starts[members] = ends - padded[members]
                codes = np.full(int(ends[-1]) if members.size else 0, pad_code,
                                dtype=np.int64)
                if pad_before:  # each query's last row ends its last segment
                    self.starts[members] += padded[members] - np.asarray(self.lengths)[members]
                for k, start in zip(members, self.starts[members]):
                    codes[start:start + self.lengths[k]] = codes_list[k]
                joined.append(codes)
            total = max(codes.shape[0] for codes in joined)
            joined = [np.concatenate([codes, np.full(total - codes.shape[0], pad_code,
                                                     dtype=np.int64)]) for codes in joined]
        self.profile_rows = int(joined[0].shape[0])
        profile, self.pad, self.shift = _profile(None, matrix, joined[0], gap_open, lanes,
                                                 bool(mode))
        if query_lanes:
            # both streams' entries in a uint32 per row, packed as high * 65536 + low, so
            # that lane 0's negative entries borrow from lane 1 as the kernel's 32-bit add
            # carries back into it (PAD's entries are 0 in both lanes, or gap_open)
            second, _, _ = _profile(None, matrix, joined[1], gap_open, lanes, bool(mode))
            profile = (((second.astype(np.int64) << 16) + profile.astype(np.int64))
                       & 0xFFFFFFFF).astype(np.uint32)
            self.pad = self.pad * 0x10001
        self.profile = runtime.upload(profile)
        self._segments = {}
        self._part_cuts = {}

    def __len__(self) -> int:
        return len(self.lengths)

    def segment_queries(self, rows: int) -> np.ndarray:
        """The query of each R-row segment (R = ``rows``) of each stream, -1 past a stream's
        last query: int32 of shape (segments, streams), on the host."""
        if self.rows is None:
            return np.zeros((-(-self.lengths[0] // rows), 1), np.int32)
        if rows != self.rows:
            raise ValueError(f"a stack padded to R = {self.rows} launched with R = {rows}")
        per = padded_rows(self.lengths, rows) // rows
        streams = 2 if self.query_lanes else 1
        table = np.full((self.profile_rows // rows, streams), -1, np.int32)
        for stream in range(streams):
            members = np.flatnonzero(self.streams == stream)
            ids = np.repeat(members.astype(np.int32), per[members])
            table[:ids.shape[0], stream] = ids
        return table

    def segments(self, rows: int):
        """``(seg_query, number of segments, query_row0)`` on the device for R = ``rows``
        (``seg_query``: :meth:`segment_queries` flattened, segment by segment)."""
        if rows not in self._segments:
            table = self.segment_queries(rows)
            if self.rows is None:  # one query: every segment its, from row 0
                seg_query, row0, _ = _one_query_tables(self.runtime, table.shape[0])
            else:
                xp = self.runtime.xp
                seg_query = xp.asarray(table.reshape(-1))
                row0 = xp.asarray(self.starts.astype(np.int32))
            self._segments[rows] = (seg_query, int(table.shape[0]), row0)
        return self._segments[rows]

    def part_segments(self, rows: int, parts: int):
        """The segments of the stack for R = ``rows`` cut at query starts into at most
        ``parts`` parts of about equal segments (see inter_task.cu, "Parts"): the cuts on the
        device (``parts + 1`` int32: first segment of each part, then the end) and the
        number of parts."""
        key = (rows, parts)
        if key not in self._part_cuts:
            table = self.segment_queries(rows)
            total = table.shape[0]
            if self.rows is None:
                self._part_cuts[key] = (_one_query_tables(self.runtime, total)[2], 1)
                return self._part_cuts[key]
            if parts <= 1:
                cuts = np.array([0, total], np.int64)
            else:
                # a part may start where no stream's query goes on from the segment before
                free = ((table[1:] != table[:-1]) | (table[:-1] < 0)).all(axis=1)
                starts = np.concatenate([[0], 1 + np.flatnonzero(free)])
                wanted = np.arange(1, parts) * total / parts
                nearest = np.searchsorted(starts, wanted)
                below = starts[np.maximum(nearest - 1, 0)]
                above = starts[np.minimum(nearest, starts.shape[0] - 1)]
                chosen = np.where(wanted - below <= above - wanted, below, above)
                cuts = np.unique(np.concatenate([[0], chosen, [total]]))
            self._part_cuts[key] = (self.runtime.xp.asarray(cuts.astype(np.int32)),
                                    int(cuts.shape[0] - 1))
        return self._part_cuts[key]


#: Small read-only device arrays that searches share, by (runtime, device, what).
_DEVICE_CONSTANTS: dict = {}


def _kept_on_device(runtime, what: tuple, build):
    """``build()`` (device arrays that kernels only read), made once per runtime, device and
    ``what`` and shared by every search after."""
    key = (runtime.name, runtime.current_device()) + what
    if key not in _DEVICE_CONSTANTS:
        _DEVICE_CONSTANTS.setdefault(key, build())
    return _DEVICE_CONSTANTS[key]


def _read_only_zeros(runtime, count: int):
    """``count`` int32 zeros on the device, for kernels that only read them (no floors)."""
    return _kept_on_device(runtime, ("zeros", int(count)),
                           lambda: runtime.xp.zeros(int(count), dtype=runtime.xp.int32))


def _one_query_tables(runtime, segments: int):
    """The segment tables of a stack of one query in ``segments`` R-row segments, on the
    device: ``seg_query`` (all 0), ``query_row0`` ([0]) and the cuts of one part ([0,
    segments]), uploaded once per device and count and shared by every search of one query:
    without their three small copies the host's part of a 144-letter query's launch is
    clearly shorter, a visible share of so short a search (docs/notes/gpu-inter-task.md,
    profile words by multiply-add)."""
    segments = int(segments)

    def build():
        host = np.zeros(segments + 3, np.int32)
        host[-1] = segments  # [0] * segments, then row 0, then the cuts 0, segments
        joined = runtime.xp.asarray(host)
        return joined[:segments], joined[segments:segments + 1], joined[segments + 1:]

    return _kept_on_device(runtime, ("one query", segments), build)


#: Floors from a scout (inter_task.cu, "Floors from a scout"): a search that keeps each
#: query's ``top`` best rows first runs the first :data:`SCOUT_PAIRS` pairs (at most a
#: quarter) of its launch with the most pairs, the longest targets of that bucket, whose
#: chance scores are the bucket's highest; only where that quarter holds at least
#: :data:`SCOUT_MIN_PAIRS`. The floor of a query is the ``top``-th highest of the maxima of
#: :data:`FLOOR_GROUPS` runs of the scout's slots (so at least ``top`` slots reach it), less
#: one; a ``top`` above half the groups gets no floor.
SCOUT_PAIRS = 8192
SCOUT_MIN_PAIRS = 2048
FLOOR_GROUPS = 256


def _scout(plan, top: int | None):
    """``(scout launch, plan without it)``: the scout of ``plan`` (see :data:`SCOUT_PAIRS`),
    or ``(None, plan)``."""
    if top is None or not plan or top > FLOOR_GROUPS // 2:
        return None, plan
    bulk = max(range(len(plan)), key=lambda k: plan[k][1] - plan[k][0])
    first, end, group, rows = plan[bulk]
    size = min(SCOUT_PAIRS, (end - first) // 4)
    if size < SCOUT_MIN_PAIRS or 2 * size < FLOOR_GROUPS:
        return None, plan
    rest = list(plan)
    rest[bulk] = (first + size, end, group, rows)
    return (first, first + size, group, rows), rest


def _floors(runtime, out_score, first: int, end: int, top: int, limit: int, floors,
            stream=None) -> None:
    """Each query's floor into ``floors`` from its scout slots ``first`` to ``end`` of
    ``out_score`` (queries x slots, contiguous; exact below ``limit``): the ``top``-th
    highest of :data:`FLOOR_GROUPS` runs' maxima less one, so that at least ``top`` slots
    score more than it (runs of equal width; the remainder's slots are left out, which only
    lowers it). At most ``limit - 1``: a slot that may have saturated still reports a score
    above the floor, and so is checked and recomputed. One kernel (inter_task.cu,
    ``sw_floors``), where array operations would each be a kernel for CuPy to compile."""
    queries, stride = out_score.shape
    function = runtime.function("inter_task.cu", _kernels.FLOORS_NAME)
    runtime.launch(function, queries, FLOOR_GROUPS,
                   [out_score.reshape(-1)[first:], np.int64(stride),
                    np.int32((end - first) // FLOOR_GROUPS), np.int32(top), np.int32(limit),
                    floors], stream=stream)


def _run_forward(runtime, layout: _PairLayout, stack: _Stack, alpha1, scoring, plan,
                 joined=None, hold=None, top: int | None = None, bias: int = 0):
    """Forward kernel of the queries of ``stack`` over ``layout``, one launch per (first
    pair, end pair, G, R) of ``plan`` (see :func:`forward_plan`); returns score, end_i,
    end_j per query and slot (arrays of shape (queries, slots)). With ``joined`` (a list),
    the current stream does not wait for the launches: their end events go to ``joined``
    and the arrays they use to ``hold`` (a list), see ``runtime.concurrent``. With ``top``
    (16-bit lanes), a slot that cannot be among its query's ``top`` best may report 0: a
    scout runs first and sets each query's floor (:data:`SCOUT_PAIRS`). A stack of an
    end-to-end mode (``stack.mode``) runs that mode's kernels, every value ``bias`` deeper
    (:func:`end_to_end_bias`)."""
    xp = runtime.xp
    lanes = layout.lanes
    num_pairs = layout.num_pairs
    m = stack.profile_rows
    multipass = any(math.ceil(m / (group * rows)) > 1 for _, _, group, rows in plan)
    if any(rows == _kernels.ONE_PASS_ROWS and (m > group * rows or len(stack) > 1)
           for _, _, group, rows in plan):  # those kernels read no row above (inter_task.cu)
        raise RuntimeError(f"a forward launch of R = {_kernels.ONE_PASS_ROWS} for a stack of "
                           f"{len(stack)} queries in {m} rows: it takes one query in one pass")
    boundary = None  # the row above the passes, shared by the launches not in parts
    # with query lanes a thread group aligns one target of a pair (a "unit", two per pair),
    # whose row above the passes takes the pair's columns once more
    per_pair = 2 if stack.query_lanes else 1
    slots = num_pairs * lanes
    stride = max(slots, 1)
    out_score = xp.empty((len(stack), stride), dtype=xp.int32)
    out_end_i = xp.empty((len(stack), stride), dtype=xp.int32)
    out_end_j = xp.empty((len(stack), stride), dtype=xp.int32)
    no_floors = _read_only_zeros(runtime, len(stack))
    # the end-to-end modes' inputs: each lane's target length, each query's (the local
    # kernels read neither)
    slot_len = layout.slot_lengths() if stack.mode else no_floors
    query_len = (runtime.upload(np.asarray(stack.lengths, dtype=np.int32)) if stack.mode
                 else no_floors)
    limit = END_TO_END_LIMIT if stack.mode else lane16_bound(scoring)
    scout, plan = _scout(plan, top if lanes == 2 else None)
    floors = no_floors if scout is None else xp.zeros(len(stack), dtype=xp.int32)
    block = runtime.block_threads
    launches = []  # with every array they use: alive until the launches end
    for k, (first, end, group, rows) in enumerate(([scout] if scout else []) + plan):
        # each launch sees its pairs as 0..count-1: the per-pair arrays and the outputs are
        # passed from its first pair on (contiguous views); pair_start stays absolute, so
        # pair_codes and the boundary are shared (each launch touches only its own pairs)
        name = _kernels.forward_name(lanes, group, rows, stack.query_lanes, stack.mode)
        function = runtime.function("inter_task.cu", name)
        groups_per_block = block // group
        count = end - first
        grid = (count * per_pair + groups_per_block - 1) // groups_per_block
        block_len = layout.block_lengths(first, end, per_pair, groups_per_block)
        shared = tile_bytes(alpha1, group, rows, lanes, stack.query_lanes)
        seg_query, num_segments, row0 = stack.segments(rows)
        boundary_base, boundary_stride = 0, 0
        parts = 1
        if len(stack) > 1:  # (one query is never cut: no read of the columns for it)
            parts = launch_parts(runtime, grid, math.ceil(num_segments / group), len(stack),
                                 layout.first_column(end) - layout.first_column(first))
        cuts, parts = stack.part_segments(rows, parts)
        if parts > 1:  # each part its own row above the passes, from the launch's first pair
            boundary_base = layout.first_column(first)
            boundary_stride = 2 * per_pair * (layout.first_column(end) - boundary_base)
            launch_boundary = xp.empty(max(parts * boundary_stride, 2), dtype=xp.uint32)
        else:
            if boundary is None:
                boundary = xp.empty(2 * per_pair * max(layout.columns, 1) if multipass else 2,
                                    dtype=xp.uint32)
            launch_boundary = boundary
        # the outputs from the launch's first slot on: query q's slot k at q * stride + k
        launches.append((function, grid * parts, shared,
                         [stack.profile, np.int32(m), np.int32(alpha1), np.int32(stack.pad),
                          layout.pair_codes, layout.pair_start[first:end],
                          layout.pair_len[first:end], block_len, np.int32(count),
                          launch_boundary, np.int64(boundary_base), np.int64(boundary_stride),
                          np.int32(scoring.gap_open), np.int32(scoring.gap_extend),
                          np.int32(stack.shift), seg_query, np.int32(num_segments), cuts,
                          np.int32(parts), row0,
                          no_floors if scout and k == 0 else floors,  # (the scout's none)
                          np.int64(stride),
                          out_score.reshape(-1)[first * lanes:],
                          out_end_i.reshape(-1)[first * lanes:],
                          out_end_j.reshape(-1)[first * lanes:],
                          slot_len[first * lanes:] if stack.mode else slot_len, query_len,
                          np.int32(bias)]))
    # Several buckets run side by side, one stream each: the bucket of the longest targets
    # (more threads per pair, so each of its pairs finishes sooner) fills the SMs the other
    # launch leaves idle instead of running before or after it. Its stream (the first: the
    # plan is longest first) has the highest priority, so that its blocks do not wait behind
    # the others' when searches are queued (runtime._priority_stream).
    # With a scout, it runs first on the first stream, then the floors; the other launches
    # wait for those.
    with runtime.concurrent(len(launches) - (scout is not None), prioritize_first=True,
                            joined=joined) as streams:
        if scout is not None:
            function, grid, shared, args = launches[0]
            runtime.launch(function, grid, block, args, shared_mem=shared, stream=streams[0])
            _floors(runtime, out_score, scout[0] * lanes, scout[1] * lanes, top, limit,
                    floors, stream=streams[0])
            runtime.follow(streams[0], streams[1:])
        for (function, grid, shared, args), stream in zip(launches[scout is not None:],
                                                          streams):
            runtime.launch(function, grid, block, args, shared_mem=shared, stream=stream)
    if hold is not None:
        hold.append((launches, floors, query_len))
    return out_score[:, :slots], out_end_i[:, :slots], out_end_j[:, :slots]


def _finish_stack(runtime, n, slot_rows, forward, query_lengths, limit, track_end):
    """A stack's forward results (score, end cells: (queries, slots) arrays) in row order,
    (queries, ``n``) arrays, with each query's checks (``[over, bad end cell]``, bool), by one
    kernel for the whole stack (inter_task.cu, ``sw_stack_finish``). Rows no slot holds keep
    score 0 and end cells -1. Nothing is read back: the checks come back later, in one
    transfer with the others."""
    xp = runtime.xp
    scores, ends_i, ends_j = (xp.ascontiguousarray(values) for values in forward)
    count, slots = scores.shape
    out = {"score": xp.zeros((count, n), dtype=xp.int32)}
    if track_end:
        out["query_end"] = runtime.full((count, n), -1, xp.int32)
        out["target_end"] = runtime.full((count, n), -1, xp.int32)
    flags = xp.zeros((count, 2), dtype=xp.uint8)
    total = count * slots
    if total:
        lengths = runtime.upload(np.asarray(query_lengths, dtype=np.int32))
        end_i = out.get("query_end", out["score"])
        end_j = out.get("target_end", out["score"])
        function = runtime.function("inter_task.cu", _kernels.STACK_FINISH_NAME)
        runtime.launch(function, min(-(-total // runtime.block_threads), 1 << 16),
                       runtime.block_threads,
                       [scores, ends_i, ends_j, np.int32(bool(track_end)), slot_rows, lengths,
                        np.int32(count), np.int32(slots), np.int64(n), np.int32(limit),
                        out["score"], end_i, end_j, flags])
    return out, flags.view(xp.bool_)


def finish_cells(runtime, cells: dict, valid, mode: str):
    """:func:`swdask._results.finish` on the device: the kernel cells (int32 device arrays
    by name, inclusive, -1 for none) as :class:`~swdask._results.Alignments` of ``mode``'s
    columns, one kernel per column (``sw_finish_column``), where CuPy's array operations
    would each be a kernel to compile on a fresh machine. Other cells (another integer
    type, not contiguous) go to ``finish``."""
    xp = runtime.xp
    valid = xp.ascontiguousarray(xp.asarray(valid, dtype=bool))
    names = result_columns(kernel_mode(mode))
    given = [cells[name] for name in names]
    if any(c.dtype != np.int32 or not c.flags.c_contiguous for c in given):
        return finish(cells, valid, mode)
    n = int(valid.shape[0])
    function = runtime.function("inter_task.cu", _kernels.FINISH_COLUMN_NAME)
    grid = min(-(-n // runtime.block_threads), 1 << 16)
    columns = {}
    for name, cell in zip(names, given):
        columns[name] = xp.empty(n, dtype=xp.int64)
        runtime.launch(function, grid, runtime.block_threads,
                       [cell, given[0], valid, np.int64(n),
                        np.int32(name.endswith("_end")), columns[name]])
    return Alignments(columns, valid, position_mode(mode))


def top_rows(runtime, found: list, top: int) -> list:
    """:func:`swdask._results.top_candidates_many` on the device (``found``: the
    :class:`~swdask._results.Alignments` of consecutive queries against one column, CuPy):
    each query's ``min(top, n)`` best rows, ``(rows, is_hit)`` device arrays, nothing read
    back. One int64 key per score (``sw_top_keys``: the query's number, then the score,
    then the row: the single query's order and ties), one sort for every query of the
    group (CuPy's sort, compiled with CuPy), then the first keys of each query back to rows
    (``sw_top_rows``): no array operation for CuPy to compile on a fresh machine. At most
    :data:`~swdask._results.TOP_GROUP_SCORES` scores go into one sort."""
    if not found:
        return []
    if len(found) > 1 and len(found) * len(found[0]) > TOP_GROUP_SCORES:
        half = len(found) // 2
        return top_rows(runtime, found[:half], top) + top_rows(runtime, found[half:], top)
    xp = runtime.xp
    n, count = len(found[0]), len(found)
    kept = min(top, n)
    if kept == 0:
        return [(xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=bool)) for _ in found]
    keys = xp.empty(count * n, dtype=xp.int64)
    grid = min(-(-n // runtime.block_threads), 1 << 16)
    function = runtime.function("inter_task.cu", _kernels.TOP_KEYS_NAME)
    for query, alignments in enumerate(found):
        score = xp.ascontiguousarray(alignments.columns["score"], dtype=xp.int64)
        valid = xp.ascontiguousarray(alignments.valid, dtype=bool)
        runtime.launch(function, grid, runtime.block_threads,
                       [score, valid, np.int64(n), np.int64(query), keys[query * n:]])
    keys.sort()
    rows = xp.empty((count, kept), dtype=xp.int64)
    is_hit = xp.empty((count, kept), dtype=bool)
    runtime.launch(runtime.function("inter_task.cu", _kernels.TOP_ROWS_NAME),
                   min(-(-(count * kept) // runtime.block_threads), 1 << 16),
                   runtime.block_threads,
                   [keys, np.int64(n), np.int32(count), np.int32(kept), rows, is_hit])
    return [(rows[query], is_hit[query]) for query in range(count)]


def check_flags(flags) -> list[bool]:
    """Read the deferred checks of several searches (:func:`search`'s ``checks``: entries
    ``(array, row)``, row ``row`` of a device array of ``[saturated, bad end cell]`` rows)
    back, one transfer per array: for each, whether its rows saturated the 16-bit lanes
    (search it again without deferring). A bad end cell is an internal error, raised."""
    if not flags:
        return []
    return [bool(v) for v in _read_checks(flags)[:, 0]]


def _read_checks(flags) -> np.ndarray:
    """The checks ``flags`` (entries ``(array, row)``: row ``row`` of a device array of
    ``[saturated, bad end cell, ...]`` rows) on the host, each array read once (a stack's
    queries share one); a bad end cell raises (see :func:`check_flags`)."""
    read = {}
    rows = []
    for array, row in flags:
        if id(array) not in read:
            read[id(array)] = (array, np.asarray(host_array(array)))
        rows.append(read[id(array)][1][row])
    values = np.stack(rows)
    if bool(values[:, 1].any()):
        raise RuntimeError("internal error: the GPU forward kernel returned an end cell "
                           "outside the matrix; please report it with the input")
    return values


def search(targets: DeviceTargets, query_codes, scoring, mode: str = "full", *,
           shape: tuple[int, int] | None = None, checks: list | None = None,
           top: int | None = None, matrix=None) -> dict:
    """Align one query (uint8 codes) against every target; results stay on the device.

    Returns int32 device arrays of length ``len(targets)``, by row: ``score`` and, as
    ``mode`` asks (``"end"``: ends; ``"full"``: ends and starts), the inclusive cells
    ``query_end``, ``target_end``, ``query_start``, ``target_start`` (-1 where the score is
    0, and for null or empty rows). ``shape`` = (G, R) runs every pair of the 16-bit kernel
    in that shape (else :func:`forward_plan`: one launch per length bucket).

    ``checks`` (a list; only in mode ``"end"`` or ``"none"``): leave the 16-bit lanes'
    checks to the caller instead of waiting for the kernels here: one device array
    ``[saturated, bad end cell]`` is appended, and where :func:`check_flags` says it
    saturated, the results are not exact and the query must be searched again without
    ``checks``. So a search of many queries queues one query's kernels behind the last's
    with nothing read back between them (on an H200, two GPUs driven from two threads of
    one process waited on each other at every per-query read).

    ``top`` (a search that keeps the query's ``top`` best rows; modes ``"end"`` and
    ``"none"``): a row that cannot be among them may score 0 (inter_task.cu, "Floors from
    a scout"); every row that can is exact.

    ``matrix`` (``[target letter, query code]``): the scores the codes index, where not the
    scoring's own (a profile's columns, its positions as codes: ``PreparedQuery.scan_terms``;
    modes ``"end"`` and ``"none"``).
    """
    return search_stack(targets, [query_codes], scoring, mode, shape=shape, checks=checks,
                        top=top, matrix=matrix)[0]


def stacks(lengths, targets: int = 0, rows: int | None = None,
           queries: int | None = None) -> list[range]:
    """Consecutive queries (by their ``lengths``) grouped into stacks of at most ``rows``
    rows (a longer query alone) and ``queries`` queries (:data:`STACK_ROWS`,
    :data:`STACK_QUERIES`, fewer where the results of that many against ``targets`` rows
    would pass :data:`STACK_BYTES`); an empty query alone."""
    rows, queries = rows or STACK_ROWS, queries or STACK_QUERIES
    queries = max(1, min(queries, STACK_BYTES // max(1, STACK_BYTES_PER_TARGET * targets)))
    groups, first, total = [], 0, 0
    for k, length in enumerate(lengths):
        if k > first and (total + length > rows or k - first >= queries or not length
                          or not lengths[k - 1]):
            groups.append(range(first, k))
            first, total = k, 0
        total += length
    if first < len(lengths):
        groups.append(range(first, len(lengths)))
    return groups


def search_stack(targets: DeviceTargets, queries, scoring, mode: str = "full", *,
                 shape: tuple[int, int] | None = None, checks: list | None = None,
                 top: int | None = None, matrix=None) -> list:
    """:func:`search` of each of ``queries`` (uint8 codes, none empty), their 16-bit forward
    kernels run as one stack (inter_task.cu, "Stacked queries": short queries share the
    passes that each would run alone); a list of :func:`search`'s dicts, in order. With
    ``checks``, one flags array per query is appended, in order; ``top`` and ``matrix`` as
    in :func:`search`."""
    return start_stack(targets, queries, scoring, mode, shape=shape, top=top,
                       matrix=matrix).results(checks)


class PendingStack:
    """A stack's forward launches queued by :func:`start_stack`, not yet waited for;
    :meth:`results` gives :func:`search_stack`'s list.

    Between the two, the host may queue the next stack's launches. Its results are then
    finished on the current stream (rows scattered, checks, top rows: about a thousand small
    kernels per hundred queries) while the GPU runs the next launches, instead of between
    them. Those small kernels are a small share of the GPU's time beside the forward
    launches, but between them they leave it idle; finished this way, the search job's
    search phase is a little shorter, and small partitions keep more of one partition's
    rate (docs/notes/gpu-search-job.md, each stack finished behind the next one's
    launches)."""

    def __init__(self, finish, runtime=None, joined=(), hold=()):
        self._finish = finish
        self._runtime = runtime
        self._joined = joined  # the launches' end events
        self._hold = hold  # what the launches read or write, until they are waited for

    def _wait(self) -> None:
        """The current stream waits for the launches; their arrays may be freed after."""
        if self._joined:
            self._runtime.wait_for(self._joined)
        self._joined, self._hold = (), ()

    def results(self, checks: list | None = None) -> list:
        """The queries' results (see :func:`search_stack`; ``checks`` as there)."""
        self._wait()
        finish, self._finish = self._finish, None
        return finish(checks)

    def __del__(self):  # never taken (an error on the way): memory freed only after them
        try:
            self._wait()
        except Exception:  # noqa: BLE001 - the interpreter or the device going away
            pass


def start_stack(targets: DeviceTargets, queries, scoring, mode: str = "full", *,
                shape: tuple[int, int] | None = None, top: int | None = None,
                matrix=None) -> PendingStack:
    """:func:`search_stack` with its 16-bit forward launches queued and the rest left to
    :meth:`PendingStack.results`: the current stream does not wait for those launches until
    then (see :class:`PendingStack`)."""
    runtime = targets.runtime
    xp = runtime.xp
    # [target letter, query code]: the scoring's matrix, or a profile's columns
    matrix = np.asarray(scoring.matrix if matrix is None else matrix)
    profile = scoring.position_specific
    if profile and mode == "full":
        raise ValueError("a profile's start cells are not the reverse kernel's (it reads a "
                         "square matrix): scan in mode 'end'")
    code_type = np.uint8 if matrix.shape[1] <= 256 else np.int32
    codes_list = [np.ascontiguousarray(np.asarray(codes, dtype=code_type)) for codes in queries]
    if any(codes.shape[0] == 0 for codes in codes_list):
        raise ValueError("the query is empty")
    n = len(targets)
    alpha1 = matrix.shape[0] + 1
    if targets.pad_code != matrix.shape[0]:
        raise ValueError("targets were prepared for another alphabet than this scoring's")
    long_rows = targets.long_rows
    has_long = long_rows is not None and long_rows.shape[0]
    if not scoring.is_local:
        return _start_end_to_end(targets, codes_list, scoring, mode, top)
    # (a profile's long rows go to the 32-bit inter-task kernels: the intra-task kernel
    # reads a square matrix)
    on_long_kernel = [bool(has_long) and not profile
                      and _long_rows_fit(scoring, len(codes), targets.longest_long_row)
                      for codes in codes_list]
    if len(codes_list) > 1 and has_long and not all(on_long_kernel):
        # some query's scores may pass the intra-task kernel's range: one query at a time
        return PendingStack(lambda checks: [
            search_stack(targets, [codes], scoring, mode, shape=shape, checks=checks,
                         top=top, matrix=matrix)[0]
            for codes in codes_list])
    track_end = mode != "none"
    # Scores only also run the end-tracking kernel (ends computed, then dropped): it did W1
    # faster than the scores-only variant, whose shorter loop leaves its prefetched loads
    # too little time (docs/notes/gpu-inter-task.md); that variant was removed.
    inter_rows = targets.order  # rows the inter-task kernels align (forward and reverse)
    wide_rows = None
    if has_long and not on_long_kernel[0]:  # (one query) rows past the intra-task range:
        # the 32-bit inter-task kernels (exact as well, only slower), longest first, as the
        # kernels' layout wants; every long row is longer than every row of ``order``
        wide_rows = long_rows[xp.argsort(-targets.lengths[long_rows], kind="stable")]
        inter_rows = xp.concatenate([wide_rows, targets.order])
    forward = None
    joined, hold = [], []
    if inter_rows.shape[0] and targets.order.shape[0] and lanes16_fit(scoring):
        fixed = None
        if len(codes_list) > 1:  # one R for every launch: the forced shape's, or the largest
            forced = shape or (choose_shape(1, 2, runtime.compute_capability)
                               if _settings.get("gpu.shape") else None)
            fixed = (forced[1] if forced and forced[1] != _kernels.ONE_PASS_ROWS
                     else max(_kernels.rows_per_thread(runtime.compute_capability)))
        stack = _Stack(runtime, matrix, codes_list, scoring.gap_open, 2, fixed,
                       query_lanes=query_lanes_for(runtime, len(codes_list)))
        plan = forward_plan(targets.pairs, stack.profile_rows, runtime.compute_capability,
                            shape=shape, rows=fixed, query_lanes=stack.query_lanes)
        forward = _run_forward(runtime, targets.pairs, stack, alpha1, scoring, plan,
                               joined=joined, hold=hold, top=top if mode != "full" else None)
    elif inter_rows.shape[0] and targets.order.shape[0]:
        wide_rows = inter_rows  # the scoring does not fit 16 bits: every row in 32 bits

    def finish(checks):
        # Every query's result columns are rows of one array per column, and the stack's
        # slots go to row order, and its checks are made, in one kernel each for the whole
        # stack: one query at a time, those small kernels were a large share of a search
        # against a small part of a database (docs/notes/gpu-several-gpus-and-dask.md,
        # "Small parts, per query").
        count = len(codes_list)
        names = ("score",) + (("query_end", "target_end", "query_start", "target_start")
                              if track_end else ())
        columns = {}
        saturated = [None] * count
        reverse = [None] * count  # mode "full": each query's _ReverseInputs
        checked = None
        if inter_rows.shape[0] and forward is not None:
            limit = lane16_bound(scoring)
            # a lane whose best reached the limit may have wrapped: recompute it in 32 bits;
            # both checks come back in one transfer (each read waits for the kernels), and a
            # wrapped lane's end cell is the recompute's to give
            columns, checked = _finish_stack(
                runtime, n, targets.pairs.slot_rows, forward,
                [codes.shape[0] for codes in codes_list], limit, track_end)
        for name in names:  # what no forward launch wrote
            if name not in columns:
                columns[name] = runtime.full((count, n), 0 if name == "score" else -1,
                                             xp.int32)
        results = [{name: columns[name][k] for name in names} for k in range(count)]
        if not inter_rows.shape[0]:
            for codes, result, on_long in zip(codes_list, results, on_long_kernel):
                if on_long:
                    _align_long(targets, codes, scoring, mode, result)
            return results
        if checked is not None:
            for k, (codes, result) in enumerate(zip(codes_list, results)):
                flags = (checked, k)
                if checks is not None and mode != "full":
                    checks.append(flags)
                    continue
                if mode == "full" and wide_rows is None:
                    # the start cells' inputs queued before the checks are read, so that the
                    # host's work on them overlaps the forward kernels; the boundary's size
                    # comes back with the checks
                    reverse[k] = _ReverseInputs(targets, inter_rows, codes, matrix, scoring,
                                                result)
                    flags = (xp.concatenate([checked[k].astype(xp.int64),
                                             reverse[k].boundary_columns])[None], 0)
                values = _read_checks([flags])[0]
                if reverse[k] is not None:
                    reverse[k].boundary_count = int(values[2])
                if values[0]:
                    over_rows = result["score"] >= limit
                    saturated[k] = targets.order[over_rows[targets.order]]
        for k, (codes, result) in enumerate(zip(codes_list, results)):
            again = wide_rows
            if saturated[k] is not None:
                again = saturated[k] if again is None else xp.concatenate([again, saturated[k]])
            if again is not None and again.shape[0]:
                _align_wide(targets, codes, scoring, again, track_end, result, matrix)
                reverse[k] = None  # end cells changed: the boundary's layout with them
            if mode == "full":
                if reverse[k] is None:
                    reverse[k] = _ReverseInputs(targets, inter_rows, codes, matrix, scoring,
                                                result)
                reverse[k].launch(result)
            if on_long_kernel[k]:  # last: the 16-bit pass above rewrites whole columns
                _align_long(targets, codes, scoring, mode, result)
        return results

    return PendingStack(finish, runtime, joined, hold)


def _start_end_to_end(targets: DeviceTargets, codes_list, scoring, mode: str,
                      top: int | None) -> PendingStack:
    """:func:`start_stack` in an end-to-end mode: every score above 0 exact, with its end
    cell in mode ``"end"``; a row scoring 0 or below reports 0 (a search's hits score above
    0). The mode's forward kernels (inter_task.cu, "End-to-end modes") where
    :func:`end_to_end_bias` fits 16 bits and no row is set apart for the intra-task kernel
    (which has no such modes); otherwise, and for start cells, the row-wise pairs (every
    score exact, negative ones too)."""
    from . import _pairs

    runtime = targets.runtime
    layout = targets.pairs
    count, n = len(codes_list), len(targets)
    longest = int(layout.pair_len_host[0]) if layout.num_pairs else 0
    bias = end_to_end_bias(scoring, max(int(codes.shape[0]) for codes in codes_list), longest)
    has_long = targets.long_rows is not None and targets.long_rows.shape[0]
    if mode == "full" or has_long or bias is None:
        valid = runtime.to_host(targets.valid).astype(bool)
        return PendingStack(lambda checks: [
            _pairs.query_cells(codes, targets.residues, targets.offsets, valid, scoring, mode,
                               runtime)[0] for codes in codes_list])
    track_end = mode != "none"
    matrix = np.asarray(scoring.matrix)
    capability = runtime.compute_capability
    choices = _kernels.end_to_end_rows(capability)
    query_lanes = query_lanes_for(runtime, count)
    rows = (max(choices) if count > 1 else
            rows_for(int(codes_list[0].shape[0]), 4, capability, choices))
    joined, hold, forward = [], [], None
    if layout.num_pairs:
        stack = _Stack(runtime, matrix, codes_list, scoring.gap_open, 2, rows,
                       query_lanes=query_lanes, mode=_kernels.MODE_CODES[scoring.alignment_mode])
        plan = forward_plan(layout, stack.profile_rows, capability, rows=rows,
                            query_lanes=query_lanes)
        forward = _run_forward(runtime, layout, stack, matrix.shape[0] + 1, scoring, plan,
                               joined=joined, hold=hold, top=top, bias=bias)

    def finish(checks):
        names = ("score",) + (("query_end", "target_end") if track_end else ())
        if forward is None:  # no row to align
            return [{name: runtime.full(n, 0 if name == "score" else -1, runtime.xp.int32)
                     for name in names} for _ in codes_list]
        columns, checked = _finish_stack(runtime, n, layout.slot_rows, forward,
                                         [int(codes.shape[0]) for codes in codes_list],
                                         END_TO_END_LIMIT, track_end)
        flags = [(checked, k) for k in range(count)]
        if checks is not None:  # (never saturated: only the end cells' check is left)
            checks.extend(flags)
        else:
            _read_checks(flags)
        return [{name: columns[name][k] for name in names} for k in range(count)]

    return PendingStack(finish, runtime, joined, hold)


def _align_wide(targets: DeviceTargets, codes, scoring, rows, track_end: bool, result,
                matrix):
    """Rows ``rows`` of the targets against one query on the 32-bit forward kernels, written
    into ``result`` by row (16-bit lanes that saturated, scorings beyond 16 bits);
    ``matrix`` as :func:`start_stack` reads it."""
    runtime = targets.runtime
    m = int(codes.shape[0])
    _check_lanes32(scoring, m)
    layout = _pair_layout(runtime, targets.residues, targets.offsets, targets.lengths_host,
                          np.asarray(runtime.to_host(rows), dtype=np.int64), 1,
                          targets.pad_code)
    stack = _Stack(runtime, matrix, [codes], scoring.gap_open, 1, None)
    group, per_thread = choose_shape(m, 1)
    scores, ends_i, ends_j = _run_forward(runtime, layout, stack, matrix.shape[0] + 1, scoring,
                                          [(0, layout.num_pairs, group, per_thread)])
    result["score"][rows] = scores[0]
    if track_end:
        result["query_end"][rows] = ends_i[0]
        result["target_end"][rows] = ends_j[0]


def _long_rows_fit(scoring, m: int, longest: int) -> bool:
    """Whether the intra-task kernel's int32 range holds every score of rows up to
    ``longest`` letters."""
    from . import _pairs

    return scoring.score_bound(m, longest) < _pairs.SCORE_LIMIT


def _align_long(targets: DeviceTargets, codes, scoring, mode: str, result) -> None:
    """Rows ``targets.long_rows`` on the intra-task kernel, written into ``result`` by row.

    ``_pairs.align_long_rows`` keeps the conventions of :mod:`swdask._cpu` (same tie rules,
    inclusive cells, -1 where the score is 0), so its results merge as they are.
    """
    from . import _pairs

    rows = targets.long_rows
    found = _pairs.align_long_rows(codes, targets.residues, targets.offsets, rows, scoring,
                                   mode, lengths=targets.long_row_lengths)
    result["score"][rows] = found["score"]
    if mode != "none":
        for key in ("query_end", "target_end"):
            result[key][rows] = found[key]
    if mode == "full":
        for key in ("query_start", "target_start"):
            result[key][rows] = found[key]


class _ReverseInputs:
    """The reverse kernel's inputs for the start cells of the rows of ``inter_rows`` that
    score above 0 (``result`` holds their scores and end cells), queued on the device
    without waiting for it; :meth:`launch` then runs the kernel in one launch, one row per
    group of :data:`~swdask.gpu._kernels.REVERSE_SHAPE` threads. The kernel reads the scores
    and end cells from ``result`` by row and writes the start cells into it (-1 where the
    score is 0): no rows are gathered or compacted first.

    Where the query takes more than one pass, each row has its boundary columns (its end
    column + 1) from an exclusive sum; ``boundary_columns`` (a device array of one element)
    is their total, which the caller reads back with its checks into ``boundary_count``
    (else :meth:`launch` reads it). ``search`` queues these before it reads the forward
    kernels' checks, so the host's part overlaps the forward kernels and one read serves
    both.

    Tried and not kept: the items of long alignments (scoring 64 or more, their end past the
    first pass) in a launch of their own beside the others, in passes twice as long. With
    passes of 128 rows it gained (W1 with start cells); with passes of 256 rows it lost a
    little. The items ordered by score (longest alignments first), and blocks of 64 or 128
    threads: no gain either (docs/notes/gpu-inter-task.md, start cells)."""

    def __init__(self, targets: DeviceTargets, inter_rows, codes, matrix, scoring, result):
        runtime = targets.runtime
        xp = runtime.xp
        self.targets, self.codes, self.scoring = targets, codes, scoring
        self.inter_rows = inter_rows
        self.shape = _kernels.REVERSE_SHAPE
        group, rows_per_thread = self.shape
        self.boundary_count = None
        if len(codes) > group * rows_per_thread:  # later passes: each row's boundary columns
            widths = xp.maximum(result["target_end"][inter_rows].astype(xp.int64) + 1, 0)
            ends = xp.cumsum(widths)
            self.item_boundary = ends - widths
            self.boundary_columns = ends[-1:] if ends.shape[0] else xp.zeros(1, xp.int64)
        else:
            self.item_boundary = xp.zeros(1, dtype=xp.int64)
            self.boundary_columns = xp.zeros(1, dtype=xp.int64)
            self.boundary_count = 0
        self.item_row = inter_rows.astype(xp.int32, copy=False)
        self.alpha1 = matrix.shape[0] + 1
        subst = substitution_table(matrix, (self.alpha1, self.alpha1),
                                   pad=scoring.gap_open + _LANE32_PAD, offset=scoring.gap_open,
                                   dtype=np.int32)
        self.subst = xp.asarray(subst.reshape(-1))
        self.query = xp.asarray(codes)

    def launch(self, result) -> None:
        targets = self.targets
        runtime = targets.runtime
        xp = runtime.xp
        num_items = int(self.inter_rows.shape[0])
        if num_items == 0:
            return
        if self.boundary_count is None:
            self.boundary_count = int(self.boundary_columns[0])
        boundary = xp.empty(2 * max(self.boundary_count, 1), dtype=xp.uint32)
        group, rows_per_thread = self.shape
        function = runtime.function("reverse.cu", _kernels.reverse_name(group, rows_per_thread))
        block = runtime.block_threads
        grid = (num_items + block // group - 1) // (block // group)
        runtime.launch(function, grid, block,
                       [self.subst, np.int32(self.alpha1), self.query, np.int32(len(self.codes)),
                        targets.residues, targets.offsets, self.item_row, np.int32(num_items),
                        result["score"], result["query_end"], result["target_end"],
                        self.item_boundary, boundary, np.int32(self.scoring.gap_open),
                        np.int32(self.scoring.gap_extend), result["query_start"],
                        result["target_start"]])
