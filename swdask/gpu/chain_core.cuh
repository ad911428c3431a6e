// One strip of rows computed by a whole thread block: the intra-task engine shared by
// intra_task.cu (one block per pair, ADEPT) and long_pair.cu (one pair across all blocks).
//
// The block is a chain of W warps x 32 lanes, thread c = 32*w + l owning rows
// [strip*W*32*R + c*R, +R). Thread (w, l) works on column s - w*(32 + SWP_WINDOW) - l at block
// step s: inside a warp, lane l-1 hands H/F/letter of its last row to lane l by shuffle; lane
// 31 of warp w-1 hands them to lane 0 of warp w through a ring in shared memory. Warp w runs
// SWP_WINDOW steps behind what the wavefront alone would need, so a value is always written
// one window before it is read and the block synchronises once per window, not once per step.
// Warp 0 reads the row above the strip (zeros for strip 0) in 32-column chunks from global
// memory; lane 31 of the last warp writes the strip's bottom row there for the next strip
// (O(target length) memory). In the long-pair mode the bottom row goes to another block, which
// polls a progress word (strip id, columns done) that this block publishes once per window.
#pragma once
#include "pairs_core.cuh"

namespace swpairs {

#define SWP_WINDOW 16  // steps between block barriers, and the extra lag between warps
#define SWP_RING 64    // ring slots per warp boundary: a slot is rewritten >= 1 window later
#define SWP_LEAD 8     // warp 0 starts loading the next 32-column chunk this many steps early
#define SWP_NO_HIT 0x7fffffff

template <int W>
struct ChainShared {
  int ring_h[W][SWP_RING];
  int ring_f[W][SWP_RING];
  int ring_tc[W][SWP_RING];
  int red[3 * W];
  int snap[2];  // reverse pass: the hit column as of the last window (two slots, by parity)
  int hitcol;   // reverse pass: smallest column where some cell reached the forward score
  int job;
  int part;     // long_pair.cu's batches: the pair of the job
};

// The edges of a global alignment's matrix (GLOBAL strips, long_pair.cu's long_rows): row i's
// cell before column 0 holds an I run of i + 1 letters, -(lead + i * gap_extend); the corner
// before both holds `corner`; the row above row 0 holds a D run, -(gap_open + j * gap_extend)
// at column j, where `top` (else nothing: SWP_NEG). `last` receives H and F of the query's last
// row at every column.
struct GlobalEdges {
  int lead, corner, top;
  int2* last;
};

// A local pass over target sections from a given column (long_pair.cu's long_sections, the
// passes of align_long's top > 1): `left` holds H and E of every query row in the column before
// the first (null: zeros); the sections end at columns cuts[0] < ... < cuts[ncuts - 1] = n.
// At each cut every thread adds its best cell of the section (query rows only) to
// best[strip * ncuts + k] as a key (score, then the smallest column, then row: atomicMax of
// score << 32 | ~(column in section << strip_bits | row in strip)) and, where `columns`, writes
// H and E of its rows there (columns[k * m + i]).
struct Sections {
  const int2* left;
  const int* cuts;
  int ncuts, strip_bits, m;
  int2* columns;
  unsigned long long* best;
};

// The key of a section's cell for atomicMax: higher score, then smaller column, then row.
__device__ __forceinline__ unsigned long long section_key(int score, int column_in_section,
                                                          int row_in_strip, int strip_bits) {
  const unsigned order = ((unsigned)column_in_section << strip_bits) | (unsigned)row_in_strip;
  return ((unsigned long long)(unsigned)score << 32) | (unsigned long long)(0xffffffffu - order);
}

// Runs one strip. `ncols`: columns that can still hold the result (the reverse pass lowers it
// when EARLY). `in`/`out`: the row above / the bottom row (null: zeros / not needed).
// GLOBAL: the strip of a global alignment (no zero floor, the edges of `edges`, the virtual
// columns before column 0 skipped rather than computed, no best tracked). SECT: a local strip
// of long_sections (the left column of `sections`, also skipping the virtual columns; each
// section's best and, where kept, its last column).
template <int W, int R, class Sub, bool REV, bool LONG, bool EARLY, bool GLOBAL = false,
          bool SECT = false>
__device__ __forceinline__ void chain_strip(ChainShared<W>& sh, const Sub& sub, Best& best,
                                            const u8* q_res, i64 qs, int m, const u8* t_res,
                                            i64 ts, int n, int& ncols, int strip, int target,
                                            const int2* in, int2* out,
                                            const volatile u64* in_progress,
                                            volatile u64* out_progress, int gap_open,
                                            int gap_extend,
                                            GlobalEdges edges = GlobalEdges(),
                                            Sections sections = Sections()) {
  constexpr int WARP_LAG = 32 + SWP_WINDOW;
  constexpr int LAST_LAG = (W - 1) * WARP_LAG + 31;  // lag of the block's last thread
  const int w = threadIdx.x >> 5;
  const int l = threadIdx.x & 31;
  const int i0 = strip * (W * 32 * R) + (w * 32 + l) * R;
  const int neg_extend = -gap_extend;

  int q[R], hg[R], e[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int i = i0 + r;
    q[r] = i < m ? sub.query(letter<REV>(q_res, qs, m, i)) : sub.query_pad();
    hg[r] = GLOBAL ? -(edges.lead + i * gap_extend) - gap_open : -gap_open;
    e[r] = SWP_NEG;
    if (SECT && sections.left && i < m) {
      const int2 v = sections.left[i];
      hg[r] = v.x - gap_open;
      e[r] = v.y;
    }
  }
  // SECT: the thread's best of the current section (query rows only), the section, its end
  Best section_best;
  section_best.score = 0;
  section_best.i = -1;
  section_best.j = -1;
  int section = 0, section_end = SECT ? sections.cuts[0] : 0, section_first = 0;
  const int strip_row0 = strip * (W * 32 * R);
  // GLOBAL: the row of this thread holding the query's last row, if any
  const int keep = GLOBAL ? m - 1 - i0 : -1;
  if (EARLY && threadIdx.x == 0) sh.snap[0] = sh.snap[1] = SWP_NO_HIT;

  const int pad = sub.target_pad();
  int cur_tc = pad, cur_h = 0, cur_f = SWP_NEG, nxt_tc = pad, nxt_h = 0, nxt_f = SWP_NEG;
  // warp 0 only: letters and the row above for columns [first, first + 32)
  auto load_chunk = [&](int first, int& tc, int& bh, int& bf) {
    if (first >= n) {
      tc = pad;
      bh = 0;
      bf = SWP_NEG;
      return;
    }
    if (LONG && in) {
      if (l == 0) {
        const int need = min(first + 32, n);
        const u64 want = ((u64)strip << 32) | (u64)need;  // producer is strip - 1
        while (*in_progress < want) __nanosleep(64);
        __threadfence();
      }
      __syncwarp();
    }
    const int c = first + l;
    tc = c < n ? sub.target(letter<REV>(t_res, ts, n, c)) : pad;
    if (in && c < n) {
      const int2 v = LONG ? __ldcg(in + c) : in[c];
      bh = v.x;
      bf = v.y;
    } else {
      bh = GLOBAL && c < n ? (edges.top ? -(gap_open + c * gap_extend) : SWP_NEG) : 0;
      bf = SWP_NEG;
    }
  };
  if (w == 0) load_chunk(0, cur_tc, cur_h, cur_f);

  int hg_out = -gap_open, f_out = SWP_NEG, tc_mine = pad, hg_diag = -gap_open;
  if (GLOBAL)  // the cell before column 0 in the row above this thread's first
    hg_diag = (i0 == 0 ? edges.corner : -(edges.lead + (i0 - 1) * gap_extend)) - gap_open;
  if (SECT && sections.left && i0 > 0 && i0 <= m)  // (the row above row 0 is the zero edge)
    hg_diag = sections.left[i0 - 1].x - gap_open;
  int steps = ncols + LAST_LAG + 1;
  for (int s = 0; s < steps; ++s) {
    if (s > 0 && (s & (SWP_WINDOW - 1)) == 0) {
      if (LONG && out_progress && threadIdx.x == W * 32 - 1) {
        const int done = min(max(s - LAST_LAG, 0), n);
        __threadfence();
        *out_progress = ((u64)(strip + 1) << 32) | (u64)done;
      }
      __syncthreads();
      if (EARLY) {
        const int b = s / SWP_WINDOW;
        const int hc = sh.snap[b & 1];
        if (hc < ncols) {
          ncols = hc;
          steps = min(steps, ncols + LAST_LAG + 1);
        }
        if (threadIdx.x == 0) sh.snap[(b + 1) & 1] = sh.hitcol;
        if (s >= steps) break;
      }
    }
    const int k = s & 31;
    int in_tc = pad, in_h = 0, in_f = SWP_NEG;
    if (w == 0) {
      if (k == 32 - SWP_LEAD) load_chunk(s + SWP_LEAD, nxt_tc, nxt_h, nxt_f);
      if (k == 0 && s > 0) {
        cur_tc = nxt_tc;
        cur_h = nxt_h;
        cur_f = nxt_f;
      }
      in_tc = __shfl_sync(SWP_FULL_MASK, cur_tc, k);
      in_h = __shfl_sync(SWP_FULL_MASK, cur_h, k);
      in_f = __shfl_sync(SWP_FULL_MASK, cur_f, k);
    }
    const int up_hg = __shfl_up_sync(SWP_FULL_MASK, hg_out, 1);
    const int up_f = __shfl_up_sync(SWP_FULL_MASK, f_out, 1);
    const int up_tc = __shfl_up_sync(SWP_FULL_MASK, tc_mine, 1);
    int hv, fv;
    if (l == 0) {
      if (w == 0) {
        hv = in_h - gap_open;
        fv = in_f;
        tc_mine = in_tc;
      } else {
        const int jw = s - w * WARP_LAG;
        if (jw >= 0 && jw < n) {
          const int slot = jw & (SWP_RING - 1);
          hv = sh.ring_h[w - 1][slot] - gap_open;
          fv = sh.ring_f[w - 1][slot];
          tc_mine = sh.ring_tc[w - 1][slot];
        } else {
          hv = -gap_open;
          fv = SWP_NEG;
          tc_mine = pad;
        }
      }
    } else {
      hv = up_hg;
      fv = up_f;
      tc_mine = up_tc;
    }
    const int j = s - w * WARP_LAG - l;
    int colmax = SWP_NEG;
    if (GLOBAL) {
      // the columns before column 0 are the edges, not computed: this thread's rows keep
      // their edge values, and the cell before column 0 above stays the diagonal
      if (j >= 0) {
        const int d = hg_diag;
        hg_diag = hv;
        if (keep >= 0 && keep < R) {
          int h_kept = 0, f_kept = 0;
          column<R, true, true>(hg, e, q, sub, tc_mine, d, hv, fv, gap_open, neg_extend, keep,
                                &h_kept, &f_kept);
          if (j < n) edges.last[j] = make_int2(h_kept, f_kept);
        } else {
          column<R, true>(hg, e, q, sub, tc_mine, d, hv, fv, gap_open, neg_extend);
        }
      }
    } else if (SECT) {
      // the column before column 0 is `left`, not computed (as GLOBAL's edges)
      if (j >= 0) {
        const int d = hg_diag;
        hg_diag = hv;
        colmax = column<R>(hg, e, q, sub, tc_mine, d, hv, fv, gap_open, neg_extend);
        if (j < n) {
          if (i0 + R <= m) {
            track<R>(section_best, hg, colmax, gap_open, i0, j);
          } else {  // the thread holding the query's last row: its padding rows left out
            int valid = SWP_NEG;
#pragma unroll
            for (int r = 0; r < R; ++r)
              if (i0 + r < m) valid = max(valid, hg[r]);
            track<R>(section_best, hg, valid, gap_open, i0, j);
          }
          if (j == section_end - 1) {
            if (section_best.score > 0)
              atomicMax(sections.best + (i64)strip * sections.ncuts + section,
                        section_key(section_best.score, section_best.j - section_first,
                                    section_best.i - strip_row0, sections.strip_bits));
            if (sections.columns) {
#pragma unroll
              for (int r = 0; r < R; ++r)
                if (i0 + r < m)
                  sections.columns[(i64)section * m + i0 + r] =
                      make_int2(hg[r] + gap_open, e[r]);
            }
            section_best.score = 0;
            section_best.i = -1;
            section_best.j = -1;
            section_first = section_end;
            ++section;
            section_end = section < sections.ncuts ? sections.cuts[section] : 0x7fffffff;
          }
        }
      }
    } else {
      const int d = hg_diag;
      hg_diag = hv;
      colmax = column<R>(hg, e, q, sub, tc_mine, d, hv, fv, gap_open, neg_extend);
    }
    hg_out = hv;
    f_out = fv;
    // reverse pass: columns from ncols on may read a row above that the previous strip never
    // wrote (it stopped early); they can no longer hold the start cell anyway
    if (!GLOBAL && (!EARLY || j < ncols)) {
      track<R>(best, hg, colmax, gap_open, i0, j);
      if (EARLY && colmax + gap_open == target && j >= 0) atomicMin(&sh.hitcol, j);
    }
    if (l == 31 && j >= 0 && j < n) {
      if (w < W - 1) {
        const int slot = j & (SWP_RING - 1);
        sh.ring_h[w][slot] = hv + gap_open;
        sh.ring_f[w][slot] = fv;
        sh.ring_tc[w][slot] = tc_mine;
      } else if (out) {
        out[j] = make_int2(hv + gap_open, fv);
      }
    }
  }
  if (LONG && out_progress && threadIdx.x == W * 32 - 1) {
    __threadfence();
    *out_progress = ((u64)(strip + 1) << 32) | (u64)n;
  }
  __syncthreads();
}

}  // namespace swpairs
