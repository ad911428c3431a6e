"""FASTQ in: ``swdask.read_fastq``, FASTQ queries in ``swdask search``, and ``swdask pairs``.

The reference reader is Biopython's ``FastqGeneralIterator``; the real reads are Debian's
``gasic-examples`` (100,000 Illumina reads of 72 bp and the genomes they come from), skipped
where the package is absent; SAM output is checked with samtools where it is installed.
"""
from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from Bio.Seq import reverse_complement
from Bio.SeqIO.QualityIO import FastqGeneralIterator

import swdask
from swdask.cli import main

from .conftest import check_samtools_counts

GASIC = Path("/usr/share/doc/gasic/examples")
READS = GASIC / "reads" / "SRR059298_subset.fastq.gz"
GENOMES = sorted((GASIC / "genomes").glob("*.fasta.gz"))
needs_gasic = pytest.mark.skipif(
    not READS.exists(), reason="needs Debian's gasic-examples (apt install gasic-examples)")
needs_samtools = pytest.mark.skipif(shutil.which("samtools") is None,
                                    reason="needs samtools (apt install samtools)")
DNA = ["--dna", "--match", "2", "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2"]


def reference(path) -> pd.DataFrame:
    """The file as Biopython reads it: id (the title's first word), description (the rest),
    sequence, quality."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig") as handle:  # a BOM is not text
        records = list(FastqGeneralIterator(handle))
    titles = [title.split(None, 1) + [""] for title, _, _ in records]
    return pd.DataFrame({"id": [t[0] for t in titles], "description": [t[1] for t in titles],
                         "sequence": [s for _, s, _ in records],
                         "quality": [q for _, _, q in records]})


def check_equal(frame: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(frame.columns) == ["id", "description", "sequence", "quality"]
    assert list(frame.index) == list(range(len(want)))  # the record number
    for name in want.columns:
        assert frame[name].tolist() == want[name].tolist(), name


def write_reads(path: Path, count: int, seed: int, crlf=False, bom=False, blanks_after=0):
    """Reads of 0-150 letters (empty ones among them), headers with and without a
    description, '+' lines with and without the title repeated."""
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(count):
        length = int(rng.integers(0, 150)) if k % 11 else 0
        sequence = "".join(rng.choice(list("ACGTN"), length))
        quality = "".join(chr(33 + int(v)) for v in rng.integers(0, 42, length))
        title = f"read{k}" + (f" lane:{k % 4} length={length}" if k % 3 else "")
        lines += [f"@{title}", sequence, f"+{title}" if k % 5 == 0 else "+", quality]
    newline = "\r\n" if crlf else "\n"
    text = ("\ufeff" if bom else "") + newline.join(lines) + newline + newline * blanks_after
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("blocksize", [None, 1, 3000, "64MB"])
def test_read_fastq_equals_biopython(tmp_path, blocksize):
    """Every blocksize gives Biopython's records, numbered in file order, whatever the line
    endings, a byte-order mark or blank lines after the last record; several files (one
    compressed) follow each other."""
    plain = write_reads(tmp_path / "a.fq", 700, 1, crlf=True, bom=True, blanks_after=2)
    other = write_reads(tmp_path / "b.fastq", 300, 2)
    packed = tmp_path / "b.fastq.gz"
    packed.write_bytes(gzip.compress(other.read_bytes()))
    want = pd.concat([reference(tmp_path / "a.fq"), reference(other)], ignore_index=True)
    frame = swdask.read_fastq([str(plain), str(packed)], blocksize=blocksize)
    if blocksize == 1:
        assert frame.npartitions > 500  # a record per partition, or nearly
    got = frame.compute()
    check_equal(got, want)
    assert frame.divisions[0] == 0 and frame.divisions[-1] == len(want) - 1


@needs_gasic
def test_read_fastq_reads_the_gasic_reads():
    got = swdask.read_fastq(str(READS)).compute()
    check_equal(got, reference(READS))
    assert len(got) == 100_000 and (got["sequence"].str.len() == 72).all()


@pytest.mark.parametrize("text, line, words", [
    ("@a\nACGT\n+\nIII\n", 4, "quality has 3 characters for a sequence of 4"),
    ("@a\nAC\n+\nII\n@b\nAC\n", 5, "has 2 of its 4 lines"),
    ("@a\nAC\n+\nII\nb\nAC\n+\nII\n", 5, "'@' header"),
    ("@a\nAC\n+\nII\n@b\nAC\nII\n+\n", 7, "'+' separator"),
    ("@a\nAC\n+\nII\n@  \nAC\n+\nII\n", 5, "without an id"),
    ("@a\nA C\n+\nIII\n", 2, "a space in the sequence"),
    ("@a\nAC\n+\nI\x7f\n", 4, "is not text"),
    ("@a\nACGT\nAC\n+\nIIIIII\n", 3, "'+' separator"),  # multi-line FASTQ
])
def test_malformed_fastq_names_the_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "bad.fq"
    path.write_text(text)
    with pytest.raises(swdask.FastaError, match=rf"bad\.fq, line {line}: .*{re.escape(words)}"):
        swdask.read_fastq(str(path)).compute()


def test_search_reads_fastq_queries_and_writes_their_qualities(tmp_path):
    """``swdask search`` takes FASTQ queries (told apart from FASTA by their '@'); SAM's
    QUAL is each read's quality string, reversed with the read on the minus strand."""
    rng = np.random.default_rng(3)
    genome = "".join(rng.choice(list("ACGT"), 3000))
    reads = []
    for k in range(12):
        start = int(rng.integers(0, 2900))
        read = genome[start:start + 80]
        reads.append(reverse_complement(read) if k % 2 else read)
    qualities = ["".join(chr(35 + (k + i) % 40) for i in range(80)) for k in range(12)]
    fastq = tmp_path / "reads.fq.gz"
    fastq.write_bytes(gzip.compress("".join(
        f"@r{k} lane1\n{r}\n+\n{q}\n" for k, (r, q) in enumerate(zip(reads, qualities))).encode()))
    (tmp_path / "genome.fa").write_text(f">chr\n{genome}\n")
    out = tmp_path / "hits.sam"
    assert main(["search", str(fastq), str(tmp_path / "genome.fa"), *DNA, "--strand", "both",
                 "--top", "1", "--no-progress", "-o", str(out)]) == 0
    lines = [line.split("\t") for line in out.read_text().splitlines() if line[0] != "@"]
    assert [line[0] for line in lines] == [f"r{k}" for k in range(12)]
    for k, line in enumerate(lines):
        minus = k % 2 == 1
        assert int(line[1]) == (16 if minus else 0)
        assert line[9] == (reverse_complement(reads[k]) if minus else reads[k])
        assert line[10] == (qualities[k][::-1] if minus else qualities[k])
        assert line[5] == "80=" and line[11] == "AS:i:160"


@needs_gasic
@needs_samtools
def test_gasic_reads_to_sam_that_samtools_reads(tmp_path):
    """300 of the gasic reads, both strands, top 2, against the four genomes: samtools'
    quickcheck passes, flagstat counts the hits (primary and secondary), and view gives back
    the same positions and CIGARs; sort and index accept it."""
    frame = swdask.read_fastq(str(READS)).compute().head(300)
    reads = tmp_path / "reads.fq"
    reads.write_text("".join(f"@{i} {d}\n{s}\n+\n{q}\n" for i, d, s, q in frame.itertuples(
        index=False)))
    out = tmp_path / "hits.sam"
    tsv = tmp_path / "hits.tsv"
    base = ["search", str(reads), *map(str, GENOMES), *DNA, "--strand", "both", "--top", "2",
            "--no-progress"]
    assert main([*base, "-o", str(out)]) == 0
    assert main([*base, "--alignment", "-o", str(tsv)]) == 0
    hits = pd.read_csv(tsv, sep="\t")
    check_samtools_counts(out, hits)
    assert (hits["strand"] == "-").sum() > 50 and (hits["strand"] == "+").sum() > 50
    view = subprocess.run(["samtools", "view", str(out)], check=True, capture_output=True,
                          text=True).stdout.splitlines()
    for line, hit in zip(view, hits.itertuples()):
        fields = line.split("\t")
        assert int(fields[3]) == hit.target_start + 1 and hit.cigar in fields[5]
    bam = tmp_path / "hits.bam"
    subprocess.run(["samtools", "sort", "-o", str(bam), str(out)], check=True)
    subprocess.run(["samtools", "index", str(bam)], check=True)


def test_pairs_command_equals_align_pairs(tmp_path):
    """``swdask pairs``: record i against record i, one row per pair in file order (FASTQ
    against FASTA), the columns of ``swdask.align_pairs``; blast6 writes the hits only, SAM
    every read (an unaligned one as unmapped, FLAG 4); different record counts are an
    error naming both files."""
    rng = np.random.default_rng(9)
    regions, reads = [], []
    for k in range(30):
        region = "".join(rng.choice(list("ACGT"), 150))
        read = region[30:102] if k % 7 else "".join(rng.choice(list("ACGT"), 40))
        reads.append(reverse_complement(read) if k % 2 else read)
        regions.append(region)
    reads[4] = ""
    (tmp_path / "reads.fq").write_text("".join(
        f"@read{k}\n{r}\n+\n{'F' * len(r)}\n" for k, r in enumerate(reads)))
    (tmp_path / "regions.fa").write_text("".join(f">region{k} r{k}\n{r}\n"
                                                 for k, r in enumerate(regions)))
    base = ["pairs", str(tmp_path / "reads.fq"), str(tmp_path / "regions.fa"), *DNA,
            "--strand", "both"]
    assert main([*base, "--alignment", "-o", str(tmp_path / "pairs.tsv")]) == 0
    got = pd.read_csv(tmp_path / "pairs.tsv", sep="\t", keep_default_na=False,
                      na_values=[""])
    want = swdask.align_pairs(reads, regions, matrix=None, match=2, mismatch=-3, gap_open=5,
                              gap_extend=2, strand="both", positions="alignment")
    assert got["query_id"].tolist() == [f"read{k}" for k in range(30)]
    assert got["target_id"].tolist() == [f"region{k}" for k in range(30)]
    for name in want.columns:
        assert got[name].astype(object).where(got[name].notna(), None).tolist() == \
            want[name].astype(object).where(want[name].notna(), None).tolist(), name
    assert main([*base, "-o", str(tmp_path / "pairs.m8")]) == 0
    blast = pd.read_csv(tmp_path / "pairs.m8", sep="\t", header=None)
    assert len(blast) == int((want["score"] > 0).sum())
    assert main([*base, "-o", str(tmp_path / "pairs.sam")]) == 0
    sam = [line.split("\t") for line in (tmp_path / "pairs.sam").read_text().splitlines()
           if line[0] != "@"]
    assert [line[0] for line in sam] == [f"read{k}" for k in range(30)]
    assert sam[4][1:6] == ["4", "*", "0", "0", "*"]
    assert all(int(line[1]) & 16 == (16 if k % 2 else 0)
               for k, line in enumerate(sam) if k != 4 and k % 7)
    (tmp_path / "short.fa").write_text(">x\nACGT\n")
    assert main(["pairs", str(tmp_path / "reads.fq"), str(tmp_path / "short.fa"), "--dna",
                 "-o", str(tmp_path / "never.tsv")]) == 1
    assert not (tmp_path / "never.tsv").exists()
