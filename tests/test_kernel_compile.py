"""The CUDA kernels build for sm_80 and sm_90 and on the host emulation, and the one-against-
all kernels' logic is exact.

* Compilation: every kernel variant swdask can launch, of every family
  (swdask.gpu._kernels.all_variants: one against many, and the row-wise pairs kernels), is
  compiled for sm_80 (no DPX: the CUDA headers' SIMD fallback) and sm_90 (DPX), with nvcc
  where it is on PATH, else NVRTC through CuPy; skipped where neither exists. Every source
  file also builds (one variant each) with g++ against swdask/gpu/host_emulation.h, so a
  syntax error in a kernel or header shows on CPU-only CI.
* Logic: the real kernel sources also run on the CPU under the host emulation (g++, one
  fiber per CUDA thread, warp shuffles through barriers; the setting
  ``swdask.gpu.runtime: emulation``), through the same code as on a GPU (``swdask.align``
  with ``backend="gpu"``), and must equal the CPU on every row: scores, end cells and start
  cells, including 16-bit overflow (recomputed in 32 bits), nulls, empty and length-1 rows,
  several passes over the query, kernel shapes and long rows. Skipped where there is no g++.
  (The row-wise pairs kernels' logic: tests/test_gpu_pairs.py.)
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
import shutil

import dask.config
import numpy as np
import pandas as pd
import pytest

import swdask
from swdask._scoring import make_scoring
from swdask._sequences import encode
from swdask.gpu import _kernels, _runtime

#: every CUDA source file of the package
SOURCES = sorted(path.name for path in _kernels.SOURCE_DIR.glob("*.cu"))


def _have_cupy_nvrtc() -> bool:
    try:
        from cupy_backends.cuda.libs import nvrtc  # noqa: F401
    except Exception:
        return False
    return True


def compile_for_arch(arch: str, source_name: str, names: list[str]) -> str:
    """Compile ``names`` (name expressions in ``source_name``) for ``arch`` (e.g. ``"sm_90"``)
    without a GPU: with nvcc when it is on PATH, else with NVRTC through CuPy. Returns the
    compiler's resource report (registers, spills); raises RuntimeError on a compile error.
    (Test tooling: the package compiles through its runtime, for the device it runs on.)"""
    nvcc = shutil.which("nvcc")
    text = _kernels.source(source_name)
    if nvcc:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "variants.cu"
            instantiations = "".join(
                f"static auto* swdask_variant_{k} = &{name};\n" for k, name in enumerate(names))
            src.write_text(text + "\n" + instantiations)
            result = subprocess.run(
                [nvcc, "-std=c++17", f"-arch={arch}", "-cubin", "-Xptxas", "-v", str(src),
                 "-o", str(Path(tmp) / "variants.cubin")], capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"nvcc -arch={arch} failed:\n{result.stderr[-6000:]}")
            return result.stderr
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError:
        raise RuntimeError("neither nvcc nor CuPy's NVRTC is available") from None
    program = nvrtc.createProgram(text, source_name, [], [])
    try:
        for name in names:
            nvrtc.addNameExpression(program, name)
        try:
            nvrtc.compileProgram(program, ["-std=c++17", f"-arch={arch}"])
        except nvrtc.NVRTCError as exc:
            raise RuntimeError(f"NVRTC -arch={arch} failed: {exc}\n"
                               f"{nvrtc.getProgramLog(program)[-6000:]}") from None
        return nvrtc.getProgramLog(program)
    finally:
        nvrtc.destroyProgram(program)


def test_every_source_has_its_variants():
    assert sorted(_kernels.all_variants(90)) == SOURCES
    assert sorted(_kernels.all_variants(80)) == SOURCES


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source_name", SOURCES)
def test_every_variant_compiles(arch, source_name):
    if shutil.which("nvcc") is None and not _have_cupy_nvrtc():
        pytest.skip("no CUDA compiler here (neither nvcc nor CuPy's NVRTC)")
    names = _kernels.all_variants(int(arch[3:]))[source_name]
    # the search kernels' end-to-end modes, checked apart (below); the kernels that are no
    # template are built with every program, so they belong to both lists
    modes = [name for name in names if name.startswith("swdask::sw_inter_forward")
             and name.count(",") == 3]
    plain = [name for name in names if "<" not in name]
    for chosen, most in (([n for n in names if n not in modes], 128),
                         (plain + modes, END_TO_END_SPILLS)):
        if len(chosen) == len(plain):  # (a source without end-to-end kernels)
            continue
        report = compile_for_arch(arch, source_name, chosen)
        if shutil.which("nvcc"):
            # ptxas reports one entry per kernel it built: all of them, for the asked target
            built = re.findall(r"Compiling entry function '(\w+)' for '(\w+)'", report)
            assert len(built) == len(chosen)
            assert {target for _, target in built} == {arch}
            # A few spilled words (loop-invariant values, outside the column loop: checked in
            # the SASS) are tolerable; a kernel whose DP registers spill stores hundreds of
            # bytes (seen: 364 at sm_80 with 32 rows per thread, why the engine stops at 16
            # there).
            spills = [int(v) for v in re.findall(r"(\d+) bytes spill stores", report)]
            assert spills and max(spills) <= most, report


#: The end-to-end forward kernels (inter_task.cu, "End-to-end modes") spill their per-pass
#: tables (each lane's candidate rows, its query's rows): up to 592 bytes of stores at sm_90
#: with nvcc 13 (2026-12-04), while the reads job's scan in query-global ran at 0.9x the
#: local kernel's rate (docs/notes/dna-reads.md, modes in the search kernels). Bounded here
#: so that a change that spills more is seen; taking those tables out of the spills is open.
END_TO_END_SPILLS = 640


needs_gxx = pytest.mark.skipif(_runtime.host_compiler() is None,
                               reason="the host emulation needs g++")


@needs_gxx
@pytest.mark.parametrize("source_name", SOURCES)
def test_every_source_builds_on_the_emulation(source_name):
    """One variant per source (g++ compiles the whole file: every function, and the one
    template instance asked for); the builds are cached by text, as the emulated tests'."""
    name = _kernels.all_variants(90)[source_name][-1]
    assert _runtime.EmulationRuntime().function(source_name, name) is not None


# ------------------------------------------------------------------------ emulated kernels

BLOSUM62 = dict(matrix="BLOSUM62", gap_open=11, gap_extend=1)


@pytest.fixture
def emulated():
    """The GPU backend on the host emulation, 32 threads per block."""
    with dask.config.set({"swdask.gpu.runtime": "emulation",
                          "swdask.emulation.block-threads": 32}):
        yield


def _compare(query, targets, options, modes=("none", "end", "full")):
    """``swdask.align`` on the (emulated) GPU equals it on the CPU, every row and column."""
    for mode in modes:
        got = swdask.align(query, targets, positions=mode, backend="gpu", **options)
        want = swdask.align(query, targets, positions=mode, backend="cpu", **options)
        pd.testing.assert_frame_equal(got, want, obj=f"positions={mode!r}")


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


def _letters(rng, alphabet):
    """A function of n: n random letters of ``alphabet``."""
    return lambda n: "".join(rng.choice(alphabet, n))


def _targets(rng, query, alphabet, count):
    rand = _letters(rng, alphabet)
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


PROTEIN = "ACDEFGHIKLMNPQRSTVWY"


def _case(seed: int, letters: str, length: int, count: int):
    """``(rng, alphabet, query, targets)``: a random query of ``length`` letters and
    :func:`_targets` of it, drawn in that order from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(list(letters))
    query = "".join(rng.choice(alphabet, length))
    return rng, alphabet, query, _targets(rng, query, alphabet, count)


@needs_gxx
def test_emulated_protein_matches_cpu(emulated):
    _, _, query, targets = _case(7, PROTEIN + "BZX", 150, 40)  # two passes of 4 x 20 rows
    _compare(query, targets, BLOSUM62)


@needs_gxx
def test_emulated_end_rows_tied_within_a_thread(emulated):
    # Tandem repeats put equal scores in several rows of one column, most of them within one
    # thread's rows: the end cell is the first of them (the kernel's first_row_of), on both
    # 16-bit lanes and in 32 bits.
    rand = _letters(np.random.default_rng(23), np.array(list("ACDEFGHIKLMNPQRSTVY")))
    query = rand(5) + "W" * 9 + rand(6) + "GH" * 8 + rand(4) + "WCW" * 5 + rand(30)
    targets = ["W", "WW", "GH", "HGH", "WCW", "CW", "AWA", "GHG" + rand(20), rand(40) + "W",
               "W" + rand(3) + "W", rand(12), "WCWGH", "HW", None, ""]
    targets += [t[::-1] for t in targets[:10]]
    for shape in ("4,16", "4,8", "4,36"):
        with dask.config.set({"swdask.gpu.shape": shape}):
            _compare(query, targets, BLOSUM62, modes=("end",))
    _compare(query, targets, dict(matrix="BLOSUM62", gap_open=9000, gap_extend=10),
             modes=("end",))


@needs_gxx
def test_emulated_start_cells_many_passes_back(emulated):
    # The reverse kernel's passes are 256 query rows; its later passes run only while a cell
    # of theirs could still reach the score. Alignments spanning up to 600 rows, with long
    # gaps on either side and repeats (equal scores further back), need several of them.
    rng, alphabet, query, targets = _case(29, PROTEIN, 700, 30)
    rand = _letters(rng, alphabet)
    targets += [query[50:650], query[100:180] + query[400:480], query[300:340] * 3,
                query[:60] + rand(200) + query[60:120], _mutate(rng, query[20:620], alphabet),
                query[600:700] + query[600:700], rand(5) + query[650:] + rand(400)]
    for options in (BLOSUM62, dict(matrix="BLOSUM62", gap_open=3, gap_extend=1)):
        _compare(query, targets, options, modes=("full",))


@needs_gxx
def test_emulated_overflow_and_shapes(emulated):
    # DNA with match 1000: a few dozen matching residues pass 32767, so the 16-bit lanes
    # saturate and those rows are recomputed in 32 bits.
    _, _, query, targets = _case(11, "ACGT", 70, 24)
    options = dict(matrix=None, match=1000, mismatch=-1000, gap_open=1500, gap_extend=300)
    with dask.config.set({"swdask.gpu.shape": "8,8"}):  # two passes of 8 threads x 8 rows
        _compare(query, targets, options, modes=("end", "full"))


@needs_gxx
def test_emulated_profile_shift_and_lane_offsets(emulated):
    # The 16-bit forward kernel keeps lane 0 offset by gap_open and shifts the profile so
    # that no entry is negative (inter_task.cu, "Adds on the FMA pipe"): scorings whose
    # sub + gap_open goes below 0 (shift 3, 11 and 2,500 here), one that saturates with a
    # shift (its bound is lower by gap_open + shift), and pairs of equal lengths, so that
    # a saturating target and a plain one share a register in either lane.
    from swdask.gpu import inter_task

    rng, _, query, targets = _case(41, PROTEIN, 90, 24)
    for options, shift in ((dict(matrix="BLOSUM62", gap_open=1, gap_extend=1), 3),
                           (dict(matrix="PAM30", gap_open=6, gap_extend=2), 11)):
        scoring = make_scoring(**options)
        assert inter_task.profile_shift(scoring.matrix, scoring.gap_open) == shift
        with dask.config.set({"swdask.gpu.shape": "8,8"}):  # two passes of 8 x 8 rows
            _compare(query, targets, options)
    dna = np.array(list("ACGT"))
    query = "".join(rng.choice(dna, 60))
    rand = _letters(rng, dna)
    options = dict(matrix=None, match=1000, mismatch=-3000, gap_open=500, gap_extend=100)
    scoring = make_scoring(**options)
    assert inter_task.profile_shift(scoring.matrix, scoring.gap_open) == 2500
    assert inter_task.lane16_bound(scoring) == 32767 - 3000 - 1000
    targets = []
    for length in (20, 31, 45, 60):  # a matching target and a random one of each length
        targets += [query[:length], rand(length), rand(length), query[-length:]]
    targets += _targets(rng, query, dna, 12)
    with dask.config.set({"swdask.gpu.shape": "4,8"}):
        _compare(query, targets, options, modes=("end", "full"))
    _compare(query, targets, options, modes=("none",))


@needs_gxx
def test_emulated_length_buckets(emulated):
    # one launch per length bucket of the sorted pairs (G = 8 for the longest targets, 4
    # below), and a single forced shape for every length
    from swdask.gpu import inter_task

    _, _, query, targets = _case(17, PROTEIN, 160, 48)
    encoded = encode(targets, make_scoring(**BLOSUM62))
    prepared = inter_task.prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                                          alphabet_size=20)
    with dask.config.set({"swdask.gpu.buckets": "4:120,8"}):
        plan = inter_task.forward_plan(prepared.pairs, len(query))
        assert [group for *_, group, _ in plan] == [8, 4]
        assert plan[0][0] == 0 and plan[-1][1] == prepared.pairs.num_pairs
        assert all(a[1] == b[0] for a, b in zip(plan, plan[1:]))
        # G = 4 takes the 160 rows in two passes, G = 8 in one
        assert [len(query) > group * rows for *_, group, rows in plan] == [False, True]
        _compare(query, targets, BLOSUM62)
        # 140 rows fit one pass of 4 x 36 rows: every bucket is that one launch
        plan = inter_task.forward_plan(prepared.pairs, 140)
        assert [launch[2:] for launch in plan] == [(4, 36)]
        _compare(query[:140], targets, BLOSUM62)
    with dask.config.set({"swdask.gpu.buckets": "4:60,16:150,32"}):
        # 160 rows take one pass of 8 x 20: the 16 and 32 buckets run as one launch of G = 8
        plan = inter_task.forward_plan(prepared.pairs, len(query))
        assert [launch[2:] for launch in plan] == [(8, 20), (4, 20)]
        _compare(query, targets, BLOSUM62, modes=("end",))
        # 680 rows: G = 32 in one pass of 32 x 24, G = 16 in two, G = 4 in six (36 rows per
        # thread only where they make one pass)
        long_query = query * 4 + query[:40]
        assert [launch[2:] for launch in inter_task.forward_plan(
            prepared.pairs, len(long_query))] == [(32, 24), (16, 24), (4, 32)]
        _compare(long_query, targets, BLOSUM62, modes=("end",))
    for shape in ("4,8", "8,12"):  # a single shape, every length
        with dask.config.set({"swdask.gpu.shape": shape}):
            _compare(query, targets, BLOSUM62, modes=("end",))
    for wrong in ("4:100", "2:100,8"):  # the last bucket has no bound; G = 2 is gone
        with dask.config.set({"swdask.gpu.buckets": wrong}):
            with pytest.raises(ValueError, match="swdask.gpu.buckets"):
                inter_task.length_buckets()
    # the one-pass R (its kernels read no row above a pass) where a forced shape asks it for
    # a longer query: the largest other R; the .cu's constant is the host's
    with dask.config.set({"swdask.gpu.shape": "4,36"}):
        assert [launch[2:] for launch in inter_task.forward_plan(prepared.pairs, 144)] == [(4, 36)]
        assert [launch[2:] for launch in inter_task.forward_plan(prepared.pairs, 145)] == [(4, 32)]
        _compare(query, targets, BLOSUM62, modes=("end",))
    assert re.search(r"constexpr int ONE_PASS_ROWS = (\d+);", _kernels.source("inter_task.cu")
                     ).group(1) == str(_kernels.ONE_PASS_ROWS)
    # the defaults (these targets are all short): with target lanes G = 4 only where it takes
    # the query in one pass, with query lanes G = 4 for every short target
    assert [launch[2:] for launch in inter_task.forward_plan(prepared.pairs, 140)] == [(4, 36)]
    assert [launch[2] for launch in inter_task.forward_plan(prepared.pairs, len(query))] == [8]
    assert [launch[2] for launch in inter_task.forward_plan(
        prepared.pairs, len(query), rows=32, query_lanes=True)] == [4]


@needs_gxx
def test_emulated_chunks_and_wide_scoring(emulated):
    # gap costs too large for 16-bit lanes: the whole search runs in 32 bits; a tiny
    # memory budget cuts the rows into many chunks.
    _, _, query, targets = _case(5, PROTEIN, 40, 20)
    with dask.config.set({"swdask.gpu.chunk-bytes": 6000}):
        _compare(query, targets,
                 dict(matrix="BLOSUM62", gap_open=9000, gap_extend=10), modes=("full",))


@needs_gxx
def test_emulated_long_rows_are_routed_and_merged(emulated, monkeypatch):
    """Rows of at least the threshold go to align_long_rows (the intra-task kernel, one block
    per row; its own tests: test_gpu_pairs.py), the rest to the inter-task kernels; merged
    by row, equal to the CPU in every mode."""
    from swdask.gpu import _pairs

    calls = []
    real = _pairs.align_long_rows

    def spy(query_codes, residues, offsets, rows, scoring, mode, lengths=None):
        calls.append(np.asarray(rows).copy())
        # the layout's host lengths are those of the rows it routed
        assert np.array_equal(lengths, np.diff(np.asarray(offsets))[np.asarray(rows)])
        return real(query_codes, residues, offsets, rows, scoring, mode, lengths=lengths)

    monkeypatch.setattr(_pairs, "align_long_rows", spy)
    rng, alphabet, query, targets = _case(31, PROTEIN, 45, 24)
    targets += [query[:30] * 3, "".join(rng.choice(alphabet, 59)), query + query[:15]]
    lengths = np.array([len(t) if t else 0 for t in targets])
    long_rows = np.flatnonzero(lengths >= 60)
    assert 3 <= long_rows.size < len(targets) - 10
    with dask.config.set({"swdask.gpu.long-row-min": 60, "swdask.gpu.long-rows-per-sm": -1}):
        _compare(query, targets, BLOSUM62)
        assert len(calls) == 3 and all(np.array_equal(c, long_rows) for c in calls)
        calls.clear()
        # over the cap (the emulation has 2 multiprocessors): all stay inter-task
        with dask.config.set({"swdask.gpu.long-rows-per-sm": 1}):
            _compare(query, targets, BLOSUM62, modes=("full",))
        assert calls == []
        # scores beyond the intra-task kernel's int32 range: the long rows stay on the
        # 32-bit inter-task kernels (longest first with the others), align_long_rows unused
        dna = np.array(list("ACGT"))
        dquery = "".join(rng.choice(dna, 40))
        big = 1 << 23  # 40 x 2**23 >= 2**28, < 2**29
        dtargets = ["".join(rng.choice(dna, 70)) + dquery, dquery * 2,
                    "".join(rng.choice(dna, 90))]
        dtargets += ["".join(rng.choice(dna, int(rng.integers(1, 50)))) for _ in range(8)]
        _compare(dquery, dtargets, dict(matrix=None, match=big, mismatch=-big, gap_open=big,
                                        gap_extend=big // 4), modes=("end", "full"))
        assert calls == []
