"""The best ``top`` alignments of one long pair, disjoint in the target: :func:`best_alignments`.

The rule (the GPU Gems chapter's "best 200 end points", made exact): rank 1 is
:func:`swdask.align_long`'s best alignment; rank k is the best local alignment, by the tie
rule (highest score, then smallest target end, then query end), whose target interval
``[target_start, target_end)`` shares no column with those of ranks 1 to k - 1. No target
letter is in two alignments, so no two share a cell; a query letter may be (the query's
best places in a long target, as a database search reports one hit per region). Ties
between equal alignments go by the tie rule; the start is the one nearest the end, as in
``align``.

So rank k is the best alignment of the query against one of the target's pieces between
the earlier ranks, and the pieces are kept in a heap by their best. A piece ``[a, b)`` is
the matrix ``query x target[a:b]``: the whole matrix's values from column ``a`` on, less
the paths that start before ``a``. Computing each piece anew would cost the whole matrix
per alignment; instead:

* The first pass over the whole matrix keeps, on a grid of sections of
  ``swdask.long.top-section-columns`` columns (``swdask.gpu.long-top-section-columns`` on
  the GPU), each section's best cell and the column before each cut (``H`` and ``E`` of
  every query row).
* The matrix from column ``a`` on (a *frame*), ``a`` just past an alignment, is computed
  section by section from a column of zeros at ``a`` until its column at a cut equals that
  of the matrix of the piece it was cut from (the whole matrix, or that piece's frame):
  from that cut on the two are the same matrix (a column holds all a later column depends
  on), so its sections' bests are that matrix's. Past a long alignment's end that takes
  about its score over the gap extension in columns (once: a later alignment in its wake
  meets the wake's frame); after a short alignment one or two sections.
* A piece's best is then the best of its frame's sections inside it; the part of the last
  section before ``b`` is computed again from the column kept at its left cut.
* A piece's start comes from the start pass over the reversed prefixes that begin at ``a``.

Every value is the exact matrix's; nothing is bounded or guessed. The passes are the
backend's: :class:`swdask._long_tiles.TilePasses` (tiles on the cores or on Dask workers) or
:class:`swdask.gpu._pairs.LongPasses` (the whole GPU, the columns kept in its memory).

Floors: below :mod:`swdask._long` (the call), above the passes.
"""
from __future__ import annotations

import heapq
import threading
import time
from concurrent import futures

import numpy as np

from ._results import best_of_cells, shifted_cell
from ._timing import Phases


def _section_columns(passes) -> int:
    value = passes.section_columns
    if value is None or value < 1:
        raise ValueError("settings swdask.long.top-section-columns (CPU) and "
                         "swdask.gpu.long-top-section-columns must be whole numbers of at "
                         f"least 1, got {value!r}")
    return value


class _Whole:
    """The first pass's grid: ``cuts`` (0 and the target's length included), each section's
    best (absolute columns) and the column before every inner cut."""

    def __init__(self, passes, progress):
        n = passes.target.size
        width = _section_columns(passes)
        self.cuts = np.unique(np.append(np.arange(0, n, width, dtype=np.int64), n))
        record = passes.forward(0, n, cuts=self.cuts, keep_columns=True, progress=progress)
        self.best = shifted_cell(record.best, 0)
        self.bests = [shifted_cell(cell, 0) for cell in record.sections]
        self.scores = np.array([cell[0] for cell in self.bests], dtype=np.int64)
        # the column before cut k (k >= 1) is section k - 1's right edge
        self.columns = {int(cut): column for cut, column in zip(self.cuts[1:], record.columns)}
        #: the best of columns [lo, b) (a section's part) by (the matrix whose column at lo
        #: it starts from, lo, b): frames that joined that matrix before lo share it
        self.parts: dict = {}

    def section_of(self, column: int) -> int:
        """The section holding ``column``."""
        return int(np.searchsorted(self.cuts, column, side="right")) - 1

    def best_of_sections(self, first: int, last: int):
        """The best cell of sections ``[first, last)`` (the first of the highest: the
        sections go left to right and each holds its own best by the rule)."""
        if last <= first:
            return 0, -1, -1
        k = first + int(np.argmax(self.scores[first:last]))
        return self.bests[k]


class _Frame:
    """The matrix ``query x target[a:]`` of a piece right of an alignment: its sections
    (``bounds``: ``a`` then the grid's cuts after it), swept from zeros at ``a`` until its
    column at a cut equals that of the matrix it lies in (``within``: the frame of the piece
    it was cut from, None for the whole matrix): from that cut (``joined``) on the two are
    the same matrix. Each swept section's best, and the column before each swept cut."""

    def __init__(self, passes, whole: _Whole, a: int, until: int, within):
        self.a, self.within = a, within
        self.bounds = [a]
        self.bests: list = []
        self.columns: dict = {}
        self.joined = None
        n = passes.target.size
        cuts = whole.cuts[np.searchsorted(whole.cuts, a, side="right"):].tolist()
        # after most alignments the frame meets its piece's matrix at the next cut or the
        # one after (in a long alignment's wake, the wake's frame: that of the piece); one
        # section first, then twice as many each time
        chunk, left, k = 1, None, 0
        enough = int(np.searchsorted(cuts, until, side="left")) + 1  # through the cut >= until
        while self.bounds[-1] < until and self.joined is None:
            first = self.bounds[-1]
            ends = cuts[k:min(k + chunk, enough)]
            k += len(ends)
            record = passes.forward(first, ends[-1], cuts=[0] + [end - first for end in ends],
                                    left=left, keep_columns=True, name="next")
            for end, cell, column in zip(ends, record.sections, record.columns):
                self.bests.append(shifted_cell(cell, first))
                self.bounds.append(end)
                if end < n and _same_state(column, _state_at(within, whole, end)[1]):
                    self.joined = end
                    break
                self.columns[end] = column
                left = column
            chunk *= 2  # a long alignment's wake takes many sections: fewer, larger passes
        self.index = {bound: k for k, bound in enumerate(self.bounds)}


def _state_at(frame, whole: _Whole, cut: int):
    """The column before ``cut`` of ``frame``'s matrix (None: the whole matrix's) and the
    matrix whose record holds it, its key for the pieces' cache: ``(key, column)``, the
    column None at a frame's own ``a`` (zeros)."""
    while frame is not None:
        if cut == frame.a:
            return id(frame), None
        if cut in frame.columns:
            return id(frame), frame.columns[cut]
        frame = frame.within  # at or past where it joined that matrix
    return None, whole.columns.get(cut)  # (none before column 0: zeros)


def _same_state(mine, theirs) -> bool:
    """Whether two columns give the same matrix after them: the same ``H``, and the same
    ``E`` where it is above 0 (an ``E`` of 0 or less, and every gap extended from it, is
    never above the zero floor, so its value cannot matter; the passes may keep it in
    different forms)."""
    # (NumPy or CuPy arrays alike)
    same_gaps = (mine[1] == theirs[1]) | ((mine[1] <= 0) & (theirs[1] <= 0))
    return bool((mine[0] == theirs[0]).all()) and bool(same_gaps.all())


def _piece_best(passes, whole: _Whole, frame, a: int, b: int):
    """The best cell of ``query x target[a:b]`` by the tie rule (``frame``: the piece's
    matrix, ``frames[a]``; None for the whole matrix's, a = 0)."""
    found, lo, matrix = [], a, frame
    around = (0, -1, -1)  # the best of the section holding b, where it reaches past b
    while lo < b:
        while matrix is not None and matrix.joined is not None and lo >= matrix.joined:
            matrix = matrix.within  # the matrix it joined, from its cut on
        if matrix is None:  # the whole matrix's sections, from the first pass
            first, last = whole.section_of(lo), whole.section_of(b)
            found.append(whole.best_of_sections(first, last))
            lo = max(lo, int(whole.cuts[last]))
            if lo < b:
                around = whole.bests[last]
            break
        k = matrix.index[lo]
        if matrix.bounds[k + 1] > b:
            around = matrix.bests[k]
            break
        found.append(matrix.bests[k])
        lo = matrix.bounds[k + 1]
    if lo < b and 0 < around[0] and around[2] < b:
        found.append(around)  # that section's best lies before b: the part's best too
    elif lo < b:  # the part of a section before b, again from the column at its left
        key, column = _state_at(frame, whole, lo)
        part = whole.parts.get((key, lo, b))
        if part is None:
            record = passes.forward(lo, b, left=column, name="next")
            part = whole.parts[(key, lo, b)] = shifted_cell(record.best, lo)
        found.append(part)
    return best_of_cells(found)


def best_alignments(passes, top: int, *, progress=None,
                    phases=None) -> list[tuple[int, int, int, int, int]]:
    """The best ``top`` alignments by the module's rule, best first: ``(score, start_i,
    start_j, end_i, end_j)``, inclusive cells; fewer where the target runs out of pieces
    holding a positive score. ``passes``: the pair's score passes
    (:class:`swdask._long_tiles.TilePasses`); ``progress(cells)`` as the first pass goes;
    ``phases`` (a :class:`swdask._timing.Phases`) times "score pass" (the first pass) and
    "next alignments" (the rest: the alignments' start passes, the matrices after each
    alignment until they meet that of the piece they were cut from, the pieces' last
    partial sections), and adds the thread-seconds of those three to its ``in_tasks`` as
    "starts", "frames" and "pieces" (several alignments are worked on side by side)."""
    n = passes.target.size
    if passes.query.size == 0 or n == 0:
        return []
    phases = phases if phases is not None else Phases()
    with phases("score pass"):
        whole = _Whole(passes, progress)
    with phases("next alignments"):
        return _next_alignments(passes, whole, top, phases)


class _Pieces:
    """The pieces of the target between the alignments found so far, by their best: the
    work of one alignment (its start, then the bests of the pieces left and right of it)
    given the piece it is the best of."""

    def __init__(self, passes, whole: _Whole, phases):
        self.passes, self.whole, self.phases = passes, whole, phases
        self.frames = {0: None}  # a piece's first column -> its matrix (None: the whole's)
        self.lock = threading.Lock()  # the thread-seconds

    def _timed(self, name: str, work):
        began = time.perf_counter()
        try:
            return work()
        finally:
            with self.lock:
                self.phases.add_in_tasks({name: time.perf_counter() - began})

    def expand(self, node, split: bool):
        """The alignment of ``node`` (a heap entry ``(-score, end_j, end_i, a, b)``) and,
        where ``split``, the pieces it leaves: ``(alignment, [(a, b, best cell), ...])``."""
        passes, whole = self.passes, self.whole
        negative, end_j, end_i, a, b = node
        score = -negative
        start_i, start_j = self._timed(
            "starts", lambda: passes.start(score, end_i, end_j, first=a))
        pieces = []
        if split and start_j > a:  # the piece left of it: the same matrix, up to its start
            pieces.append((a, start_j, self._timed(
                "pieces", lambda: _piece_best(passes, whole, self.frames[a], a, start_j))))
        if split and end_j + 1 < b:  # the piece right of it: a matrix of its own
            frame = self._timed(
                "frames", lambda: _Frame(passes, whole, end_j + 1, b, self.frames[a]))
            self.frames[end_j + 1] = frame
            pieces.append((end_j + 1, b, self._timed(
                "pieces", lambda: _piece_best(passes, whole, frame, end_j + 1, b))))
        return (score, start_i, start_j, end_i, end_j), pieces


def _next_alignments(passes, whole: _Whole, top: int, phases) -> list:
    """Every alignment after the first pass, best first.

    The pieces form a tree (an alignment's pieces are parts of the piece it came from, so
    their bests rank after it, by the tie rule too), and the answer is that tree's best
    ``top`` nodes: a piece's work needs nothing from any other piece's, so up to
    ``passes.side_by_side`` pieces are worked on at once (the GPU's narrow passes each
    leave most of it idle; on the CPU one at a time, each pass filling the cores). Every
    piece not yet worked on is in the heap or a descendant of one there, so it ranks after
    the heap's best: the alignments found that rank ahead of the heap's best are final, and
    the heap's best is taken while fewer than ``top`` alignments found or under way rank
    ahead of it (an alignment under way may rank after it: a piece pushed since it was
    taken can hold a better one). Some pieces may be worked on that the answer does not
    need (at most one per worker at a time); the answer is the same as taking the pieces one
    by one."""
    n = passes.target.size
    pieces = _Pieces(passes, whole, phases)
    heap: list = []  # (-score, end_j, end_i, a, b): the tie rule's order, then the piece

    def push(a, b, cell):
        score, row, column = cell
        if score > 0:
            heapq.heappush(heap, (-score, column, row, a, b))

    push(0, n, whole.best)
    found: list = []  # (order key, alignment)
    working: dict = {}  # future -> node
    with passes.side_by_side() as workers:
        while True:
            while heap and len(working) < workers.count:
                # the alignments found or under way that rank ahead of the heap's best
                ahead = sum(1 for key, _ in found if key < heap[0][:3]) + sum(
                    1 for node in working.values() if node[:3] < heap[0][:3])
                if ahead >= top:
                    break
                node = heapq.heappop(heap)
                # as the top-th (or later) it needs no pieces after it
                working[workers.submit(pieces.expand, node, ahead + 1 < top)] = node
            if not working:
                break
            done, _ = futures.wait(working, return_when=futures.FIRST_COMPLETED)
            for future in done:
                node = working.pop(future)
                alignment, parts = future.result()
                found.append((node[:3], alignment))
                for a, b, cell in parts:
                    push(a, b, cell)
    found.sort(key=lambda item: item[0])
    return [alignment for _, alignment in found[:top]]
