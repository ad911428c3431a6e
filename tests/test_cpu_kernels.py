"""The CPU kernels of swdask._cpu, called directly so that every path is exercised on purpose:
the 32-lane int16 kernels (one-to-many, and pairs by a 64-entry permute for DNA or a gather
for proteins), the 16-bit saturation check with its exact recompute, and the scalar fallback.

References: the scalar int64 kernels (``_scalar_one_to_many``/``_scalar_pairs``: the tie
rules' spec, compared cell for cell), Biopython's PairwiseAligner and parasail's 32-bit
functions (scores), the pure-Python brute force of conftest.py (tie rules), and the
rescoring property (the global alignment of the aligned segments scores the score).

Kernel outputs are inclusive cells, -1 where the score is 0 or a position was not asked for.
"""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swdask import _cpu, _simd, _work
from swdask._scoring import make_scoring
from swdask._sequences import encode, encode_text

from .conftest import (Scheme, biopython_score, brute_force, global_score, mutate,
                       parasail_score, read_fasta, DATA)

PROTEIN = "ACDEFGHIKLMNPQRSTVWY"
BLOSUM62 = Scheme("BLOSUM62", 11, 1)
SCHEMES = [
    BLOSUM62,
    Scheme("BLOSUM62", 4, 4),   # open == extend
    Scheme("BLOSUM45", 0, 0),   # free gaps
    Scheme("PAM30", 9, 1),
    Scheme(None, 5, 2, match=2, mismatch=-3),
    Scheme(None, 0, 0, match=1, mismatch=-2),
]
MODES = ("full", "end", "none")
#: Which outputs each positions mode writes (score, query_start, query_end, target_start,
#: target_end).
WRITTEN = {"full": [0, 1, 2, 3, 4], "end": [0, 2, 4], "none": [0]}


def random_protein(rng, length: int) -> str:
    return "".join(rng.choice(list(PROTEIN), length))


def scoring_of(scheme: Scheme):
    return make_scoring(**scheme.options)


def one_to_many(query: str, targets: list[str], scheme: Scheme, positions="full",
                kernel=_cpu.one_to_many, order=None) -> np.ndarray:
    """``int64[5, n]``: the kernel's outputs for every target."""
    scoring = scoring_of(scheme)
    encoded = encode(targets, scoring, labels=None, what="target row")
    codes = encode_text(query, scoring)
    profile = _cpu.query_profile(codes, scoring.matrix)
    outputs = np.full((5, len(targets)), -1, dtype=np.int64)
    if order is None:
        order = np.flatnonzero(encoded.lengths > 0)
    if kernel is _cpu._scalar_one_to_many:
        kernel(profile.scores, len(codes), encoded.residues, encoded.offsets, order,
               scoring.gap_open, scoring.gap_extend, positions == "full", *outputs)
    else:
        kernel(profile, len(codes), encoded.residues, encoded.offsets, order, scoring.gap_open,
               scoring.gap_extend, positions, *outputs)
    return outputs


def pairs(queries: list[str], targets: list[str], scheme: Scheme, positions="full",
          kernel=_cpu.pairs) -> np.ndarray:
    scoring = scoring_of(scheme)
    encoded_queries = encode(queries, scoring, labels=None, what="query row")
    encoded_targets = encode(targets, scoring, labels=None, what="target row")
    outputs = np.full((5, len(targets)), -1, dtype=np.int64)
    order = np.flatnonzero((encoded_queries.lengths > 0) & (encoded_targets.lengths > 0))
    if kernel is _cpu._scalar_pairs:
        kernel(scoring.matrix.astype(np.int64), encoded_queries.residues, encoded_queries.offsets,
               encoded_targets.residues, encoded_targets.offsets, order, scoring.gap_open,
               scoring.gap_extend, positions == "full", *outputs)
    else:
        kernel(scoring.matrix, encoded_queries.residues, encoded_queries.offsets,
               encoded_targets.residues, encoded_targets.offsets, order, scoring.gap_open,
               scoring.gap_extend, positions, *outputs)
    return outputs


def assert_same_as_reference(fast: np.ndarray, reference: np.ndarray, positions: str):
    written = WRITTEN[positions]
    differ = np.flatnonzero((fast[written] != reference[written]).any(axis=0))
    assert differ.size == 0, (
        f"{differ.size} rows differ from the scalar reference, e.g. row {differ[0]}: "
        f"{fast[:, differ[0]].tolist()} vs {reference[:, differ[0]].tolist()}")
    untouched = [k for k in range(5) if k not in written]
    assert (fast[untouched] == -1).all()


def assert_rescoring(outputs: np.ndarray, queries, targets: list[str], scheme: Scheme):
    """Positions null iff the score is 0; else the aligned segments rescore to the score."""
    for row, target in enumerate(targets):
        query = queries if isinstance(queries, str) else queries[row]
        score, query_start, query_end, target_start, target_end = outputs[:, row].tolist()
        if score == 0:
            assert (query_start, query_end, target_start, target_end) == (-1, -1, -1, -1), row
            continue
        assert 0 <= query_start <= query_end < len(query), row
        assert 0 <= target_start <= target_end < len(target), row
        segment_score = global_score(query[query_start:query_end + 1],
                                     target[target_start:target_end + 1], scheme)
        assert segment_score == score, (row, segment_score, score)


# ----------------------------------------------------------------------------- one to many


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_lanes_random_mixed_lengths(scheme):
    """Batches that mix lengths (1 to 400), a partial last batch, homologous targets with
    gaps: lanes equal the scalar reference in every mode; scores equal Biopython's."""
    rng = np.random.default_rng(7)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    for query_length in (1, 7, 150):
        query = "".join(rng.choice(list(letters), query_length))
        targets = []
        for k in range(75):
            if k % 4 == 0:  # a mutated piece of the query: long alignments with gaps
                targets.append(mutate(query[rng.integers(0, query_length):], rng, 0.2, letters)
                               or letters[0])
            else:
                targets.append("".join(rng.choice(list(letters), int(rng.integers(1, 400)))))
        reference = one_to_many(query, targets, scheme, kernel=_cpu._scalar_one_to_many)
        for positions in MODES:
            fast = one_to_many(query, targets, scheme, positions)
            assert_same_as_reference(fast, reference, positions)
        expected = [biopython_score(query, target, scheme) for target in targets]
        assert reference[0].tolist() == expected
        assert_rescoring(reference, query, targets, scheme)


def test_real_proteins():
    """The real query and database subsets (mmseqs2 example data): every output equals the
    reference, every score parasail's 32-bit score."""
    queries = [s for _, s in read_fasta(DATA / "proteins_query.fasta")]
    targets = [s for _, s in read_fasta(DATA / "proteins_db.fasta")]
    for query in queries:
        reference = one_to_many(query, targets, BLOSUM62, kernel=_cpu._scalar_one_to_many)
        fast = one_to_many(query, targets, BLOSUM62)
        assert_same_as_reference(fast, reference, "full")
        assert fast[0].tolist() == [parasail_score(query, t, BLOSUM62) for t in targets]
        hits = np.argsort(-fast[0])[:12]  # the homologs: long gapped alignments
        assert_rescoring(fast[:, hits], query, [targets[k] for k in hits], BLOSUM62)


def test_order_subset_leaves_other_rows_alone():
    rng = np.random.default_rng(3)
    query = random_protein(rng, 60)
    targets = [random_protein(rng, int(n)) for n in rng.integers(1, 90, 50)]
    order = np.array([40, 3, 17, 0], dtype=np.int64)
    fast = one_to_many(query, targets, BLOSUM62, order=order)
    reference = one_to_many(query, targets, BLOSUM62, kernel=_cpu._scalar_one_to_many,
                            order=order)
    assert_same_as_reference(fast, reference, "full")
    others = np.setdiff1d(np.arange(len(targets)), order)
    assert (fast[:, others] == -1).all()


def test_ties_follow_the_reference_rule():
    """Repeated motifs: many cells share the best score, so the tie rules decide. Checked
    against the scalar reference and the pure-Python brute force (independent code)."""
    cases = [
        ("ACAC", ["ACACACAC", "CACA", "AC", "CCCCAAAA", "ACGAC"]),
        ("WGWGWG", ["WG" * 9, "GW" * 5, "WWGG" * 3, "W", "G"]),
        ("AAAAAAAA", ["AAAA", "AAAAAAAAAAAA", "CAAAC", "A" * 3 + "C" + "A" * 3]),
        ("CWC" * 4, ["CWC" * 6, "CWCCWC", "C", "CWWC" * 3]),
    ]
    for scheme in (BLOSUM62, Scheme("BLOSUM62", 2, 1), Scheme("BLOSUM45", 0, 0),
                   Scheme(None, 0, 0, match=1, mismatch=-2)):
        for query, targets in cases:
            if scheme.matrix is None:
                query = query.translate(str.maketrans("WCG", "TCG"))
                targets = [t.translate(str.maketrans("WCG", "TCG")) for t in targets]
            reference = one_to_many(query, targets, scheme, kernel=_cpu._scalar_one_to_many)
            fast = one_to_many(query, targets, scheme)
            assert_same_as_reference(fast, reference, "full")
            for row, target in enumerate(targets):
                score, qs, qe, ts, te = brute_force(query, target, scheme)
                expected = [score, -1, -1, -1, -1] if score == 0 else [score, qs, qe - 1, ts,
                                                                        te - 1]
                assert fast[:, row].tolist() == expected, (str(scheme), query, target)


def test_zero_scores_and_length_one():
    """No positive cell gives score 0 and -1 positions; single residues work either way."""
    targets = ["G", "PPPP", "W", "GGGGGGGGGG", "A"]
    for query, expected in (("W", [0, 0, 11, 0, 0]), ("WWW", [0, 0, 11, 0, 0]),
                            ("A", [0, 0, 0, 0, 4])):
        for positions in MODES:
            fast = one_to_many(query, targets, BLOSUM62, positions)
            assert fast[0].tolist() == expected
            assert fast[0].tolist() == [biopython_score(query, t, BLOSUM62) for t in targets]
            for row, score in enumerate(expected):
                if score == 0 or positions == "none":
                    assert (fast[1:, row] == -1).all()
    fast = one_to_many("W", ["W"], BLOSUM62)
    assert fast[:, 0].tolist() == [11, 0, 0, 0, 0]
    fast = one_to_many("WWW", ["GWG"], BLOSUM62)  # first query row holding the best
    assert fast[:, 0].tolist() == [11, 0, 0, 1, 1]


def test_saturation_is_detected_and_recomputed():
    """A 6,000-residue query against itself scores above 32767; in the same batch as
    ordinary targets, its lane is recomputed exactly and the others are untouched."""
    rng = np.random.default_rng(11)
    query = random_protein(rng, 6000)
    diagonal = sum(BLOSUM62.table[a][a] for a in query)
    assert diagonal > 32767
    targets = [random_protein(rng, 300), query, mutate(query, rng, 0.01, PROTEIN),
               random_protein(rng, 6000), query[:2500] + random_protein(rng, 200)]
    fast = one_to_many(query, targets, BLOSUM62)
    reference = one_to_many(query, targets, BLOSUM62, kernel=_cpu._scalar_one_to_many)
    assert_same_as_reference(fast, reference, "full")
    assert fast[:, 1].tolist() == [diagonal, 0, 5999, 0, 5999]
    assert fast[0].tolist() == [parasail_score(query, t, BLOSUM62) for t in targets]
    assert fast[0, 2] > 32767 - 11  # the mutated copy saturates 16 bits too
    for positions in ("end", "none"):
        assert_same_as_reference(one_to_many(query, targets, BLOSUM62, positions), reference,
                                 positions)


def _diagonally_dominant(scheme: Scheme) -> bool:
    """``s(a, b) <= (s(a, a) + s(b, b)) / 2`` for all residues, every ``s(a, a) > 0``: then the
    best local alignment of a sequence with itself is the whole diagonal."""
    table = scheme.table
    return all(table[a][a] > 0 for a in PROTEIN) and all(
        2 * table[a][b] <= table[a][a] + table[b][b] for a in PROTEIN for b in PROTEIN)


def _self_alignment_check(positions: str):
    """The issue's demand: a 40,000-residue sequence aligned to itself gets the right score.
    References: the diagonal sum (exact here, BLOSUM62 being diagonally dominant) and
    parasail's 32-bit kernel."""
    assert _diagonally_dominant(BLOSUM62)
    length = 40_000
    rng = np.random.default_rng(40)
    sequence = random_protein(rng, length)
    diagonal = sum(BLOSUM62.table[a][a] for a in sequence)
    fast = one_to_many(sequence, [sequence], BLOSUM62, positions)
    assert fast[0, 0] == diagonal == parasail_score(sequence, sequence, BLOSUM62)
    return fast[:, 0].tolist(), length


def test_huge_self_score():
    values, _ = _self_alignment_check("none")
    assert values[1:] == [-1, -1, -1, -1]


@pytest.mark.slow
def test_huge_self_alignment_positions():
    values, length = _self_alignment_check("full")
    assert values[1:] == [0, length - 1, 0, length - 1]


def test_scalar_fallback_for_costs_beyond_int16():
    """Scoring that does not fit the int16 lanes goes to the scalar kernels: scaling the
    matrix and gap costs by c scales every score by c and keeps every position."""
    rng = np.random.default_rng(5)
    query = random_protein(rng, 80)
    targets = [random_protein(rng, int(n)) for n in rng.integers(1, 120, 40)]
    targets += [mutate(query, rng, 0.2, PROTEIN)]
    base = one_to_many(query, targets, BLOSUM62)
    scoring = scoring_of(BLOSUM62)
    for factor in (2000, 3):
        matrix = scoring.matrix.astype(np.int64) * factor
        gap_open, gap_extend = 11 * factor, 1 * factor
        profile = _cpu.query_profile(encode_text(query, scoring), matrix)
        assert (profile.lane_table is None) == (factor == 2000)
        encoded = encode(targets, scoring, labels=None, what="target row")
        outputs = np.full((5, len(targets)), -1, dtype=np.int64)
        _cpu.one_to_many(profile, len(query), encoded.residues, encoded.offsets,
                         np.arange(len(targets)), gap_open, gap_extend, "full", *outputs)
        assert (outputs[0] == base[0] * factor).all()
        assert (outputs[1:] == base[1:]).all()
        pair_outputs = np.full((5, len(targets)), -1, dtype=np.int64)
        encoded_query = encode([query] * len(targets), scoring, labels=None, what="query row")
        _cpu.pairs(matrix, encoded_query.residues, encoded_query.offsets, encoded.residues,
                   encoded.offsets, np.arange(len(targets)), gap_open, gap_extend, "full",
                   *pair_outputs)
        assert (pair_outputs == outputs).all()
    # gap costs beyond int16 with an ordinary matrix: lanes refuse, the scalar path answers
    huge_gap = Scheme("BLOSUM62", 40_000, 20_000)
    fast = one_to_many(query, targets, huge_gap)
    assert fast[0].tolist() == [biopython_score(query, t, huge_gap) for t in targets]


def test_bare_int64_profile_takes_the_scalar_path():
    rng = np.random.default_rng(9)
    query = random_protein(rng, 50)
    targets = [random_protein(rng, 70) for _ in range(10)]
    scoring = scoring_of(BLOSUM62)
    encoded = encode(targets, scoring, labels=None, what="target row")
    profile = _cpu.query_profile(encode_text(query, scoring), scoring.matrix)
    outputs = np.full((5, len(targets)), -1, dtype=np.int64)
    _cpu.one_to_many(profile.scores, len(query), encoded.residues, encoded.offsets,
                     np.arange(len(targets)), 11, 1, "full", *outputs)
    assert (outputs == one_to_many(query, targets, BLOSUM62)).all()


def test_query_profile_layout():
    scoring = scoring_of(BLOSUM62)
    codes = encode_text("WAC", scoring)
    profile = _cpu.query_profile(codes, scoring.matrix)
    alphabet = scoring.alphabet
    for i, letter in enumerate("WAC"):
        for t, target_letter in enumerate(alphabet):
            assert profile.scores[t, i] == BLOSUM62.table[target_letter][letter]
            assert profile.lane_table[int(codes[i]) * _simd.LANES + t] == \
                BLOSUM62.table[target_letter][letter]
    table = profile.lane_table.reshape(len(alphabet), _simd.LANES)
    assert (table[:, len(alphabet):] == _cpu._PAD_SCORE).all()


# ----------------------------------------------------------------------------- pairs


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_pairs_random_mixed_lengths(scheme):
    """Row-wise pairs of mixed sizes, both lookup paths (64-entry permute for DNA, gather for
    proteins): lanes equal the scalar reference; scores equal Biopython's."""
    rng = np.random.default_rng(21)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    queries, targets = [], []
    for k in range(90):
        query = "".join(rng.choice(list(letters), int(rng.integers(1, 250))))
        if k % 3 == 0:
            target = mutate(query, rng, 0.25, letters) or letters[0]
        else:
            target = "".join(rng.choice(list(letters), int(rng.integers(1, 250))))
        queries.append(query)
        targets.append(target)
    reference = pairs(queries, targets, scheme, kernel=_cpu._scalar_pairs)
    for positions in MODES:
        assert_same_as_reference(pairs(queries, targets, scheme, positions), reference,
                                 positions)
    assert reference[0].tolist() == [biopython_score(q, t, scheme)
                                     for q, t in zip(queries, targets)]
    assert_rescoring(reference, queries, targets, scheme)


@pytest.mark.parametrize("scheme", [Scheme(None, 5, 2, match=2, mismatch=-3), BLOSUM62],
                         ids=str)
def test_few_pairs_with_long_queries_take_the_striped_kernel(scheme, monkeypatch):
    """Fewer pairs than a batch of lanes (a search's top rows): those whose query has at
    least 32 letters are striped over their query one at a time, the others stay in the
    lanes; every mode equals the scalar reference (long targets holding the query with
    gaps, and a pair of short queries)."""
    rng = np.random.default_rng(23)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    queries, targets = [], []
    for length in (20, 40, 300, 900):
        query = "".join(rng.choice(list(letters), length))
        queries.append(query)
        targets.append("".join(rng.choice(list(letters), 3000)) + mutate(query, rng, 0.1, letters)
                       + "".join(rng.choice(list(letters), 2000)))
    striped = []
    real = _cpu._one_to_many_striped

    def spy(table, seg, m, residues, offsets, rows, *args):
        striped.append(m)
        return real(table, seg, m, residues, offsets, rows, *args)

    monkeypatch.setattr(_cpu, "_one_to_many_striped", spy)
    reference = pairs(queries, targets, scheme, kernel=_cpu._scalar_pairs)
    for positions in MODES:
        striped.clear()
        assert_same_as_reference(pairs(queries, targets, scheme, positions), reference,
                                 positions)
        assert sorted(striped) == [40, 300, 900]


def test_pairs_ties_and_edges():
    queries = ["ACAC", "A", "W", "WGWGWG", "CWC" * 4, "G", "AAAAAAAA"]
    targets = ["ACACACAC", "A", "G", "WG" * 9, "CWCCWC", "GGGG", "AAAA"]
    for scheme in (BLOSUM62, Scheme("BLOSUM45", 0, 0)):
        fast = pairs(queries, targets, scheme)
        for row, (query, target) in enumerate(zip(queries, targets)):
            score, qs, qe, ts, te = brute_force(query, target, scheme)
            expected = [score, -1, -1, -1, -1] if score == 0 else [score, qs, qe - 1, ts, te - 1]
            assert fast[:, row].tolist() == expected, (str(scheme), query, target)


def test_pairs_saturation(dna_region):
    """A 12,000-base DNA region against itself (match 3: 36,000 > 32767) among ordinary DNA
    pairs, and a protein self-pair of 6,000: recomputed exactly, neighbours untouched."""
    dna = Scheme(None, 6, 1, match=3, mismatch=-3)
    rng = np.random.default_rng(2)
    pieces = [dna_region[k:k + 300] for k in range(0, 3000, 300)]
    queries = pieces + [dna_region]
    targets = [mutate(p, rng, 0.1, "ACGT") for p in pieces] + [dna_region]
    fast = pairs(queries, targets, dna)
    reference = pairs(queries, targets, dna, kernel=_cpu._scalar_pairs)
    assert_same_as_reference(fast, reference, "full")
    n = len(dna_region)
    expected_self = sum(3 if c in "ACGT" else -3 for c in dna.canonical(dna_region))
    assert fast[0, -1] == expected_self == parasail_score(dna_region, dna_region, dna)
    assert fast[0].tolist() == [parasail_score(q, t, dna) for q, t in zip(queries, targets)]
    if "N" not in dna.canonical(dna_region):
        assert fast[1:, -1].tolist() == [0, n - 1, 0, n - 1]
    protein = random_protein(rng, 6000)
    fast = pairs([protein, protein[:100]], [protein, protein[50:300]], BLOSUM62)
    assert fast[0, 0] == sum(BLOSUM62.table[a][a] for a in protein) > 32767
    assert fast[:, 0].tolist()[1:] == [0, 5999, 0, 5999]
    assert fast[0, 1] == biopython_score(protein[:100], protein[50:300], BLOSUM62)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_lanes_equal_reference_property(data):
    """Hypothesis: small alphabets (many ties), any lengths, several batches: one-to-many and
    pairs lanes equal the scalar kernels cell for cell."""
    letters = data.draw(st.sampled_from(["AC", "ACGT", "WGC", PROTEIN]))
    scheme = data.draw(st.sampled_from([BLOSUM62, Scheme("BLOSUM62", 1, 1),
                                        Scheme("BLOSUM62", 0, 0), Scheme("PAM30", 3, 2)]))
    sequence = st.text(alphabet=letters, min_size=1, max_size=60)
    query = data.draw(sequence)
    targets = data.draw(st.lists(sequence, min_size=1, max_size=70))
    positions = data.draw(st.sampled_from(MODES))
    assert_same_as_reference(
        one_to_many(query, targets, scheme, positions),
        one_to_many(query, targets, scheme, kernel=_cpu._scalar_one_to_many), positions)
    queries = data.draw(st.lists(sequence, min_size=len(targets), max_size=len(targets)))
    assert_same_as_reference(pairs(queries, targets, scheme, positions),
                             pairs(queries, targets, scheme, kernel=_cpu._scalar_pairs),
                             positions)


# ----------------------------------------------------------------------------- SIMD layer


def test_table_lookups_on_every_path(monkeypatch):
    """The table lookups per lane have three forms: AVX-512 (vpermw, vpermi2w, vpermb), AVX2
    (vpshufb on 16-byte pieces of the table) and portable IR; every form the host can run
    agrees with numpy, on indices of every piece of the tables (the AVX2 form picks a
    piece by an index's high bits and fails when one piece answers for another)."""
    rng = np.random.default_rng(0)
    low = rng.integers(-300, 300, _simd.LANES).astype(np.int16)
    high = rng.integers(-300, 300, _simd.LANES).astype(np.int16)
    index = rng.permutation(64)[:_simd.LANES].astype(np.uint8)  # both halves, all pieces
    table32 = rng.integers(-300, 300, 1024).astype(np.int32)
    wide = rng.integers(0, 1024, _simd.LANES).astype(np.int16)
    byte_table = rng.integers(0, 256, _simd.BYTE_LANES).astype(np.uint8)
    byte_index = rng.permutation(_simd.BYTE_LANES).astype(np.uint8)

    def lookups(low, high, index, table32, wide, byte_table, byte_index):
        out = np.empty(3 * _simd.LANES, dtype=np.int16)
        codes = _simd.load_codes(index, 0)
        _simd.store(out, 0, _simd.permute(_simd.load(low, 0), codes))
        _simd.store(out, _simd.LANES, _simd.permute64(_simd.load(low, 0), _simd.load(high, 0),
                                                      codes))
        _simd.store(out, 2 * _simd.LANES, _simd.gather(table32, _simd.load(wide, 0)))
        out_bytes = np.empty(_simd.BYTE_LANES, dtype=np.uint8)
        _simd.store_bytes(out_bytes, 0, _simd.permute_bytes(_simd.load_bytes(byte_table, 0),
                                                            _simd.load_bytes(byte_index, 0)))
        return out, out_bytes

    expected = np.concatenate([low[index & 31], np.concatenate([low, high])[index],
                               table32[wide]])
    paths = {"portable": (False, False, False)}
    if _simd.HAVE_PSHUFB:
        paths["avx2"] = (False, False, True)
    if _simd.HAVE_VPERMW or _simd.HAVE_VPERMB:
        paths["host"] = (_simd.HAVE_VPERMW, _simd.HAVE_VPERMB, _simd.HAVE_PSHUFB)
    for name, (vpermw, vpermb, pshufb) in paths.items():
        monkeypatch.setattr(_simd, "HAVE_VPERMW", vpermw)
        monkeypatch.setattr(_simd, "HAVE_VPERMB", vpermb)
        monkeypatch.setattr(_simd, "HAVE_PSHUFB", pshufb)
        compiled = nb.njit(lookups)  # a fresh function: generated with the flags as set
        words, bytes_out = compiled(low, high, index, table32, wide, byte_table, byte_index)
        assert (words == expected).all(), name
        assert (bytes_out == byte_table[byte_index]).all(), name


@pytest.mark.parametrize("scheme", [BLOSUM62, Scheme("PAM30", 9, 1),
                                    Scheme(None, 5, 2, match=2, mismatch=-3)])
@pytest.mark.parametrize("positions", MODES)
def test_byte_lane_pass_sends_only_unsure_rows_to_int16(scheme, positions, monkeypatch):
    """Every mode runs the 64-byte-lane pass first (scores, and end cells by the tie rule):
    every output equals the scalar reference's (scores also parasail's), rows scoring near
    255 and beyond (homologs of the query) as well as unrelated ones, over several batches
    with padding; the int16 lanes see only the rows the byte pass could not tell (its best
    at or past the bound)."""
    rng = np.random.default_rng(64)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    query = "".join(rng.choice(list(letters), 180))
    targets = ([mutate(query, rng, rate, letters) for rate in np.linspace(0.0, 0.6, 40)]
               + ["".join(rng.choice(list(letters), int(n))) for n in rng.integers(1, 400, 150)]
               + [query[:k] for k in (5, 40, 90)])
    to_int16 = []
    real = _cpu._one_to_many_lanes

    def spy(query_codes, table, residues, offsets, rows, *args):
        if isinstance(args[-1], np.int16):  # the int16 lanes (np.uint8: the byte pass)
            to_int16.append(np.asarray(rows).copy())
        return real(query_codes, table, residues, offsets, rows, *args)

    monkeypatch.setattr(_cpu, "_one_to_many_lanes", spy)
    fast = one_to_many(query, targets, scheme, positions)
    reference = one_to_many(query, targets, scheme, positions,
                            kernel=_cpu._scalar_one_to_many)
    assert_same_as_reference(fast, reference, positions)
    assert fast[0].tolist() == [parasail_score(query, t, scheme) for t in targets]
    scoring = scoring_of(scheme)
    profile = _cpu.query_profile(encode_text(query, scoring), scoring.matrix)
    bound = _cpu._byte_bound(profile.scores, profile.byte_bias)
    unsure = sorted(np.concatenate(to_int16).tolist()) if to_int16 else []
    assert unsure == np.flatnonzero(fast[0] >= bound).tolist()
    assert 0 < len(unsure) < len(targets) // 2  # both kinds of rows are in the test


@pytest.mark.parametrize("scheme", [Scheme(None, 300, 1, match=2, mismatch=-3),
                                    Scheme(None, 5, 2, match=200, mismatch=-3)])
def test_scores_beyond_the_byte_lanes_take_the_int16_lanes(scheme):
    """A gap cost past 255, or a matrix whose byte range would leave too little room, skips
    the byte pass (no byte table), and the scores are still exact."""
    rng = np.random.default_rng(65)
    query = "".join(rng.choice(list("ACGT"), 120))
    targets = [mutate(query, rng, rate, "ACGT") for rate in (0.0, 0.1, 0.3)] + [
        "".join(rng.choice(list("ACGT"), 200)) for _ in range(70)]
    scoring = scoring_of(scheme)
    profile = _cpu.query_profile(encode_text(query, scoring), scoring.matrix)
    assert (profile.byte_table is None) == (scheme.match == 200)
    fast = one_to_many(query, targets, scheme, "none")
    reference = one_to_many(query, targets, scheme, "none", kernel=_cpu._scalar_one_to_many)
    assert_same_as_reference(fast, reference, "none")


@pytest.mark.parametrize("scheme", [Scheme(None, 5, 2, match=2, mismatch=-3),
                                    Scheme(None, 0, 0, match=1, mismatch=-2),
                                    Scheme(None, 3, 0, match=2, mismatch=-3), BLOSUM62,
                                    Scheme("BLOSUM62", 4, 4)])
@pytest.mark.parametrize("positions", MODES)
def test_few_long_rows_take_the_striped_kernel(scheme, positions, monkeypatch):
    """Fewer rows than a batch of lanes are aligned one at a time, striped over the query
    (lazy F across segments): every output equals the scalar reference (the tie rules
    included), on long rows holding copies of the query with gaps, repeats (many equal
    cells), a query shorter and longer than the segments, and a row that saturates 16 bits
    (recomputed exactly; but for match 1)."""
    rng = np.random.default_rng(77)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    used = []
    real = _cpu._one_to_many_striped

    def spy(table, seg, m, residues, offsets, rows, *args):
        used.append(len(rows))
        return real(table, seg, m, residues, offsets, rows, *args)

    monkeypatch.setattr(_cpu, "_one_to_many_striped", spy)
    for length in (33, 257, 1500):
        query = "".join(rng.choice(list(letters), length))
        targets = ["".join(rng.choice(list(letters), 5000)) + mutate(query, rng, 0.05, letters)
                   + "".join(rng.choice(list(letters), 3000)),
                   (query[: length // 2] * 6)[: 4 * length], letters[0] * 2000,
                   mutate(query, rng, 0.2, letters), query[length // 3:]]
        fast = one_to_many(query, targets, scheme, positions)
        reference = one_to_many(query, targets, scheme, positions,
                                kernel=_cpu._scalar_one_to_many)
        assert_same_as_reference(fast, reference, positions)
    assert used == [5, 5, 5]
    huge = random_protein(rng, 7000) if scheme.matrix else "".join(rng.choice(list("ACGT"), 20000))
    if scheme.match != 1:  # (match 1 would need 33,000 letters: too slow a reference)
        assert sum(scheme.table[a][a] for a in huge) > 32767  # its self-alignment saturates
    fast = one_to_many(huge, [huge, huge[:100]], scheme, positions)
    reference = one_to_many(huge, [huge, huge[:100]], scheme, positions,
                            kernel=_cpu._scalar_one_to_many)
    assert_same_as_reference(fast, reference, positions)


@pytest.mark.parametrize("scheme", [Scheme(None, 5, 2, match=2, mismatch=-3), BLOSUM62,
                                    Scheme("BLOSUM62", 4, 4), Scheme(None, 0, 0, match=1,
                                                                      mismatch=-2)])
def test_striped_row_in_any_widths_and_sections_gives_the_int16_result(scheme):
    """The striped row runs in byte lanes and switches to int16 lanes where a column comes
    near 255, to int32 lanes past int16, and back: whatever the limits (from never in
    bytes to a switch at every hit), and cut into sections run one after another from the
    boundary column the one before left, the best, its end cell (ties between equal copies
    included: the first column) and so the result equal the int16 kernel's and the scalar
    reference's, on a row holding several copies of the query (equal ones among them)
    between noise."""
    rng = np.random.default_rng(5)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    scoring = scoring_of(scheme)
    query = "".join(rng.choice(list(letters), 300))
    noise = lambda length: "".join(rng.choice(list(letters), length))  # noqa: E731
    copy = mutate(query, rng, 0.1, letters)
    pieces = [noise(2000), mutate(query[:60], rng, 0.1, letters), noise(1500), copy,
              noise(900), query[100:200], noise(700), copy, noise(1200),
              mutate(query, rng, 0.3, letters), noise(500)]
    target = "".join(pieces)
    codes = encode_text(query, scoring)
    striped = _cpu.striped_query(np.ascontiguousarray(scoring.matrix[:, codes]).astype(np.int64),
                                 scoring.gap_open, scoring.gap_extend)
    assert striped.byte_limit >= 64  # bytes are used for this scheme
    residues = encode([target], scoring).residues

    def row(byte_limit, back_limit, word_limit=striped.word_limit,
            word_back=striped.word_back, cuts=()):
        """The row's result, run in sections ending at ``cuts`` (each from the boundary
        column the one before left); with cuts, also the boundary columns (H and E) there."""
        boundary_H = np.zeros(len(query), dtype=np.int64)
        boundary_E = np.zeros(len(query), dtype=np.int64)
        found = (0, -1, -1)
        start = 0
        boundaries = []
        for stop in [*cuts, len(target)]:
            found = _cpu._striped_row(
                striped.table, striped.seg, word_limit, striped.byte_table, striped.byte_seg,
                striped.bias, byte_limit, back_limit, striped.dword_table, striped.dword_seg,
                striped.saturation, word_back, len(query), residues, 0, start, stop,
                scoring.gap_open, scoring.gap_extend, boundary_H, boundary_E, *found, 0,
                None)
            boundaries.append(np.concatenate([boundary_H, boundary_E]))
            start = stop
        return (found, np.array(boundaries)) if cuts else found

    words = row(-1, -1)
    reference = one_to_many(query, [target], scheme, "end", kernel=_cpu._scalar_one_to_many)
    assert [words[0], words[1], words[2]] == reference[[0, 2, 4], 0].tolist()
    assert words[0] > striped.byte_limit  # the row does leave bytes
    for byte_limit, back_limit in [(striped.byte_limit, striped.back_limit),
                                   (striped.byte_limit, striped.byte_limit), (30, 0),
                                   (30, 29), (12, 6)]:
        assert row(byte_limit, back_limit) == words, (byte_limit, back_limit)
    # int32 lanes: from bytes (no int16 lanes: word_limit 0), after int16 lanes from a low
    # limit on, back and forth, and alone
    for byte_limit, back_limit, word_limit, word_back in [
            (striped.byte_limit, striped.back_limit, 0, -1), (30, 0, 300, 280),
            (30, 29, 300, 0), (-1, -1, 0, -1), (-1, -1, 256, 255)]:
        assert row(byte_limit, back_limit, word_limit, word_back) == words, (
            byte_limit, back_limit, word_limit, word_back)
    # the row cut into sections (a cut inside the copies, in noise, one column long, in
    # every width): each section from the boundary column the one before left
    cuts = sorted(set(rng.integers(1, len(target), 40).tolist()) | {1, 2, 2100, 4000})
    found, columns = row(-1, -1, cuts=cuts)  # int16 lanes throughout
    assert found == words
    for limits in [(striped.byte_limit, striped.back_limit, striped.word_limit,
                    striped.word_back), (striped.byte_limit, striped.byte_limit, 0, -1),
                   (30, 0, 300, 280), (-1, -1, 0, -1)]:
        found, boundaries = row(*limits, cuts=cuts)
        assert found == words, limits
        assert np.array_equal(boundaries, columns), limits  # every column's H and E


def _scalar_tile(scores, target, gap_open, gap_extend, left, top, corner):
    """The scalar tile (the reference for the striped one): best, right column, bottom row."""
    m, n = scores.shape[1], target.size
    H, E = (np.array(edge, dtype=np.int64) for edge in left)
    top_diag = np.concatenate([[corner], top[0][:-1]]).astype(np.int64)
    bottom_H, bottom_F = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    best = _cpu._scalar_tile(scores, m, target, n, gap_open, gap_extend, H, E, top_diag,
                             np.array(top[1], dtype=np.int64), bottom_H, bottom_F)
    return tuple(best), np.concatenate([H, E]), np.concatenate([bottom_H, bottom_F])


@pytest.mark.parametrize("scheme", [Scheme(None, 5, 2, match=2, mismatch=-3), BLOSUM62,
                                    Scheme(None, 0, 0, match=1, mismatch=-2)])
def test_striped_tiles_take_a_top_edge_and_give_their_bottom_row(scheme):
    """A tile on the striped row (a block of query rows under a given row above, from a
    given column before it): its best cell, last column (H and E) and bottom row (H of the
    last row, the gap leaving it) equal the scalar tile's, in whatever widths the limits
    force (bytes throughout, int16 and int32 lanes and the switches between them), where
    the top edge is low, high (a whole alignment arriving from above, past the byte and
    int16 lanes) or rises mid-row; and the scalar tile cut into two tiles, the lower from
    the upper's bottom row, gives the uncut tile's right column and best."""
    rng = np.random.default_rng(7)
    letters = "ACGT" if scheme.matrix is None else PROTEIN
    scoring = scoring_of(scheme)
    for m, n in [(300, 900), (31, 200), (64, 150), (1, 50)]:
        query = "".join(rng.choice(list(letters), m))
        target = "".join(rng.choice(list(letters), n // 3)) + mutate(
            query, rng, 0.1, letters)[:n // 2]
        target += "".join(rng.choice(list(letters), n - len(target)))
        codes, residues = encode_text(query, scoring), encode_text(target, scoring)
        scores = np.ascontiguousarray(scoring.matrix[:, codes]).astype(np.int64)
        striped = _cpu.striped_query(scores, scoring.gap_open, scoring.gap_extend, rows=m + 1)
        for rise in (0, 250, 40_000):  # the top edge's height (40,000: past int16)
            top_H = rng.integers(0, 30, n) + rise * (np.arange(n) > n // 3)
            top_F = np.maximum(top_H - scoring.gap_open, 0)
            left = (rng.integers(0, 20, m) + rise // 2, rng.integers(0, 5, m))
            corner = int(rng.integers(0, 20))
            want = _scalar_tile(scores, residues, scoring.gap_open, scoring.gap_extend, left,
                                (top_H, top_F), corner)
            top_diag = np.concatenate([[corner], top_H[:-1]]).astype(np.int64)
            top_gap = top_F.astype(np.int64)
            for byte_limit, back_limit, word_limit, word_back in [
                    (striped.byte_limit, striped.back_limit, striped.word_limit,
                     striped.word_back), (30, 0, 300, 280), (12, 6, 0, -1),
                    (-1, -1, striped.word_limit, striped.word_back), (-1, -1, 0, -1)]:
                H, E = (np.array(edge, dtype=np.int64) for edge in left)
                bottom_H, bottom_F = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
                found = _cpu._striped_row(
                    striped.table, striped.seg, word_limit, striped.byte_table,
                    striped.byte_seg, striped.bias, byte_limit, back_limit,
                    striped.dword_table, striped.dword_seg, striped.saturation, word_back, m,
                    residues, 0, 0, n, scoring.gap_open, scoring.gap_extend, H, E, 0, -1, -1,
                    m, (top_diag, top_gap, np.maximum(top_diag, top_gap), bottom_H, bottom_F))
                limits = (m, rise, byte_limit, back_limit, word_limit, word_back)
                assert tuple(found) == want[0], limits
                assert np.array_equal(np.concatenate([H, E]), want[1]), limits
                assert np.array_equal(np.concatenate([bottom_H, bottom_F]), want[2]), limits
        if m > 1:  # two scalar tiles, one under the other, give the uncut tile
            cut = m // 2
            zeros = (np.zeros(n, dtype=np.int64),) * 2
            whole = _scalar_tile(scores, residues, scoring.gap_open, scoring.gap_extend,
                                 (np.zeros(m), np.zeros(m)), zeros, 0)
            upper = _scalar_tile(scores[:, :cut], residues, scoring.gap_open,
                                 scoring.gap_extend, (np.zeros(cut), np.zeros(cut)), zeros, 0)
            lower = _scalar_tile(scores[:, cut:], residues, scoring.gap_open,
                                 scoring.gap_extend, (np.zeros(m - cut), np.zeros(m - cut)),
                                 (upper[2][:n], upper[2][n:]), 0)
            assert np.array_equal(np.concatenate([upper[1][:cut], lower[1][:m - cut],
                                                  upper[1][cut:], lower[1][m - cut:]]),
                                  whole[1])
            assert np.array_equal(lower[2], whole[2])
            best = max([(upper[0][0], -upper[0][2], -upper[0][1]),
                        (lower[0][0], -lower[0][2], -(lower[0][1] + cut))])
            if whole[0][0] > 0:
                assert (best[0], -best[2], -best[1]) == whole[0]


def test_striped_rows_near_the_int16_limit_go_on_in_int32_lanes(monkeypatch):
    """The striped kernel's running maximum of vertical gaps carries ``seg * gap_extend``
    on top of the scores, so a row whose best stays below 16 bits but whose carried gaps
    may not (a deletion near the end of a 16,300-letter self-alignment scoring about
    32,500) goes on in int32 lanes before any lane could wrap, not to the scalar kernel;
    every output equals the scalar reference."""
    rng = np.random.default_rng(91)
    scheme = Scheme(None, 5, 2, match=2, mismatch=-3)
    query = "".join(rng.choice(list("ACGT"), 16_300))
    target = query[:16_000] + query[16_012:]  # 12 query letters skipped: a vertical gap
    seg = -(-len(query) // _simd.LANES)
    bound = _cpu.saturation_bound(_cpu._LANE_MAX, 2)
    reference = one_to_many(query, [target], scheme, "full", kernel=_cpu._scalar_one_to_many)
    assert bound - seg * 2 <= reference[0][0] < bound  # the case this test is for
    flagged = []
    real = _cpu._one_to_many_striped

    def spy(*args):
        real(*args)
        flagged.append(bool(args[-1].any()))  # its ``saturated`` output

    monkeypatch.setattr(_cpu, "_one_to_many_striped", spy)
    assert_same_as_reference(one_to_many(query, [target], scheme, "full"), reference, "full")
    assert flagged == [False]


@nb.njit(parallel=True, cache=False)
def _take_items(n_items, taken_by):
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(_work.TASKS):
        while True:
            item = _work.next_item(counter)
            if item >= n_items:
                break
            taken_by[item] += 1


@pytest.mark.parametrize("n_items", [0, 1, 5, _work.TASKS + 3, 50_000])
def test_work_counter_hands_out_every_item_once(n_items):
    """The kernels' loop shape (swdask._work): every item taken exactly once, whatever the
    number of items against the tasks and threads."""
    for threads in sorted({1, nb.config.NUMBA_NUM_THREADS}):
        nb.set_num_threads(threads)
        try:
            taken_by = np.zeros(n_items, dtype=np.int64)
            _take_items(n_items, taken_by)
        finally:
            nb.set_num_threads(nb.config.NUMBA_NUM_THREADS)
        assert (taken_by == 1).all()


@pytest.mark.parametrize("lanes", ["int16", "bytes"])
def test_both_forms_of_the_vertical_gap_give_the_same_cells(lanes, monkeypatch):
    """F' below opened from H' (the form AVX-512 hosts compile) or from H (AVX2 hosts; see
    ``_cpu.F_FROM_H_BEFORE``): the same H, E' and F' for every cell with gap_open >=
    gap_extend, in the lanes' saturating arithmetic. The kernels on one host use one form;
    this runs both, on values around the costs and the lanes' limits."""
    rng = np.random.default_rng(5)
    if lanes == "int16":
        count, top, dtype = _simd.LANES, 2000, np.int16
        load, store, splat, cell = _simd.load, _simd.store, _simd.splat, _cpu._next_cell
    else:
        count, top, dtype = _simd.BYTE_LANES, 255, np.uint8
        load, store = _simd.load_bytes, _simd.store_bytes
        splat, cell = _simd.splat_bytes, _cpu._next_cell_bytes
    inputs = []
    for open_cost, extend_cost in [(11, 1), (5, 5), (0, 0), (40, 3), (200, 100)]:
        values = [rng.integers(0, top + 1, 64 * count).astype(dtype) for _ in range(3)]
        values[2][::3] = np.minimum(values[0][::3] + rng.integers(0, 30, values[0][::3].size),
                                    top).astype(dtype)  # F raising H, often
        inputs.append((values, open_cost, extend_cost))
    found = {}
    for form in (True, False):
        monkeypatch.setattr(_cpu, "F_FROM_H_BEFORE", form)
        fresh = nb.njit(cell.py_func)  # compiled with the form as set

        @nb.njit
        def cells(h_before, e, f, open_cost, extend_cost, out):
            for k in range(0, h_before.size, count):
                h, e_right, f_below = fresh(load(h_before, k), load(e, k), load(f, k),
                                            splat(open_cost), splat(extend_cost))
                store(out, 3 * k, h)
                store(out, 3 * k + count, e_right)
                store(out, 3 * k + 2 * count, f_below)

        outputs = []
        for values, open_cost, extend_cost in inputs:
            out = np.empty(3 * values[0].size, dtype=dtype)
            cells(*values, open_cost, extend_cost, out)
            outputs.append(out)
        found[form] = np.concatenate(outputs)
    assert np.array_equal(found[True], found[False])
