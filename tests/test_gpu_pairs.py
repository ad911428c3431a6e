"""Row-wise pairs on the GPU (swdask.gpu._pairs): every score and cell equals the CPU engine's.

The CPU engine (swdask._engine.align_pairs, backend="cpu") is itself checked against Biopython
and parasail in test_reference.py; here each GPU kernel (inter-task at several shapes,
intra-task, whole-GPU long pair) must reproduce it exactly, tie rules included, on random and
real sequences, with strips, ties, unusual gap costs and nulls.

* GPU tests (marker ``gpu``): skipped without CuPy or a GPU.
* Emulated tests: the same kernel sources compiled with g++ against
  swdask/gpu/host_emulation.h (one fiber per CUDA thread) and run on the CPU, so CPU-only CI
  checks the kernels' logic too (small sizes: the emulation is slow). Skipped without g++.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from swdask import _engine
from swdask._scoring import make_scoring
from swdask._sequences import EncodedSequences, encode
from swdask.gpu import _pairs


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
DNA = make_scoring(None, match=3, mismatch=-3, gap_open=6, gap_extend=1)
BLOSUM62 = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)


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


def _compare(queries, targets, scoring, *, mode="full", force=None, shape=None):
    """GPU against the CPU engine on every row; returns how many rows scored above 0."""
    q = encode(queries, scoring)
    t = encode(targets, scoring)
    want = _engine.align_pairs(q, t, scoring, positions=mode, backend="cpu")
    got = _pairs.align_pairs_gpu(q, t, scoring, mode, force=force, shape=shape)
    for name in _engine.COLUMNS:
        a, b = getattr(got, name), getattr(want, name)
        if b is None:
            assert a is None, name
            continue
        bad = np.flatnonzero(a != b)
        assert bad.size == 0, (name, force, shape, bad[:5], a[bad[:5]], b[bad[:5]])
    assert np.array_equal(got.valid, want.valid)
    return int((want.score > 0).sum())


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


# inter-task shapes (lanes per pair, rows per lane) that take one and several strips here
INTER_SHAPES = [(4, 4), (8, 12), (16, 8), (32, 4), (32, 32)]


@gpu_test
@pytest.mark.parametrize("shape", INTER_SHAPES)
def test_inter_task_dna(shape):
    rng = np.random.default_rng(sum(shape))
    queries, targets = _dna_pairs(rng, 300, 400, 500)
    assert _compare(queries, targets, DNA, force="inter", shape=shape) > 100


@gpu_test
@pytest.mark.parametrize("shape", [(1, 4), (2, 8), (4, 4)])
def test_intra_task_dna(shape):
    rng = np.random.default_rng(7 + shape[1])
    queries, targets = _dna_pairs(rng, 120, 900, 700)
    assert _compare(queries, targets, DNA, force="intra", shape=shape) > 40


@pytest.mark.parametrize("kernel,shape", [("inter", (8, 8)), ("inter", (32, 16)),
                                          ("intra", (2, 4)), (None, None)])
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


@pytest.mark.parametrize("gap_open,gap_extend", [(0, 0), (1, 0), (3, 3), (10 ** 6, 10 ** 6),
                                                 (10 ** 7, 9)])
@pytest.mark.parametrize("kernel,shape", [("inter", (8, 4)), ("intra", (1, 4)),
                                          ("long", (1, 4))])
@gpu_test
def test_ties_and_gap_costs(gap_open, gap_extend, kernel, shape):
    """Repeats (many equal cells: the tie rules decide) under free, equal and huge gap costs."""
    scoring = make_scoring(None, match=2, mismatch=-1, gap_open=gap_open, gap_extend=gap_extend)
    rng = np.random.default_rng(gap_open + 3 * gap_extend)
    queries = ["AC" * int(rng.integers(1, 150)) for _ in range(8)]
    targets = ["CA" * int(rng.integers(1, 200)) for _ in range(8)]
    queries += ["ACGT" * 40, "A" * 300, "NNNN", "ACGTNACGTN"]
    targets += ["ACGT" * 60, "A" * 129, "NNNN", "ACGTNACGTN"]
    _compare(queries, targets, scoring, force=kernel, shape=shape)


@gpu_test
def test_positive_mismatch_uses_the_table():
    """A scheme outside the compare form (mismatch > 0) goes through the substitution table."""
    scoring = make_scoring(None, match=5, mismatch=1, gap_open=4, gap_extend=2)
    assert _pairs.host_scoring(scoring, 100).kind == 1
    rng = np.random.default_rng(5)
    queries, targets = _dna_pairs(rng, 80, 150, 150)
    _compare(queries, targets, scoring, force="inter", shape=(8, 8))


@gpu_test
@pytest.mark.parametrize("shape", [(1, 4), (2, 4), (4, 8)])
def test_long_pair_wavefront(shape):
    """The whole-GPU kernel: many strips in flight at once, handing rows over through memory."""
    rng = np.random.default_rng(sum(shape))
    target = _random_dna(rng, 6000)
    queries = [_mutate(target[500:5500], rng, 0.1, "ACGT"), _random_dna(rng, 3000),
               _mutate(target[:4000], rng, 0.02, "ACGT")]
    targets = [target, target, target[100:2100]]
    assert _compare(queries, targets, DNA, force="long", shape=shape) == 3


@gpu_test
def test_routing_default_mixed_lengths():
    """The default routing (all three kernels in one call) on a mix of lengths."""
    rng = np.random.default_rng(21)
    queries, targets = _dna_pairs(rng, 200, 300, 600)
    long_target = _random_dna(rng, 3000)
    queries += [_mutate(long_target, rng, 0.1, "ACGT"), _random_dna(rng, 2500)]
    targets += [long_target, _random_dna(rng, 1500)]
    saved = _pairs.LONG_MIN_CELLS
    _pairs.LONG_MIN_CELLS = 8_000_000  # the first extra pair takes the whole-GPU kernel
    try:
        _compare(queries, targets, DNA)
    finally:
        _pairs.LONG_MIN_CELLS = saved


@gpu_test
def test_cupy_inputs_and_public_api():
    """EncodedSequences on the GPU work as well, and align_pairs(backend="gpu") uses them."""
    import cupy as cp
    import pandas as pd

    import swdask

    rng = np.random.default_rng(4)
    queries, targets = _dna_pairs(rng, 50, 200, 300)
    q = encode(queries, DNA)
    t = encode(targets, DNA)
    on_gpu = [EncodedSequences(cp.asarray(e.residues), cp.asarray(e.offsets), e.valid)
              for e in (q, t)]
    got = _pairs.align_pairs_gpu(*on_gpu, DNA, "full")
    want = _engine.align_pairs(q, t, DNA, backend="cpu")
    for name in _engine.COLUMNS:
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    frame = pd.DataFrame({"q": queries, "t": targets}, index=np.arange(50) * 3)
    frame.loc[6, "q"] = None
    options = dict(matrix=None, match=3, mismatch=-3, gap_open=6, gap_extend=1)
    gpu = swdask.align_pairs(frame["q"], frame["t"], backend="gpu", **options)
    cpu = swdask.align_pairs(frame["q"], frame["t"], backend="cpu", **options)
    pd.testing.assert_frame_equal(gpu, cpu)


@gpu_test
def test_align_long_rows_matches_one_against_all():
    """The one-against-all tail: one query, long targets, one block per row."""
    rng = np.random.default_rng(8)
    proteins = _proteins()
    query = proteins[0]
    targets = [_mutate(query, rng, 0.2, "ACDEFGHIKLMNPQRSTVWY")
               + "".join(proteins[k] for k in rng.integers(0, len(proteins), 6))
               for _ in range(12)]
    encoded = encode(targets, BLOSUM62)
    codes = BLOSUM62.encode(query)
    rows = np.array([1, 3, 4, 7, 10, 11])
    from swdask._api import PreparedQuery

    want = _engine.align_many(PreparedQuery(codes, BLOSUM62), encoded, BLOSUM62, backend="cpu")
    import cupy as cp

    got = _pairs.align_long_rows(codes, cp.asarray(encoded.residues),
                                 cp.asarray(encoded.offsets), rows, BLOSUM62, "full")
    assert np.array_equal(cp.asnumpy(got["score"]), want.score[rows])
    for name in ("query_end", "target_end"):  # engine: end-exclusive; kernels: inclusive
        assert np.array_equal(cp.asnumpy(got[name]) + 1, getattr(want, name)[rows]), name
    for name in ("query_start", "target_start"):
        assert np.array_equal(cp.asnumpy(got[name]), getattr(want, name)[rows]), name


def test_score_range_is_checked():
    """Scores that could leave the kernels' int32 range are refused with a way out."""
    with pytest.raises(ValueError, match="backend='cpu'"):
        _pairs.host_scoring(DNA, _pairs.SCORE_LIMIT)


@gpu_test
def test_random_pairs_property():
    """Many small random pairs and schemes, every kernel."""
    rng = np.random.default_rng(99)
    for trial in range(6):
        scoring = make_scoring(None, match=int(rng.integers(1, 6)),
                               mismatch=-int(rng.integers(0, 6)),
                               gap_open=int(rng.integers(0, 12)),
                               gap_extend=int(rng.integers(0, 4)))
        queries, targets = _dna_pairs(rng, 40, 70, 90)
        for kernel, shape in (("inter", (4, 8)), ("intra", (1, 4)), ("long", (1, 4))):
            _compare(queries, targets, scoring, force=kernel, shape=shape)


# ------------------------------------------------------------------------ emulated kernels

#: Runs the kernels of pairs_inter.cu, intra_task.cu and long_pair.cu under the host emulation.
#: stdin: "kind match mismatch limit gap_open gap_extend count", the 33 x 33 table when kind is
#: 1, then per pair "m q..." and "n t..." (codes). argv: family ("inter", "intra", "long") and
#: the shape. stdout: per pair "score end_i end_j start_i start_j" (inclusive, -1 for none).
#: Strip buffers start full of large garbage, so a read of something never written shows.
_RUNNER = r"""
#include "host_emulation.h"
struct int2 { int x, y; };
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::wait(emu::warp_barrier(mask)); }
inline int __reduce_max_sync(unsigned mask, int v) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emu::Barrier& b = emu::warp_barrier(mask);
  emu::g_block->slots[warp][lane] = (unsigned long long)(unsigned)v;
  emu::wait(b);
  int best = (int)0x80000000;
  for (unsigned k = 0; k < 32; ++k)
    if (mask >> k & 1) best = std::max(best, (int)(unsigned)emu::g_block->slots[warp][k]);
  emu::wait(b);
  return best;
}
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline void __nanosleep(unsigned) { emu::yield(); }
inline void __threadfence() {}
template <class T> inline T __ldcg(const T* p) { return *p; }
inline int atomicAdd(int* p, int v) { const int old = *p; *p += v; return old; }
inline int atomicMin(int* p, int v) { const int old = *p; if (v < old) *p = v; return old; }
#include "pairs_inter.cu"
#include "intra_task.cu"
#include "long_pair.cu"
#include <cstdlib>
#include <string>

typedef long long ll;
static int kind, match, mismatch, limit, go, ge, count;
static std::vector<int> table;
static std::vector<unsigned char> qres, tres;
static std::vector<ll> qstart, tstart;
static std::vector<int> qlen, tlen, order, sc, ei, ej, si, sj;

static void garbage(std::vector<int2>& v) {
  for (auto& x : v) { x.x = 100000 + rand() % 997; x.y = 100000 + rand() % 991; }
}

template <int G, int R, int K> void inter() {
  std::vector<ll> off(count); ll total = 1;
  for (int k = 0; k < count; ++k) { off[k] = total; total += tlen[k]; }
  std::vector<int2> scratch(total); garbage(scratch);
  const unsigned char *q = qres.data(), *t = tres.data(); const ll *qs = qstart.data(), *ts = tstart.data();
  const int *ql = qlen.data(), *tl = tlen.data(), *od = order.data(), *tab = table.data();
  int *s = sc.data(), *a = ei.data(), *b = ej.data(), *c = si.data(), *d = sj.data();
  int2* scr = scratch.data(); const ll* so = off.data();
  void* args[] = {&q, &qs, &ql, &t, &ts, &tl, &od, &count, &s, &a, &b, &c, &d, &scr, &so, &tab,
                  &match, &mismatch, &limit, &go, &ge};
  const unsigned grid = (count * G + 127) / 128;
  emu::launch(&pairs_inter<G, R, K, false>, grid, 128, 0, args);
  emu::launch(&pairs_inter<G, R, K, true>, grid, 128, 0, args);
}

template <int W, int R, int K> void intra() {
  int stride = 1; for (int k = 0; k < count; ++k) stride = std::max(stride, tlen[k]);
  const unsigned blocks = 3;
  std::vector<int2> scratch((size_t)blocks * stride); garbage(scratch);
  int ticket = 0; long long st = stride;
  const unsigned char *q = qres.data(), *t = tres.data(); const ll *qs = qstart.data(), *ts = tstart.data();
  const int *ql = qlen.data(), *tl = tlen.data(), *od = order.data(), *tab = table.data();
  int *s = sc.data(), *a = ei.data(), *b = ej.data(), *c = si.data(), *d = sj.data(), *tk = &ticket;
  int2* scr = scratch.data();
  void* args[] = {&q, &qs, &ql, &t, &ts, &tl, &od, &count, &s, &a, &b, &c, &d, &scr, &st, &tk,
                  &tab, &match, &mismatch, &limit, &go, &ge};
  emu::launch(&pairs_intra<W, R, K, false>, blocks, W * 32, 0, args);
  ticket = 0;
  emu::launch(&pairs_intra<W, R, K, true>, blocks, W * 32, 0, args);
}

template <int W, int R, int K> void whole() {  // long_pair.cu, one pair at a time
  for (int k = 0; k < count; ++k) {
    if (qlen[k] == 0 || tlen[k] == 0) continue;
    int m = qlen[k], n = tlen[k], target = 0;
    for (int rev = 0; rev < 2; ++rev) {
      int nstrips = (m + W * 32 * R - 1) / (W * 32 * R);
      unsigned blocks = std::min(nstrips, 3); int nslots = blocks + 1, ticket = 0;
      std::vector<int2> slots((size_t)nslots * n); garbage(slots);
      std::vector<unsigned long long> progress(nslots, 0); std::vector<int> bb(3 * blocks, 0);
      const unsigned char *q = qres.data(), *t = tres.data(); ll qs = qstart[k], ts = tstart[k];
      int *tk = &ticket, *bp = bb.data(); int2* sl = slots.data(); unsigned long long* pr = progress.data();
      const int* tab = table.data();
      void* args[] = {&q, &qs, &m, &t, &ts, &n, &target, &nstrips, &tk, &sl, &nslots, &pr, &bp,
                      &tab, &match, &mismatch, &limit, &go, &ge};
      if (rev) emu::launch(&long_pair<W, R, K, true>, blocks, W * 32, 0, args);
      else emu::launch(&long_pair<W, R, K, false>, blocks, W * 32, 0, args);
      int bs = 0, bi = -1, bj = -1;
      for (unsigned z = 0; z < blocks; ++z) {
        const int s = bb[3 * z], i = bb[3 * z + 1], j = bb[3 * z + 2];
        if (s > bs || (s == bs && s > 0 && (j < bj || (j == bj && i < bi)))) { bs = s; bi = i; bj = j; }
      }
      if (!rev) {
        sc[k] = bs; ei[k] = bi; ej[k] = bj;
        if (bs <= 0) break;
        m = bi + 1; n = bj + 1; target = bs;
      } else {
        si[k] = ei[k] - bi; sj[k] = ej[k] - bj;
      }
    }
  }
}

#define SHAPE(F, A, B) \
  if (family == #F && a == A && b == B) { if (kind) F<A, B, 1>(); else F<A, B, 0>(); done = true; }

int main(int argc, char** argv) {
  const std::string family = argv[1];
  const int a = atoi(argv[2]), b = atoi(argv[3]);
  if (scanf("%d %d %d %d %d %d %d", &kind, &match, &mismatch, &limit, &go, &ge, &count) != 7) return 2;
  table.assign(kind ? 33 * 33 : 1, 0);
  if (kind) for (auto& v : table) if (scanf("%d", &v) != 1) return 2;
  qres.push_back(0); tres.push_back(0);
  for (int k = 0; k < count; ++k) {
    for (int side = 0; side < 2; ++side) {
      int len; if (scanf("%d", &len) != 1) return 2;
      auto& res = side ? tres : qres;
      (side ? tstart : qstart).push_back(res.size());
      (side ? tlen : qlen).push_back(len);
      for (int i = 0; i < len; ++i) { int c; if (scanf("%d", &c) != 1) return 2; res.push_back(c); }
    }
    order.push_back(k);
  }
  sc.assign(count, 0); ei.assign(count, -1); ej.assign(count, -1); si.assign(count, -1); sj.assign(count, -1);
  bool done = false;
  SHAPE(inter, 4, 4) SHAPE(inter, 8, 8) SHAPE(inter, 32, 4)
  SHAPE(intra, 2, 2) SHAPE(intra, 1, 4) SHAPE(whole, 2, 1) SHAPE(whole, 1, 2)
  if (!done) return 3;
  for (int k = 0; k < count; ++k) printf("%d %d %d %d %d\n", sc[k], ei[k], ej[k], si[k], sj[k]);
  return 0;
}
"""

#: (family, a, b): inter-task (lanes, rows per lane), intra-task and whole-GPU (warps, rows)
_EMULATED_SHAPES = [("inter", 4, 4), ("inter", 8, 8), ("inter", 32, 4), ("intra", 2, 2),
                    ("intra", 1, 4), ("whole", 2, 1), ("whole", 1, 2)]


@pytest.fixture(scope="module")
def emulated_runner(tmp_path_factory):
    compiler = shutil.which(os.environ.get("CXX", "g++"))
    if compiler is None:
        pytest.skip("the host emulation needs g++")
    folder = tmp_path_factory.mktemp("pairs_emulation")
    source = folder / "runner.cpp"
    source.write_text(_RUNNER)
    binary = folder / "runner"
    gpu_dir = Path(_pairs.__file__).parent
    subprocess.run([compiler, "-std=c++17", "-O1", "-w", f"-I{gpu_dir}", str(source), "-o",
                    str(binary)], check=True, capture_output=True, text=True)
    return binary


def _emulated(runner, family, a, b, queries, targets, scoring):
    """Run one kernel under emulation; compare with the CPU engine on every row."""
    q, t = encode(queries, scoring), encode(targets, scoring)
    q_len, t_len = np.diff(q.offsets), np.diff(t.offsets)
    ks = _pairs.host_scoring(scoring, _pairs.score_bound(scoring, q_len, t_len))
    lines = [f"{ks.kind} {ks.match} {ks.mismatch} {ks.limit} {ks.gap_open} {ks.gap_extend} "
             f"{len(queries)}"]
    if ks.kind:
        lines.append(" ".join(map(str, ks.table.tolist())))
    for k in range(len(queries)):
        for enc in (q, t):
            codes = enc.residues[enc.offsets[k]:enc.offsets[k + 1]]
            lines.append(" ".join(map(str, [len(codes), *codes.tolist()])))
    done = subprocess.run([str(runner), family, str(a), str(b)], input="\n".join(lines),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    got = np.array([list(map(int, line.split())) for line in done.stdout.split("\n") if line])
    want = _engine.align_pairs(q, t, scoring, positions="full", backend="cpu")
    has = want.score > 0
    expected = np.stack([want.score, np.where(has, want.query_end - 1, -1),
                         np.where(has, want.target_end - 1, -1), want.query_start,
                         want.target_start], axis=1)
    work = (q_len > 0) & (t_len > 0)
    bad = np.flatnonzero((got != expected).any(axis=1) & work)
    assert bad.size == 0, (family, a, b, bad[:5], got[bad[:5]], expected[bad[:5]])
    return int(has.sum())


@pytest.mark.parametrize("family,a,b", _EMULATED_SHAPES)
def test_emulated_kernels_dna(emulated_runner, family, a, b):
    """Random and related DNA pairs, N included; queries long enough for several strips."""
    rng = np.random.default_rng(31 + a + b)
    queries, targets = _dna_pairs(rng, 14, 150, 140)
    # the alignment at the end of a long query: the reverse pass finds the start in its first
    # strip and stops early, the later strips must not read the rows it never wrote
    for _ in range(4):
        target = _random_dna(rng, 90)
        queries.append(_random_dna(rng, 120) + _mutate(target[20:70], rng, 0.1, "ACGT"))
        targets.append(target)
    queries.append("")
    targets.append("ACGT")
    assert _emulated(emulated_runner, family, a, b, queries, targets, DNA) > 10


@pytest.mark.parametrize("family,a,b", _EMULATED_SHAPES[::2])
def test_emulated_kernels_protein(emulated_runner, family, a, b):
    """Real proteins (mutated) under BLOSUM62: the shared-memory substitution table."""
    rng = np.random.default_rng(5)
    proteins = [p[:160] for p in _proteins()[:40]]
    targets = [proteins[k] for k in rng.integers(0, len(proteins), 8)]
    queries = [_mutate(t, rng, 0.3, "ACDEFGHIKLMNPQRSTVWY")[::-1][::-1] for t in targets]
    assert _emulated(emulated_runner, family, a, b, queries, targets, BLOSUM62) >= 6


@pytest.mark.parametrize("gap_open,gap_extend", [(0, 0), (3, 3), (10 ** 7, 9)])
@pytest.mark.parametrize("family,a,b", [("inter", 4, 4), ("intra", 2, 2), ("whole", 1, 2)])
def test_emulated_ties_and_gap_costs(emulated_runner, family, a, b, gap_open, gap_extend):
    """Repeats under free, equal and huge gap costs (clamped; the table path for DNA)."""
    scoring = make_scoring(None, match=2, mismatch=-1, gap_open=gap_open, gap_extend=gap_extend)
    queries = ["AC" * 40, "ACGT" * 20, "A" * 70, "ACGTNACGTN", "CA" * 3]
    targets = ["CA" * 50, "ACGT" * 25, "A" * 65, "ACGTNACGTN", "AC" * 60]
    _emulated(emulated_runner, family, a, b, queries, targets, scoring)
