"""Bit scores and E-values (``statistics=``), and the command line's BLAST tabular output."""
from __future__ import annotations

import math
import re
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import swdask
from swdask._statistics import StatisticsWarning, blast_parameters
from swdask.cli import main

from .test_cli import DB, QUERIES, records


def test_bit_score_of_blosum62_by_hand():
    """BLOSUM62 with BLAST's default gap cost (existence 11, extension 1: swdask's 12/1):
    NCBI's lambda 0.267 and K 0.041, so a raw score of 100 is
    (0.267 * 100 - ln 0.041) / ln 2 = (26.7 + 3.19418) / 0.693147 = 43.128 bits."""
    parameters = blast_parameters(swdask.make_scoring("BLOSUM62", gap_open=12, gap_extend=1))
    assert (parameters.lam, parameters.K) == (0.267, 0.041)
    assert float(parameters.bit_score(100)) == pytest.approx(43.128, abs=1e-3)
    # swdask's default 11/1 is BLAST's 10/1
    default = blast_parameters(swdask.make_scoring("BLOSUM62"))
    assert (default.lam, default.K) == (0.243, 0.024)


def test_length_adjustment_and_evalue_follow_their_definition():
    parameters = blast_parameters(swdask.make_scoring("BLOSUM62", gap_open=12, gap_extend=1))
    m, n, count = 350, 9_000_000, 25_000
    ell = parameters.length_adjustment(m, n, count)

    def bound(length):
        return (parameters.alpha / parameters.lam
                * math.log(parameters.K * (m - length) * (n - count * length)) + parameters.beta)

    assert 0 < ell <= bound(ell) and ell + 1 > bound(ell + 1)
    evalue = float(parameters.evalue(120, m, n, count))
    expected = parameters.K * (m - ell) * (n - count * ell) * math.exp(-parameters.lam * 120)
    assert evalue == pytest.approx(expected, rel=1e-12)
    # a longer query, a bigger database: a larger E-value for the same score
    assert float(parameters.evalue(120, 2 * m, n, count)) > evalue
    assert float(parameters.evalue(120, m, 2 * n, 2 * count)) > evalue


@pytest.fixture(scope="module")
def database():
    return pd.DataFrame({"id": [r[0] for r in records(DB)],
                         "sequence": [r[2] for r in records(DB)]})


@pytest.fixture(scope="module")
def queries():
    return [r[2] for r in records(QUERIES)][:3]


def test_search_columns_and_the_whole_database_as_search_space(database, queries):
    hits = database.sw.search(queries, top=5, gap_open=12, gap_extend=1)
    assert list(hits.columns[3:6]) == ["score", "bitscore", "evalue"]
    parameters = blast_parameters(swdask.make_scoring("BLOSUM62", gap_open=12, gap_extend=1))
    residues, count = int(database["sequence"].str.len().sum()), len(database)
    for _, hit in hits.iterrows():
        length = len(queries[hit["query_id"]])
        assert hit["evalue"] == pytest.approx(
            float(parameters.evalue(hit["score"], length, residues, count)), rel=1e-12)
        assert hit["bitscore"] == pytest.approx(float(parameters.bit_score(hit["score"])))
    # E-values fall as scores rise
    for _, group in hits.groupby("query_id"):
        assert group["evalue"].is_monotonic_increasing
    # partitions see only their rows; the ranking counts the whole database
    lazy = dd.from_pandas(database, npartitions=4).sw.search(queries, top=5, gap_open=12,
                                                            gap_extend=1)
    pd.testing.assert_frame_equal(lazy.compute(scheduler="sync"), hits)


def test_statistics_choices(database, queries):
    plain = database.sw.search(queries, top=2, statistics=None)
    assert "evalue" not in plain.columns
    dna = database.sw.search(["ACGTACGTTTGA"], top=2, matrix=None, match=2, mismatch=-3)
    assert "evalue" not in dna.columns  # "auto": no published parameters, no columns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asked = database.sw.search(queries, top=2, gap_open=7, gap_extend=3,
                                   statistics="blast")
    assert asked["evalue"].isna().all() and asked["bitscore"].isna().all()
    assert any(issubclass(w.category, StatisticsWarning) for w in caught)
    with pytest.raises(ValueError, match="statistics must be"):
        database.sw.search(queries, top=2, statistics="karlin")


def test_blast6_output(tmp_path):
    output = tmp_path / "hits.m8"
    assert main(["search", str(QUERIES), str(DB), "-o", str(output), "--gap-open", "12",
                 "--top", "3", "--no-progress", "--workers", "1"]) == 0
    table = pd.read_csv(output, sep="\t", header=None, dtype={10: str})
    assert table.shape[1] == 12
    full = tmp_path / "hits.tsv"
    assert main(["search", str(QUERIES), str(DB), "-o", str(full), "--gap-open", "12",
                 "--top", "3", "--no-progress", "--aligned-strings", "--workers", "1"]) == 0
    hits = pd.read_csv(full, sep="\t", keep_default_na=False)
    assert len(hits) == len(table)
    # --aligned-strings implies --alignment; the strings lay out the CIGAR's columns
    for hit in hits.itertuples():
        top, bottom = hit.query_aligned, hit.target_aligned
        assert len(top) == len(bottom) == hit.alignment_length
        assert sum(a == b for a, b in zip(top, bottom)) == hit.matches
        assert len(top.replace("-", "")) == hit.query_end - hit.query_start
        assert len(bottom.replace("-", "")) == hit.target_end - hit.target_start
    assert (table[0] == hits["query_id"]).all() and (table[1] == hits["target_id"]).all()
    assert np.allclose(table[2], 100 * hits["identity"], atol=5e-4)
    assert (table[3] == hits["alignment_length"]).all()
    assert (table[4] == hits["mismatches"]).all() and (table[5] == hits["gap_opens"]).all()
    # BLAST's coordinates: 1-based, inclusive
    assert (table[6] == hits["query_start"] + 1).all() and (table[7] == hits["query_end"]).all()
    assert (table[8] == hits["target_start"] + 1).all() and (table[9] == hits["target_end"]).all()
    assert np.allclose(table[10].astype(float), hits["evalue"], rtol=0.01)
    assert np.allclose(table[11], hits["bitscore"], atol=0.051)


def test_evalue_filter(tmp_path):
    kept = tmp_path / "kept.tsv"
    assert main(["search", str(QUERIES), str(DB), "-o", str(kept), "--gap-open", "12",
                 "--evalue", "1e-10", "--no-progress", "--workers", "1"]) == 0
    hits = pd.read_csv(kept, sep="\t", keep_default_na=False)
    assert len(hits) and (hits["evalue"] <= 1e-10).all()
    for _, group in hits.groupby("query_id"):
        assert group["rank"].tolist() == list(range(1, len(group) + 1))


@pytest.mark.parametrize("extra, message", [
    (["--dna", "--format", "blast6"], "needs E-values"),
    (["--dna", "--evalue", "1"], "needs E-values"),
    (["--gap-open", "3", "--evalue", "1"], "no statistics for BLOSUM62"),
    (["--format", "parquet"], "standard output"),
    (["--aligned-strings", "--format", "blast6"], "has fixed fields"),
])
def test_bad_combinations_fail_before_any_work(extra, message, capsys):
    assert main(["search", str(QUERIES), str(DB), "--no-progress", *extra]) == 1
    err = capsys.readouterr().err
    assert message in err and "started" not in err  # no cluster was started


def _sam_records(text: str):
    """SAM's header and records, checked against the specification's rules (a parser of our
    own: field count and types, CIGAR against SEQ and the reference length)."""
    header, records = {}, []
    for line in text.splitlines():
        fields = line.split("\t")
        if line.startswith("@"):
            if fields[0] == "@SQ":
                tags = dict(f.split(":", 1) for f in fields[1:])
                header[tags["SN"]] = int(tags["LN"])
            else:
                assert fields[0] in ("@HD", "@PG"), line
            continue
        assert len(fields) >= 11, line
        qname, flag, rname, pos, mapq, cigar, rnext, pnext, tlen, seq, qual = fields[:11]
        assert re.fullmatch(r"[!-?A-~]{1,254}", qname) and int(flag) in (0, 256)
        assert rname in header and 1 <= int(pos) and 0 <= int(mapq) <= 255
        ops = re.findall(r"(\d+)([MIDNSHP=X])", cigar)
        assert "".join(a + b for a, b in ops) == cigar
        assert sum(int(n) for n, op in ops if op in "MIS=X") == len(seq)
        assert int(pos) - 1 + sum(int(n) for n, op in ops if op in "MDN=X") <= header[rname]
        assert (rnext, pnext, tlen, qual) == ("*", "0", "0", "*")
        tags = dict(f.split(":", 1) for f in fields[11:])
        records.append((qname, int(flag), rname, int(pos), cigar, seq, tags))
    return header, records


def test_sam_output_for_dna_reads(tmp_path, dna_region):
    rng = np.random.default_rng(3)
    reference = tmp_path / "ref.fasta"
    reference.write_text(f">chrA\n{dna_region[:2000]}\n>chrB\n{dna_region[2000:4000]}\n")
    reads = tmp_path / "reads.fasta"
    with open(reads, "w") as out:
        for k in range(8):
            start = int(rng.integers(0, 3800))
            piece = list(dna_region[start:start + 120])
            piece[40] = "A" if piece[40] != "A" else "C"
            del piece[70:72]
            out.write(f">read{k}\nTTTT{''.join(piece)}GG\n")
    sam, tsv = tmp_path / "hits.sam", tmp_path / "hits.tsv"
    common = ["--dna", "--top", "2", "--no-progress", "--workers", "1"]
    assert main(["search", str(reads), str(reference), "-o", str(sam), *common]) == 0
    assert main(["search", str(reads), str(reference), "-o", str(tsv), "--alignment",
                 *common]) == 0
    header, lines = _sam_records(sam.read_text())
    hits = pd.read_csv(tsv, sep="\t", keep_default_na=False)
    assert len(lines) == len(hits) and set(header) <= {"chrA", "chrB"}
    sequences = {name: seq for name, _, seq in records(reads)}
    for (qname, flag, rname, pos, cigar, seq, tags), hit in zip(lines, hits.itertuples()):
        assert (qname, rname, pos) == (hit.query_id, hit.target_id, hit.target_start + 1)
        assert flag == (0 if hit.rank == 1 else 256) and seq == sequences[qname]
        assert tags["AS"] == f"i:{hit.score}"
        assert tags["NM"] == f"i:{hit.alignment_length - hit.matches}"
        clip_right = len(seq) - hit.query_end
        assert cigar == ((f"{hit.query_start}S" if hit.query_start else "") + hit.cigar
                         + (f"{clip_right}S" if clip_right else ""))
        assert hit.target_length == header[rname]


def test_fit_recovers_known_parameters():
    """Scores drawn from the model itself (Gumbel, location ln(K m n) / lambda, for targets
    of many lengths) give back lambda and K."""
    from swdask._statistics import fit_scores, score_summary

    rng = np.random.default_rng(11)
    lam, K, m = 0.27, 0.04, 300
    lengths = rng.integers(50, 2000, 60_000)
    uniform = rng.random(lengths.size)
    # P(S >= x) = 1 - exp(-K m n e^(-lam x)), inverted; rounded down to whole scores
    scores = np.floor(np.log(K * m * lengths / -np.log(uniform)) / lam).astype(np.int64)
    scores[:30] = 900  # a few homologs, far above: left out by the fit
    fitted = fit_scores(*score_summary(scores, lengths, np.ones(lengths.size, bool)), m)
    # whole-number scores shift the location by about half a score: K within 15%
    assert fitted.lam == pytest.approx(lam, rel=0.03)
    assert fitted.K == pytest.approx(K * math.exp(-lam / 2), rel=0.15)


def test_search_statistics_on_shuffled_proteins(protein_db, protein_queries):
    """Unrelated sequences (shuffled real proteins): the fitted lambda is near BLAST's for the
    same scoring, and E-values are large; partitions give the ranking the same fit."""
    rng = np.random.default_rng(5)
    shuffled = pd.DataFrame({"sequence": ["".join(rng.permutation(list(s)))
                                          for s in protein_db.tolist()] * 4})
    queries = [q for _, q in protein_queries[:2]]
    hits = shuffled.sw.search(queries, top=3, gap_open=12, gap_extend=1, statistics="search")
    assert hits["evalue"].notna().all() and (hits["evalue"] > 1e-3).all()
    blast = shuffled.sw.search(queries, top=3, gap_open=12, gap_extend=1)
    # same hits, bit scores of the same order (BLAST's lambda 0.267 vs the fitted one)
    assert (hits["score"] == blast["score"]).all()
    assert np.allclose(hits["bitscore"], blast["bitscore"], rtol=0.25)
    lazy = dd.from_pandas(shuffled, npartitions=3).sw.search(
        queries, top=3, gap_open=12, gap_extend=1, statistics="search")
    pd.testing.assert_frame_equal(lazy.compute(scheduler="sync"), hits, check_exact=False,
                                  rtol=1e-9)


def test_search_statistics_need_enough_targets():
    hits = pd.Series(["MKVLAAGIVGALLAA", "MKVAAGIVG"]).sw.search(
        ["MKVLAAGIVG"], top=2, statistics="search")
    assert hits["evalue"].isna().all() and hits["score"].notna().all()


def test_cli_statistics_search_for_dna(tmp_path, dna_region):
    rng = np.random.default_rng(2)
    reference = tmp_path / "ref.fasta"
    unrelated = ["".join(rng.choice(list("ACGT"), 300)) for _ in range(400)]
    unrelated[7] = dna_region[950:1250]  # the read's origin
    reference.write_text("".join(f">r{k}\n{s}\n" for k, s in enumerate(unrelated)))
    reads = tmp_path / "reads.fasta"
    reads.write_text(f">a\n{dna_region[1000:1100]}\n")
    output = tmp_path / "hits.m8"
    assert main(["search", str(reads), str(reference), "--dna", "-o", str(output),
                 "--statistics", "search", "--no-progress", "--workers", "1"]) == 0
    table = pd.read_csv(output, sep="\t", header=None)
    assert len(table) == 10 and table[1].iloc[0] == "r7"
    assert table[10].iloc[0] < 1e-10 and (table[10].iloc[1:] > 1e-3).all()
