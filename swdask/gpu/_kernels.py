"""The CUDA sources of swdask and the kernel variants they are instantiated as.

Sources are the ``.cu`` files beside this module. ``#include "x.cuh"`` lines naming a file of
this folder are inlined here (not left to the compiler), so that the text handed to NVRTC is
self-contained and CuPy's compile cache, keyed by that text, sees every header change.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
#: The options every kernel is compiled with, by NVRTC at run time and by nvcc ahead of time
#: (ci/build_kernels.py); the compiler adds the GPU's architecture.
COMPILE_OPTIONS = ("-std=c++17",)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)

#: Rows per thread (R) of the 16-bit forward kernels; multiples of 4 (vector loads).
ROWS_PER_THREAD = (8, 12, 16, 20, 24, 28, 32)
#: Rows per thread of a 16-bit forward launch of one query that fits one pass of G x 36
#: rows, and only there (sm_90; those kernels read and write no row above a pass:
#: inter_task.cu, ONE_PASS_ROWS): a query of up to 144 letters then runs in one pass of 4
#: threads, without padding. Where a pass reads the row above it, W1's queries of more than
#: one pass ran far slower than at their usual shapes (in NVRTC 13.5's SASS at 36 rows, that
#: load is copied to another register 38 instructions after it is issued, 203 at 32 rows, so
#: each step waits for it). The 144-letter query runs faster in one pass of 4 x 36 than in
#: two of 4 x 20 (docs/notes/gpu-inter-task.md, one pass of 36 rows).
ONE_PASS_ROWS = 36
#: Without DPX (before sm_90) the 16-bit operations take several instructions and more
#: registers: above this many rows per thread those kernels spill.
ROWS_PER_THREAD_NO_DPX = 16
#: Threads per pair (G) of the 16-bit forward kernels, one per length bucket (the setting
#: ``swdask.gpu.buckets``). G = 1 and 2 for short targets lost their measurement on W1
#: (docs/notes/gpu-inter-task.md, length buckets) and were removed. G = 16 and 32 shorten the
#: longest targets' passes, which set a small partition's duration (issue 13).
GROUP_SIZES = (4, 8, 16, 32)
#: Shapes (G, R) of the 32-bit forward kernels (16-bit overflow, wide scoring schemes).
WIDE_SHAPES = ((4, 8), (4, 16), (8, 16))
#: The reverse (start cell) kernel's shape: 32 threads x 8 rows (passes of 256 query rows).
#: Of the shapes measured for the W1 kernel with start cells (the same starts on every row),
#: (32, 8) was the fastest or level with the fastest, both before and after the passes that
#: end once every thread is settled (reverse.cu); fewer threads per pair were slower, more
#: rows per thread no faster, and fewer registers (``__launch_bounds__`` with 3 to 6 blocks)
#: gained nothing either (docs/notes/gpu-inter-task.md, start cells).
REVERSE_SHAPE = (32, 8)


def rows_per_thread(compute_capability: int, rows: int | None = None,
                    group: int | None = None) -> tuple[int, ...]:
    """The rows-per-thread values the engine uses on a GPU of this compute capability; with
    the query's (or stack's) ``rows`` and the launch's ``group`` (G), also
    :data:`ONE_PASS_ROWS` where those rows fit one pass of it."""
    if compute_capability < 90:
        return tuple(r for r in ROWS_PER_THREAD if r <= ROWS_PER_THREAD_NO_DPX)
    if rows is not None and group is not None and rows <= group * ONE_PASS_ROWS:
        return ROWS_PER_THREAD + (ONE_PASS_ROWS,)
    return ROWS_PER_THREAD


@lru_cache(maxsize=None)
def source(name: str) -> str:
    """The text of ``name`` (e.g. ``"inter_task.cu"``) with local includes inlined once."""
    seen: set[str] = set()

    def expand(file_name: str) -> str:
        if file_name in seen:
            return ""
        seen.add(file_name)
        text = (SOURCE_DIR / file_name).read_text()

        def replace(match):
            included = match.group(1)
            if (SOURCE_DIR / included).exists():
                return expand(included)
            return match.group(0)

        return _INCLUDE.sub(replace, text)

    return expand(name)


def forward_name(lanes: int, group: int, rows: int, query_lanes: bool = False,
                 mode: int = 0) -> str:
    """Name expression of one forward kernel variant: 16-bit lanes (``lanes`` 2) holding two
    targets, or two queries (``query_lanes``: a stack's two query streams, inter_task.cu,
    "Query lanes"), or one 32-bit lane; ``mode`` a value of :data:`MODE_CODES` (16-bit
    lanes, R in :data:`END_TO_END_ROWS`). It always tracks the end cell (the scores-only
    variant lost its measurement, docs/notes/gpu-inter-task.md)."""
    lane_type = ("swdask::Lanes32" if lanes != 2 else
                 "swdask::Queries16" if query_lanes else "swdask::Lanes16")
    name = f"swdask::sw_inter_forward<{lane_type}, {group}, {rows}"
    return f"{name}, {mode}>" if mode else name + ">"


#: Rows per thread of the end-to-end modes' forward kernels (inter_task.cu, "End-to-end
#: modes"): a stack of queries takes the largest, one query the one that pads it least
#: (swdask.gpu.inter_task.end_to_end_rows); fewer shapes than the local mode's, since each
#: mode is a kernel of its own.
END_TO_END_ROWS = (16, 32)


def end_to_end_rows(compute_capability: int) -> tuple[int, ...]:
    """:data:`END_TO_END_ROWS` that such a GPU runs (:func:`rows_per_thread`)."""
    return tuple(r for r in END_TO_END_ROWS if r in rows_per_thread(compute_capability))


def reverse_name(group: int = REVERSE_SHAPE[0], rows: int = REVERSE_SHAPE[1]) -> str:
    return f"swdask::sw_reverse<{group}, {rows}>"


PAIR_CODES_NAME = "swdask::sw_pair_codes"
#: A stack's results to row order, with its checks (swdask.gpu.inter_task, start_stack).
STACK_FINISH_NAME = "swdask::sw_stack_finish"
#: The array work around the search, in kernels shipped compiled (swdask.gpu.inter_task):
#: the scout's floors, the queries' top rows (keys, then rows from the sorted keys), and the
#: cells as result columns.
FLOORS_NAME = "swdask::sw_floors"
TOP_KEYS_NAME = "swdask::sw_top_keys"
TOP_ROWS_NAME = "swdask::sw_top_rows"
FINISH_COLUMN_NAME = "swdask::sw_finish_column"
SEARCH_ARRAY_NAMES = (FLOORS_NAME, TOP_KEYS_NAME, TOP_ROWS_NAME, FINISH_COLUMN_NAME)
#: The traceback kernel and the kernel that packs its CIGAR texts (swdask.gpu._traceback).
TRACEBACK_NAMES = ("swdask::sw_traceback", "swdask::sw_traceback_gather")
#: The FASTA parse of the one-GPU job, the residue lookup of a column and the rows taken from
#: one (swdask.gpu._encode).
FASTA_NAMES = ("swdask::fasta_chunks", "swdask::fasta_records", "swdask::lookup_codes",
               "swdask::null_bytes", "swdask::gather_spans")

#: The row-wise pairs kernels (swdask.gpu._pairs), by family: (source, kernel template). Each
#: is instantiated as ``<a, R, KIND, REV>``: ``a`` lanes per pair (inter) or warps per block
#: (intra, long), R rows per thread, KIND 0 (match/mismatch) or 1 (table), REV the reverse
#: (start cell) pass.
PAIRS_KERNELS = {"inter": ("pairs_inter.cu", "pairs_inter"),
                 "intra": ("intra_task.cu", "pairs_intra"),
                 "long": ("long_pair.cu", "long_pair"),
                 "long_rows": ("long_pair.cu", "long_rows"),
                 "long_sections": ("long_pair.cu", "long_sections")}
#: Families with a forward pass only.
FORWARD_ONLY = frozenset({"long_sections"})
#: Inter-task pairs shapes (lanes per pair, rows per lane) the router picks
#: (swdask.gpu._pairs.inter_shape_for: 4 x 8 up to 32 query letters, then 8 lanes and the
#: fewest rows that hold the query, 8 x 32 in strips beyond 256 letters) ...
PAIRS_ROUTED_INTER_SHAPES = ((4, 8), (8, 8), (8, 12), (8, 16), (8, 20), (8, 24), (8, 32))
#: ... and those tests force besides (tests/test_gpu_pairs.py checks both lists).
PAIRS_FORCED_INTER_SHAPES = ((4, 4), (8, 4), (16, 8), (32, 4), (32, 16), (32, 32))
#: Intra-task and whole-GPU pairs shapes (warps per block, rows per thread): those the
#: router picks from (swdask.gpu._pairs.chain_shape, long_shape).
CHAIN_SHAPES = tuple((w, r) for w in (1, 2, 4, 8) for r in (4, 8, 16))
#: The global alignment's last row over the whole GPU (long_rows: the linear-memory
#: traceback's halves), in the shapes swdask.gpu._pairs.long_shape picks.
LONG_ROWS_SHAPES = ((1, 4), (2, 8), (4, 8), (4, 16), (8, 16))
#: align_long's passes of top > 1 (long_sections): long_shape's, and one warp of 16 rows per
#: thread for the narrow ones (swdask.gpu._pairs.LongPasses).
NARROW_SHAPE = (1, 16)
LONG_SECTIONS_SHAPES = LONG_ROWS_SHAPES + (NARROW_SHAPE,)


#: The end-to-end modes' codes (pairs_inter.cu's MODE, the bits SWP_MODE_* of pairs_core.cuh:
#: 1 end to end, 2 query ends free, 4 target ends free), by swdask.Scoring.alignment_mode:
#: the inter-task pairs kernel (every score) and, for a search's hits (scores above 0), the
#: forward kernels (inter_task.cu, "End-to-end modes").
MODE_CODES = {"local": 0, "global": 1, "target-global": 3, "query-global": 5, "overlap": 7}
#: The bit of :data:`MODE_CODES` that frees the target's ends (SWP_MODE_FREE_TARGET).
MODE_FREE_TARGET = 4


def pairs_name(family: str, shape: tuple[int, int], kind: int, reverse: bool,
               mode: int = 0) -> str:
    """Name expression of one row-wise pairs kernel variant (``family``: a key of
    :data:`PAIRS_KERNELS`; ``shape``: (lanes or warps, rows per thread); ``mode``: a value
    of :data:`MODE_CODES`, inter-task only)."""
    a, rows = shape
    name = f"{PAIRS_KERNELS[family][1]}<{a}, {rows}, {kind}, {'true' if reverse else 'false'}"
    return f"{name}, {mode}>" if mode else name + ">"


def all_variants(compute_capability: int = 90) -> dict[str, list[str]]:
    """Every kernel swdask can launch on such a GPU, by source file, every family (the
    compile test's list): the one-against-many forward and reverse kernels, and the row-wise
    pairs kernels in every shape the router can pick (plus the inter-task shapes tests force),
    both scorings, both passes."""
    rows = rows_per_thread(compute_capability)
    rows += (ONE_PASS_ROWS,) if compute_capability >= 90 else ()
    forward = [forward_name(2, group, r) for group in GROUP_SIZES for r in rows]
    if compute_capability >= 90:  # query lanes (stacks: R up to 32)
        forward += [forward_name(2, group, r, True) for group in GROUP_SIZES
                    for r in ROWS_PER_THREAD]
    forward += [forward_name(1, group, r) for group, r in WIDE_SHAPES]
    # the end-to-end modes: one query (target lanes) in every such R, stacks (query lanes)
    # in the largest
    e2e_rows = end_to_end_rows(compute_capability)
    for code in (c for c in MODE_CODES.values() if c):
        forward += [forward_name(2, group, r, False, code) for group in GROUP_SIZES
                    for r in e2e_rows]
        if compute_capability >= 90:
            forward += [forward_name(2, group, max(e2e_rows), True, code)
                        for group in GROUP_SIZES]
    variants = {"inter_task.cu": [PAIR_CODES_NAME, STACK_FINISH_NAME, *SEARCH_ARRAY_NAMES]
                + forward,
                "reverse.cu": [reverse_name()],
                "traceback.cu": list(TRACEBACK_NAMES), "fasta.cu": list(FASTA_NAMES)}
    shapes = {"inter": sorted(set(PAIRS_ROUTED_INTER_SHAPES) | set(PAIRS_FORCED_INTER_SHAPES)),
              "intra": CHAIN_SHAPES, "long": CHAIN_SHAPES, "long_rows": LONG_ROWS_SHAPES,
              "long_sections": LONG_SECTIONS_SHAPES}
    for family, (source_name, _) in PAIRS_KERNELS.items():
        variants.setdefault(source_name, []).extend(
            pairs_name(family, shape, kind, reverse) for shape in shapes[family]
            for kind in (0, 1)
            for reverse in ((False,) if family in FORWARD_ONLY else (False, True)))
    # the end-to-end modes in the shapes the router picks (a global alignment starts at
    # (0, 0): no reverse pass)
    variants["pairs_inter.cu"].extend(
        pairs_name("inter", shape, kind, reverse, code) for shape in PAIRS_ROUTED_INTER_SHAPES
        for kind in (0, 1) for code in MODE_CODES.values() if code
        for reverse in ((False,) if code == MODE_CODES["global"] else (False, True)))
    return variants
