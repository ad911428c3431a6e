"""The search job behind ``swdask search``: every query against a database, best hits per query.

This module parses the job's options, reads and checks the queries, picks where the search
runs and writes the hits; the search itself is one pipeline under one of three runners
(:mod:`swdask._runners`): in this process on the CPU, on this machine's GPUs with no cluster
(``gpu`` and ``cudf`` alike), or on a Dask cluster (``--workers N``: a local one, a
LocalCUDACluster of one worker per GPU for ``cudf``; ``--scheduler``: a running one). Every
query runs against each part of the database in one pass, which returns only each query's
best hits; the parts' partial results are then ranked together. Each part is read, encoded
and (on the GPU) laid out once for all the queries.

Ranking: score descending, ties broken by the target's place in the database (its record
number, the index of :func:`swdask.read_fasta`), so the result does not depend on the
partitioning. Targets that score 0 (no local alignment at all) are not hits, so a query may
have fewer than ``top`` hits. The job times its phases (start-up, reading the queries, the
search itself with the database read inside it, writing), :class:`Phases`.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ._api import OPTION_PARAMETERS
from ._fasta import expand_paths, parse_blocksize
from ._many_queries import (ALIGNMENT_RANK, check_alignments_per_target, check_top,
                            hit_statistics, prepare_queries)
from ._options import Options
from ._results import ALIGNED_STRINGS, ALIGNMENT_COLUMNS, STRAND
from ._runners import SearchJob, pick_runner, run
from ._timing import Phases, process_age

#: Columns of the hits table, in order. Positions are 0-based and end-exclusive:
#: query[query_start:query_end] and target[target_start:target_end] are the aligned segments.
HIT_COLUMNS = ("query_id", "rank", "target_id", "score", "query_start", "query_end",
               "target_start", "target_end", "target_description")
#: Columns that come after ``score`` when the search computed them (statistics), and before
#: ``target_description`` (the alignment).
_STATISTICS_COLUMNS = ("bitscore", "evalue")
#: Output formats (``--format``); ``auto`` picks one from the output's suffix.
FORMATS = ("auto", "tsv", "csv", "parquet", "blast6", "sam", "bam")
#: The formats of reads aligned to references (SAM's records; BAM is their compressed binary
#: form, written through pysam).
SAM_FORMATS = ("sam", "bam")
#: BLAST's tabular output (-outfmt 6 / ssearch36 -m 8), in order.
BLAST6_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart",
                  "qend", "sstart", "send", "evalue", "bitscore")

#: The scoring keywords of every alignment entry point (the options less positions, backend).
_SCORING_KEYS = tuple(p.name for p in OPTION_PARAMETERS if p.name not in ("positions", "backend"))


def hits_table(hits: pd.DataFrame) -> pd.DataFrame:
    """The search's hits (``id`` and ``description`` kept) as the table :data:`HIT_COLUMNS`."""
    strings = pd.StringDtype("pyarrow")
    table = hits.rename(columns={"id": "target_id", "description": "target_description"})
    table = table.astype({"query_id": strings, "target_id": strings,
                          "target_description": strings})
    columns = list(HIT_COLUMNS)
    if ALIGNMENT_RANK in table.columns:  # several alignments per target: after the hit's rank
        columns.insert(columns.index("rank") + 1, ALIGNMENT_RANK)
    if STRAND in table.columns:  # strand="both": after the positions it qualifies
        columns.insert(columns.index("target_end") + 1, STRAND)
    columns[4:4] = [c for c in _STATISTICS_COLUMNS if c in table.columns]
    columns[-1:-1] = [c for c in ALIGNMENT_COLUMNS + ALIGNED_STRINGS + ("target_length",)
                      if c in table.columns]
    return table[columns].reset_index(drop=True)


def output_format(output: str, fmt: str = "auto") -> str:
    """``"parquet"``, ``"csv"``, ``"tsv"`` or ``"blast6"``: ``fmt`` unless ``"auto"``, else
    from the output name (``-`` is TSV on stdout; ``.m8``/``.blast6`` is BLAST's tabular)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt in ("parquet", "bam") and output == "-":
        raise ValueError(f"--format {fmt} cannot go to standard output; name a file with -o")
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
    if name.endswith(".bam"):
        return "bam"
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


def _no_statistics(scoring, wanted: str) -> str:
    return (f"{wanted} needs E-values, and they are a local alignment's (Karlin-Altschul): "
            f"mode={scoring.alignment_mode!r} has none; use mode 'local', or another output "
            f"format (tsv, csv, parquet, sam)")


def check_statistics(fmt: str, evalue, scoring, source: str = "blast"):
    """The search's ``statistics`` for an output format, an ``--evalue`` filter and
    ``--statistics`` (``source``): ``"search"`` as asked; ``"composition"`` as asked, where
    BLAST publishes ``scoring``'s parameters; else ``"auto"`` for the tables and ``"blast"``
    where E-values are needed (blast6, ``--evalue``), which must then be published for
    ``scoring`` (a Scoring): a ValueError saying so otherwise, before any work."""
    from ._statistics import blast_parameters, composition_ratios

    if not scoring.is_local and (fmt == "blast6" or evalue is not None or
                                 source in ("search", "composition")):
        raise ValueError(_no_statistics(scoring, "--format blast6" if fmt == "blast6" else
                                        "--evalue" if evalue is not None else
                                        f"--statistics {source}"))
    if source == "search":
        return "search"
    if source == "composition":
        composition_ratios([], [], scoring)  # a protein matrix's, or the error naming it
    elif fmt != "blast6" and evalue is None:
        return "auto"
    if blast_parameters(scoring, warn=False) is None:
        wanted = ("--statistics composition" if source == "composition" else
                  "--format blast6" if fmt == "blast6" else "--evalue")
        raise ValueError(
            f"{wanted} needs E-values, and NCBI BLAST publishes no statistics for "
            f"{scoring.name} with gap_open={scoring.gap_open}, gap_extend={scoring.gap_extend}"
            f" (swdask's gap costs; BLAST's are one less on the opening); choose a protein "
            f"matrix and gap cost BLAST supports (e.g. BLOSUM62 with --gap-open 12 "
            f"--gap-extend 1, BLAST's default), or fit them to this search with --statistics "
            f"search")
    return "composition" if source == "composition" else "blast"


def blast6_table(hits: pd.DataFrame, queries: pd.DataFrame | None = None) -> pd.DataFrame:
    """The hits (with alignments and statistics) as BLAST's 12 tabular columns, formatted as
    BLAST writes them: pident with 3 decimals, E-values as ``%.2e`` (0.0 below the smallest
    double), bit scores with one decimal; coordinates 1-based, inclusive. A statistic the
    search could not give (``statistics="search"`` for a query that met too few rows to fit)
    is written ``NA``. A minus-strand hit (``strand`` ``"-"``, which needs the ``queries``
    frame for the query's length) is written as blastn writes one: qstart < qend on the query
    as given, sstart > send."""
    def evalue_text(value):
        if pd.isna(value):
            return "NA"
        return "0.0" if value == 0 else f"{value:.2e}"

    hits = hits[(hits["score"] > 0).to_numpy(dtype=bool, na_value=False)]  # hits only
    query_start, query_end = hits["query_start"] + 1, hits["query_end"]
    target_start, target_end = hits["target_start"] + 1, hits["target_end"]
    if STRAND in hits.columns:
        minus = (hits[STRAND] == "-").to_numpy(dtype=bool, na_value=False)
        # the positions are on the reverse complement as aligned: on the query as given the
        # segment is [length - query_end, length - query_start), and its first letter
        # aligns with the target segment's last
        if queries is None and minus.any():
            raise ValueError("blast6 output of minus-strand hits needs the queries (their "
                             "lengths): pass queries= to write_hits")
        lengths = ({} if queries is None else
                   dict(zip(queries["id"].astype(str), queries["sequence"].str.len())))
        length = hits["query_id"].astype(str).map(lengths).fillna(0).to_numpy(dtype=np.int64)
        query_start, query_end = (query_start.where(~minus, length - hits["query_end"] + 1),
                                  query_end.where(~minus, length - hits["query_start"]))
        target_start, target_end = (target_start.where(~minus, hits["target_end"]),
                                    target_end.where(~minus, hits["target_start"] + 1))
    return pd.DataFrame({
        "qseqid": hits["query_id"], "sseqid": hits["target_id"],
        "pident": [f"{100 * v:.3f}" for v in hits["identity"]],
        "length": hits["alignment_length"], "mismatch": hits["mismatches"],
        "gapopen": hits["gap_opens"], "qstart": query_start, "qend": query_end,
        "sstart": target_start, "send": target_end,
        # no statistics at all (swdask pairs): NA, as for a query too small to fit
        "evalue": [evalue_text(v) for v in hits.get("evalue", [pd.NA] * len(hits))],
        "bitscore": ["NA" if pd.isna(v) else f"{v:.1f}"
                     for v in hits.get("bitscore", [pd.NA] * len(hits))]})


def check_format(fmt: str, scoring_options: dict, aligned_strings: bool = False) -> None:
    """Refuse, before any work, a format the scoring cannot give (SAM is for DNA reads) or
    that has no room for the aligned strings (BLAST's 12 columns, SAM's fields)."""
    if fmt in SAM_FORMATS and scoring_options.get("matrix") is not None:
        raise ValueError(f"--format {fmt} writes DNA reads aligned to references: pass --dna "
                         "(protein hits go to tsv, parquet or blast6)")
    if fmt == "bam":
        _pysam()
    if aligned_strings and fmt in ("blast6", *SAM_FORMATS):
        raise ValueError(f"--aligned-strings adds columns to tsv, csv or parquet output; "
                         f"--format {fmt} has fixed fields (drop one of the two)")


def _pysam():
    """pysam (htslib's Python binding: BAM is htslib's format, and pysam writes, sorts and
    indexes it as samtools does), or a ValueError saying how to get it."""
    try:
        import pysam
    except ImportError:
        raise ValueError("writing BAM needs pysam: pip install 'swdask[bam]' (or write SAM "
                         "with -o hits.sam and convert it with samtools)") from None
    return pysam


def md_tag(query_aligned: str, target_aligned: str) -> str:
    """SAM's ``MD:Z`` of one alignment from its gapped strings (query above, reference below):
    the counts of matching columns between each mismatch (the reference's letter) and each
    deletion (``^`` and the reference's letters); insertions (query letters against ``-``)
    do not appear. ``10A5^AC6`` for 10 matches, a mismatch against ``A``, 5 matches, 2
    reference letters deleted, 6 matches."""
    parts, run, deleting = [], 0, False
    for read, reference in zip(query_aligned, target_aligned):
        if reference == "-":  # an insertion: not in MD, and it ends no deletion run
            continue
        if read == "-":
            if not deleting:
                parts.append(f"{run}^")
                run, deleting = 0, True
            parts.append(reference)
            continue
        deleting = False
        if read == reference:
            run += 1
        else:
            parts.append(f"{run}{reference}")
            run = 0
    parts.append(str(run))
    return "".join(parts)


def sam_text(hits: pd.DataFrame, queries: pd.DataFrame, command: str = "") -> str:
    """The hits (with alignments) as SAM 1.6: each query a read aligned to its target
    (``@SQ`` for every target with a hit, its length from ``target_length``); rank 1 is the
    primary line (FLAG 0), the others secondary (FLAG 256); the query as given, forward strand;
    the CIGAR of the alignment with the query's unaligned ends soft-clipped (``S``), so it
    spans the whole read; ``AS:i`` the score, ``NM:i`` the edit distance (mismatches and gap
    residues), ``MD:Z`` (:func:`md_tag`) where the hits carry their gapped strings
    (``--md``); POS
    1-based; MAPQ 255 (not computed); QUAL the read's qualities where the
    queries came from FASTQ (``quality``), else ``*``. A row that did not align (a pair of
    ``swdask pairs`` scoring 0) is an unmapped read (FLAG 4, no position). A minus-strand hit
    (``strand`` ``"-"``) has FLAG 16 and the read's reverse complement as SEQ, which its
    positions and CIGAR already describe."""
    from . import __version__

    sequences = dict(zip(queries["id"].astype(str), queries["sequence"].astype(str)))
    qualities = (dict(zip(queries["id"].astype(str), queries["quality"].astype(str)))
                 if "quality" in queries.columns else {})
    lines = ["@HD\tVN:1.6\tSO:unsorted"]
    aligned = (hits["score"] > 0).to_numpy(dtype=bool, na_value=False)
    targets = hits[aligned].drop_duplicates("target_id")
    lines += [f"@SQ\tSN:{name}\tLN:{int(length)}"
              for name, length in zip(targets["target_id"], targets["target_length"])]
    lines.append(f"@PG\tID:swdask\tPN:swdask\tVN:{__version__}"
                 + (f"\tCL:{command}" if command else ""))
    return "\n".join(lines + _sam_records(hits, aligned, sequences, qualities)) + "\n"


def _sam_records(hits: pd.DataFrame, aligned, sequences: dict, qualities: dict) -> list:
    """:func:`sam_text`'s alignment lines, in the hits' order, built a column at a time
    (pandas' string operations over every hit, not a Python line per hit: 100,000 reads'
    SAM in a fraction of the time)."""
    from ._sequences import reverse_complement_text

    if not len(hits):
        return []
    text = pd.StringDtype("pyarrow")
    name = hits["query_id"].astype(str).reset_index(drop=True)
    read = name.map(sequences)
    quality = name.map(qualities).fillna("*") if qualities else pd.Series("*", index=name.index)
    quality = quality.where(quality != "", "*")
    minus = pd.Series((hits[STRAND] == "-").to_numpy(dtype=bool, na_value=False)
                      if STRAND in hits.columns else np.zeros(len(hits), dtype=bool))
    minus &= pd.Series(aligned)
    if minus.any():  # the read as it aligned: reverse-complemented, its qualities reversed
        read[minus] = read[minus].map(reverse_complement_text)
        quality[minus] = quality[minus].map(lambda q: q if q == "*" else q[::-1])
    lines = pd.Series("", index=name.index, dtype=object)
    hit = pd.Series(aligned)
    if hit.any():
        rows = hits.reset_index(drop=True)[hit]

        def number(column, offset=0):
            return (rows[column].astype("int64") + offset).astype(str)

        left = rows["query_start"].astype("int64")
        right = read[hit].str.len() - rows["query_end"].astype("int64")
        cigar = (left.astype(str).where(left > 0, "") + np.where(left > 0, "S", "")
                 + rows["cigar"].astype(str)
                 + right.astype(str).where(right > 0, "") + np.where(right > 0, "S", ""))
        # ranks after the first are secondary; a table without ranks (swdask pairs) holds
        # each read's one alignment
        rank = rows["rank"].astype("int64") if "rank" in rows.columns else 1
        if ALIGNMENT_RANK in rows.columns:  # a hit's further alignments are secondary too
            rank = np.maximum(rank, rows[ALIGNMENT_RANK].astype("int64"))
        flag = np.where(rank == 1, 0, 256) | np.where(minus[hit], 16, 0)
        edits = rows["alignment_length"].astype("int64") - rows["matches"].astype("int64")
        md = ""
        if "target_aligned" in rows.columns:  # (the commands ask for the strings with --md)
            md = "\tMD:Z:" + pd.Series(
                [md_tag(q, t) for q, t in zip(rows["query_aligned"].astype(str),
                                              rows["target_aligned"].astype(str))],
                index=rows.index)
        lines[hit] = (name[hit] + "\t" + pd.Series(flag, index=rows.index).astype(str) + "\t"
                      + rows["target_id"].astype(str) + "\t" + number("target_start", 1)
                      + "\t255\t" + cigar + "\t*\t0\t0\t" + read[hit] + "\t"
                      + quality[hit] + "\tAS:i:" + number("score") + "\tNM:i:"
                      + edits.astype(str) + md)
    if not hit.all():  # pairs that did not align (swdask pairs): unmapped, FLAG 4
        missing = ~hit
        lines[missing] = (name[missing] + "\t4\t*\t0\t0\t*\t*\t0\t0\t"
                          + read[missing].where(read[missing] != "", "*") + "\t"
                          + quality[missing])
    return lines.astype(text).tolist()


def write_hits(hits: pd.DataFrame, output: str, fmt: str = "auto", stdout=None,
               queries: pd.DataFrame | None = None, command: str = "",
               sort: bool = False) -> None:
    """Write the hits table to ``output`` in ``fmt`` (:func:`output_format`; SAM and BAM need
    the ``queries`` frame, and so does blast6 with minus-strand hits), whole or not at all: a
    file is written under a temporary name beside it, then renamed. ``sort`` (BAM): the
    records sorted by reference and position (``SO:coordinate``) and the index written
    beside the file (``.bai``), as ``samtools sort`` and ``samtools index`` make them."""
    if sort and output_format(output, fmt) != "bam":
        raise ValueError("--sort sorts and indexes BAM output: write -o hits.bam")
    import sys

    fmt = output_format(output, fmt)
    if output == "-":
        target = stdout or sys.stdout
        _write(hits, target, fmt, queries=queries, command=command)
        return
    folder, name = os.path.split(os.path.abspath(output))
    temporary = os.path.join(folder, f".{name}.swdask-partial")
    try:
        _write(hits, temporary, fmt, compression_of=output, queries=queries, command=command,
               sort=sort)
        if sort:  # the index of the file under its own name
            _pysam().index(temporary, output + ".bai")
        os.replace(temporary, output)
    except ValueError as error:  # name the file the user asked for, not the temporary one
        raise ValueError(f"writing {output}: {error}") from None
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _write(hits: pd.DataFrame, target, fmt: str, compression_of=None, queries=None,
           command: str = "", sort: bool = False) -> None:
    compression = "infer" if compression_of is None else _compression(compression_of)
    if fmt == "bam":
        _write_bam(sam_text(hits, queries, command), target, sort)
    elif fmt == "sam":
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
        blast6_table(hits, queries).to_csv(target, sep="\t", index=False, header=False,
                                  compression=compression)
    else:
        hits.to_csv(target, sep="," if fmt == "csv" else "\t", index=False,
                    compression=compression)


def _write_bam(text: str, target: str, sort: bool) -> None:
    """SAM ``text`` as BAM at ``target`` (a path), through pysam's ``samtools view`` (or
    ``samtools sort`` with ``sort``: coordinate-sorted), htslib's own conversion: the records
    parsed by htslib, so a field it would refuse fails here (pysam's ``SamtoolsError``),
    before the file is renamed into place. The BGZF blocks are compressed on every core this
    process may use: compression is most of a BAM's write, and a record loop in Python
    through ``AlignmentFile`` takes as long on one core. ``--no-PG``: the header's ``@PG`` is
    swdask's command, not samtools'."""
    import tempfile

    pysam = _pysam()
    threads = str(max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(target))) as folder:
        sam = os.path.join(folder, "hits.sam")
        with open(sam, "w") as out:
            out.write(text)
        try:
            if sort:
                pysam.sort("--no-PG", "-@", threads, "-o", target, "-O", "bam",
                           "-T", os.path.join(folder, "sort"), sam, catch_stdout=False)
            else:
                pysam.view("--no-PG", "-@", threads, "-b", "-o", target, sam,
                           catch_stdout=False)
        except pysam.utils.SamtoolsError:
            raise ValueError("htslib refused a SAM record (its message is above); write "
                             "-o hits.sam to see the records") from None


def _compression(output: str):
    """pandas' compression for the output's suffix (the temporary name has none)."""
    for suffix, name in ((".gz", "gzip"), (".bz2", "bz2"), (".xz", "xz"), (".zst", "zstd")):
        if output.lower().endswith(suffix):
            return name
    return None


def check_database(paths) -> None:
    """Refuse, before any work, database files that are missing or all empty."""
    fs, found = expand_paths(paths)
    if all(int(fs.size(p)) == 0 for p in found):
        names = ", ".join(found[:3]) + (" ..." if len(found) > 3 else "")
        raise ValueError(f"the database ({names}) is empty: no FASTA record to search")


def read_sequences(path, strip_gaps: bool = False) -> pd.DataFrame:
    """A FASTA or FASTQ file (told apart by its first character, ``>`` or ``@``; compressed
    too) as a pandas frame: ``id``, ``description``, ``sequence``, and for FASTQ
    ``quality``."""
    from ._fastq import is_fastq, read_fastq_frame

    if is_fastq(path):
        if strip_gaps:
            raise ValueError(f"{path} is FASTQ: --strip-gaps is for aligned FASTA")
        return read_fastq_frame(path)
    from ._fasta import read_fasta_frame

    return read_fasta_frame(path, blocksize=None, threads=1, strip_gaps=strip_gaps)


def read_queries(path, scoring, strip_gaps: bool = False):
    """The query file (FASTA or FASTQ: :func:`read_sequences`) as a pandas frame, every
    query checked under ``scoring``: an empty file or a bad query is a ValueError naming
    it."""
    queries = read_sequences(path, strip_gaps)
    if queries.empty:
        raise ValueError(f"{path}: no query records (the file holds no '>' or '@' header)")
    try:
        prepare_queries(queries, scoring)  # a bad query fails here, named
    except ValueError as exc:
        raise type(exc)(f"{exc} (in {path})") from None
    return queries


def read_profiles(paths, scoring) -> pd.DataFrame:
    """PSI-BLAST ASCII PSSM files (:meth:`swdask.Profile.read_pssm`) as the queries frame
    the search takes: ``id`` each file's name without its last suffix, ``description``
    empty, ``sequence`` the :class:`~swdask.Profile`; each checked under ``scoring`` (a
    ValueError naming the file)."""
    from ._profile import Profile

    profiles = [Profile.read_pssm(path) for path in paths]
    ids = [os.path.splitext(os.path.basename(os.fspath(path)))[0] for path in paths]
    frame = pd.DataFrame({"id": ids, "description": [""] * len(ids),
                          "sequence": pd.Series(profiles, dtype=object)})
    try:
        prepare_queries(frame, scoring)  # a profile the scoring cannot take fails here
    except ValueError as exc:
        raise type(exc)(f"{exc} (in {', '.join(map(str, paths))})") from None
    return frame


def search(queries_path, database_path, *, top: int = 10, blocksize="auto", n_workers=None,
           scheduler=None, progress: bool = True, backend: str = "auto", report=None,
           phases: Phases | None = None, positions=True, statistics="auto", evalue=None,
           strip_gaps: bool = False, all_vs_all: bool = False, include_self: bool = False,
           alignments_per_target: int = 1, **scoring_options) -> pd.DataFrame:
    """Run the search (in this process, on the local GPUs, or on a cluster: ``n_workers``
    local worker processes, or ``scheduler``; see the module docstring); the hits table.

    ``queries_path`` is a FASTA path, or the frame :func:`read_queries` gave.
    ``scoring_options`` are those of :func:`swdask.align` (matrix, gap_open, gap_extend,
    match, mismatch, on_unknown); ``positions`` (``True`` or ``"alignment"``) and
    ``statistics`` those of ``.sw.search``; ``evalue`` keeps hits of at most that E-value.
    Scoring, queries and options are checked before any cluster starts, so a mistake costs no
    start-up time. ``phases`` (a :class:`Phases`) collects the seconds of each phase.
    ``all_vs_all``: the database (one file, the queries' own) searched against itself, each
    unordered pair scored once (:mod:`swdask._all_vs_all`; the self hits with
    ``include_self``). ``alignments_per_target`` that of ``.sw.search``: in this process only
    (the runner of neither a cluster nor the local GPUs), not with all against all.
    """
    from ._cluster import _report_to_stderr

    phases = phases if phases is not None else Phases()
    top = check_top(top)
    unknown = set(scoring_options) - set(_SCORING_KEYS)
    if unknown:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    if backend not in ("auto", "cpu", "gpu", "cudf"):
        raise ValueError(f"backend must be 'auto', 'cpu', 'gpu' or 'cudf', got {backend!r}")
    # "cudf": on a cluster the database partitions live on the GPUs as cuDF frames
    # (read_fasta's cuDF backend) and the GPU backend reads them there
    several = alignments_per_target != 1  # checked with the options below
    options = Options.parse(**scoring_options, positions="alignment" if several else positions,
                            backend="gpu" if backend == "cudf" else backend)
    check_alignments_per_target(alignments_per_target, options)
    if several and (all_vs_all or scheduler is not None or n_workers is not None
                    or backend in ("gpu", "cudf")):
        raise ValueError(f"alignments_per_target={alignments_per_target} "
                         f"(--alignments-per-target) runs in this process only: drop "
                         f"--workers, --scheduler, --backend gpu/cudf and --all-vs-all, or "
                         f"use the in-memory .sw.search")
    if evalue is not None and statistics not in ("blast", "search"):
        raise ValueError("evalue= filters on E-values: pass statistics='blast' or 'search' "
                         "with it")
    if all_vs_all:
        return hits_table(_below(_search_itself(
            queries_path, database_path, options, top, include_self, statistics, scheduler,
            n_workers, strip_gaps, phases, report), evalue))
    runner = pick_runner(backend, scheduler, n_workers)
    try:
        runner.start()  # what can run beside the queries' read (GPU 0's driver, processes)
        if isinstance(queries_path, pd.DataFrame):  # read already (read_queries)
            queries = queries_path
        else:
            with phases("queries"):
                queries = read_queries(queries_path, options.scoring, strip_gaps)
        check_database(database_path)  # missing or empty files fail here, before any cluster
        if blocksize != "auto":
            parse_blocksize(blocksize)
        ids, prepared = prepare_queries(queries, options.scoring)
        job = SearchJob(database=database_path, queries=queries, ids=ids, prepared=prepared,
                        top=top, options=options, statistics=statistics,
                        stats=hit_statistics(statistics, options.scoring, prepared),
                        blocksize=blocksize, strip_gaps=strip_gaps, progress=progress,
                        phases=phases, report=report or _report_to_stderr,
                        alignments_per_target=alignments_per_target)
        hits = run(job, runner)
    finally:
        runner.stop()
    return hits_table(_below(hits, evalue))


def check_itself(queries_path, database_path) -> None:
    """A ValueError unless the queries and the database are one and the same file (an
    all-against-all search)."""
    queries, database = expand_paths(queries_path)[1], expand_paths(database_path)[1]
    if len(queries) != 1 or len(database) != 1 or \
            Path(queries[0]).resolve() != Path(database[0]).resolve():
        raise ValueError("--all-vs-all searches one file against itself: give the same FASTA "
                         "file as the queries and the database (swdask search DB.fa DB.fa "
                         "--all-vs-all)")


def _search_itself(queries_path, database_path, options, top: int, include_self: bool,
                   statistics, scheduler, n_workers, strip_gaps: bool, phases: Phases,
                   report) -> pd.DataFrame:
    """:func:`search` with ``all_vs_all``: the one database file read once, its records
    searched against each other (:func:`swdask._all_vs_all.search_all_vs_all`), in this
    process, or on a cluster (``scheduler``, or ``n_workers`` local workers)."""
    from contextlib import nullcontext

    from . import _timing
    from ._all_vs_all import check_symmetric, search_all_vs_all
    from ._cluster import _report_to_stderr, cluster

    if not isinstance(queries_path, pd.DataFrame):  # a frame: read from the checked path
        check_itself(queries_path, database_path)
    path = expand_paths(database_path)[1][0]
    check_symmetric(options)  # before the file is read
    with phases("queries"):
        database = read_sequences(path, strip_gaps)
    if database.empty:
        raise ValueError(f"{path}: no records (the file holds no '>' or '@' header)")
    on_cluster = scheduler is not None or n_workers is not None
    with (cluster(scheduler, n_workers, gpu=False, report=report or _report_to_stderr)
          if on_cluster else nullcontext()) as client:
        with phases("search"):
            _timing.take()  # from zero: only this job's stages
            hits = search_all_vs_all(database["sequence"], database["id"].tolist(), options,
                                     top, include_self=include_self, statistics=statistics,
                                     kept=database[["id", "description"]], client=client)
        phases.add_in_tasks(_timing.take())
        return hits


def _below(hits: pd.DataFrame, evalue) -> pd.DataFrame:
    """The hits of E-value at most ``evalue`` (all of them for None). Within a query the
    E-value grows with the rank, so the kept ranks stay 1, 2, ..."""
    if evalue is None:
        return hits
    return hits[(hits["evalue"] <= evalue).fillna(False).to_numpy(dtype=bool)]
