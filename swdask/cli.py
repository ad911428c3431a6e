"""The ``swdask`` command line: ``swdask search QUERIES.fasta DB.fasta --top 10 -o hits.tsv``,
``swdask pairs READS.fq REGIONS.fa -o pairs.sam``, ``swdask align-long A.fa B.fa -o best.paf``.

argparse (the standard library) rather than click: the CLI is one subcommand with plain
options, and argparse adds no dependency (click is not one of ours). The job itself lives in
``_search.py``; this module only turns arguments into a call and errors into messages.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys

from . import __version__
from ._scoring import ALIGNMENT_MODES

#: Scoring defaults of each mode (gap of length k costs gap_open + (k - 1) * gap_extend).
PROTEIN_DEFAULTS = {"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1}
DNA_DEFAULTS = {"match": 3, "mismatch": -3, "gap_open": 6, "gap_extend": 1}

_EPILOG = """\
output columns (tsv, csv, parquet): query_id, rank (1 = best), target_id, score, bitscore and
evalue (for matrices and gap costs NCBI BLAST publishes parameters for), query_start,
query_end, target_start, target_end (0-based, end-exclusive: target[target_start:target_end]
is the aligned segment), with --alignment cigar, alignment_length, matches, mismatches,
gap_opens, identity, with --aligned-strings also query_aligned and target_aligned (the
segments with '-' against gaps, BLAST's qseq and sseq), then target_description. Hits are
ranked by score, ties by the target's order in the database; targets scoring 0 are not hits.

--format blast6 (or -o *.m8 / *.blast6) writes BLAST's 12 tabular columns: qseqid sseqid
pident length mismatch gapopen qstart qend sstart send evalue bitscore, coordinates 1-based
and inclusive. swdask's gap costs are gap_open + (k-1) * gap_extend: BLAST's and ssearch36's
"-gapopen 11 -gapextend 1" (-f -11 -g -1) is --gap-open 12 --gap-extend 1 here.

--format sam (or -o *.sam), with --dna: the queries as reads aligned to the database's
sequences, SAM 1.6 with @SQ lines for the targets hit, the CIGAR soft-clipped to the whole
read, AS:i (score) and NM:i (edit distance); rank 1 primary, others secondary; FLAG 16 and
the read reverse-complemented for minus-strand hits (--strand both); QUAL from FASTQ queries.

--strand both (DNA): each query's reverse complement is aligned too and every target reports
its better strand, in a strand column (+/-); a minus hit's query positions are on the reverse
complement as aligned (blast6 converts them to the query as given, with sstart > send).

example:
  swdask search examples/data/queries.fasta examples/data/db.fasta --top 10 -o hits.tsv
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swdask", description="Exact Smith-Waterman local alignment on Dask dataframes.")
    parser.add_argument("--version", action="version", version=f"swdask {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    search = commands.add_parser(
        "search", help="best hits of each query in a database",
        description="Align every query against every database sequence (exact "
                    "Smith-Waterman, affine gaps) on a Dask cluster and write the best hits "
                    "of each query.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    search.add_argument("queries",
                        help="FASTA or FASTQ file of queries (.gz and other compressions by "
                             "suffix)")
    search.add_argument("database", nargs="*",
                        help="FASTA file(s) or glob(s) of the database")
    search.add_argument("--pssm", action="append", metavar="FILE",
                        help="a query given as a position-specific score matrix, PSI-BLAST's "
                             "ASCII PSSM (psiblast -out_ascii_pssm); repeat for several. The "
                             "positional files are then all database (no query file)")
    search.add_argument("-o", "--output", default="-",
                        help="hits file: *.tsv (also .tab/.txt/.csv, optionally .gz) or "
                             "*.parquet; '-' (default) writes TSV to standard output")
    search.add_argument("--top", type=int, default=10, help="hits per query (default 10)")
    search.add_argument("--all-vs-all", action="store_true",
                        help="search the database against itself (give the same file as "
                             "queries and database): each unordered pair scored once, each "
                             "record's --top best other records (modes local, global, "
                             "overlap)")
    search.add_argument("--include-self", action="store_true",
                        help="with --all-vs-all: also each record's hit against itself")
    search.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                        help="output format (default auto: from the suffix of -o, .m8, .sam "
                             "and .bam included; TSV for '-'); sam and bam need --dna, bam "
                             "pysam (pip install 'swdask[bam]')")
    search.add_argument("--sort", action="store_true", help=SORT_HELP)
    search.add_argument("--md", action="store_true", help=MD_HELP)
    search.add_argument("--alignment", action="store_true",
                        help="trace every hit back: cigar, alignment_length, matches, "
                             "mismatches, gap_opens, identity (implied by blast6)")
    search.add_argument("--aligned-strings", action="store_true",
                        help="also the gapped strings query_aligned and target_aligned "
                             "(implies --alignment; tsv, csv or parquet output)")
    search.add_argument("--strand", choices=("plus", "both"), default="plus",
                        help="DNA: also align each query's reverse complement and report the "
                             "better strand per target (a strand column; blast6 writes "
                             "sstart > send and SAM flag 16 for minus-strand hits; default "
                             "plus)")
    search.add_argument("--mask", choices=("lowercase", "dust", "seg"),
                        help="lowercase: lower-case letters (soft-masked repeats) score as N "
                             "(X for protein) against everything; dust (DNA): low-complexity "
                             "runs found by symmetric DUST (dustmasker's) score as N; seg "
                             "(protein): low-complexity runs found by SEG (segmasker's) "
                             "score as X")
    search.add_argument("--mode", choices=ALIGNMENT_MODES, default="local", help=MODE_HELP)
    search.add_argument("--evalue", type=float, metavar="MAX",
                        help="keep only hits with an E-value of at most MAX (needs E-values: "
                             "a scoring with published statistics, or --statistics search)")
    search.add_argument("--strip-gaps", action="store_true",
                        help="remove the gap characters '-' and '.' from queries and database "
                             "sequences (aligned FASTA); without it they are an error naming "
                             "the record")
    search.add_argument("--statistics", choices=("blast", "search", "composition"),
                        default="blast",
                        help="where bit scores and E-values come from: blast (default; NCBI "
                             "BLAST's published parameters, for the matrices and gap costs "
                             "it supports), search (lambda and K fitted to each query's "
                             "own scores against the whole database, for any scoring) or "
                             "composition (blast's, each hit's score scaled by its pair's "
                             "composition-based lambda ratio: blastp -comp_based_stats 1)")

    search.add_argument("--alignments-per-target", type=int, default=1, metavar="K",
                        help="up to K local alignments per hit (default 1): each hit's "
                             "best, then the best using none of the better ones' aligned "
                             "pairs (Waterman-Eggert), rows numbered by an alignment_rank "
                             "column; implies the alignment columns; in this process only "
                             "(not with --workers, --scheduler or --backend gpu); in SAM "
                             "and BAM the further alignments are secondary (FLAG 256)")

    add_scoring_arguments(search)

    run = search.add_argument_group("cluster")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="run on a running Dask scheduler (tcp://host:8786)")
    run.add_argument("--workers", type=int,
                     help="start a local cluster of this many worker processes (with its "
                          "dashboard); without it or --scheduler the job runs in this "
                          "process, on every core (CPU) or on one local GPU")
    run.add_argument("--blocksize", default="auto",
                     help="database bytes per partition, e.g. 64MB (default auto: in this "
                          "process on the CPU, 64 MiB; on a CPU cluster, enough partitions "
                          "to keep every worker busy, 1 to 64 MiB; GPU, read in parallel, "
                          "then one partition per GPU)")
    run.add_argument("--backend", choices=("auto", "cpu", "gpu", "cudf"), default="auto",
                     help="alignment engine (default auto: CPU for these partitions); gpu: "
                          "CUDA kernels on pandas partitions; cudf: the database as cuDF "
                          "partitions in GPU memory (needs cuDF and dask-cudf). Without "
                          "--scheduler or --workers, both run the same job in this process "
                          "on one local GPU (the database file parsed on the GPU; no cuDF "
                          "needed); gpu on several runs GPU 0 in this process and starts "
                          "one more process for each other GPU, each reading the whole "
                          "database and taking batches of the queries; cudf on several "
                          "starts a LocalCUDACluster (needs dask-cuda), one worker per GPU")
    run.add_argument("--no-progress", action="store_true",
                     help="no progress bar on standard error")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="print the seconds of each phase (start-up, queries, search, "
                          "writing) on standard error")
    pairs = commands.add_parser(
        "pairs", help="record i of one file against record i of another",
        description="Align record i of QUERIES against record i of TARGETS (exact "
                    "Smith-Waterman, affine gaps; FASTA or FASTQ, compressed by suffix) and "
                    "write one row per pair, in file order: a pair that does not align has "
                    "null positions (tsv, csv, parquet), no line (blast6) or an unmapped "
                    "line (sam, FLAG 4).")
    pairs.add_argument("queries", help="FASTA or FASTQ file of the pairs' first sequences")
    pairs.add_argument("targets", help="FASTA or FASTQ file of their second sequences, as "
                                       "many records in the same order")
    pairs.add_argument("-o", "--output", default="-",
                       help="output file, format by suffix as for search (.tsv, .csv, "
                            ".parquet, .m8, .sam, .bam; '-' TSV on standard output)")
    pairs.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                       help="output format (default: from the suffix)")
    pairs.add_argument("--sort", action="store_true", help=SORT_HELP)
    pairs.add_argument("--md", action="store_true", help=MD_HELP)
    pairs.add_argument("--alignment", action="store_true",
                       help="add the CIGAR, alignment length, matches, mismatches, gap opens "
                            "and identity (blast6 and sam imply it)")
    pairs.add_argument("--aligned-strings", action="store_true",
                       help="add the two gapped segments (tsv, csv, parquet)")
    pairs.add_argument("--strand", choices=("plus", "both"), default="plus",
                       help="DNA: also align each query's reverse complement, the better "
                            "strand per pair (default plus)")
    pairs.add_argument("--mask", choices=("lowercase", "dust", "seg"),
                       help="lowercase: lower-case letters score as N (X for protein); dust "
                            "(DNA): low-complexity runs score as N; seg (protein): "
                            "low-complexity runs (segmasker's SEG) score as X")
    pairs.add_argument("--mode", choices=ALIGNMENT_MODES, default="local", help=MODE_HELP)
    pairs.add_argument("--strip-gaps", action="store_true",
                       help="remove '-' and '.' from FASTA sequences (aligned FASTA)")
    pairs.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                       help="cpu (numba) or gpu (CUDA through CuPy); auto is the CPU")
    pairs.add_argument("-v", "--verbose", action="store_true",
                       help="print the seconds of each phase (start-up, read, align, write) "
                            "on standard error")
    add_scoring_arguments(pairs)
    long = commands.add_parser(
        "align-long", help="the best alignment of two long sequences (chromosomes), as PAF",
        description="Align the first record of QUERY against the first record of TARGET "
                    "(exact Smith-Waterman, affine gaps) over the whole matrix in memory "
                    "linear in their lengths, and write the best alignment with its path as "
                    "PAF (minimap2's 12 columns, tp:A:P, AS:i: the score, cg:Z: the CIGAR "
                    "with =/X/I/D; coordinates 0-based, end-exclusive).")
    long.add_argument("query", help="FASTA file (its first record is aligned)")
    long.add_argument("target", help="FASTA file (its first record is aligned)")
    long.add_argument("-o", "--output", default="-",
                      help="PAF file; '-' (default) writes to standard output")
    long.add_argument("--top", type=int, default=1,
                      help="alignments to report, best first, no two sharing a target "
                           "letter (default 1)")
    long.add_argument("--plot", metavar="IMAGE",
                      help="also draw the alignments over the two sequences (PNG, SVG or "
                           "PDF by suffix; needs matplotlib)")
    long.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                      help="cpu (numba, default) or gpu (the whole GPU on the one matrix)")
    long.add_argument("--scheduler", metavar="ADDRESS",
                      help="run the CPU score passes on a running Dask scheduler's workers "
                           "(tcp://host:8786), one task per tile of the matrix")
    long.add_argument("--workers", type=int,
                      help="start a local cluster of this many worker processes (with its "
                           "dashboard) for the CPU score passes; without it or --scheduler "
                           "the tiles run on this process's cores")
    long.add_argument("--no-progress", action="store_true",
                      help="no progress line (cells of the score pass) on standard error")
    long.add_argument("-v", "--verbose", action="store_true",
                      help="print the seconds of each phase (start-up, read, score pass, "
                           "traceback, write, plot) on standard error")
    add_scoring_arguments(long)
    commands.add_parser(
        "info", help="what is installed, the GPUs seen, and which backends will run",
        description="Print swdask's version, its dependencies' versions, the GPUs CuPy sees, "
                    "and which engines (cpu, gpu, cudf, a GPU cluster) this machine can run.")
    return parser


#: ``--format`` of search and pairs (swdask._search.FORMATS).
FORMAT_CHOICES = ("auto", "tsv", "csv", "parquet", "blast6", "sam", "bam")
#: ``--sort`` of search and pairs.
SORT_HELP = ("bam: sort the records by reference and position and write the index beside "
             "the file (hits.bam.bai), as samtools sort and samtools index do")

#: ``--md`` of search and pairs.
MD_HELP = ("sam, bam: add MD:Z to each record (the reference's letters at mismatches and "
           "deletions), as minimap2's --MD does; the hits' gapped strings are made for it")

#: ``--mode`` of search and pairs.
MODE_HELP = ("local (Smith-Waterman, default), global (both sequences end to end), "
             "query-global (the whole query against any part of the target: reads against a "
             "reference), target-global, or overlap (either sequence's ends free); the "
             "end-to-end modes report no E-values")


def add_scoring_arguments(parser) -> None:
    """The scoring options every command takes (read by :func:`scoring_options`)."""
    scoring = parser.add_argument_group(
        "scoring", "A gap of length k scores -(gap_open + (k-1) * gap_extend).")
    scoring.add_argument("--matrix", help="substitution matrix name (BLOSUM45/50/62/80/90, "
                                          "PAM30/70/250, ...) or NCBI-format file "
                                          "(default BLOSUM62)")
    scoring.add_argument("--dna", action="store_true",
                         help="DNA scored by --match/--mismatch over ACGTN instead of a matrix")
    scoring.add_argument("--match", type=int, help="DNA match score (default 3, needs --dna)")
    scoring.add_argument("--mismatch", type=int,
                         help="DNA mismatch score (default -3, needs --dna)")
    scoring.add_argument("--gap-open", type=int,
                         help="cost of a gap's first position (default 11; 6 with --dna)")
    scoring.add_argument("--gap-extend", type=int,
                         help="cost of each further gap position (default 1)")
    scoring.add_argument("--on-unknown", choices=("substitute", "raise"), default="substitute",
                         help="a residue the matrix lacks reads as X (N for DNA), or is an "
                              "error (default substitute)")


def scoring_options(args, parser) -> dict:
    """The keyword arguments of :func:`swdask.make_scoring` that the options ask for."""
    if args.dna:
        if args.matrix is not None:
            parser.error("--matrix and --dna exclude each other: DNA uses --match/--mismatch")
        options = dict(DNA_DEFAULTS, matrix=None)
        if args.match is not None:
            options["match"] = args.match
        if args.mismatch is not None:
            options["mismatch"] = args.mismatch
    else:
        if args.match is not None or args.mismatch is not None:
            parser.error("--match/--mismatch score DNA: add --dna (or use --matrix for protein)")
        options = dict(PROTEIN_DEFAULTS)
        if args.matrix is not None:
            options["matrix"] = args.matrix
    if args.gap_open is not None:
        options["gap_open"] = args.gap_open
    if args.gap_extend is not None:
        options["gap_extend"] = args.gap_extend
    options["on_unknown"] = args.on_unknown
    return options


def main(argv=None) -> int:
    """Entry point of the ``swdask`` command (and ``python -m swdask``); the exit status:
    0 done, 1 a clear error (bad input, options, files; one line on stderr, no traceback),
    2 a usage error (argparse), 130 interrupted (Ctrl-C or SIGTERM; no output written)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "info":
        from ._info import report

        print(report())
        return 0
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.command == "align-long":
            return _align_long_command(args, parser)
        if args.command == "pairs":
            return _pairs_command(args, parser, argv)
        return _search_command(args, parser, argv)
    except KeyboardInterrupt:
        print("swdask: interrupted; no output written", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def run() -> None:
    """The ``swdask`` script and ``python -m swdask``: :func:`main`, then the process ends at
    once with its status. Nothing is left to do by then (the output file is written and
    renamed, the cluster stopped): the streams are flushed and the ``atexit`` handlers run
    here, and the interpreter's own finalisation, which frees every module one by one
    (numba's and LLVM's, pandas', Dask's), is skipped: it is a visible share of a short
    search and does nothing the job needs (docs/notes/cpu-search-job.md)."""
    import atexit

    code = main()
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)  # CPython; else skipped
    if run_exit_functions is not None:
        run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            code = code or 1
    os._exit(code)


def _interrupt(signum, frame):  # SIGTERM as Ctrl-C: the job and its cluster stop cleanly
    raise KeyboardInterrupt


def _positions(args, fmt: str):
    """What the kernels compute for a command's output: the alignment where it is written
    (``--alignment``, ``--aligned-strings``, blast6, SAM and BAM), else the positions."""
    from ._search import SAM_FORMATS

    return ("alignment" if args.alignment or args.aligned_strings
            or fmt in ("blast6", *SAM_FORMATS) else True)


def _strings(args, fmt: str) -> bool:
    """Whether the hits carry their gapped strings: asked for, or SAM and BAM with ``--md``
    (``MD:Z`` holds the reference's letters at mismatches and deletions, which the CIGAR
    does not carry; like minimap2, only on request: for 100,000 short reads the strings and
    the tags took about as long as the rest of the job, docs/notes/dna-reads.md)."""
    return args.aligned_strings or args.md


def _output_format(args, options: dict) -> str:
    """The output's format (``-o``'s suffix or ``--format``), refused before any work where
    the file cannot be written or the format cannot hold what was asked."""
    from ._search import check_format, check_output, output_format

    check_output(args.output)
    fmt = output_format(args.output, args.format)
    check_format(fmt, options, args.aligned_strings)
    if args.sort and fmt != "bam":
        raise ValueError("--sort sorts and indexes BAM output: write -o hits.bam")
    from ._search import SAM_FORMATS

    if args.md and fmt not in SAM_FORMATS:
        raise ValueError("--md adds SAM's MD:Z tag: write -o hits.sam or -o hits.bam")
    return fmt


def _command_line(argv) -> str:
    """The command as typed (SAM's ``@PG CL``)."""
    return " ".join(["swdask", *(argv if argv is not None else sys.argv[1:])])


def _failed(error: Exception) -> int:
    """Bad input, options, files or machine: one line on stderr, not a traceback; status 1."""
    message = " ".join(str(error).split())
    print(f"swdask: error: {message}", file=sys.stderr)
    return 1


def _done(args, phases, wrote: str) -> int:
    """The job's last lines on stderr (its phases with ``-v``; what it wrote where): 0."""
    if args.verbose:
        print(f"swdask: phases: {phases.line()}", file=sys.stderr)
    if args.output != "-":
        print(f"swdask: wrote {wrote} to {args.output}", file=sys.stderr)
    return 0


def _search_command(args, parser, argv) -> int:
    from ._options import Options
    from ._search import (SAM_FORMATS, Phases, check_itself, check_statistics, read_profiles,
                          read_queries, search, write_hits)
    from .gpu import GpuUnavailableError

    options = dict(scoring_options(args, parser), mode=args.mode)
    if args.top < 1:
        parser.error(f"--top must be at least 1, got {args.top}")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.scheduler and args.workers is not None:
        parser.error("--workers sizes a local cluster; with --scheduler the running "
                     "cluster's workers are used")
    if args.evalue is not None and not args.evalue >= 0:
        parser.error(f"--evalue must be a non-negative number, got {args.evalue}")
    phases = Phases()
    phases.process_start()
    try:
        fmt = _output_format(args, options)
        # a bad scoring fails here, named; the queries are read under the masked one
        scoring = Options.parse(**options, mask=args.mask).scoring
        statistics = check_statistics(fmt, args.evalue, scoring, args.statistics)
        positions = _positions(args, fmt)
        queries, database = args.queries, args.database
        if args.pssm:  # profiles are the queries: every positional file is database
            database = [args.queries] + database
            if args.all_vs_all or fmt in SAM_FORMATS:
                raise ValueError("--pssm: profile queries are not searched all against all, "
                                 "and SAM writes the query's letters; drop --all-vs-all, "
                                 "and write blast6, TSV or Parquet")
            with phases("queries"):
                queries = read_profiles(args.pssm, scoring)
        elif not database:
            parser.error("the following arguments are required: database")
        if args.all_vs_all:
            check_itself(args.queries, database)
        # read here where the writer needs the queries: SAM writes the reads, and blast6
        # gives a minus-strand hit's query positions on the query as given (its length)
        writes_queries = fmt in SAM_FORMATS or (fmt == "blast6" and args.strand == "both")
        if (writes_queries or args.strip_gaps) and not args.pssm:
            with phases("queries"):
                queries = read_queries(args.queries, scoring, strip_gaps=args.strip_gaps)
        hits = search(queries, database, top=args.top, blocksize=args.blocksize,
                      n_workers=args.workers, scheduler=args.scheduler,
                      progress=not args.no_progress, backend=args.backend, phases=phases,
                      positions=positions, statistics=statistics, evalue=args.evalue,
                      strip_gaps=args.strip_gaps, aligned_strings=_strings(args, fmt),
                      strand=args.strand, mask=args.mask, all_vs_all=args.all_vs_all,
                      include_self=args.include_self,
                      alignments_per_target=args.alignments_per_target, **options)
        with phases("write"):
            write_hits(hits, args.output, fmt,
                       queries=queries if writes_queries else None,
                       command=_command_line(argv), sort=args.sort)
    except (ValueError, OSError, GpuUnavailableError) as exc:
        return _failed(exc)
    return _done(args, phases,
                 f"{len(hits)} hits ({hits['query_id'].nunique()} queries with hits)")


def _pairs_command(args, parser, argv) -> int:
    from ._options import Options
    from ._pairs_job import run as run_job
    from ._timing import Phases
    from .gpu import GpuUnavailableError

    options = dict(scoring_options(args, parser), mode=args.mode)
    phases = Phases()
    phases.process_start()
    try:
        fmt = _output_format(args, options)
        parsed = Options.parse(**options, positions=_positions(args, fmt),
                               backend=args.backend, aligned_strings=_strings(args, fmt),
                               strand=args.strand, mask=args.mask)
        count = run_job(args.queries, args.targets, args.output, fmt, parsed, phases=phases,
                        strip_gaps=args.strip_gaps, command=_command_line(argv),
                        sort=args.sort)
    except (ValueError, OSError, GpuUnavailableError) as exc:
        return _failed(exc)
    return _done(args, phases, f"{count} pairs")


def _align_long_command(args, parser) -> int:
    from ._long_job import run as run_job
    from ._search import check_output
    from ._timing import Phases
    from .gpu import GpuUnavailableError

    options = scoring_options(args, parser)
    if args.top < 1:
        parser.error(f"--top must be at least 1, got {args.top}")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.scheduler and args.workers is not None:
        parser.error("--workers sizes a local cluster; with --scheduler the running "
                     "cluster's workers are used")
    if (args.scheduler or args.workers is not None) and args.backend == "gpu":
        parser.error("--scheduler and --workers spread the CPU score passes; one pair over "
                     "several GPUs is not built yet (--backend gpu runs on this process's GPU)")
    phases = Phases()
    phases.process_start()
    try:
        check_output(args.output)
        if args.plot is not None:
            check_output(args.plot)
        hits = run_job(args.query, args.target, args.output, top=args.top,
                       backend=args.backend, plot_path=args.plot,
                       progress=not args.no_progress, phases=phases,
                       n_workers=args.workers, scheduler=args.scheduler, **options)
    except (ValueError, OSError, NotImplementedError, ConnectionError,
            GpuUnavailableError) as exc:
        return _failed(exc)
    return _done(args, phases, f"{len(hits)} alignment(s)")
