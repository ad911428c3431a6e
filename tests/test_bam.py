"""BAM out (``-o hits.bam``, ``--sort``) and SAM's ``MD:Z``.

BAM is read back with pysam (htslib, what samtools is built on) and, where it is installed,
with samtools itself; ``MD:Z`` is checked by rebuilding each alignment's reference segment
from the read, the CIGAR and the MD string alone (the SAM specification's reading of MD) and
comparing it with the genome, and against ``samtools calmd`` where samtools is installed.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from Bio.Seq import reverse_complement

from swdask._search import md_tag
from swdask.cli import main

from .conftest import check_samtools_counts, mutate

pysam = pytest.importorskip("pysam")
needs_samtools = pytest.mark.skipif(shutil.which("samtools") is None,
                                    reason="needs samtools (apt install samtools)")
DNA = ["--dna", "--match", "2", "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2"]


def reference_from_md(read: str, cigar: str, md: str) -> str:
    """The reference segment an alignment covers, from the read (as aligned), the CIGAR and
    MD alone: matches copy the read, MD's letters replace mismatches, ``^`` runs are the
    deleted reference letters (SAM specification, the MD tag)."""
    ops = [(int(n), op) for n, op in re.findall(r"(\d+)([MIDNSHP=X])", cigar)]
    aligned_read = []  # the read's letters at reference positions (None: deletion)
    k = 0
    for n, op in ops:
        if op in "S":
            k += n
        elif op in "M=X":
            aligned_read += list(read[k:k + n])
            k += n
        elif op == "I":
            k += n
        elif op == "D":
            aligned_read += [None] * n
    out, position = [], 0
    for token in re.findall(r"\d+|\^[A-Z]+|[A-Z]", md):
        if token.isdigit():
            out += aligned_read[position:position + int(token)]
            position += int(token)
        elif token[0] == "^":
            out += list(token[1:])
            position += len(token) - 1
        else:
            out.append(token)
            position += 1
    assert position == len(aligned_read)
    return "".join(out)


def test_md_tag_rules():
    assert md_tag("ACGT", "ACGT") == "4"
    assert md_tag("ACGTAC", "ACTTAC") == "2T3"
    assert md_tag("AC--GT", "ACTTGT") == "2^TT2"
    assert md_tag("ACGGT", "AC-GT") == "4"           # an insertion is not in MD
    assert md_tag("A--T", "AGCA") == "1^GC0A0"       # a mismatch right after a deletion
    assert md_tag("T", "A") == "0A0"


def _genome_and_reads(tmp_path, rng):
    genomes = {f"chr{k}": "".join(rng.choice(list("ACGT"), 3_000)) for k in range(3)}
    reads, truth = [], []
    for k in range(60):
        name = f"chr{k % 3}"
        start = int(rng.integers(0, 2_900))
        read = mutate(genomes[name][start:start + 90], rng, 0.08, "ACGT")
        minus = k % 4 == 1
        reads.append(reverse_complement(read) if minus else read)
        truth.append((name, minus))
    (tmp_path / "genomes.fa").write_text("".join(f">{n}\n{s}\n" for n, s in genomes.items()))
    (tmp_path / "reads.fq").write_text("".join(
        f"@r{k}\n{r}\n+\n{'I' * len(r)}\n" for k, r in enumerate(reads)))
    return genomes, reads, truth


@pytest.mark.parametrize("sort", [False, True])
def test_search_writes_bam_that_htslib_reads(tmp_path, sort):
    """``-o hits.bam``: every record of the SAM the same command writes, in the same order
    (or, with ``--sort``, sorted by reference and position, with an index that answers a
    region query); each MD (``--md``) rebuilds the genome's segment; both strands, ranks 1
    and 2."""
    rng = np.random.default_rng(11)
    genomes, _, _ = _genome_and_reads(tmp_path, rng)
    base = ["search", str(tmp_path / "reads.fq"), str(tmp_path / "genomes.fa"), *DNA,
            "--strand", "both", "--top", "2", "--no-progress", "--backend", "cpu", "--md"]
    sam, bam = tmp_path / "hits.sam", tmp_path / "hits.bam"
    assert main([*base, "-o", str(sam)]) == 0
    assert main([*base, "-o", str(bam), *(["--sort"] if sort else [])]) == 0
    with pysam.AlignmentFile(str(sam), "r") as text:
        want = [record.to_string() for record in text]
        header = text.header.to_dict()
    with pysam.AlignmentFile(str(bam), "rb") as binary:
        records = list(binary.fetch(until_eof=True))
        assert [sq["SN"] for sq in binary.header.to_dict()["SQ"]] == \
            [sq["SN"] for sq in header["SQ"]]
    got = [record.to_string() for record in records]
    assert sorted(got) == sorted(want) and len(got) == len(want) > 60
    if sort:
        keys = [(r.reference_id, r.reference_start) for r in records]
        assert keys == sorted(keys)
        assert (tmp_path / "hits.bam.bai").exists()
        with pysam.AlignmentFile(str(bam), "rb") as indexed:
            region = list(indexed.fetch("chr1", 1000, 2000))
        assert region and all(r.reference_name == "chr1" for r in region)
    else:
        assert got == want
        assert not (tmp_path / "hits.bam.bai").exists()
    flags = {r.flag & ~16 for r in records}
    assert flags == {0, 256} and any(r.is_reverse for r in records)
    for record in records:
        segment = genomes[record.reference_name][record.reference_start:record.reference_end]
        assert reference_from_md(record.query_sequence, record.cigarstring,
                                 record.get_tag("MD")) == segment


@needs_samtools
def test_bam_passes_samtools(tmp_path):
    """samtools quickcheck passes, flagstat counts every hit, calmd finds every MD and NM
    already right, and samtools index accepts the sorted BAM."""
    rng = np.random.default_rng(12)
    _genome_and_reads(tmp_path, rng)
    bam, tsv = tmp_path / "hits.bam", tmp_path / "hits.tsv"
    base = ["search", str(tmp_path / "reads.fq"), str(tmp_path / "genomes.fa"), *DNA,
            "--strand", "both", "--top", "2", "--no-progress", "--backend", "cpu"]
    assert main([*base, "-o", str(bam), "--sort", "--md"]) == 0
    assert main([*base, "--alignment", "-o", str(tsv)]) == 0
    check_samtools_counts(bam, pd.read_csv(tsv, sep="\t"))
    subprocess.run(["samtools", "faidx", str(tmp_path / "genomes.fa")], check=True)
    calmd = subprocess.run(["samtools", "calmd", str(bam), str(tmp_path / "genomes.fa")],
                           capture_output=True, text=True, check=True)
    assert "different" not in calmd.stderr
    subprocess.run(["samtools", "index", str(bam), str(tmp_path / "again.bai")], check=True)


def test_pairs_writes_bam_with_unmapped_pairs(tmp_path):
    """``swdask pairs -o pairs.bam``: one record per pair in file order, an unaligned pair
    unmapped (FLAG 4)."""
    (tmp_path / "q.fa").write_text(">a\nACGTACGTAC\n>b\nACGA\n>c\nGGGGGGGG\n")
    (tmp_path / "t.fa").write_text(">x\nTTACGTACGTACTT\n>y\nTTTT\n>z\nGGGGCGGGG\n")
    out = tmp_path / "pairs.bam"
    assert main(["pairs", str(tmp_path / "q.fa"), str(tmp_path / "t.fa"), *DNA,
                 "--md", "-o", str(out)]) == 0
    with pysam.AlignmentFile(str(out), "rb") as bam:
        records = list(bam.fetch(until_eof=True))
    assert [r.query_name for r in records] == ["a", "b", "c"]
    assert [r.is_unmapped for r in records] == [False, True, False]
    assert records[0].get_tag("MD") == "10" and records[0].reference_start == 2


@pytest.mark.parametrize("args, words", [
    (["-o", "-", "--format", "bam"], "cannot go to standard output"),
    (["-o", "{tmp}/hits.tsv", "--sort"], "--sort sorts and indexes BAM output"),
    (["-o", "{tmp}/hits.bam", "--matrix", "BLOSUM62"], "writes DNA reads"),
    (["-o", "{tmp}/hits.tsv", "--md"], "--md adds SAM's MD:Z tag"),
])
def test_bad_bam_requests_are_named(tmp_path, capsys, args, words):
    """A BAM to standard output, --sort without BAM, protein in BAM, --md without SAM: one
    line on stderr naming what to change, status 1, no file."""
    (tmp_path / "q.fa").write_text(">a\nACGTACGTAC\n")
    (tmp_path / "t.fa").write_text(">x\nTTACGTACGTACTT\n")
    dna = [] if "--matrix" in args else DNA
    code = main(["search", str(tmp_path / "q.fa"), str(tmp_path / "t.fa"), *dna,
                 "--no-progress", *[a.format(tmp=tmp_path) for a in args]])
    err = capsys.readouterr().err
    assert code == 1 and words in err and "Traceback" not in err
    assert not list(tmp_path.glob("hits.*"))


def test_a_record_htslib_refuses_fails_the_write_and_leaves_no_file(tmp_path, monkeypatch):
    """A SAM record htslib cannot parse (here a CIGAR operator it does not know) raises an
    error naming the BAM, and neither the BAM nor a partial file is left behind."""
    import swdask._search as search

    monkeypatch.setattr(search, "sam_text", lambda *args, **kwargs: (
        "@HD\tVN:1.6\n@SQ\tSN:a\tLN:10\nr\t0\ta\t1\t60\t5Q\t*\t0\t0\tACGTA\t*\n"))
    hits = pd.DataFrame({"query_id": ["r"], "target_id": ["a"]})
    for sort in (False, True):
        with pytest.raises(ValueError, match="hits.bam: htslib refused"):
            search.write_hits(hits, str(tmp_path / "hits.bam"), "bam", sort=sort)
        assert list(tmp_path.iterdir()) == []
