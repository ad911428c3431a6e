"""The one-against-all CUDA kernels build for sm_80 and sm_90, and their logic is exact.

* Compilation: every kernel variant the engine can launch (swdask.gpu._kernels.all_variants)
  is compiled for sm_80 (no DPX: the CUDA headers' SIMD fallback) and sm_90 (DPX), with
  nvcc where it is on PATH, else NVRTC through CuPy; skipped where neither exists.
* Logic: the real kernel sources also run on the CPU under swdask/gpu/host_emulation.h
  (g++, one fiber per CUDA thread, warp shuffles through barriers), through the same engine
  code as on a GPU, and must equal the CPU engine on every row: scores, end cells and start
  cells, including 16-bit overflow (recomputed in 32 bits), nulls, empty and length-1 rows,
  several passes over the query and kernel shapes. Skipped where there is no g++.
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from swdask import _engine
from swdask._api import prepare_query
from swdask._scoring import make_scoring
from swdask._sequences import encode
from swdask.gpu import _runtime, _kernels

COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")


def _have_cupy_nvrtc() -> bool:
    try:
        from cupy_backends.cuda.libs import nvrtc  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source_name", ["inter_task.cu", "reverse.cu"])
def test_every_variant_compiles(arch, source_name):
    if shutil.which("nvcc") is None and not _have_cupy_nvrtc():
        pytest.skip("no CUDA compiler here (neither nvcc nor CuPy's NVRTC)")
    names = _kernels.all_variants(int(arch[3:]))[source_name]
    report = _runtime.compile_for_arch(arch, source_name, names)
    if shutil.which("nvcc"):
        # ptxas reports one entry per kernel it built: all of them, for the asked target
        built = re.findall(r"Compiling entry function '(\w+)' for '(\w+)'", report)
        assert len(built) == len(names)
        assert {target for _, target in built} == {arch}
        # A few spilled words (loop-invariant values, outside the column loop: checked in the
        # SASS) are tolerable; a kernel whose DP registers spill stores hundreds of bytes
        # (seen: 364 at sm_80 with 32 rows per thread, why the engine stops at 16 there).
        spills = [int(v) for v in re.findall(r"(\d+) bytes spill stores", report)]
        assert spills and max(spills) <= 128, report


# ------------------------------------------------------------------------ emulated kernels

needs_gxx = pytest.mark.skipif(_runtime.host_compiler() is None,
                               reason="the host emulation needs g++")


def _compare(query, targets, scoring, modes=("none", "end", "full")):
    prepared = prepare_query(query, scoring)
    encoded = encode(targets, scoring)
    for mode in modes:
        got = _engine.align_many(prepared, encoded, scoring, positions=mode, backend="gpu")
        want = _engine.align_many(prepared, encoded, scoring, positions=mode, backend="cpu")
        for name in COLUMNS:
            a, b = getattr(got, name), getattr(want, name)
            assert (a is None) == (b is None), (mode, name)
            if a is not None:
                bad = np.flatnonzero(a != b)
                assert bad.size == 0, (mode, name, bad[:5], a[bad[:5]], b[bad[:5]])
        assert np.array_equal(got.valid, want.valid)


def _mutate(rng, text, alphabet):
    out = []
    for ch in text:
        r = rng.random()
        if r < 0.1:
            out.append(str(rng.choice(alphabet)))
        elif r < 0.13:
            continue
        elif r < 0.16:
            out.append(ch + "".join(rng.choice(alphabet, int(rng.integers(1, 4)))))
        else:
            out.append(ch)
    return "".join(out)


def _targets(rng, query, alphabet, count):
    rand = lambda n: "".join(rng.choice(alphabet, n))  # noqa: E731
    targets = []
    for _ in range(count):
        r = rng.random()
        if r < 0.35:  # a mutated piece of the query: long alignments, several reverse passes
            a = int(rng.integers(0, len(query)))
            b = int(rng.integers(a, len(query) + 1))
            targets.append(rand(int(rng.integers(0, 30))) + _mutate(rng, query[a:b], alphabet)
                           + rand(int(rng.integers(0, 30))))
        elif r < 0.4:
            targets.append(query + query)  # equal-score repeats: the tie rules decide
        else:
            targets.append(rand(int(rng.integers(1, 200))))
    targets += [None, "", rand(1), None]
    return targets


@pytest.fixture
def emulated(monkeypatch):
    monkeypatch.setenv("SWDASK_GPU_BACKEND", "emulation")
    monkeypatch.setenv("SWDASK_EMULATION_BLOCK", "32")


@needs_gxx
def test_emulated_protein_matches_cpu(emulated, monkeypatch):
    rng = np.random.default_rng(7)
    alphabet = np.array(list("ACDEFGHIKLMNPQRSTVWYBZX"))
    query = "".join(rng.choice(alphabet, 150))  # two passes of 4 x 20 rows
    targets = _targets(rng, query, alphabet, 40)
    _compare(query, targets, make_scoring("BLOSUM62"))
    monkeypatch.setenv("SWDASK_GPU_SCORES_KERNEL", "scores")  # the scores-only variant
    _compare(query, targets, make_scoring("BLOSUM62"), modes=("none",))


@needs_gxx
def test_emulated_overflow_and_shapes(emulated, monkeypatch):
    # DNA with match 1000: a few dozen matching residues pass 32767, so the 16-bit lanes
    # saturate and those rows are recomputed in 32 bits.
    rng = np.random.default_rng(11)
    alphabet = np.array(list("ACGT"))
    query = "".join(rng.choice(alphabet, 70))
    scoring = make_scoring(None, match=1000, mismatch=-1000, gap_open=1500, gap_extend=300)
    targets = _targets(rng, query, alphabet, 24)
    monkeypatch.setenv("SWDASK_GPU_SHAPE", "8,8")  # two passes of 8 threads x 8 rows
    _compare(query, targets, scoring, modes=("end", "full"))


@needs_gxx
def test_emulated_length_buckets(emulated, monkeypatch):
    # one launch per length bucket of the sorted pairs, G = 1, 2, 4, 8 (G = 1: no shuffle,
    # the thread reads and writes the pass boundary itself)
    from swdask.gpu import inter_task

    rng = np.random.default_rng(17)
    alphabet = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    query = "".join(rng.choice(alphabet, 140))
    targets = _targets(rng, query, alphabet, 48)
    encoded = encode(targets, make_scoring("BLOSUM62"))
    prepared = inter_task.prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                                          alphabet_size=20)
    monkeypatch.setenv("SWDASK_GPU_BUCKETS", "1:40,2:100,4:160,8")
    plan = inter_task.forward_plan(prepared.pairs, len(query))
    assert [group for *_, group, _ in plan] == [8, 4, 2, 1]
    assert plan[0][0] == 0 and plan[-1][1] == prepared.pairs.num_pairs
    assert all(a[1] == b[0] for a, b in zip(plan, plan[1:]))
    # G = 8 takes the 140 rows in one pass (its passes: test_emulated_overflow_and_shapes)
    assert all(len(query) > group * rows for *_, group, rows in plan if group < 8)
    _compare(query, targets, make_scoring("BLOSUM62"))
    for shape in ("1,8", "2,12"):  # a single shape, every length
        monkeypatch.setenv("SWDASK_GPU_SHAPE", shape)
        _compare(query, targets, make_scoring("BLOSUM62"), modes=("end",))
    monkeypatch.setenv("SWDASK_GPU_BUCKETS", "4:100")
    with pytest.raises(ValueError, match="SWDASK_GPU_BUCKETS"):
        inter_task.length_buckets()


@needs_gxx
def test_emulated_chunks_and_wide_scoring(emulated, monkeypatch):
    # gap costs too large for 16-bit lanes: the whole search runs in 32 bits; a tiny
    # memory budget cuts the rows into many chunks.
    rng = np.random.default_rng(5)
    alphabet = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    query = "".join(rng.choice(alphabet, 40))
    monkeypatch.setenv("SWDASK_GPU_CHUNK_BYTES", "6000")
    _compare(query, _targets(rng, query, alphabet, 20),
             make_scoring("BLOSUM62", gap_open=9000, gap_extend=10), modes=("full",))


def _cpu_long_rows(calls):
    """Stand-in for the CuPy-only ``_pairs.align_long_rows`` under emulation: the CPU engine
    on the rows it is given (read through the same residues/offsets), inclusive cells."""
    from swdask._api import PreparedQuery
    from swdask._sequences import EncodedSequences

    def run(query_codes, residues, offsets, rows, scoring, mode):
        rows = np.asarray(rows)
        calls.append(rows.copy())
        pieces = [np.asarray(residues[offsets[r]:offsets[r + 1]]) for r in rows]
        sub_offsets = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
        subset = EncodedSequences(np.concatenate(pieces).astype(np.uint8), sub_offsets,
                                  np.ones(len(rows), dtype=bool))
        got = _engine.align_many(PreparedQuery(np.asarray(query_codes), scoring), subset,
                                 scoring, positions="full", backend="cpu")
        hit = got.score > 0
        out = {"score": got.score.astype(np.int32),
               "query_end": np.where(hit, got.query_end - 1, -1).astype(np.int32),
               "target_end": np.where(hit, got.target_end - 1, -1).astype(np.int32)}
        for name in ("query_start", "target_start"):
            out[name] = (getattr(got, name) if mode == "full"
                         else np.full(len(rows), -1)).astype(np.int32)
        return out

    return run


@needs_gxx
def test_emulated_long_rows_are_routed_and_merged(emulated, monkeypatch):
    """Rows of at least the threshold go to align_long_rows (here a CPU stand-in: the
    intra-task kernel itself is emulated in test_gpu_pairs.py), the rest to the emulated
    inter-task kernels; merged by row, equal to the CPU engine in every mode."""
    from swdask.gpu import _pairs

    calls = []
    monkeypatch.setattr(_pairs, "align_long_rows", _cpu_long_rows(calls))
    monkeypatch.setenv("SWDASK_GPU_LONG_ROW_MIN", "60")
    rng = np.random.default_rng(31)
    alphabet = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    query = "".join(rng.choice(alphabet, 45))
    targets = _targets(rng, query, alphabet, 24)
    targets += [query[:30] * 3, "".join(rng.choice(alphabet, 59)), query + query[:15]]
    lengths = np.array([len(t) if t else 0 for t in targets])
    long_rows = np.flatnonzero(lengths >= 60)
    assert 3 <= long_rows.size < len(targets) - 10
    _compare(query, targets, make_scoring("BLOSUM62"))
    assert len(calls) == 3 and all(np.array_equal(c, long_rows) for c in calls)
    monkeypatch.setenv("SWDASK_GPU_LONG_ROWS_MAX", str(long_rows.size - 1))  # over the cap
    calls.clear()
    _compare(query, targets, make_scoring("BLOSUM62"), modes=("full",))
    assert calls == []
    monkeypatch.delenv("SWDASK_GPU_LONG_ROWS_MAX")
    # scores beyond the intra-task kernel's int32 range: the long rows stay on the 32-bit
    # inter-task kernels (longest first with the others), the stand-in is not called
    calls.clear()
    dna = np.array(list("ACGT"))
    dquery = "".join(rng.choice(dna, 40))
    big = 1 << 23  # 40 x 2**23 >= 2**28, < 2**29
    dtargets = ["".join(rng.choice(dna, 70)) + dquery, dquery * 2, "".join(rng.choice(dna, 90))]
    dtargets += ["".join(rng.choice(dna, int(rng.integers(1, 50)))) for _ in range(8)]
    _compare(dquery, dtargets, make_scoring(None, match=big, mismatch=-big, gap_open=big,
                                            gap_extend=big // 4), modes=("end", "full"))
    assert calls == []
