"""Composition-based statistics (``statistics="composition"``, blastp's ``-comp_based_stats
1``) and BLAST+'s finite-size E-values: the lambda ratio of two compositions, the E-values of
a search, and (where NCBI BLAST+ is installed) blastp's own E-values on the same hits."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from swdask._scoring import make_scoring
from swdask._sequences import encode_text
from swdask._statistics import (ROBINSON_FREQUENCIES, blast_parameters, composition_ratios,
                                ungapped_lambdas, _amino_acid_scores)
from swdask.cli import main

MMSEQS = Path(os.environ.get("SWDASK_MMSEQS_DB", "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"))
QUERIES = MMSEQS.with_name("QUERY.fasta.gz")
DB = Path(__file__).resolve().parents[1] / "examples" / "data" / "db.fasta"
# blastp's default gap cost, 11 + k for a gap of k: swdask's 12/1
BLASTP = dict(gap_open=12, gap_extend=1)


def _background() -> np.ndarray:
    return (ROBINSON_FREQUENCIES / ROBINSON_FREQUENCIES.sum())[None, :]


def test_standard_ungapped_lambda_and_ratios():
    """BLOSUM62's ungapped lambda under the standard background is BLAST's 0.3176; two
    sequences of that very composition keep their scale (ratio 1), two proline runs take
    the floor (0.5), a short protein against itself loses some (its composition is its own,
    shared), against a proline run none (unlike compositions score less by chance: the ratio
    is clipped at 1)."""
    scoring = make_scoring()
    scores, _ = _amino_acid_scores(scoring)
    assert ungapped_lambdas(scores, _background(), _background(), 1e-6, 10.0)[0] == \
        pytest.approx(0.3176, abs=5e-5)
    letters = "ARNDCQEGHILKMFPSTWYV"
    counts = np.round(ROBINSON_FREQUENCIES * 100).astype(int)
    standard = encode_text("".join(a * n for a, n in zip(letters, counts)), scoring)
    proline = encode_text("P" * 40 + "A", scoring)
    plain = encode_text("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALP",
                        scoring)
    ratios = composition_ratios([standard, proline, plain, plain], [standard, proline, plain,
                                                                    proline], scoring)
    assert ratios[0] == pytest.approx(1.0, abs=2e-3)
    assert ratios[1] == 0.5
    assert (ratios <= 1).all() and (ratios >= 0.5).all()
    assert ratios[2] < 0.95 and ratios[3] == 1.0


def test_composition_is_refused_for_dna_and_unpublished_gaps(capsys):
    """DNA has no amino-acid composition (an error naming the mode); on the command line a
    gap cost without published parameters fails before any work, in one line."""
    rows = pd.Series(["ACGTACGTAC"])
    with pytest.raises(ValueError, match="composition"):
        rows.sw.search(["ACGTAC"], matrix=None, match=2, mismatch=-3, statistics="composition")
    capsys.readouterr()
    assert main(["search", str(DB), str(DB), "--statistics", "composition", "--gap-open", "7",
                 "--gap-extend", "3", "-o", "-"]) == 1
    err = capsys.readouterr().err
    assert "--statistics composition" in err and "Traceback" not in err


def test_search_with_composition_changes_only_the_statistics():
    """The same hits, scores and positions as ``statistics="blast"``; the bit scores at most
    the unadjusted ones; a biased pair (a proline-rich query against proline-rich rows)
    loses orders of magnitude of significance."""
    from swdask._fasta import read_fasta_frame

    database = read_fasta_frame(str(DB), blocksize=None, threads=1)
    rows = database["sequence"]
    rich = "PAPSPPPTPAPEPPKPAPSPPPAPTPKPEPPAPSPPKPTPAPEPPPSPAPKPT"
    column = pd.concat([rows, pd.Series([rich[3:] + "PPAP", rich[::-1]])], ignore_index=True)
    queries = list(rows.iloc[:8]) + [rich]
    plain = column.sw.search(queries, top=5, statistics="blast", **BLASTP)
    adjusted = column.sw.search(queries, top=5, statistics="composition", **BLASTP)
    same = [c for c in plain.columns if c not in ("bitscore", "evalue")]
    pd.testing.assert_frame_equal(adjusted[same], plain[same])
    assert (adjusted["bitscore"] <= plain["bitscore"] + 1e-9).all()
    biased = adjusted["query_id"] == len(queries) - 1
    assert (np.log10(adjusted.loc[biased, "evalue"] / plain.loc[biased, "evalue"]).max()) > 3


def _blastp():
    missing = [tool for tool in ("blastp", "makeblastdb") if shutil.which(tool) is None]
    if missing or not MMSEQS.exists() or not QUERIES.exists():
        pytest.skip("needs NCBI BLAST+ (blastp, makeblastdb) and mmseqs2-examples")


def _m8(path) -> pd.DataFrame:
    table = pd.read_csv(path, sep="\t", header=None).iloc[:, [0, 1, 10]]
    table.columns = ["query", "target", "evalue"]
    return table.drop_duplicates(["query", "target"])


def test_evalues_against_blastp(tmp_path):
    """The first 12 queries of QUERY.fasta against DB.fasta: every E-value of blastp
    ``-comp_based_stats 0`` equals swdask's finite-size E-value of blastp's score for the
    pair's lengths (``finite_size_evalue``, within 5%), and on the hits both
    report, ``statistics="composition"`` against ``-comp_based_stats 1``: rank correlation at
    least 0.9, median |log10 ratio| at most 1, for E-values in 1e-30..10 (the issue's
    bounds)."""
    _blastp()
    database = tmp_path / "DB.fasta"
    with gzip.open(MMSEQS, "rb") as source, open(database, "wb") as target:
        shutil.copyfileobj(source, target)
    queries = tmp_path / "queries.fasta"
    with gzip.open(QUERIES, "rt") as source:
        records = source.read().split(">")[1:13]
    queries.write_text("".join(">" + record for record in records))
    subprocess.run(["makeblastdb", "-in", str(database), "-dbtype", "prot", "-out",
                    str(tmp_path / "db")], check=True, capture_output=True)
    fields = "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue " \
             "bitscore score qlen slen"
    theirs = {}
    for mode in ("0", "1"):
        out = tmp_path / f"blastp{mode}.m8"
        subprocess.run(["blastp", "-query", str(queries), "-db", str(tmp_path / "db"),
                        "-comp_based_stats", mode, "-max_target_seqs", "10", "-outfmt", fields,
                        "-out", str(out)], check=True, capture_output=True)
        theirs[mode] = out
    # blastp's own scores through swdask's finite-size formula: its own E-values
    plain = pd.read_csv(theirs["0"], sep="\t", header=None).drop_duplicates([0, 1])
    parameters = blast_parameters(make_scoring(**BLASTP))
    residues = sum(len(line.strip()) for line in database.read_text().splitlines()
                   if not line.startswith(">"))
    ours = parameters.finite_size_evalue(plain[12].to_numpy(), plain[13].to_numpy(),
                                         plain[14].to_numpy(), residues)
    shown = plain[10].to_numpy(dtype=float)
    finite = shown > 1e-180
    # within 5% (the largest differences, 3%, are at E-values near 1)
    assert np.allclose(np.log10(ours[finite]), np.log10(shown[finite]), atol=0.02)
    # swdask's composition-based statistics against blastp's
    mine = tmp_path / "swdask.m8"
    assert main(["search", str(queries), str(database), "--top", "10", "--format", "blast6",
                 "--statistics", "composition", "--gap-open", "12", "--gap-extend", "1",
                 "--no-progress", "-o", str(mine)]) == 0
    both = _m8(mine).merge(_m8(theirs["1"]), on=["query", "target"], suffixes=("", "_blastp"))
    both = both[(both["evalue_blastp"] >= 1e-30) & (both["evalue_blastp"] <= 10)]
    assert len(both) >= 20
    spearman = np.corrcoef(both["evalue"].rank(), both["evalue_blastp"].rank())[0, 1]
    ratio = np.log10(both["evalue"] / both["evalue_blastp"]).abs()
    assert spearman >= 0.9 and ratio.median() <= 1, (spearman, ratio.median())


def test_dask_search_gives_the_in_memory_statistics():
    """A Dask frame's search (one task per partition, the hits ranked together) gives the
    same composition-based E-values as the frame in memory."""
    import dask.dataframe as dd

    from swdask._fasta import read_fasta_frame

    database = read_fasta_frame(str(DB), blocksize=None, threads=1).iloc[:400]
    queries = list(database["sequence"].iloc[::50])
    want = database.sw.search(queries, top=3, statistics="composition", **BLASTP)
    got = dd.from_pandas(database, npartitions=3).sw.search(
        queries, top=3, statistics="composition", **BLASTP).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want)
