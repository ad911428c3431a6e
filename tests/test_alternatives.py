"""Several local alignments per target (swdask._alternatives, ``alignments_per_target``):
checked against a pure-Python Smith-Waterman that forbids the earlier alignments' pairs."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from swdask import _alternatives
from swdask._scoring import make_scoring
from swdask._sequences import encode_text

PROTEIN = "ACDEFGHIKLMNPQRSTVWY"
NEG = -(1 << 40)


def _mutated(rng, text, letters, rate=0.15):
    out = []
    for letter in text:
        roll = rng.random()
        if roll < rate:
            out.append(letters[rng.integers(len(letters))])
        elif roll < rate + 0.03:
            continue  # a deletion
        else:
            out.append(letter)
        if rng.random() < 0.02:
            out.append(letters[rng.integers(len(letters))])  # an insertion
    return "".join(out)


def _random(rng, letters, n):
    return "".join(letters[k] for k in rng.integers(len(letters), size=n))


def _pairs():
    """100 protein pairs (a domain of 30-60 letters placed 2-3 times, mutated, in a random
    target of 150-300) and 100 DNA pairs (a unit repeated in tandem)."""
    rng = np.random.default_rng(48)
    protein, dna = [], []
    for _ in range(100):
        domain = _random(rng, PROTEIN, int(rng.integers(30, 61)))
        length = int(rng.integers(150, 301))
        copies = int(rng.integers(2, 4))
        pieces = [_mutated(rng, domain, PROTEIN) for _ in range(copies)]
        filler = length - sum(map(len, pieces))
        cuts = np.sort(rng.integers(0, max(filler, 1), size=copies))
        spans = np.diff(np.concatenate(([0], cuts, [max(filler, 0)])))
        target = "".join(_random(rng, PROTEIN, int(s)) + (pieces[k] if k < copies else "")
                         for k, s in enumerate(spans))
        protein.append((domain, target))
    for _ in range(100):
        unit = _random(rng, "ACGT", int(rng.integers(4, 12)))
        query = _mutated(rng, unit * int(rng.integers(3, 6)), "ACGT", 0.05)
        target = (_random(rng, "ACGT", int(rng.integers(20, 60)))
                  + _mutated(rng, unit * int(rng.integers(4, 10)), "ACGT", 0.1)
                  + _random(rng, "ACGT", int(rng.integers(20, 60))))
        dna.append((query, target))
    return protein, dna


def reference_best(a, b, matrix, gap_open, gap_extend, forbidden):
    """Smith-Waterman (Gotoh) in plain Python with the pairs in ``forbidden`` closed to
    substitutions: ``(score, query_end, target_end)`` by the end tie rule (score, then the
    smallest target end, then the smallest query end)."""
    m, n = len(a), len(b)
    s_prev = [NEG] * (n + 1)
    i_prev = [NEG] * (n + 1)
    d_prev = [NEG] * (n + 1)
    best = (0, 0, 0)
    for i in range(1, m + 1):
        s_cur, i_cur, d_cur = [NEG] * (n + 1), [NEG] * (n + 1), [NEG] * (n + 1)
        row = matrix[a[i - 1]]
        for j in range(1, n + 1):
            if (i - 1, j - 1) not in forbidden:
                s_cur[j] = max(0, s_prev[j - 1], i_prev[j - 1], d_prev[j - 1]) + row[b[j - 1]]
            i_cur[j] = max(s_prev[j] - gap_open, i_prev[j] - gap_extend, d_prev[j] - gap_open)
            d_cur[j] = max(s_cur[j - 1] - gap_open, d_cur[j - 1] - gap_extend,
                           i_cur[j - 1] - gap_open)
            score = s_cur[j]
            if score > 0 and (score > best[0] or
                              (score == best[0] and (j, i) < (best[2], best[1]))):
                best = (score, i, j)
        s_prev, i_prev, d_prev = s_cur, i_cur, d_cur
    return best


def cigar_pairs(cigar, query_start, target_start):
    """The aligned pairs of a CIGAR and the cells it ends at."""
    i, j, pairs = query_start, target_start, []
    for count, op in re.findall(r"(\d+)([=XID])", cigar):
        for _ in range(int(count)):
            if op in "=X":
                pairs.append((i, j))
            i += op != "D"
            j += op != "I"
    return pairs, i, j


def rescore(cigar, a, b, query_start, target_start, matrix, gap_open, gap_extend):
    """A CIGAR's score over the codes, and whether each = / X says what the letters are."""
    i, j, score, letters_agree = query_start, target_start, 0, True
    for count, op in re.findall(r"(\d+)([=XID])", cigar):
        count = int(count)
        if op in "=X":
            for _ in range(count):
                score += matrix[a[i]][b[j]]
                letters_agree &= (a[i] == b[j]) == (op == "=")
                i, j = i + 1, j + 1
        else:
            score -= gap_open + (count - 1) * gap_extend
            if op == "I":
                i += count
            else:
                j += count
    return score, letters_agree


PROTEIN_OPTIONS = {"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1}
DNA_OPTIONS = {"matrix": None, "match": 2, "mismatch": -3, "gap_open": 5, "gap_extend": 2}


@pytest.fixture(scope="module")
def cases():
    protein, dna = _pairs()
    out = []
    for pairs, options in ((protein, PROTEIN_OPTIONS), (dna, DNA_OPTIONS)):
        scoring = make_scoring(**options)
        for query, target in pairs:
            first = pd.Series([target]).sw.align(query, positions="alignment",
                                                 **options).iloc[0]
            out.append((query, target, scoring, first, options))
    return out


def test_alternatives_equal_the_reference(cases):
    """k = 3 on 200 pairs with repeats: each alternative's score and end equal the
    reference with the earlier pairs forbidden; its CIGAR re-scores to its score and spans
    its positions; it shares no aligned pair with a better one."""
    seen_alternatives = 0
    for query, target, scoring, first, _ in cases:
        a = encode_text(query, scoring)
        b = encode_text(target, scoring)
        matrix = scoring.matrix.tolist()
        more = _alternatives.alternatives(a, b, scoring, first, 2)
        pairs, end_i, end_j = cigar_pairs(first["cigar"], first["query_start"],
                                          first["target_start"])
        assert (end_i, end_j) == (first["query_end"], first["target_end"])
        forbidden = set(pairs)
        a_list, b_list = a.tolist(), b.tolist()
        expected = []
        for _ in range(2):
            best = reference_best(a_list, b_list, matrix, scoring.gap_open,
                                  scoring.gap_extend, forbidden)
            if best[0] <= 0:
                break
            expected.append(best)
            k = len(expected) - 1
            if k >= len(more["score"]):
                break
            cigar = str(more["cigar"][k])
            alternative_pairs, qe, te = cigar_pairs(cigar, int(more["query_start"][k]),
                                                    int(more["target_start"][k]))
            assert not forbidden & set(alternative_pairs)
            forbidden |= set(alternative_pairs)
            assert (qe, te) == (int(more["query_end"][k]), int(more["target_end"][k]))
            score, agree = rescore(cigar, a_list, b_list, int(more["query_start"][k]),
                                   int(more["target_start"][k]), matrix, scoring.gap_open,
                                   scoring.gap_extend)
            assert agree and score == int(more["score"][k])
            assert int(more["matches"][k]) == sum(
                int(c) for c, op in re.findall(r"(\d+)([=XID])", cigar) if op == "=")
        got = [(int(more["score"][k]), int(more["query_end"][k]), int(more["target_end"][k]))
               for k in range(len(more["score"]))]
        assert got == expected, (query, target)
        seen_alternatives += len(got)
    assert seen_alternatives > 200  # the repeats give most pairs two alternatives


def test_first_alignment_is_the_engines(cases):
    """The module's own passes with nothing forbidden give the engine's alignment (the
    tie rules agree), so alignment 1 and the alternatives follow one rule."""
    for query, target, scoring, first, _ in cases[::4]:
        mine = _alternatives.first_alignment(encode_text(query, scoring),
                                             encode_text(target, scoring), scoring)
        assert (int(mine["score"][0]), int(mine["query_start"][0]), int(mine["query_end"][0]),
                int(mine["target_start"][0]), int(mine["target_end"][0]),
                str(mine["cigar"][0])) == (
            first["score"], first["query_start"], first["query_end"], first["target_start"],
            first["target_end"], first["cigar"])


def _database(cases):
    protein = [(q, t) for q, t, _, _, options in cases if options is PROTEIN_OPTIONS]
    return [q for q, _ in protein[:4]], pd.Series([t for _, t in protein[:30]])


def test_search_primary_rows_unchanged(cases):
    queries, database = _database(cases)
    plain = database.sw.search(queries, top=5, positions="alignment")
    several = database.sw.search(queries, top=5, alignments_per_target=3)
    assert list(several.columns[:3]) == ["query_id", "rank", "alignment_rank"]
    primary = several[several["alignment_rank"] == 1].drop(columns="alignment_rank")
    pd.testing.assert_frame_equal(primary.reset_index(drop=True), plain)
    assert (several["alignment_rank"] > 1).any()
    # each hit's alignments follow it, numbered 1, 2, ..., scores not increasing
    for _, group in several.groupby(["query_id", "rank"]):
        assert group["alignment_rank"].tolist() == list(range(1, len(group) + 1))
        assert group["score"].is_monotonic_decreasing
        assert group["target_index"].nunique() == 1
    # each row's E-value from its own score: equal scores of one query, equal E-values
    assert (several.groupby(["query_id", "score"])["evalue"].nunique() == 1).all()


def test_refusals(cases, setting):
    queries, database = _database(cases)
    with pytest.raises(ValueError, match="alignments_per_target must be a positive"):
        database.sw.search(queries, alignments_per_target=0)
    with pytest.raises(ValueError, match="mode='global'"):
        database.sw.search(queries, alignments_per_target=2, mode="global")
    with pytest.raises(ValueError, match="aligned strings"):
        database.sw.search(queries, alignments_per_target=2, aligned_strings=True,
                           positions="alignment")
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(ValueError, match="in-memory .sw.search"):
        dd.from_pandas(database, npartitions=2).sw.search(queries, alignments_per_target=2)
    setting("traceback.max-cells", 100)
    with pytest.raises(ValueError, match="swdask.traceback.max-cells"):
        database.sw.search(queries, alignments_per_target=2)


def test_cli_writes_the_extra_rows(cases, tmp_path):
    from swdask import cli

    queries, database = _database(cases)
    (tmp_path / "q.fa").write_text("".join(f">q{k}\n{q}\n" for k, q in enumerate(queries)))
    (tmp_path / "db.fa").write_text("".join(f">t{k}\n{t}\n" for k, t in enumerate(database)))
    out = tmp_path / "hits.tsv"
    assert cli.main(["search", str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "-o",
                     str(out), "--top", "3", "--alignments-per-target", "3",
                     "--no-progress", "--backend", "cpu"]) == 0
    table = pd.read_csv(out, sep="\t")
    assert "alignment_rank" in table.columns and (table["alignment_rank"] > 1).any()
    assert (table[table["alignment_rank"] == 1].groupby("query_id").size() <= 3).all()
    # SAM (DNA reads): a hit's further alignments are secondary, FLAG 256
    dna = [(q, t) for q, t, _, _, options in cases if options is DNA_OPTIONS][:5]
    (tmp_path / "reads.fa").write_text("".join(f">r{k}\n{q}\n" for k, (q, _) in enumerate(dna)))
    (tmp_path / "ref.fa").write_text("".join(f">c{k}\n{t}\n" for k, (_, t) in enumerate(dna)))
    sam = tmp_path / "hits.sam"
    assert cli.main(["search", str(tmp_path / "reads.fa"), str(tmp_path / "ref.fa"), "-o",
                     str(sam), "--dna", "--top", "1", "--alignments-per-target", "2",
                     "--no-progress", "--backend", "cpu"]) == 0
    flags = [int(line.split("\t")[1]) for line in sam.read_text().splitlines()
             if not line.startswith("@")]
    assert flags.count(0) == len(dna) and flags.count(256) == len(flags) - len(dna) > 0
    assert cli.main(["search", str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "-o",
                     str(out), "--alignments-per-target", "2", "--workers", "1",
                     "--no-progress"]) != 0
