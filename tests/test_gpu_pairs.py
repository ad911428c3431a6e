"""Row-wise pairs on the GPU (swdask.gpu._pairs): every score and cell equals the CPU engine's.

The reference is the public API on the CPU (``swdask.align_pairs(..., backend="cpu")``), which
test_reference.py checks against Biopython and parasail; here each GPU kernel (inter-task at
several shapes, intra-task, whole-GPU long pair) must reproduce it exactly, tie rules
included, on random and real sequences, with strips, ties, unusual gap costs and nulls.

* GPU tests (marker ``gpu``): skipped without CuPy or a GPU.
* Emulated tests: the same code, through the runtime's host emulation (the setting
  ``swdask.gpu.runtime: emulation``: the kernel sources compiled with g++ against
  swdask/gpu/host_emulation.h, one fiber per CUDA thread, run on the CPU), so CPU-only CI
  checks the kernels' logic too (small sizes: the emulation is slow). Skipped without g++.
"""
from __future__ import annotations

from pathlib import Path

import dask.config
import numpy as np
import pandas as pd
import pytest

import swdask
from swdask._scoring import make_scoring
from swdask._sequences import EncodedSequences, encode
from swdask.gpu import _kernels, _pairs, _runtime


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


_HAVE_GPU = _gpu_available()


def gpu_test(function):
    """A test that needs CuPy and a CUDA GPU (marker ``gpu``)."""
    return pytest.mark.gpu(pytest.mark.skipif(not _HAVE_GPU, reason="needs CuPy and a CUDA GPU")(
        function))


DATA = Path(__file__).parent / "data"
#: scoring schemes as the public API's keyword arguments
DNA = dict(matrix=None, match=3, mismatch=-3, gap_open=6, gap_extend=1)
BLOSUM62 = dict(matrix="BLOSUM62", gap_open=11, gap_extend=1)


def _dna(match, mismatch, gap_open, gap_extend) -> dict:
    return dict(matrix=None, match=match, mismatch=mismatch, gap_open=gap_open,
                gap_extend=gap_extend)


def _proteins() -> list[str]:
    seqs, cur = [], []
    for line in (DATA / "proteins_db.fasta").read_text().splitlines():
        if line.startswith(">"):
            if cur:
                seqs.append("".join(cur))
            cur = []
        elif line.strip():
            cur.append(line.strip())
    if cur:
        seqs.append("".join(cur))
    return seqs


def _mutate(seq: str, rng, rate: float, letters: str) -> str:
    """Substitutions, insertions and deletions at ``rate`` each third."""
    out = []
    for c in seq:
        x = rng.random()
        if x < rate / 3:
            out.append(letters[rng.integers(len(letters))])
        elif x < 2 * rate / 3:
            out.append(c + letters[rng.integers(len(letters))])
        elif x >= rate:
            out.append(c)
    return "".join(out)


def _random_dna(rng, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), n))


def _assert_same_frames(got: pd.DataFrame, want: pd.DataFrame, context) -> None:
    """Every row and column equal (nulls included), naming the first rows that differ."""
    assert list(got.columns) == list(want.columns), context
    for name in want.columns:
        a = got[name].fillna(-99).to_numpy(np.int64)
        b = want[name].fillna(-99).to_numpy(np.int64)
        bad = np.flatnonzero(a != b)
        assert bad.size == 0, (context, name, bad[:5], a[bad[:5]], b[bad[:5]])


def _compare(queries, targets, options, *, mode="full", force=None, shape=None):
    """align_pairs_gpu (on the current runtime) against the CPU on every row; returns how
    many rows scored above 0."""
    scoring = make_scoring(**options)
    got = _pairs.align_pairs_gpu(encode(queries, scoring), encode(targets, scoring), scoring,
                                 mode, force=force, shape=shape)
    want = swdask.align_pairs(queries, targets, positions=mode, backend="cpu", **options)
    _assert_same_frames(got.to_pandas(), want, (force, shape, mode))
    return int((want["score"].fillna(0) > 0).sum())


def _dna_pairs(rng, count, max_q, max_t):
    queries, targets = [], []
    for _ in range(count):
        target = _random_dna(rng, int(rng.integers(0, max_t + 1)))
        if target and rng.random() < 0.7:  # a related query: a mutated piece of the target
            start = int(rng.integers(0, len(target)))
            query = _mutate(target[start:start + int(rng.integers(1, max_q + 1))], rng, 0.15,
                            "ACGTN")
        else:
            query = _random_dna(rng, int(rng.integers(0, max_q + 1)))
        queries.append(query)
        targets.append(target)
    return queries, targets


# --------------------------------------------------------------- kernels on a CUDA GPU

# shapes the GPU tests force, by family; test_forced_shapes_are_compiled_ahead checks that
# swdask.gpu._kernels.all_variants (what the compile test builds) has every one of them
INTER_SHAPES = [(4, 4), (8, 12), (16, 8), (32, 4), (32, 32)]
INTRA_SHAPES = [(1, 4), (2, 8), (4, 4)]
LONG_SHAPES = [(1, 4), (2, 4), (4, 8)]
PROTEIN_KERNELS = [("inter", (8, 8)), ("inter", (32, 16)), ("intra", (2, 4)), (None, None)]
TIE_KERNELS = [("inter", (8, 4)), ("intra", (1, 4)), ("long", (1, 4))]
PROPERTY_KERNELS = [("inter", (4, 8)), ("intra", (1, 4)), ("long", (1, 4))]
TABLE_KERNEL = ("inter", (8, 8))


def test_forced_shapes_are_compiled_ahead():
    variants = _kernels.all_variants(90)
    forced = ([("inter", s) for s in INTER_SHAPES] + [("intra", s) for s in INTRA_SHAPES]
              + [("long", s) for s in LONG_SHAPES] + PROTEIN_KERNELS + TIE_KERNELS
              + PROPERTY_KERNELS + [TABLE_KERNEL])
    for family, shape in forced:
        if family is None:
            continue
        source = _kernels.PAIRS_KERNELS[family][0]
        for kind in (0, 1):
            for reverse in (False, True):
                assert _kernels.pairs_name(family, shape, kind, reverse) in variants[source]
    # and every shape the router picks
    routed = {_pairs.inter_shape_for(rows) for rows in range(1, 3 * _pairs.INTER_MAX_ROWS)}
    assert routed == set(_kernels.PAIRS_ROUTED_INTER_SHAPES)
    assert set(_kernels.PAIRS_FORCED_INTER_SHAPES) <= {shape for family, shape in forced
                                                       if family == "inter"}
    for shape in routed:
        assert _kernels.pairs_name("inter", shape, 1, True) in variants["pairs_inter.cu"]


@gpu_test
@pytest.mark.parametrize("shape", INTER_SHAPES)
def test_inter_task_dna(shape):
    rng = np.random.default_rng(sum(shape))
    queries, targets = _dna_pairs(rng, 300, 400, 500)
    assert _compare(queries, targets, DNA, force="inter", shape=shape) > 100


@gpu_test
@pytest.mark.parametrize("shape", INTRA_SHAPES)
def test_intra_task_dna(shape):
    rng = np.random.default_rng(7 + shape[1])
    queries, targets = _dna_pairs(rng, 120, 900, 700)
    assert _compare(queries, targets, DNA, force="intra", shape=shape) > 40


@pytest.mark.parametrize("kernel,shape", PROTEIN_KERNELS)
@gpu_test
def test_protein_real_sequences(kernel, shape):
    """Mutated UniProt proteins (with X and other non-standard letters) under BLOSUM62."""
    rng = np.random.default_rng(3)
    proteins = _proteins()
    picks = rng.integers(0, len(proteins), 200)
    targets = [proteins[k] for k in picks]
    queries = [_mutate(t, rng, 0.3, "ACDEFGHIKLMNPQRSTVWYXBZ") for t in targets]
    queries[::7] = [proteins[k] for k in rng.integers(0, len(proteins), len(queries[::7]))]
    assert _compare(queries, targets, BLOSUM62, force=kernel, shape=shape) > 150


@gpu_test
@pytest.mark.parametrize("mode", ["full", "end", "none"])
def test_modes_nulls_and_empties(mode):
    """Nulls give nulls, empty sequences score 0, positions only where asked for."""
    rng = np.random.default_rng(11)
    queries, targets = _dna_pairs(rng, 60, 120, 200)
    queries[3] = None
    targets[5] = None
    queries[8] = ""
    targets[9] = ""
    _compare(queries, targets, DNA, mode=mode)


def _tie_pairs(rng):
    queries = ["AC" * int(rng.integers(1, 150)) for _ in range(8)]
    targets = ["CA" * int(rng.integers(1, 200)) for _ in range(8)]
    queries += ["ACGT" * 40, "A" * 300, "NNNN", "ACGTNACGTN"]
    targets += ["ACGT" * 60, "A" * 129, "NNNN", "ACGTNACGTN"]
    return queries, targets


@pytest.mark.parametrize("gap_open,gap_extend", [(0, 0), (1, 0), (3, 3), (10 ** 6, 10 ** 6),
                                                 (10 ** 7, 9)])
@pytest.mark.parametrize("kernel,shape", TIE_KERNELS)
@gpu_test
def test_ties_and_gap_costs(gap_open, gap_extend, kernel, shape):
    """Repeats (many equal cells: the tie rules decide) under free, equal and huge gap costs."""
    rng = np.random.default_rng(gap_open + 3 * gap_extend)
    queries, targets = _tie_pairs(rng)
    _compare(queries, targets, _dna(2, -1, gap_open, gap_extend), force=kernel, shape=shape)


def test_positive_mismatch_takes_the_table():
    """A scheme outside the compare form (mismatch > 0) goes through the substitution table;
    DNA match/mismatch through the compare form."""
    assert _pairs.kernel_scoring(make_scoring(**_dna(5, 1, 4, 2)), 100).kind == 1
    compare = _pairs.kernel_scoring(make_scoring(**DNA), 100)
    assert (compare.kind, compare.match, compare.mismatch, compare.limit) == (0, 3, -3, 4)


@gpu_test
def test_positive_mismatch_uses_the_table():
    rng = np.random.default_rng(5)
    queries, targets = _dna_pairs(rng, 80, 150, 150)
    family, shape = TABLE_KERNEL
    _compare(queries, targets, _dna(5, 1, 4, 2), force=family, shape=shape)


@gpu_test
@pytest.mark.parametrize("shape", LONG_SHAPES)
def test_long_pair_wavefront(shape):
    """The whole-GPU kernel: many strips in flight at once, handing rows over through memory."""
    rng = np.random.default_rng(sum(shape))
    target = _random_dna(rng, 6000)
    queries = [_mutate(target[500:5500], rng, 0.1, "ACGT"), _random_dna(rng, 3000),
               _mutate(target[:4000], rng, 0.02, "ACGT")]
    targets = [target, target, target[100:2100]]
    assert _compare(queries, targets, DNA, force="long", shape=shape) == 3


@gpu_test
def test_routing_default_mixed_lengths(monkeypatch):
    """The default routing (all three kernels in one call) on a mix of lengths."""
    rng = np.random.default_rng(21)
    queries, targets = _dna_pairs(rng, 200, 300, 600)
    long_target = _random_dna(rng, 3000)
    queries += [_mutate(long_target, rng, 0.1, "ACGT"), _random_dna(rng, 2500)]
    targets += [long_target, _random_dna(rng, 1500)]
    # the first extra pair takes the whole-GPU kernel, the second the intra-task kernel
    monkeypatch.setattr(_pairs, "LONG_MIN_CELLS", 8_000_000)
    _compare(queries, targets, DNA)


@gpu_test
def test_every_query_class_side_by_side():
    """A batch like a search's top hits: queries of every inter-task length class and a few
    past it (intra-task), against short and long targets, their launches on streams side by
    side (run_pairs): every row equals the CPU's."""
    rng = np.random.default_rng(29)
    queries, targets = [], []
    for length in (20, 50, 100, 150, 230, 300, 450, 600, 900, 1100, 1400):
        for target_length in (40, 700, 6000):
            target = _random_dna(rng, target_length)
            queries.append(_mutate(target[:length], rng, 0.1, "ACGT") if target_length > length
                           else _random_dna(rng, length))
            targets.append(target)
    batch_classes = _pairs._inter_classes
    seen = []

    def counted(batch, rows):
        classes = batch_classes(batch, rows)
        seen.append(len(classes))
        return classes

    import unittest.mock

    with unittest.mock.patch.object(_pairs, "_inter_classes", counted):
        assert _compare(queries, targets, DNA) > 0
    assert seen and max(seen) >= 8


@gpu_test
def test_cupy_inputs_and_public_api():
    """EncodedSequences on the GPU work as well, and align_pairs(backend="gpu") uses them."""
    import cupy as cp

    rng = np.random.default_rng(4)
    queries, targets = _dna_pairs(rng, 50, 200, 300)
    scoring = make_scoring(**DNA)
    on_gpu = [EncodedSequences(cp.asarray(e.residues), cp.asarray(e.offsets), e.valid)
              for e in (encode(queries, scoring), encode(targets, scoring))]
    got = _pairs.align_pairs_gpu(*on_gpu, scoring, "full")
    want = swdask.align_pairs(queries, targets, backend="cpu", **DNA)
    _assert_same_frames(got.to_pandas(), want, "cupy inputs")
    frame = pd.DataFrame({"q": queries, "t": targets}, index=np.arange(50) * 3)
    frame.loc[6, "q"] = None
    gpu = swdask.align_pairs(frame["q"], frame["t"], backend="gpu", **DNA)
    cpu = swdask.align_pairs(frame["q"], frame["t"], backend="cpu", **DNA)
    pd.testing.assert_frame_equal(gpu, cpu)


def _long_rows_case(rng, extra_proteins: int):
    """One protein query against long targets (a mutated copy of it, then other proteins)."""
    proteins = _proteins()
    query = proteins[0]
    targets = [_mutate(query, rng, 0.2, "ACDEFGHIKLMNPQRSTVWY")
               + "".join(proteins[k] for k in rng.integers(0, len(proteins), extra_proteins))
               for _ in range(12)]
    return query, targets, np.array([1, 3, 4, 7, 10, 11])


def _check_long_rows(query, targets, rows, xp) -> None:
    """align_long_rows (kernel cells, inclusive) against swdask.align on the CPU."""
    scoring = make_scoring(**BLOSUM62)
    encoded = encode(targets, scoring)
    got = _pairs.align_long_rows(encode([query], scoring).residues, xp.asarray(encoded.residues),
                                 xp.asarray(encoded.offsets), rows, scoring, "full")
    want = swdask.align(query, [targets[k] for k in rows], backend="cpu", **BLOSUM62)
    host = {name: _runtime.get_runtime().to_host(values) for name, values in got.items()}
    assert np.array_equal(host["score"], want["score"].to_numpy(np.int64))
    for name in ("query_end", "target_end"):  # API: end-exclusive; kernels: inclusive
        assert np.array_equal(host[name] + 1, want[name].to_numpy(np.int64)), name
    for name in ("query_start", "target_start"):
        assert np.array_equal(host[name], want[name].to_numpy(np.int64)), name


@gpu_test
def test_align_long_rows_matches_one_against_all():
    """The one-against-all tail: one query, long targets, one block per row."""
    import cupy as cp

    query, targets, rows = _long_rows_case(np.random.default_rng(8), 6)
    _check_long_rows(query, targets, rows, cp)


def test_score_range_is_checked():
    """Scores that could leave the kernels' int32 range are refused with a way out."""
    with pytest.raises(ValueError, match="backend='cpu'"):
        _pairs.kernel_scoring(make_scoring(**DNA), _pairs.SCORE_LIMIT)


@gpu_test
def test_random_pairs_property():
    """Many small random pairs and schemes, every kernel."""
    rng = np.random.default_rng(99)
    for _ in range(6):
        options = _dna(int(rng.integers(1, 6)), -int(rng.integers(0, 6)),
                       int(rng.integers(0, 12)), int(rng.integers(0, 4)))
        queries, targets = _dna_pairs(rng, 40, 70, 90)
        for kernel, shape in PROPERTY_KERNELS:
            _compare(queries, targets, options, force=kernel, shape=shape)


# ------------------------------------------------------------------------ emulated kernels

#: (family, shape): inter-task (lanes, rows per lane), intra-task and long (warps, rows)
_EMULATED_SHAPES = [("inter", (4, 4)), ("inter", (8, 8)), ("inter", (32, 4)),
                    ("intra", (2, 2)), ("intra", (1, 4)), ("long", (2, 1)), ("long", (1, 2))]


@pytest.fixture
def emulation():
    """The kernels run under the host emulation (g++; skipped without it)."""
    if _runtime.host_compiler() is None:
        pytest.skip("the host emulation needs g++")
    with dask.config.set({"swdask.gpu.runtime": "emulation"}):
        yield


@pytest.mark.parametrize("family,shape", _EMULATED_SHAPES)
def test_emulated_kernels_dna(emulation, family, shape):
    """Random and related DNA pairs, N included; queries long enough for several strips."""
    rng = np.random.default_rng(31 + sum(shape))
    queries, targets = _dna_pairs(rng, 14, 150, 140)
    # the alignment at the end of a long query: the reverse pass finds the start in its first
    # strip and stops early, the later strips must not read the rows it never wrote
    for _ in range(4):
        target = _random_dna(rng, 90)
        queries.append(_random_dna(rng, 120) + _mutate(target[20:70], rng, 0.1, "ACGT"))
        targets.append(target)
    queries += ["", None, "ACGT"]
    targets += ["ACGT", "ACGT", None]
    assert _compare(queries, targets, DNA, force=family, shape=shape) > 10


@pytest.mark.parametrize("family,shape", _EMULATED_SHAPES[::2])
def test_emulated_kernels_protein(emulation, family, shape):
    """Real proteins (mutated) under BLOSUM62: the shared-memory substitution table."""
    rng = np.random.default_rng(5)
    proteins = [p[:160] for p in _proteins()[:40]]
    targets = [proteins[k] for k in rng.integers(0, len(proteins), 8)]
    queries = [_mutate(t, rng, 0.3, "ACDEFGHIKLMNPQRSTVWY") for t in targets]
    assert _compare(queries, targets, BLOSUM62, force=family, shape=shape) >= 6


@pytest.mark.parametrize("gap_open,gap_extend", [(0, 0), (3, 3), (10 ** 7, 9)])
@pytest.mark.parametrize("family,shape", [("inter", (4, 4)), ("intra", (2, 2)),
                                          ("long", (1, 2))])
def test_emulated_ties_and_gap_costs(emulation, family, shape, gap_open, gap_extend):
    """Repeats under free, equal and huge gap costs (clamped; the table path for DNA)."""
    queries = ["AC" * 40, "ACGT" * 20, "A" * 70, "ACGTNACGTN", "CA" * 3]
    targets = ["CA" * 50, "ACGT" * 25, "A" * 65, "ACGTNACGTN", "AC" * 60]
    _compare(queries, targets, _dna(2, -1, gap_open, gap_extend), force=family, shape=shape)


@pytest.mark.parametrize("mode", ["end", "none"])
def test_emulated_routing_and_modes(emulation, monkeypatch, mode):
    """The router (no kernel forced) sends pairs to all three kernels in one call; only the
    mode's positions come back."""
    rng = np.random.default_rng(17)
    queries, targets = _dna_pairs(rng, 10, 50, 80)
    long_target = _random_dna(rng, 200)
    queries += [_random_dna(rng, 70), _mutate(long_target, rng, 0.1, "ACGT")]
    targets += [_random_dna(rng, 90), long_target]
    monkeypatch.setattr(_pairs, "INTER_MAX_ROWS", 64)  # the 70-letter query: intra-task
    monkeypatch.setattr(_pairs, "LONG_MIN_CELLS", 10_000)  # the last pair: the long kernel
    _compare(queries, targets, DNA, mode=mode)


def test_emulated_align_long_rows(emulation):
    """align_long_rows, the one-against-all tail, under the emulation."""
    query, targets, rows = _long_rows_case(np.random.default_rng(8), 1)
    _check_long_rows(query[:120], targets, rows, np)
