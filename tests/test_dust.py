"""DUST masking of DNA (``mask="dust"``): the intervals against NCBI's ``dustmasker``, and what
masking does to the scores.

The reference is ``dustmasker -outfmt interval`` (Debian's ``ncbi-blast+``) on the real data
of the issue: gasic-examples' four genomes, hmmer's tutorial ``dna_target.fa`` and the
Klebsiella plasmids of kleborate-examples; each skipped where its package is absent. Masked
letters must score exactly as the same letters written ``N``, on the CPU and the GPU (host
emulation in CI).
"""
from __future__ import annotations

import gzip
import lzma
import re
import shutil
import subprocess
from pathlib import Path

import dask.config
import numpy as np
import pandas as pd
import pytest

import swdask
from swdask.cli import main

pytest.importorskip("pydustmasker")
from swdask._dust import WINDOW, dust_intervals  # noqa: E402

from .test_traceback import _gpu_runtime  # noqa: E402

DNA = dict(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
GASIC = sorted(Path("/usr/share/doc/gasic/examples/genomes").glob("*.fasta.gz"))
HMMER = Path("/usr/share/doc/hmmer/examples/tutorial/dna_target.fa")
KLEBORATE = sorted(Path("/usr/share/doc/kleborate/examples/data").glob("*.fna.xz"))
#: Klebsiella records shorter than this are the plasmids (the chromosomes are ~5.3 Mbp).
PLASMID_MAX = 1_000_000


def _records(path: Path):
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "rt") as handle:
        text = handle.read()
    for block in text.split(">")[1:]:
        title, _, body = block.partition("\n")
        yield title.split()[0], body.replace("\n", "").upper()


def _dustmasker(records: list, tmp_path: Path) -> dict:
    path = tmp_path / "in.fa"
    path.write_text("".join(f">{name}\n{seq}\n" for name, seq in records))
    out = subprocess.run(["dustmasker", "-in", str(path), "-outfmt", "interval"],
                         check=True, capture_output=True, text=True).stdout
    found, name = {}, None
    for line in out.splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            found[name] = []
        elif line.strip():
            start, end = line.split(" - ")
            found[name].append((int(start), int(end) + 1))  # end-inclusive -> exclusive
    return found


def _far_from_ambiguity(intervals, sequence: str) -> list:
    """The intervals with no letter other than ACGT within a window of them (where
    dustmasker's pseudo-random base for an ambiguous letter cannot reach: swdask._dust)."""
    ambiguous = np.flatnonzero(np.frombuffer(re.sub("[ACGT]", "A", sequence).encode(),
                                             dtype=np.uint8) != ord("A"))
    return [(s, e) for s, e in intervals
            if not ((ambiguous >= s - WINDOW) & (ambiguous < e + WINDOW)).any()]


@pytest.mark.skipif(shutil.which("dustmasker") is None,
                    reason="needs dustmasker (apt install ncbi-blast+)")
@pytest.mark.parametrize("source", ["gasic", "hmmer", "kleborate-plasmids"])
def test_intervals_equal_dustmasker(source, tmp_path):
    """Every record's intervals equal dustmasker's (window 64, level 20); in a record with
    ambiguous letters, those away from them (dustmasker reads each as a pseudo-random base,
    swdask's DUST restarts its window there)."""
    files = {"gasic": GASIC, "hmmer": [HMMER] if HMMER.exists() else [],
             "kleborate-plasmids": KLEBORATE}[source]
    if not files:
        pytest.skip(f"needs the {source} example data (see docs/notes/dna-reads.md)")
    records = [(name, seq) for path in files for name, seq in _records(path)
               if source != "kleborate-plasmids" or len(seq) < PLASMID_MAX]
    want = _dustmasker(records, tmp_path)
    masked = 0
    for name, sequence in records:
        got = dust_intervals(sequence)
        if set(sequence) <= set("ACGT"):
            assert got == want[name], name
        else:
            assert _far_from_ambiguity(got, sequence) == _far_from_ambiguity(want[name],
                                                                             sequence), name
        masked += len(got)
    assert masked > 0


def _masked_by_hand(sequence: str) -> str:
    letters = list(sequence)
    for start, end in dust_intervals(sequence):
        letters[start:end] = "N" * (end - start)
    return "".join(letters)


def _with_repeats(rng, count: int) -> list:
    """Random DNA with microsatellites and poly-A runs inside."""
    out = []
    for k in range(count):
        left, right = ("".join(rng.choice(list("ACGT"), int(rng.integers(20, 300))))
                       for _ in range(2))
        unit = ["A", "CA", "CAG", "ATTC"][k % 4]
        out.append(left + unit * int(rng.integers(5, 40)) + right)
    return out


@pytest.mark.parametrize("kind", ["cpu", "emulation"])
def test_masked_letters_score_as_n(kind):
    """``mask="dust"`` gives every row the result of the same sequences with DUST's
    intervals written as N by hand: one query against many rows, the pairs, and a search;
    positions count the masked letters."""
    rng = np.random.default_rng(5)
    targets = _with_repeats(rng, 12)
    queries = [t[max(0, len(t) // 2 - 60):len(t) // 2 + 60] for t in targets]
    targets_n = [_masked_by_hand(t) for t in targets]
    queries_n = [_masked_by_hand(q) for q in queries]
    assert targets_n != targets
    backend = "cpu" if kind == "cpu" else "gpu"
    context = _gpu_runtime("emulation") if kind == "emulation" else dask.config.set({})
    with context:
        column, by_hand = pd.Series(targets), pd.Series(targets_n)
        got = column.sw.align(queries[0], mask="dust", backend=backend, **DNA)
        want = by_hand.sw.align(queries_n[0], backend=backend, **DNA)
        pd.testing.assert_frame_equal(got, want)
        got = swdask.align_pairs(queries, targets, mask="dust", backend=backend,
                                 positions="alignment", **DNA)
        want = swdask.align_pairs(queries_n, targets_n, backend=backend,
                                  positions="alignment", **DNA)
        pd.testing.assert_frame_equal(got, want)
        got = column.sw.search(queries, mask="dust", top=2, backend=backend, **DNA)
        want = by_hand.sw.search(queries_n, top=2, backend=backend, **DNA)
        pd.testing.assert_frame_equal(got, want)
    plain = swdask.align_pairs(queries, targets, **DNA)
    assert (plain["score"].to_numpy() > got.groupby("query_id")["score"].max()
            .reindex(range(len(queries))).fillna(0).to_numpy()).any()


def test_search_command_masks_dust(tmp_path):
    """``swdask search --mask dust`` writes what a search of the masked files writes."""
    rng = np.random.default_rng(6)
    targets = _with_repeats(rng, 8)
    queries = [t[10:150] for t in targets]
    assert_command_masks_as_by_hand(tmp_path, queries, targets, _masked_by_hand, "dust", [
        "--dna", "--match", "2", "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2"])


def assert_command_masks_as_by_hand(tmp_path, queries, targets, by_hand, mask: str,
                                    scoring: list) -> None:
    """``swdask search --mask MASK`` of ``queries`` against ``targets`` writes what the
    search of the same files masked by hand (``by_hand`` of each sequence) writes."""
    for name, seqs in (("q", queries), ("t", targets), ("qm", map(by_hand, queries)),
                       ("tm", map(by_hand, targets))):
        (tmp_path / f"{name}.fa").write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(seqs)))
    base = [*scoring, "--no-progress", "--backend", "cpu", "--top", "3"]
    assert main(["search", str(tmp_path / "q.fa"), str(tmp_path / "t.fa"), *base,
                 "--mask", mask, "-o", str(tmp_path / "masked.tsv")]) == 0
    assert main(["search", str(tmp_path / "qm.fa"), str(tmp_path / "tm.fa"), *base,
                 "-o", str(tmp_path / "by_hand.tsv")]) == 0
    got = pd.read_csv(tmp_path / "masked.tsv", sep="\t").drop(columns=["target_length"],
                                                               errors="ignore")
    want = pd.read_csv(tmp_path / "by_hand.tsv", sep="\t").drop(columns=["target_length"],
                                                                errors="ignore")
    pd.testing.assert_frame_equal(got, want)


def test_dust_is_for_dna():
    with pytest.raises(ValueError, match="mask='dust' masks DNA"):
        swdask.align("ACDEFG", ["ACDEFG"], mask="dust")
    assert dust_intervals("AAA") == []
    frame = swdask.align_pairs(["AAAAAAAAAAAAAAAAAAAA", ""], ["AAAAAAAAAAAAAAAAAAAA", "ACGT"],
                               mask="dust", **DNA)
    assert frame["score"].tolist() == [0, 0]  # all masked: N scores as a mismatch
