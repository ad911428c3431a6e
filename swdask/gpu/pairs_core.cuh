// Shared pieces of the row-wise pair kernels (pairs_inter.cu, intra_task.cu, long_pair.cu).
//
// Conventions (binding, see swdask/_cpu.py): query along rows i, target along columns j, both
// 0-based;  H[i][j] = max(0, H[i-1][j-1] + sub(t_j, q_i), E[i][j], F[i][j]),
//           E[i][j] = max(H[i][j-1] - gap_open, E[i][j-1] - gap_extend),
//           F[i][j] = max(H[i-1][j] - gap_open, F[i-1][j] - gap_extend),
// so a gap of length k costs gap_open + (k-1) * gap_extend. End cell: the best score with the
// smallest j, then the smallest i (tie_rule.cuh). Start cell: the same rule applied to the
// reversed prefixes q[end_i::-1] x t[end_j::-1] (every cell there is <= best, so "best,
// smallest j, smallest i" is "first reversed column reaching best, first row in it", the CPU
// engine's rule).
//
// Every thread owns R consecutive query rows and walks the target one column per step; thread
// k of a chain works on column s - lag(k) at step s, so the cells computed at one step form a
// (thick) anti-diagonal. A thread gets H and F of the row above (and the target letter) from
// the thread before it: by warp shuffle, through shared memory between warps, or through
// global memory between strips of rows. Only one column of state per row is kept (the two
// most recent anti-diagonals of the whole chain).
//
// Scores are int32. Rows hold HG = H - gap_open instead of H, so E and F each take one DPX
// add-max (E = max(E - ge, HG_left)); the diagonal term HG_diag + (sub + gap_open) reads a
// substitution that has gap_open baked in. Cells outside the matrix (padding rows past the
// query's end, virtual columns before the target's start and after its end) score
// SW_PAD_SCORE or, for the compare scoring, the mismatch (<= 0): such a cell never exceeds a
// real cell up and to the left of it, so it can never be the end cell under the tie rule, and
// the virtual columns before column 0 reproduce exactly the zero boundary.
//
// The host guarantees: scores < 2**28, 0 <= gap costs <= 2**28 (clamped, see _pairs.py), so no
// int32 arithmetic below can wrap.
#pragma once

#include "tie_rule.cuh"

namespace swpairs {

using swdask::better_end;

typedef unsigned char u8;
typedef long long i64;
typedef unsigned long long u64;

#define SWP_FULL_MASK 0xffffffffu
// "minus infinity" for E and F: below -gap_open, and NEG - gap_extend stays far from -2**31.
#define SWP_NEG (-(1 << 29))
// substitution (plus gap_open) of a padding cell
#define SWP_PAD_SCORE (-(1 << 29))
// protein table: 33 x 33, code 32 is padding (alphabets have at most 32 letters)
#define SWP_TABLE_STRIDE 33
#define SWP_TABLE_PAD 32
#define SWP_TABLE_CELLS (SWP_TABLE_STRIDE * SWP_TABLE_STRIDE)

// Match/mismatch scoring over at most four matching letters (DNA: ACGT; N and padding never
// match). Each query row keeps the four scores (sub + gap_open, signed bytes) of target letters
// 0..3 in one register; a column's letter turns into a `prmt` selector once per column, and
// one sign-extending byte permute per cell gives the score: letters >= 4 pick a byte of the
// all-mismatch word. One instruction per cell, no memory access. The host checks that the
// scores fit in a signed byte (else it uses the table).
__device__ __forceinline__ int swp_prmt(unsigned a, unsigned b, unsigned selector) {
#ifdef SWDASK_HOST_EMULATION  // inline PTX does not go through g++
  return (int)emu::prmt(a, b, selector);
#else
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return (int)d;
#endif
}

struct SubCompare {
  unsigned miss_word;  // mismatch + gap_open in all four bytes
  int hit, miss, limit;  // hit = match + gap_open, miss = mismatch + gap_open; limit <= 4
  __device__ __forceinline__ int query(int code) const {
    unsigned w = miss_word;
    if (code < limit) w = (w & ~(0xffu << (8 * code))) | ((unsigned)(hit & 0xff) << (8 * code));
    return (int)w;
  }
  __device__ __forceinline__ int query_pad() const { return (int)miss_word; }
  // selector: byte `c` (0..3 this row's word, 4: the mismatch word) into byte 0, its sign
  // into bytes 1..3
  __device__ __forceinline__ int target(int code) const {
    const unsigned c = code < 4 ? (unsigned)code : 4u;
    return (int)(c | ((8u | c) << 4) | ((8u | c) << 8) | ((8u | c) << 12));
  }
  __device__ __forceinline__ int target_pad() const { return target(4); }
  __device__ __forceinline__ int sub(int t, int q) const {
    return swp_prmt((unsigned)q, miss_word, (unsigned)t);
  }
};

// Any matrix: a 33 x 33 table (sub + gap_open) in shared memory, row = target letter.
struct SubTable {
  const int* table;
  __device__ __forceinline__ int query(int code) const { return code; }
  __device__ __forceinline__ int query_pad() const { return SWP_TABLE_PAD; }
  __device__ __forceinline__ int target(int code) const { return code * SWP_TABLE_STRIDE; }
  __device__ __forceinline__ int target_pad() const { return SWP_TABLE_PAD * SWP_TABLE_STRIDE; }
  __device__ __forceinline__ int sub(int t, int q) const { return table[t + q]; }
};

template <int KIND>
struct SubFor;
template <>
struct SubFor<0> {
  typedef SubCompare type;
  static __device__ __forceinline__ SubCompare make(int*, const int*, int hit, int miss,
                                                    int limit) {
    SubCompare s;
    s.hit = hit;
    s.miss = miss;
    s.limit = limit;
    s.miss_word = (unsigned)(miss & 0xff) * 0x01010101u;
    return s;
  }
};
template <>
struct SubFor<1> {
  typedef SubTable type;
  // every thread of the block must call this (it ends with a barrier)
  static __device__ __forceinline__ SubTable make(int* shared_table, const int* table, int, int,
                                                  int) {
    for (int k = threadIdx.x; k < SWP_TABLE_CELLS; k += blockDim.x) shared_table[k] = table[k];
    __syncthreads();
    SubTable s;
    s.table = shared_table;
    return s;
  }
};

// One column of R rows. In: hg = HG of the row above at this column, f = its F, hg_diag = HG
// of the row above at the previous column, tc = the column's target letter (prepared).
// Out: hg, f of this thread's last row. Returns the largest HG of the column (H - gap_open).
// GLOBAL: a global alignment's cells (no zero floor; long_pair.cu's long_rows), no column
// maximum (SWP_NEG returned); KEEP: also H and F of row `keep` into h_kept and f_kept (the
// one thread holding the query's last row; the others run without the compare).
template <int R, bool GLOBAL = false, bool KEEP = false, class Sub>
__device__ __forceinline__ int column(int (&hg)[R], int (&e)[R], const int (&q)[R],
                                      const Sub& sub, int tc, int hg_diag, int& hg_up, int& f,
                                      int gap_open, int neg_extend, int keep = -1,
                                      int* h_kept = nullptr, int* f_kept = nullptr) {
  int up = hg_up;
  int fv = f;
  int d = hg_diag;
  int colmax = SWP_NEG;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int left = hg[r];
    const int en = __viaddmax_s32(e[r], neg_extend, left);  // max(E - ge, H_left - go)
    fv = __viaddmax_s32(fv, neg_extend, up);                // max(F - ge, H_up - go)
    const int h = GLOBAL ? max(__viaddmax_s32(d, sub.sub(tc, q[r]), en), fv)
                         : max(__viaddmax_s32_relu(d, sub.sub(tc, q[r]), en), fv);
    d = left;
    e[r] = en;
    up = h - gap_open;
    hg[r] = up;
    if (!GLOBAL && (r & 1)) colmax = __vimax3_s32(colmax, hg[r - 1], up);
    if (KEEP && r == keep) {
      *h_kept = h;
      *f_kept = fv;
    }
  }
  if (!GLOBAL && (R & 1)) colmax = max(colmax, hg[R - 1]);
  hg_up = up;
  f = fv;
  return colmax;
}

struct Best {
  int score, i, j;  // j = -1 while nothing scored
};

// below every score of an end-to-end mode (the host keeps those above -2**28)
#define SWP_NO_SCORE (-(1 << 30))

// After column j (0 <= j < n) of an end-to-end mode: the tie rule over this lane's cells
// among the mode's end candidates. `last_r`: the lane's row holding query row m - 1, or -1.
// The last row is read every column (free target ends), the last column once (free query
// ends), the corner once (neither).
template <int R, bool FREE_Q, bool FREE_T>
__device__ __forceinline__ void end_candidates(Best& b, const int (&hg)[R], int gap_open, int i0,
                                               int j, int m, int n, int last_r) {
  if (FREE_Q && j == n - 1) {  // the last column, rows in order
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int h = hg[r] + gap_open;
      if (i0 + r < m && better_end(h, j, i0 + r, b.score, b.j, b.i)) {
        b.score = h;
        b.i = i0 + r;
        b.j = j;
      }
    }
    return;
  }
  if (last_r < 0 || !(FREE_T || j == n - 1)) return;
  int h = hg[0];
#pragma unroll
  for (int r = 1; r < R; ++r)
    if (r == last_r) h = hg[r];
  h += gap_open;
  if (better_end(h, j, i0 + last_r, b.score, b.j, b.i)) {
    b.score = h;
    b.i = i0 + last_r;
    b.j = j;
  }
}

// After a column: the tie rule over one thread's own cells (SW_BETTER_IN_SCAN: it sees its
// columns in increasing j within a strip, its rows in increasing i from strip to strip). The
// row is looked up only when the best improves.
template <int R>
__device__ __forceinline__ void track(Best& b, const int (&hg)[R], int colmax, int gap_open,
                                      int i0, int j) {
  const int c = colmax + gap_open;
  if (SW_BETTER_IN_SCAN(c, j, b.score, b.j)) {
    int ri = R - 1;
#pragma unroll
    for (int r = R - 1; r >= 0; --r)
      if (hg[r] == colmax) ri = r;
    b.score = c;
    b.i = i0 + ri;
    b.j = j;
  }
}

// Tie-rule reduction over groups of WIDTH lanes (a power of two <= 32).
template <int WIDTH>
__device__ __forceinline__ void reduce_best(Best& b) {
#pragma unroll
  for (int off = WIDTH / 2; off > 0; off >>= 1) {
    Best o;
    o.score = __shfl_xor_sync(SWP_FULL_MASK, b.score, off, WIDTH);
    o.i = __shfl_xor_sync(SWP_FULL_MASK, b.i, off, WIDTH);
    o.j = __shfl_xor_sync(SWP_FULL_MASK, b.j, off, WIDTH);
    if (better_end(o.score, o.j, o.i, b.score, b.j, b.i)) b = o;
  }
}

// Tie-rule reduction over the block (W warps); every thread gets the result.
template <int W>
__device__ __forceinline__ void reduce_best_block(Best& b, int* scratch /* 3 * W ints */) {
  reduce_best<32>(b);
  const int w = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    scratch[w] = b.score;
    scratch[W + w] = b.i;
    scratch[2 * W + w] = b.j;
  }
  __syncthreads();
  b.score = scratch[0];
  b.i = scratch[W];
  b.j = scratch[2 * W];
#pragma unroll
  for (int k = 1; k < W; ++k)
    if (better_end(scratch[k], scratch[2 * W + k], scratch[W + k], b.score, b.j, b.i)) {
      b.score = scratch[k];
      b.i = scratch[W + k];
      b.j = scratch[2 * W + k];
    }
  __syncthreads();
}

// Letter k of a sequence read forwards, or backwards from its last letter (reverse pass).
template <bool REV>
__device__ __forceinline__ int letter(const u8* res, i64 start, int length, int k) {
  return res[REV ? start + (length - 1 - k) : start + k];
}

}  // namespace swpairs
