"""swdask: exact Smith-Waterman (and end-to-end) alignment inside dataframe pipelines.

Importing swdask registers the ``.sw`` accessor on pandas and Dask Series/DataFrames::

    import swdask
    hits = series.sw.align("MKTAYIAKQR", matrix="BLOSUM62", gap_open=11, gap_extend=1)
    frame = frame.sw.align(query, column="sequence")        # adds the result columns
    hits = frame.sw.search(queries, top=10)                  # each query's 10 best rows
    pssm = swdask.Profile.read_pssm("query.pssm")            # psiblast -out_ascii_pssm
    hits = frame.sw.search([pssm], top=10)                   # a profile wherever a query goes
    hits = swdask.all_vs_all(db, top=10)                     # each row's 10 best other rows
    pairs = frame.sw.align_pairs(query="read", target="contig")
    best = swdask.align_long(chromosome_a, chromosome_b, matrix=None, match=1, mismatch=-3)
    hits = swdask.align_long(query, genomes, top=200, backend="gpu")  # disjoint in the target
    ddf = swdask.read_fasta("db.fasta.gz")                   # Dask: id, description, sequence
    reads = swdask.read_fastq("reads.fastq.gz")              # ... and quality
    with swdask.cluster() as client:                         # local cluster, or scheduler=ADDRESS
        ddf = swdask.persist_balanced(ddf, client)           # equal residues on every worker
        hits = ddf.sw.align(query).compute()
        swdask.task_totals(client)                           # cells and seconds of sw-align tasks
        best = swdask.align_long(chromosome_a, chromosome_b, client=client)  # a task per tile

Conventions, everywhere: a gap of length k scores ``-(gap_open + (k - 1) * gap_extend)``;
positions are 0-based and end-exclusive (``target[target_start:target_end]`` is the aligned
segment); nulls in give nulls out; the output keeps the input's rows, index and order.

Every alignment entry point takes the same keywords: ``matrix``, ``gap_open``,
``gap_extend``, ``match``, ``mismatch``, ``on_unknown``, ``positions`` (``True``: start and
end, ``"end"``, ``False``: score only, ``"alignment"``: also ``cigar`` with ``=``/``X``/``I``/
``D``, ``I`` a query residue against a gap, and the identity counts), ``backend``
(``"auto"``, ``"cpu"``, ``"gpu"``: where the kernels run) and ``aligned_strings`` (with
``"alignment"``: also ``query_aligned``/``target_aligned``, the segments with ``-`` against
gaps) and ``strand`` (``"plus"``; ``"both"`` for DNA: the query's reverse complement too,
each row the better strand, with a ``strand`` column ``"+"``/``"-"``; a minus row's positions
and CIGAR are those of the reverse complement as aligned), ``mask`` (``"lowercase"``, ``"dust"`` for DNA,
``"seg"`` for protein) and
``mode`` (``"local"``; ``"global"``, ``"query-global"``, ``"target-global"``, ``"overlap"``:
end gaps free on neither, the target's, the query's or either side; scores may be negative). ``.sw.search`` adds ``bitscore``
and ``evalue`` (``statistics="auto"``: NCBI BLAST's published parameters; ``"search"``: fitted
to the search's own scores; BLAST's gap cost 11/1 is ``gap_open=12, gap_extend=1`` here).

A :class:`Profile` (a position-specific score matrix: PSI-BLAST's ASCII PSSM, or an array
``scores[position, letter]``) is a query wherever a query string is, in local mode; its
letters without a column score as the matrix scores the position's own letter.

cuDF: ``.sw`` on ``cudf.Series``/``cudf.DataFrame`` (results as cuDF columns on the GPU) is
registered when cuDF is imported before swdask; if cuDF is imported after, call
``swdask.register_cudf()`` once. swdask itself never imports cuDF otherwise.

Tuning settings live in ``dask.config`` under ``swdask.`` (docs/settings.md);
``swdask.lowlevel`` documents the engine's stages for benchmarks and tools.
"""
import sys as _sys

from . import _settings
from ._api import align, align_pairs
from ._all_vs_all import all_vs_all
from ._long import align_long
from ._profile import Profile, ProfileError
from ._scoring import Scoring, ScoringError, make_scoring
from ._sequences import SequenceError
from . import _accessor  # noqa: F401  (registers the pandas accessor)
from ._imports import when_imported as _when_imported
from ._fasta import FastaError, read_fasta
from ._fastq import read_fastq
from ._balance import balance_by_residues
from ._cluster import cluster
from ._metrics import task_totals
from ._placement import persist_balanced


def register_cudf() -> None:
    """Register the ``.sw`` accessor on cuDF Series/DataFrames (imports cuDF; idempotent)."""
    from ._accessor import register_cudf as register

    register()


if "cudf" in _sys.modules:  # only when the user already imported cuDF: never import it here
    register_cudf()


def _register_dask() -> None:
    from . import _dask  # noqa: F401  (registers the Dask accessor)


# The Dask accessor is registered when dask.dataframe is imported (now, if it is already):
# importing dask.dataframe imports dask.array, which imports CuPy and SciPy's sparse modules
# where they are installed (half of a short job on a GPU machine:
# docs/notes/gpu-search-job.md), and the CLI's one-GPU search and every pandas/cuDF use need
# none of it.
_when_imported("dask.dataframe", _register_dask)
# swdask's namespace of dask.config, with its defaults, as soon as Dask is imported (by the
# user, or by swdask when it first reads a setting): `import swdask` does not import Dask
_when_imported("dask.config", _settings.load_defaults)

__all__ = [
    "align",
    "align_long",
    "all_vs_all",
    "align_pairs",
    "balance_by_residues",
    "cluster",
    "FastaError",
    "make_scoring",
    "persist_balanced",
    "Profile",
    "ProfileError",
    "read_fasta",
    "read_fastq",
    "register_cudf",
    "Scoring",
    "ScoringError",
    "SequenceError",
    "task_totals",
]


def __getattr__(name: str):
    """``__version__``, read from the installed package's metadata when first asked for
    (``importlib.metadata`` is slow to import for a name most jobs never ask for:
    docs/notes/cpu-search-job.md)."""
    if name != "__version__":
        raise AttributeError(f"module 'swdask' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("swdask")
    except PackageNotFoundError:  # pragma: no cover - a source tree never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
