"""The search job behind ``swdask search``: every query against a database, best hits per query.

Every query runs against each part of the database in one pass, which returns only each
query's best hits; the hits of all parts are then ranked together. Each part is read,
encoded and (on the GPU) laid out once for all the queries.

Where it runs: with no cluster asked for (no ``--scheduler``, no ``--workers``), in this
process with no Dask graph at all: on the CPU the partitions stream through, each read on a
thread while the one before is searched (:func:`_search_cpu_in_process`; the numba kernels
use every core); with the GPU engine on the local GPUs (:mod:`swdask._local_gpus`; on one
GPU, ``gpu`` and ``cudf`` alike: the file's bytes parsed on the GPU, or read into one frame
while a thread readies the GPU; on several GPUs with ``gpu``: GPU 0 in this process and one
more process for each other, every one reading the whole database and taking batches of
the queries).
Otherwise on a cluster, where the job is one ``.sw.search`` over a Dask frame from
:func:`swdask.read_fasta` (one ``sw-search`` task per partition, one task ranking them):
``--workers N`` starts a local one of N worker processes, ``--scheduler`` uses a running
one, and ``--backend cudf`` on several local GPUs a LocalCUDACluster of one worker per GPU,
the partitions read in parallel joined into one per GPU before the search.

Ranking: score descending, ties broken by the target's place in the database (its record
number, the index of :func:`swdask.read_fasta`), so the result does not depend on the
partitioning. Targets that score 0 (no local alignment at all) are not hits, so a query may
have fewer than ``top`` hits. The job times its phases (start-up, reading the queries, the
search itself with the database read inside it, writing), :class:`Phases`.
"""
from __future__ import annotations

import logging
import math
import os
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pandas as pd

from . import _timing
from ._timing import process_age
from ._fasta import expand_paths, parse_blocksize
from ._api import OPTION_PARAMETERS
from ._many_queries import check_top, prepare_queries
from ._options import Options
from ._results import ALIGNED_STRINGS, ALIGNMENT_COLUMNS

#: Columns of the hits table, in order. Positions are 0-based and end-exclusive:
#: query[query_start:query_end] and target[target_start:target_end] are the aligned segments.
HIT_COLUMNS = ("query_id", "rank", "target_id", "score", "query_start", "query_end",
               "target_start", "target_end", "target_description")
#: Columns that come after ``score`` when the search computed them (statistics), and before
#: ``target_description`` (the alignment).
_STATISTICS_COLUMNS = ("bitscore", "evalue")
#: Output formats (``--format``); ``auto`` picks one from the output's suffix.
FORMATS = ("auto", "tsv", "csv", "parquet", "blast6", "sam")
#: BLAST's tabular output (-outfmt 6 / ssearch36 -m 8), in order.
BLAST6_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart",
                  "qend", "sstart", "send", "evalue", "bitscore")

#: Bounds of the automatic partition size of the database.
_MIN_BLOCK = 2**20
_MAX_BLOCK = 64 * 2**20
_MAX_GPU_BLOCK = 256 * 2**20

#: The scoring keywords of every alignment entry point (the options less positions, backend).
_SCORING_KEYS = tuple(p.name for p in OPTION_PARAMETERS if p.name not in ("positions", "backend"))


class Phases:
    """Wall-clock seconds of a job's phases, in order (``with phases("read"): ...``)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        #: thread-seconds by stage inside the tasks (:mod:`swdask._timing`), when they ran
        #: in this process
        self.in_tasks: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def process_start(self) -> None:
        """Record phase ``imports``: the seconds from this process's start to now (the
        interpreter and the imports of swdask), by :func:`process_age`."""
        age = process_age()
        if age is not None:
            self.seconds["imports"] = age

    def line(self) -> str:
        text = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.seconds.items())
        if self.in_tasks:
            text += "; inside the search (thread-seconds): " + ", ".join(
                f"{name} {seconds:.2f} s" for name, seconds in self.in_tasks.items())
        return text


def hits_table(hits: pd.DataFrame) -> pd.DataFrame:
    """The search's hits (``id`` and ``description`` kept) as the table :data:`HIT_COLUMNS`."""
    strings = pd.StringDtype("pyarrow")
    table = hits.rename(columns={"id": "target_id", "description": "target_description"})
    table = table.astype({"query_id": strings, "target_id": strings,
                          "target_description": strings})
    columns = list(HIT_COLUMNS)
    columns[4:4] = [c for c in _STATISTICS_COLUMNS if c in table.columns]
    columns[-1:-1] = [c for c in ALIGNMENT_COLUMNS + ALIGNED_STRINGS + ("target_length",)
                      if c in table.columns]
    return table[columns].reset_index(drop=True)


def auto_blocksize(paths, n_threads: int, gpus: int = 0) -> int:
    """Partition size for the database (each partition is one task running every query).

    CPU: two partitions per thread of the cluster, between 1 MiB and 64 MiB. GPU (``gpus``
    devices): one partition per thread (at least four per GPU), between 1 MiB and 256 MiB,
    read in parallel and then joined into one per GPU (see :func:`_lazy_search`)."""
    fs, paths = expand_paths(paths)
    total = sum(int(fs.size(p)) for p in paths)
    if gpus:  # read in parallel, then joined into one partition per GPU (_lazy_search)
        wanted_partitions, largest = max(n_threads, 4 * gpus), _MAX_GPU_BLOCK
    else:
        wanted_partitions, largest = max(1, 2 * n_threads), _MAX_BLOCK
    return int(min(largest, max(_MIN_BLOCK, math.ceil(total / wanted_partitions))))


def output_format(output: str, fmt: str = "auto") -> str:
    """``"parquet"``, ``"csv"``, ``"tsv"`` or ``"blast6"``: ``fmt`` unless ``"auto"``, else
    from the output name (``-`` is TSV on stdout; ``.m8``/``.blast6`` is BLAST's tabular)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "parquet" and output == "-":
        raise ValueError("--format parquet cannot go to standard output; name a file with -o")
    if fmt != "auto":
        return fmt
    if output == "-":
        return "tsv"
    name = Path(output).name.lower()
    for suffix in (".gz", ".bz2", ".xz", ".zst"):  # pandas compresses text by the suffix
        if name.endswith(suffix) and not name.endswith(".parquet" + suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".m8", ".blast6")):
        return "blast6"
    if name.endswith(".sam"):
        return "sam"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".tsv", ".tab", ".txt")):
        return "tsv"
    raise ValueError(
        f"-o {output!r}: the suffix says neither TSV nor Parquet; name the output *.tsv "
        "(tab-separated text; also .tab, .txt, .csv, with .gz for compression), *.parquet, "
        "*.m8 (BLAST tabular) or *.sam, or '-' for TSV on standard output; or give --format"
    )


def check_output(output: str) -> None:
    """Refuse, before any work, an output that cannot be written: a missing or read-only
    folder, or a folder where the file should be."""
    if output == "-":
        return
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise ValueError(f"-o {output}: the folder {folder} does not exist; create it first")
    if os.path.isdir(output):
        raise ValueError(f"-o {output} is a folder; name a file in it")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"-o {output}: the folder {folder} is not writable")


def check_statistics(fmt: str, evalue, scoring, source: str = "blast"):
    """The search's ``statistics`` for an output format, an ``--evalue`` filter and
    ``--statistics`` (``source``): ``"search"`` as asked; else ``"auto"`` for the tables and
    ``"blast"`` where E-values are needed (blast6, ``--evalue``), which must then be published
    for ``scoring`` (a Scoring): a ValueError saying so otherwise, before any work."""
    from ._statistics import blast_parameters

    if source == "search":
        return "search"
    if fmt != "blast6" and evalue is None:
        return "auto"
    if blast_parameters(scoring, warn=False) is None:
        wanted = "--format blast6" if fmt == "blast6" else "--evalue"
        raise ValueError(
            f"{wanted} needs E-values, and NCBI BLAST publishes no statistics for "
            f"{scoring.name} with gap_open={scoring.gap_open}, gap_extend={scoring.gap_extend}"
            f" (swdask's gap costs; BLAST's are one less on the opening); choose a protein "
            f"matrix and gap cost BLAST supports (e.g. BLOSUM62 with --gap-open 12 "
            f"--gap-extend 1, BLAST's default), or fit them to this search with --statistics "
            f"search")
    return "blast"


def blast6_table(hits: pd.DataFrame) -> pd.DataFrame:
    """The hits (with alignments and statistics) as BLAST's 12 tabular columns, formatted as
    BLAST writes them: pident with 3 decimals, E-values as ``%.2e`` (0.0 below the smallest
    double), bit scores with one decimal; coordinates 1-based, inclusive. A statistic the
    search could not give (``statistics="search"`` for a query that met too few rows to fit)
    is written ``NA``."""
    def evalue_text(value):
        if pd.isna(value):
            return "NA"
        return "0.0" if value == 0 else f"{value:.2e}"

    return pd.DataFrame({
        "qseqid": hits["query_id"], "sseqid": hits["target_id"],
        "pident": [f"{100 * v:.3f}" for v in hits["identity"]],
        "length": hits["alignment_length"], "mismatch": hits["mismatches"],
        "gapopen": hits["gap_opens"], "qstart": hits["query_start"] + 1,
        "qend": hits["query_end"], "sstart": hits["target_start"] + 1,
        "send": hits["target_end"], "evalue": [evalue_text(v) for v in hits["evalue"]],
        "bitscore": ["NA" if pd.isna(v) else f"{v:.1f}" for v in hits["bitscore"]]})


def check_format(fmt: str, scoring_options: dict, aligned_strings: bool = False) -> None:
    """Refuse, before any work, a format the scoring cannot give (SAM is for DNA reads) or
    that has no room for the aligned strings (BLAST's 12 columns, SAM's fields)."""
    if fmt == "sam" and scoring_options.get("matrix") is not None:
        raise ValueError("--format sam writes DNA reads aligned to references: pass --dna "
                         "(protein hits go to tsv, parquet or blast6)")
    if aligned_strings and fmt in ("blast6", "sam"):
        raise ValueError(f"--aligned-strings adds columns to tsv, csv or parquet output; "
                         f"--format {fmt} has fixed fields (drop one of the two)")


def sam_text(hits: pd.DataFrame, queries: pd.DataFrame, command: str = "") -> str:
    """The hits (with alignments) as SAM 1.6: each query a read aligned to its target
    (``@SQ`` for every target with a hit, its length from ``target_length``); rank 1 is the
    primary line (FLAG 0), the others secondary (FLAG 256); the query as given, forward strand;
    the CIGAR of the alignment with the query's unaligned ends soft-clipped (``S``), so it
    spans the whole read; ``AS:i`` the score, ``NM:i`` the edit distance (mismatches and gap
    residues); POS 1-based; MAPQ 255 (not computed); QUAL ``*``."""
    from . import __version__

    sequences = dict(zip(queries["id"].astype(str), queries["sequence"].astype(str)))
    lines = ["@HD\tVN:1.6\tSO:unsorted"]
    targets = hits.drop_duplicates("target_id")
    lines += [f"@SQ\tSN:{name}\tLN:{int(length)}"
              for name, length in zip(targets["target_id"], targets["target_length"])]
    lines.append(f"@PG\tID:swdask\tPN:swdask\tVN:{__version__}"
                 + (f"\tCL:{command}" if command else ""))
    for hit in hits.itertuples(index=False):
        read = sequences[str(hit.query_id)]
        clip_left, clip_right = int(hit.query_start), len(read) - int(hit.query_end)
        cigar = ((f"{clip_left}S" if clip_left else "") + hit.cigar
                 + (f"{clip_right}S" if clip_right else ""))
        edits = int(hit.alignment_length) - int(hit.matches)
        lines.append("\t".join((
            str(hit.query_id), "0" if hit.rank == 1 else "256", str(hit.target_id),
            str(int(hit.target_start) + 1), "255", cigar, "*", "0", "0", read, "*",
            f"AS:i:{int(hit.score)}", f"NM:i:{edits}")))
    return "\n".join(lines) + "\n"


def write_hits(hits: pd.DataFrame, output: str, fmt: str = "auto", stdout=None,
               queries: pd.DataFrame | None = None, command: str = "") -> None:
    """Write the hits table to ``output`` in ``fmt`` (:func:`output_format`; SAM needs the
    ``queries`` frame), whole or not at all: a file is written under a temporary name beside
    it, then renamed."""
    import sys

    fmt = output_format(output, fmt)
    if output == "-":
        target = stdout or sys.stdout
        _write(hits, target, fmt, queries=queries, command=command)
        return
    folder, name = os.path.split(os.path.abspath(output))
    temporary = os.path.join(folder, f".{name}.swdask-partial")
    try:
        _write(hits, temporary, fmt, compression_of=output, queries=queries, command=command)
        os.replace(temporary, output)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _write(hits: pd.DataFrame, target, fmt: str, compression_of=None, queries=None,
           command: str = "") -> None:
    compression = "infer" if compression_of is None else _compression(compression_of)
    if fmt == "sam":
        text = sam_text(hits, queries, command)
        if hasattr(target, "write"):
            target.write(text)
        else:
            import fsspec

            with fsspec.open(target, "wt", compression=compression) as out:
                out.write(text)
    elif fmt == "parquet":
        hits.to_parquet(target, index=False)
    elif fmt == "blast6":
        blast6_table(hits).to_csv(target, sep="\t", index=False, header=False,
                                  compression=compression)
    else:
        hits.to_csv(target, sep="," if fmt == "csv" else "\t", index=False,
                    compression=compression)


def _compression(output: str):
    """pandas' compression for the output's suffix (the temporary name has none)."""
    for suffix, name in ((".gz", "gzip"), (".bz2", "bz2"), (".xz", "xz"), (".zst", "zstd")):
        if output.lower().endswith(suffix):
            return name
    return None


def _lazy_search(database_path, queries, top, options, backend, blocksize, threads: int,
                 gpus: int, statistics="auto", strip_gaps: bool = False):
    """The database read and searched, lazily (a Dask frame of hits). With the GPU engine
    (``gpus`` devices) the partitions read in parallel are joined into one per GPU before
    the search: each partition's search pays the tail of its longest rows, so W1 on four
    partitions of sp500k spent clearly longer in kernels than on the whole of it in one
    (docs/notes/gpu-several-gpus-and-dask.md)."""
    from ._fasta import read_fasta

    if blocksize == "auto":
        blocksize = auto_blocksize(database_path, threads, gpus)
    database = read_fasta(database_path, blocksize=blocksize,
                          backend="cudf" if backend == "cudf" else "pandas",
                          strip_gaps=strip_gaps)
    if not database.known_divisions:  # read_fasta's plan found no record at all
        raise ValueError(f"the database ({_names(database_path)}) holds no FASTA record (no "
                         "line starts with '>')")
    if gpus and database.npartitions > gpus:
        database = database.repartition(npartitions=gpus)
    return database.sw.search(queries, top=top, column="sequence", keep=("id", "description"),
                              statistics=statistics, matrix=options.scoring,
                              positions=options.mode, backend=options.backend,
                              aligned_strings=options.aligned_strings)


def check_database(paths) -> None:
    """Refuse, before any work, database files that are missing or all empty."""
    fs, found = expand_paths(paths)
    if all(int(fs.size(p)) == 0 for p in found):
        names = ", ".join(found[:3]) + (" ..." if len(found) > 3 else "")
        raise ValueError(f"the database ({names}) is empty: no FASTA record to search")


def read_queries(path, scoring, strip_gaps: bool = False):
    """The query file as a pandas frame (``id``, ``description``, ``sequence``), every query
    checked under ``scoring``: an empty file or a bad query is a ValueError naming it."""
    from ._fasta import read_fasta_frame

    queries = read_fasta_frame(path, blocksize=None, threads=1, strip_gaps=strip_gaps)
    if queries.empty:
        raise ValueError(f"{path}: no query records (the file holds no '>' header)")
    try:
        prepare_queries(queries, scoring)  # a bad query fails here, named
    except ValueError as exc:
        raise type(exc)(f"{exc} (in {path})") from None
    return queries


def _search_cpu_in_process(database_path, queries, top, options, blocksize, statistics,
                           strip_gaps, progress):
    """The search with the CPU engine in this process: the database's partitions streamed
    through (:func:`~swdask._fasta.iter_fasta_frames`: each read while the one before is
    searched, so memory holds two), each searched by every query
    (:func:`~swdask._many_queries.search_columns`), the hits ranked together."""
    from ._cluster import count_progress
    from ._fasta import iter_fasta_frames
    from ._many_queries import search_columns

    count, frames = iter_fasta_frames(database_path, blocksize, strip_gaps=strip_gaps)
    if not count:
        raise ValueError(f"the database ({_names(database_path)}) holds no FASTA record (no "
                         "line starts with '>')")
    _timing.take()  # from zero: only this job's stages
    parts = ((frame["sequence"], frame[["id", "description"]]) for frame in frames)
    with count_progress(count) if progress else nullcontext() as advance:
        return search_columns(parts, queries, top, options, statistics=statistics,
                              done=advance)


def _names(paths) -> str:
    return paths if isinstance(paths, str) else ", ".join(map(str, paths))


def search(queries_path, database_path, *, top: int = 10, blocksize="auto", n_workers=None,
           scheduler=None, progress: bool = True, backend: str = "auto", report=None,
           phases: Phases | None = None, positions=True, statistics="auto", evalue=None,
           strip_gaps: bool = False, **scoring_options) -> pd.DataFrame:
    """Run the search (in this process, or on a cluster: ``n_workers`` local worker
    processes, or ``scheduler``; see the module docstring); the hits table.

    ``queries_path`` is a FASTA path, or the frame :func:`read_queries` gave.
    ``scoring_options`` are those of :func:`swdask.align` (matrix, gap_open, gap_extend,
    match, mismatch, on_unknown); ``positions`` (``True`` or ``"alignment"``) and
    ``statistics`` those of ``.sw.search``; ``evalue`` keeps hits of at most that E-value.
    Scoring, queries and options are checked before any cluster starts, so a mistake costs no
    start-up time. ``phases`` (a :class:`Phases`) collects the seconds of each phase.
    """
    from ._cluster import _report_to_stderr, available_cores, cluster, show_progress

    phases = phases if phases is not None else Phases()
    top = check_top(top)
    unknown = set(scoring_options) - set(_SCORING_KEYS)
    if unknown:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    if backend not in ("auto", "cpu", "gpu", "cudf"):
        raise ValueError(f"backend must be 'auto', 'cpu', 'gpu' or 'cudf', got {backend!r}")
    # "cudf": the database partitions live on the GPUs as cuDF frames (read_fasta's cuDF
    # backend, its frame library) and the GPU backend reads them there
    options = Options.parse(**scoring_options, positions=positions,
                            backend="gpu" if backend == "cudf" else backend)
    if evalue is not None and statistics not in ("blast", "search"):
        raise ValueError("evalue= filters on E-values: pass statistics='blast' or 'search' "
                         "with it")
    gpu_engine = backend in ("gpu", "cudf")
    # the GPUs of this machine, counted without the driver (a hint, checked once CuPy has
    # counted them), where the job runs on them with no cluster
    local_gpu_job = gpu_engine and scheduler is None and n_workers is None
    likely = 0
    if local_gpu_job:
        from ._local_gpus import quick_gpu_count

        likely = quick_gpu_count()
    if local_gpu_job and (backend == "gpu" or likely == 1):
        # this process searches on GPU 0 (alone, or beside the further GPUs' processes; cudf
        # on several GPUs runs on a cluster instead): the driver and its context start at
        # once, without the interpreter's lock: the driver's start is slow, so it runs
        # beside the imports and the queries' read, and the "ready" phase comes to nothing
        # (docs/notes/gpu-search-job.md)
        from .gpu._runtime import start_driver

        start_driver(0)
    # the GPU engine: CuPy imported and the GPUs counted on a thread, beside the queries'
    # read (a visible share of a short job: docs/notes/gpu-search-job.md)
    gpu_stack = _start(_gpu_stack) if gpu_engine else None
    # several local GPUs likely: their processes start now, beside the queries' read and
    # the driver's start, and get their work once it is known
    further = None
    if backend == "gpu" and local_gpu_job and likely > 1:
        from ._local_gpus import FurtherGpus

        further = FurtherGpus(likely)
    try:
        if isinstance(queries_path, pd.DataFrame):  # read already (read_queries)
            queries = queries_path
        else:
            with phases("queries"):
                queries = read_queries(queries_path, options.scoring, strip_gaps)
        check_database(database_path)  # missing or empty files fail here, before any cluster
        if blocksize != "auto":
            parse_blocksize(blocksize)
        report = report or _report_to_stderr
        with phases("startup"):  # no GPU (or no CuPy): said now, not from a task
            gpus_here = gpu_stack.result() if gpu_engine else 0
            local_gpus = max(1, gpus_here) if local_gpu_job else 0
    except BaseException:
        if further is not None:
            further.stop()
        raise
    # the GPU engine and no cluster asked for: in this process, on every local GPU (cudf
    # as gpu on one; cudf on several takes a LocalCUDACluster, one worker per GPU, below)
    if local_gpus == 1:
        from ._local_gpus import search_on_one_gpu

        if further is not None:  # the driver sees one GPU after all
            further.stop()
        threads = min(available_cores(), 8)
        report(f"running in this process on one GPU ({threads} threads read the database); "
               "no dashboard: pass --scheduler to run on a cluster and watch it")
        hits = search_on_one_gpu(database_path, queries, top, options, blocksize, threads,
                                 statistics, strip_gaps, phases)
        return hits_table(_below(hits, evalue))
    if local_gpus > 1 and backend == "gpu":
        from ._local_gpus import search_on_gpus

        threads = max(1, min(available_cores() // local_gpus, 8))
        report(f"running on {local_gpus} GPUs: GPU 0 in this process, one more process for "
               "each other; no dashboard: pass --scheduler to run on a cluster and watch it")
        hits = search_on_gpus(database_path, queries, top, options, statistics, strip_gaps,
                              local_gpus, phases, report, blocksize, threads, further)
        return hits_table(_below(hits, evalue))
    if not gpu_engine and scheduler is None and n_workers is None:
        # The CPU engine on this machine and no cluster asked for: in this process too. The
        # numba kernels already use every core, and the partitions stream through (memory
        # bounded by the partitions in flight); a local cluster's start and stop would be a
        # large share of a short job (docs/notes/cpu-search-job.md).
        # Partitions as large as memory allows (each costs every query a kernel call, its
        # longest rows' tail and its own top rows' start positions, so a search in fewer,
        # larger partitions is faster: docs/notes/cpu-search-job.md), two in flight: one
        # read while the kernels search the other.
        # No Dask graph either: the partitions are read one ahead of the search on a thread
        # (iter_fasta_frames), and dask.dataframe (slow to import, and slower still to look
        # for distributed at compute time) is never needed.
        report(f"running in this process on {available_cores()} cores; no dashboard: pass "
               "--workers N for a local cluster, or --scheduler, to watch it")
        with phases("search"):
            hits = _search_cpu_in_process(database_path, queries, top, options,
                                          _MAX_BLOCK if blocksize == "auto" else blocksize,
                                          statistics, strip_gaps, progress)
        phases.in_tasks = _timing.take()
        return hits_table(_below(hits, evalue))
    # a GPU cluster only when the GPU engine is asked for: the pandas partitions of this job
    # are aligned on the CPU otherwise, where a LocalCluster uses every core
    gpu = {"gpu": "auto", "cudf": True}.get(backend, False)
    with phases("startup"):
        # a local cluster's workers keep quiet about failed tasks (their log lines carry a
        # traceback): the job reports the error itself, in one line
        quiet = {} if scheduler is not None else {"silence_logs": logging.CRITICAL}
        started = cluster(scheduler, n_workers, gpu=gpu, report=report, **quiet)
        client = started.__enter__()
    try:
        with phases("search"):
            workers = client.nthreads()
            lazy = _lazy_search(database_path, queries, top, options, backend, blocksize,
                                max(1, sum(workers.values())),
                                gpus=len(workers) if gpu_engine else 0,
                                statistics=statistics, strip_gaps=strip_gaps)
            future = client.compute(lazy)
            if progress:
                show_progress([future])
            hits = future.result()
    finally:
        with phases("shutdown"):
            started.__exit__(None, None, None)
    return hits_table(_below(hits, evalue))


def _gpu_stack() -> int:
    """The GPU backend made (CuPy imported, the driver started; GpuUnavailableError, saying
    what to do, where there is none): the GPUs this process sees."""
    from . import _engine
    from ._cluster import local_gpu_count

    _engine.get_backend("gpu")
    return local_gpu_count()


def _start(function):
    """``function()`` running on its own thread: its Future. A daemon thread rather than an
    executor's, so that a job that fails before it waits for the result (a bad query) ends
    at once instead of joining the thread at exit."""
    import threading
    from concurrent.futures import Future

    future = Future()

    def run():
        try:
            future.set_result(function())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for it
            future.set_exception(exc)

    threading.Thread(target=run, name="swdask-start", daemon=True).start()
    return future


def _below(hits: pd.DataFrame, evalue) -> pd.DataFrame:
    """The hits of E-value at most ``evalue`` (all of them for None). Within a query the
    E-value grows with the rank, so the kept ranks stay 1, 2, ..."""
    if evalue is None:
        return hits
    return hits[(hits["evalue"] <= evalue).fillna(False).to_numpy(dtype=bool)]
