"""One long pair's score passes in tiles, on this machine's cores or a Dask cluster.

The matrix is cut into tiles, a block of query rows against a section of target columns
(:class:`Grid`). A tile is computed from its edges alone (:func:`swdask._cpu.long_tile`):
the column before it and the corner cell, from the tile to its left, and the row above it,
from the tile above; it gives the same two edges to the tiles right of it and below it, and
its best cell. So every cell equals the uncut matrix's (nothing is cut off, nothing is
recomputed, unlike the overlapping sections of the GPU Gems chapter) and the tiles of one
anti-diagonal of the grid run at the same time: P workers keep busy once the wavefront is P
tiles wide, which takes P - 1 tiles of the first block row. A section's tiles run one below
the other, so its bottom row (the largest edge) stays with the worker that made it; only
the columns (a block's height) move between workers.

The best cell is the tiles' best by the tie rule (the highest score, then the smallest
target column, then query row, as in :func:`swdask.align`). The start pass is the same
pass over the reversed prefixes that end at the end cell (its target sections start narrow
and double, and it stops once the first sections hold the score), whose first cell holding
the score is the start (:func:`swdask._cpu.long_tile` keeps the rule inside each tile).

Two runners take the same tiles: threads of this process (the kernels release the GIL) and
a Dask client, one task per tile, named ``swdask-long-forward`` and ``swdask-long-start`` on
the dashboard. Tasks are pure functions of their edges and letters, so Dask recomputes what a
lost worker held: a lost worker costs the tiles of its sections, not the run.

Floors: below :mod:`swdask._long` (the call), above the kernels (:mod:`swdask._cpu`).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import operator
from typing import NamedTuple

import numpy as np

from . import _cpu, _settings
from ._results import IN_ORDER, SectionsPass, best_of_cells

#: Reversed columns in the start pass's first section at most (each next one twice as wide).
START_FIRST_COLUMNS = 4096
#: The narrowest window of reversed target letters a start pass tries first (a short
#: alignment's: its tiles' calls, not its cells, cost).
MIN_START_COLUMNS = 256
#: The narrowest section a pass cut for several workers is given.
MIN_SECTION_COLUMNS = 4096


class Grid(NamedTuple):
    """The tiles of an ``m`` x ``n`` matrix: query rows ``[rows[b], rows[b + 1])`` against
    target columns ``[columns[s], columns[s + 1])``."""

    rows: np.ndarray
    columns: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows) - 1, len(self.columns) - 1

    def cells(self, block: int, section: int) -> int:
        return int((self.rows[block + 1] - self.rows[block])
                   * (self.columns[section + 1] - self.columns[section]))


def _even_cuts(length: int, most: int) -> np.ndarray:
    """Cuts of ``[0, length)`` into the fewest near-equal parts of at most ``most``."""
    parts = max(1, -(-length // max(1, most)))
    return np.linspace(0, length, parts + 1).round().astype(np.int64)


def grid_for(m: int, n: int, workers: int, *, first_columns: int | None = None) -> Grid:
    """The tiles of an ``m`` x ``n`` pass for ``workers`` threads or Dask worker threads.

    Blocks of at most ``swdask.long.tile-rows`` query rows; sections of at most
    ``swdask.long.tile-columns`` target columns, and narrower where there are several blocks
    and workers, so that at least two sections per worker keep the wavefront full. With one
    block nothing runs side by side and the sections are only the steps of progress.
    ``first_columns``: sections from this width doubling up (the start pass)."""
    tile_rows, tile_columns = (_positive_setting(key) for key in ("long.tile-rows",
                                                                  "long.tile-columns"))
    rows = _even_cuts(m, tile_rows)
    if len(rows) > 2 and workers > 1:
        tile_columns = min(tile_columns, max(MIN_SECTION_COLUMNS, -(-n // (2 * workers))))
    if first_columns is None:
        return Grid(rows, _even_cuts(n, tile_columns))
    cuts, width = [0], min(first_columns, tile_columns)
    while cuts[-1] < n:
        cuts.append(min(n, cuts[-1] + width))
        width = min(2 * width, tile_columns)
    return Grid(rows, np.array(cuts, dtype=np.int64))


def _positive_setting(key: str) -> int:
    value = _settings.get_int(key)
    if value is None or value < 1:
        raise ValueError(f"setting swdask.{key} must be a whole number of at least 1, got "
                         f"{value!r}")
    return value


def score_tile(query_block, target_section, matrix, gap_open, gap_extend, left, top):
    """One tile (:func:`swdask._cpu.long_tile`): the task both runners run."""
    return _cpu.long_tile(query_block, target_section, matrix, gap_open, gap_extend, left, top)


class Given(NamedTuple):
    """A tile's left edge given by the pass's caller rather than made by a tile: ``(H, E,
    corner)`` as :attr:`swdask._cpu.Tile.right` holds it."""

    edge: tuple


class ThreadRunner:
    """Tiles on threads of this process (the kernels run without the GIL)."""

    def __init__(self, threads: int):
        self.workers = max(1, int(threads))
        self.pool = concurrent.futures.ThreadPoolExecutor(self.workers,
                                                          thread_name_prefix="swdask-long")
        self.pending: dict = {}  # future -> tile key

    def letters(self, codes, name):
        return codes

    def submit(self, name, key, query_block, target_section, scoring, left, top):
        # the edges come from finished tiles: reading them here does not wait
        future = self.pool.submit(score_tile, query_block, target_section, *scoring,
                                  _left_edge(left, lambda tile: tile.result().right),
                                  None if top is None else top.result().bottom)
        self.pending[future] = key
        return future

    def next_done(self):
        """A finished tile: ``(its key, its best)``; its error, if it failed."""
        done, _ = concurrent.futures.wait(self.pending,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        future = next(iter(done))
        return self.pending.pop(future), future.result().best

    def right_of(self, handle):
        """The right edge of a finished tile (what :meth:`gather` turns into arrays)."""
        return handle.result().right

    def gather(self, edges):
        return edges

    def close(self):
        for future in self.pending:
            future.cancel()
        self.pending.clear()
        self.pool.shutdown(wait=True)


class DaskRunner:
    """Tiles as tasks of a Dask client. A tile's edges and best are tasks of their own
    (``operator.getitem`` of the tile, run where it is), so a tile's dependants fetch only
    the edge they read, and this process only the best cells."""

    def __init__(self, client, token: str):
        from distributed import as_completed

        self.client = client
        self.token = token
        self.workers = max(1, sum(client.nthreads().values()))
        self.done = as_completed()
        self.pending: dict = {}  # the best's future key -> (tile key, its futures)

    def letters(self, codes, name):
        # a task whose spec holds the letters, which the scheduler keeps: a worker lost
        # with them gets them back by running it again (scattered data would be gone)
        return self.client.submit(np.asarray, codes, key=(f"swdask-long-{name}", self.token))

    def submit(self, name, key, query_block, target_section, scoring, left, top):
        client = self.client
        tile = client.submit(score_tile, query_block, target_section, *scoring,
                             _left_edge(left, lambda parts: parts[1]),
                             None if top is None else top[2],
                             key=(f"swdask-long-{name}", self.token, *key))
        parts = tuple(client.submit(operator.getitem, tile, index,
                                    key=(f"swdask-long-{name}-{field}", self.token, *key))
                      for index, field in enumerate(("best", "right", "bottom")))
        self.pending[parts[0].key] = (key, parts)
        self.done.add(parts[0])
        return parts

    def next_done(self):
        future = next(self.done)
        key, _ = self.pending.pop(future.key)
        return key, future.result()

    def right_of(self, handle):
        return handle[1]

    def gather(self, edges):
        return self.client.gather(edges)

    def close(self):
        futures = [part for _, parts in self.pending.values() for part in parts]
        self.pending.clear()
        self.done.clear()
        if futures:
            self.client.cancel(futures)


def _left_edge(left, made):
    """A tile's left edge for a runner: none (the matrix's left edge), the caller's
    (:class:`Given`), or the right edge of the tile before (``made(handle)``)."""
    if left is None:
        return None
    return left.edge if isinstance(left, Given) else made(left)


def _tie_key(score, column, row):
    """The tie rule as a sort key: the highest score, then the smallest column, then row."""
    return (-score, column, row)


def run_pass(query_codes: np.ndarray, target_codes: np.ndarray, scoring: tuple, grid: Grid,
             runner, *, name: str = "forward", progress=None, stop_at: int | None = None,
             left: tuple | None = None, keep_columns: bool = False) -> SectionsPass:
    """The matrix's tiles on ``runner``, which it closes: a
    :class:`~swdask._results.SectionsPass`.

    ``scoring``: ``(matrix, gap_open, gap_extend)``. ``progress(cells)`` after each tile,
    with the cells done so far. ``stop_at``: for the start pass, which knows the score: it
    stops once the tiles of the first sections are all done and hold a cell of that score
    (no later section can hold an earlier column), and cancels the rest. ``left``: the
    column before the first, ``(H, E)`` for every query row (None: zeros, the matrix's
    left edge); the top edge is always the matrix's (zeros)."""
    blocks, sections = grid.shape
    queries = [runner.letters(query_codes[grid.rows[b]:grid.rows[b + 1]], f"{name}-query-{b}")
               for b in range(blocks)]
    targets = [runner.letters(target_codes[grid.columns[s]:grid.columns[s + 1]],
                              f"{name}-target-{s}") for s in range(sections)]
    done = np.zeros((blocks, sections), dtype=bool)
    submitted = np.zeros((blocks, sections), dtype=bool)
    handles: dict = {}  # tiles whose edges a tile not yet submitted reads
    found, found_key = (0, -1, -1), None
    section_keys = [None] * sections
    rights: dict = {}  # (block, section) -> the tile's right edge, with keep_columns
    cells, running, through = 0, 0, -1  # every tile of sections <= through is done

    def left_of(block, section):
        if section > 0:
            return handles.get((block, section - 1))
        if left is None:
            return None
        r0, r1 = grid.rows[block], grid.rows[block + 1]
        return Given((left[0][r0:r1], left[1][r0:r1], int(left[0][r0 - 1]) if r0 else 0))

    def submit(block, section):
        nonlocal running
        handles[(block, section)] = runner.submit(
            name, (block, section), queries[block], targets[section], scoring,
            left_of(block, section), handles.get((block - 1, section)))
        submitted[block, section] = True
        running += 1
        # an edge both of whose readers are submitted is held by them alone (both are
        # submitted once it is done, after ``rights`` took its right edge)
        for b, s in ((block, section - 1), (block - 1, section)):
            if b >= 0 and s >= 0 and (s + 1 == sections or submitted[b, s + 1]) and \
                    (b + 1 == blocks or submitted[b + 1, s]):
                handles.pop((b, s), None)

    try:
        if blocks and sections:
            submit(0, 0)
        while running:
            (block, section), (score, row, column) = runner.next_done()
            running -= 1
            done[block, section] = True
            if keep_columns:
                rights[(block, section)] = runner.right_of(handles[(block, section)])
            if score > 0:
                key = _tie_key(score, int(grid.columns[section]) + column,
                               int(grid.rows[block]) + row)
                if found_key is None or key < found_key:
                    found_key, found = key, (score, key[2], key[1])
                if section_keys[section] is None or key < section_keys[section]:
                    section_keys[section] = key
            cells += grid.cells(block, section)
            if progress is not None:
                progress(cells)
            while through + 1 < sections and done[:, through + 1].all():
                through += 1
            if stop_at is not None and found[0] == stop_at and through >= 0 and \
                    found[2] < grid.columns[through + 1]:
                break
            # the tile right of this one once the tile above that is done; the tile below
            # once the tile left of that is done (each is submitted by the last of its two)
            if section + 1 < sections and (block == 0 or done[block - 1, section + 1]):
                submit(block, section + 1)
            if block + 1 < blocks and (section == 0 or done[block + 1, section - 1]):
                submit(block + 1, section)
        columns = None
        if keep_columns:
            edges = runner.gather([rights[(b, s)] for s in range(sections)
                                   for b in range(blocks)])
            columns = [tuple(np.concatenate([edges[s * blocks + b][part] for b in
                                             range(blocks)]).astype(np.int32)
                             for part in (0, 1)) for s in range(sections)]
    finally:
        runner.close()
    return SectionsPass(found, [(0, -1, -1) if key is None else (-key[0], key[2], key[1])
                        for key in section_keys], columns)


def runner_for(client, query_codes, target_codes, scoring: tuple, left=None):
    """A :class:`DaskRunner` on ``client``, else a :class:`ThreadRunner` on the threads
    numba's kernels use. (The Dask keys name the pass by its letters, scoring and left
    edge, so two passes over one slice from different edges never share a task.)"""
    if client is None:
        import numba

        return ThreadRunner(numba.get_num_threads())
    from dask.base import tokenize

    return DaskRunner(client, tokenize(query_codes, target_codes, *scoring, left))


def _tile_width(width: int, sections: int, workers: int, blocks: int) -> int:
    """The tiles' width in a section of ``width`` columns, one of ``sections`` of a pass of
    ``blocks`` blocks of rows: at most ``swdask.long.tile-columns``, and where the sections
    are fewer than two per worker (with several blocks to run side by side), cut so that
    they make that many, down to MIN_SECTION_COLUMNS."""
    most = _positive_setting("long.tile-columns")
    if blocks > 1 and workers > 1 and sections < 2 * workers:
        pieces = -(-2 * workers // sections)
        most = min(most, max(MIN_SECTION_COLUMNS, -(-width // pieces)))
    return max(1, min(width, most))


class TilePasses:
    """The score passes of one pair (``uint8`` codes) on the CPU's tiles, here or on
    ``client``'s workers: what :func:`long_pair` and :mod:`swdask._long_top` run."""

    def __init__(self, query_codes, target_codes, matrix, gap_open, gap_extend, *,
                 client=None):
        self.query = np.ascontiguousarray(query_codes, dtype=np.uint8)
        self.target = np.ascontiguousarray(target_codes, dtype=np.uint8)
        self.scoring = (np.ascontiguousarray(matrix, dtype=np.int64), int(gap_open),
                        int(gap_extend))
        self.client = client
        #: the sections of align_long's first pass for top > 1 (swdask._long_top)
        self.section_columns = _settings.get_int("long.top-section-columns")

    @contextlib.contextmanager
    def side_by_side(self):
        """Pieces one at a time (:data:`swdask._results.IN_ORDER`): each pass's tiles
        already fill the cores or the cluster."""
        yield IN_ORDER

    @property
    def workers(self) -> int:
        if self.client is None:
            import numba

            return numba.get_num_threads()
        return max(1, sum(self.client.nthreads().values()))

    def forward(self, first: int, last: int, *, cuts=None, left=None, keep_columns=False,
                name="forward", progress=None) -> SectionsPass:
        """The pass over every query row against target columns ``[first, last)``, from
        the column ``left`` (None: zeros), in sections cut at ``cuts`` (columns counted from
        ``first``, 0 and ``last - first`` included; None: the tile grid's). Sections too
        few to keep the workers busy are cut into narrower tiles (each section's best and
        last column are its tiles')."""
        target = self.target[first:last]
        m = self.query.size
        grid = grid_for(m, target.size, self.workers)
        parts = None  # the section each tile column belongs to
        if cuts is not None:
            cuts = np.asarray(cuts, dtype=np.int64)
            fine = [np.asarray([cuts[0]])]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                width = _tile_width(int(hi - lo), len(cuts) - 1, self.workers,
                                    len(grid.rows) - 1)
                fine.append(np.arange(lo + width, hi, width, dtype=np.int64))
                fine.append(np.asarray([hi]))
            columns = np.unique(np.concatenate(fine))
            parts = np.searchsorted(cuts, columns[1:], side="left") - 1
            grid = Grid(grid.rows, columns)
        runner = runner_for(self.client, self.query, target, self.scoring, left)
        record = run_pass(self.query, target, self.scoring, grid, runner, name=name,
                          progress=progress, left=left, keep_columns=keep_columns)
        if parts is None:
            return record
        sections, kept = [], []
        for k in range(len(cuts) - 1):
            tiles = np.flatnonzero(parts == k)
            found = [record.sections[t] for t in tiles]
            sections.append(best_of_cells(found))
            if keep_columns:
                kept.append(record.columns[tiles[-1]])
        return SectionsPass(record.best, sections, kept if keep_columns else None)

    def start(self, score: int, end_i: int, end_j: int, first: int = 0) -> tuple[int, int]:
        """``(start_i, start_j)`` of the alignment of ``score`` ending at ``(end_i,
        end_j)``, the first cell by the tie rule of the matrix from column ``first`` on,
        with no better cell there: the first cell (column, then row) of the reversed
        prefixes ``query[end_i::-1]`` x ``target[end_j:first - 1:-1]`` holding the score.
        No cell there scores above it, and every cell scoring it starts an alignment ending
        at the end cell (one ending anywhere else would have been the end by the tie rule),
        so the tiles' rule gives the start align's reverse pass gives.

        Window by window (:func:`swdask._scoring.start_windows`, from MIN_START_COLUMNS):
        a window holding the score holds the start."""
        from ._scoring import start_windows

        best_substitution = int(self.scoring[0].max())
        for rows, width in start_windows(score, end_i + 1, end_j + 1 - first,
                                         best_substitution, *self.scoring[1:],
                                         MIN_START_COLUMNS):
            found, row, column = self._start_window(score, end_i, end_j, rows, width)
            if found == score:
                break
        if found != score:  # pragma: no cover - a bug, not bad input
            raise RuntimeError(f"internal error: the start pass found {found} where the score "
                               f"is {score}; please report it")
        return int(end_i - row), int(end_j - column)

    def _start_window(self, score, end_i, end_j, rows, width):
        """The start pass over ``rows`` reversed query rows and ``width`` reversed target
        letters from the end cell: its best by the tie rule (stopped at ``score``)."""
        reversed_query = np.ascontiguousarray(self.query[end_i::-1][:rows])
        reversed_target = np.ascontiguousarray(self.target[end_j - width + 1:end_j + 1][::-1])
        runner = runner_for(self.client, reversed_query, reversed_target, self.scoring)
        grid = grid_for(rows, width, runner.workers,
                        first_columns=min(START_FIRST_COLUMNS, width))
        # blocks of rows on the forward passes' boundaries (multiples of the tile height),
        # so that start passes from different ends share their blocks' layouts
        height = _positive_setting("long.tile-rows")
        cuts = np.arange(end_i % height + 1, rows, height)
        blocks = np.unique(np.append(cuts, [0, rows]))
        return run_pass(reversed_query, reversed_target, self.scoring,
                        Grid(blocks, grid.columns), runner, name="start", stop_at=score).best


def long_pair(query_codes, target_codes, matrix, gap_open, gap_extend, *, client=None,
              progress=None) -> tuple[int, int, int, int, int]:
    """One pair, however long (:func:`swdask._long.align_long`'s score passes on the CPU,
    here or on ``client``'s workers): ``(score, start_i, start_j, end_i, end_j)``, inclusive
    cells by the tie rule, ``-1`` where the score is 0. ``progress(cells)`` as the forward
    pass's tiles finish."""
    passes = TilePasses(query_codes, target_codes, matrix, gap_open, gap_extend,
                        client=client)
    m, n = passes.query.size, passes.target.size
    if m == 0 or n == 0:
        return 0, -1, -1, -1, -1
    best, end_i, end_j = passes.forward(0, n, progress=progress).best
    if best <= 0:
        return 0, -1, -1, -1, -1
    start_i, start_j = passes.start(best, end_i, end_j)
    return int(best), start_i, start_j, int(end_i), int(end_j)
