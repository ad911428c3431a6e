// Start cells by reverse scoring (ADEPT), in 32-bit lanes, one target per group of G threads.
//
// For a target with score B > 0 and end cell (end_i, end_j), this scores the reversed
// prefixes query[end_i::-1] (rows ir) against target[end_j::-1] (columns jr), and finds the
// first column holding a cell equal to B; the start cell is its first such row: start =
// (end_i - ir, end_j - jr). This is swdask._cpu._reverse's answer, which scores the reversed
// prefixes locally (H >= 0).
//
// Anchored, not local. Here the reversed alignments must begin at the end cell (H is 0 at
// the corner before it and minus infinity along the other edges, with no floor at 0), and
// they give the same hits: a local alignment of the reversed prefixes that scores B is a
// forward alignment of score B ending at some cell (end_i - ir0, end_j - jr0); B is the
// maximum, so that cell also holds B, and since the end cell is the first cell holding B in
// (j asc, i asc) order, ir0 = jr0 = 0. No cell exceeds B either way, so "== B" is tested as
// ">= B". What anchoring buys: every cell below a pass is reached through the pass's last
// row, so the passes can stop early (below).
//
// The wavefront is the forward kernel's (thread t owns rows [t*R, t*R + R) of a pass of G*R
// rows, computes column s - t at step s, and hands its last row to thread t+1), with two
// differences: every target has its own query prefix, so scores come from the substitution
// matrix in shared memory indexed by the query letters each thread holds, not from a
// query profile; and each group stops as soon as no thread can still find a hit before
// the earliest one (below). A later pass (rows further from the end cell) only scans the
// columns before the best column found so far, which is all it could improve on, and runs
// at all only if a cell of it could still reach B. A path from the last row's cell in
// column jr0 (its H, or the F it hands down) to a column jr < limit gains at most, per
// column it enters, the largest score of that column's target letter against any query
// letter (its gain, >= 0; a step down or right only costs). With P(x) the sum of the gains
// of columns 0..x, once max over jr0 of (max(H, F) at jr0 - P(jr0)) + P(limit - 1) < B, no
// later pass can hit.
// Far from the end cell the anchored scores have paid for a long gap, so for most targets
// a pass or two is all it takes, where the passes of a local scoring went on to the end of
// the query prefix.
//
// The same bound ends a pass early. Once some thread of the group has a hit in column c*
// (the group's earliest so far), only cells in columns before c* can still change the
// answer. Thread t's frontier (the H, E and F of its last column j, and the row above's H
// it keeps for the next diagonal) bounds every cell it or a later thread will compute:
// such a cell in column c' holds at most (frontier) + P(c') - P(j). A thread is settled
// when it has computed column c* - 1, or when (frontier) + P(c* - 1) - P(j) < B; thread 0
// of a pass that reads a boundary (whose later columns are not bounded) only the first
// way. The pass stops once every thread of the group is settled: without the bound, each
// thread had to reach c*, G - 1 steps after the first thread, though most of a chance
// hit's deep rows are out of reach long before. The next pass reads the boundary columns
// the last thread did not write as minus infinity, which the bound allows: no cell reached
// through them can reach B before c*, and c* is the next pass's limit.
#include "sw_common.cuh"

namespace swdask {

// subst[b * alpha1 + a] = matrix[b][a] + gap_open (b: target letter, a: query letter); the
// row and column alpha1 - 1 are PAD (pad_score). Item k is target row item_row[k]; its score
// and end cell are read from, and its start cell (-1, -1 where there is none) written to,
// the by-row arrays. item_boundary[k] is its first boundary column (2 words each), used only
// where the query prefix takes more than one pass.
template <int G, int R>
__global__ void __launch_bounds__(256)
sw_reverse(const int* __restrict__ subst, int alpha1, const u8* __restrict__ query,
           int query_length, const u8* __restrict__ residues, const i64* __restrict__ offsets,
           const int* __restrict__ item_row, int num_items, const int* __restrict__ row_score,
           const int* __restrict__ row_end_i, const int* __restrict__ row_end_j,
           const i64* __restrict__ item_boundary, u32* __restrict__ boundary, int gap_open,
           int gap_extend, int* __restrict__ row_start_i, int* __restrict__ row_start_j) {
  typedef Lanes32 V;
  typedef V::reg_t reg_t;
  static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G must be a power of two <= 32");
  constexpr int ROWS = G * R;
  __shared__ int sub[33 * 33];
  __shared__ int gain[33];  // per target letter: max(0, its best score against a query letter)
  for (int idx = threadIdx.x; idx < alpha1 * alpha1; idx += blockDim.x) sub[idx] = subst[idx];
  __syncthreads();
  for (int b = threadIdx.x; b < alpha1; b += blockDim.x) {
    int best = 0;
    for (int a = 0; a + 1 < alpha1; ++a) best = max(best, sub[b * alpha1 + a] - gap_open);
    gain[b] = b + 1 < alpha1 ? best : 0;
  }
  __syncthreads();

  const int t = threadIdx.x % G;
  const int item = blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
  if (item >= num_items) return;  // whole groups leave together; no barrier follows
  const u32 group_mask =
      G == 32 ? SW_FULL_MASK : (((1u << G) - 1u) << ((threadIdx.x % 32) / G * G));

  const int row = item_row[item];
  const int score = row_score[row];
  const int end_i = row_end_i[row];
  const int end_j = row_end_j[row];
  const i64 target_start = offsets[row];
  if (score <= 0 || end_i < 0 || end_i >= query_length || end_j < 0 ||
      end_j >= offsets[row + 1] - target_start) {  // not an end cell: no start
    if (t == 0) row_start_i[row] = row_start_j[row] = -1;
    return;
  }
  const u8* target = residues + target_start;
  const int passes = (end_i + 1 + ROWS - 1) / ROWS;
  u32* my_boundary = boundary + (passes > 1 ? 2 * item_boundary[item] : 0);
  const int pad_code = alpha1 - 1;

  const reg_t go_neg = V::splat(-gap_open);
  const reg_t ge_neg = V::splat(-gap_extend);
  const reg_t fe_neg = V::splat(-min(gap_extend, gap_open));
  const reg_t hg_zero = V::splat(-gap_open);
  const reg_t neg = V::splat(V::neg);
  const int hit_hg = score - gap_open;  // a hit is a cell with HG >= hit_hg

  int limit = end_j + 1;  // columns [0, limit) can still hold the answer
  int best_jr = SW_INT_MAX, best_ir = SW_INT_MAX;
  bool reachable = true;  // some cell below the passes done could still reach B
  int written = 0;        // boundary columns [0, written) hold the last pass's bottom row
  for (int pass = 0; pass < passes && limit > 0 && reachable; ++pass) {
    const int row0 = pass * ROWS;
    int qletter[R];  // query letters of this thread's rows (PAD past the prefix)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int ir = row0 + t * R + r;
      qletter[r] = ir <= end_i ? (int)query[end_i - ir] : pad_code;
    }
    reg_t HG[R], E[R];  // column -1: minus infinity
#pragma unroll
    for (int r = 0; r < R; ++r) {
      HG[r] = neg;
      E[r] = neg;
    }
    // the diagonal of thread 0's first cell: the corner before the end cell (H = 0) in the
    // first pass, minus infinity elsewhere
    reg_t prev_in_HG = pass == 0 && t == 0 ? hg_zero : neg;
    int out_code = pad_code;
    reg_t out_HG = neg, out_F = neg;
    const bool reads_boundary = pass > 0;
    const bool writes_boundary = pass + 1 < passes;
    const int pass_limit = limit;
    // P(j) of this thread's last column; thread G-1: max over the columns jr0 it hands down
    // of max(H, F) - P(jr0)
    i64 reach = -((i64)1 << 62);
    int prefix = 0;

    // loaded three columns ahead from clamped addresses, checked when used (as forward)
    const int last_col = pass_limit - 1;  // >= 0 here
    const u32* boundary_at = reads_boundary ? my_boundary : boundary;
    const int boundary_last = reads_boundary ? max(min(last_col, written - 1), 0) : 0;
    const int boundary_end = reads_boundary ? written : 0;  // columns past it: minus infinity
    auto fetch_code = [&](int col) -> int { return (int)target[end_j - min(col, last_col)]; };
    auto fetch_boundary = [&](int col) -> uint2 {
      const uint2 held =
          *reinterpret_cast<const uint2*>(boundary_at + 2 * min(col, boundary_last));
      return col < boundary_end ? held : make_uint2((u32)V::neg, (u32)V::neg);
    };
    int c0 = fetch_code(0), c1 = fetch_code(1), c2 = fetch_code(2);
    uint2 b0 = fetch_boundary(0), b1 = fetch_boundary(1), b2 = fetch_boundary(2);

    int hit_j = SW_INT_MAX, hit_r = 0;
    int hit_prefix = SW_INT_MAX;  // P(hit_j - 1)
    int s = 0;
    for (;; ++s) {
      int in_code = __shfl_up_sync(group_mask, out_code, 1, G);
      reg_t in_HG = __shfl_up_sync(group_mask, out_HG, 1, G);
      reg_t in_F = __shfl_up_sync(group_mask, out_F, 1, G);
      if (t == 0) {
        const bool real = s < pass_limit;
        in_code = real ? c0 : pad_code;
        in_HG = real && reads_boundary ? b0.x : neg;  // the top edge: minus infinity
        in_F = real && reads_boundary ? b0.y : neg;
      }
      c0 = c1;
      c1 = c2;
      c2 = fetch_code(s + 3);
      b0 = b1;
      b1 = b2;
      b2 = fetch_boundary(s + 3);

      const int j = s - t;
      const int* srow = sub + in_code * alpha1;
      // the forward kernel's row recurrence (see inter_task.cu): F is the only chain
      reg_t F = in_F;
      E[0] = V::add_max(E[0], ge_neg, HG[0]);
      reg_t term = V::add_max(prev_in_HG, (reg_t)srow[qletter[0]], E[0]);
      prev_in_HG = in_HG;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        reg_t next_term = 0;
        if (r + 1 < R) {
          E[r + 1] = V::add_max(E[r + 1], ge_neg, HG[r + 1]);
          next_term = V::add_max(HG[r], (reg_t)srow[qletter[r + 1]], E[r + 1]);
        }
        const reg_t U = V::add_max(term, go_neg, neg);
        HG[r] = V::add_max(F, go_neg, U);
        F = V::add_max(F, fe_neg, U);
        term = next_term;
      }
      out_code = in_code;
      out_HG = HG[R - 1];
      out_F = F;
      const bool real_column = j >= 0 && j < pass_limit;
      const int prefix_before = prefix;
      if (real_column) prefix += gain[in_code];
      if (writes_boundary && t == G - 1 && real_column) {
        *reinterpret_cast<uint2*>(my_boundary + 2 * j) = make_uint2(out_HG, F);
        reach = max(reach, (i64)max((int)out_HG + gap_open, (int)F) - prefix);
      }

      if (hit_j == SW_INT_MAX && real_column) {
        const int column_best = (int)TreeMax<V, 0, R>::run(HG);
        if (column_best >= hit_hg) {
          hit_j = j;
          hit_prefix = prefix_before;
          for (int r = R - 1; r >= 0; --r)
            if ((int)HG[r] >= hit_hg) hit_r = r;
        }
      }
      // Every thread has computed the columns <= done.
      const int done = s - (G - 1);
      if (done >= pass_limit - 1) break;
      if (__any_sync(group_mask, hit_j != SW_INT_MAX)) {  // settled threads (see the top)
        const int first_col = __reduce_min_sync(group_mask, hit_j);
        const int first_prefix = __reduce_min_sync(group_mask, hit_prefix);  // P(first_col-1)
        bool settled = j >= first_col - 1;
        if (!settled && (t > 0 || !reads_boundary)) {
          reg_t frontier = V::max2(F, prev_in_HG + (reg_t)gap_open);
#pragma unroll
          for (int r = 0; r < R; ++r)
            frontier = V::max3(frontier, E[r], HG[r] + (reg_t)gap_open);
          settled = (int)frontier - prefix + first_prefix < score;
        }
        if (__all_sync(group_mask, settled)) break;
      }
    }
    written = min(max(s - (G - 1) + 1, 0), pass_limit);  // the columns thread G-1 computed

    int cand_j = hit_j, cand_i = hit_j == SW_INT_MAX ? SW_INT_MAX : row0 + t * R + hit_r;
#pragma unroll
    for (int offset = G / 2; offset >= 1; offset /= 2) {
      const int other_j = __shfl_xor_sync(group_mask, cand_j, offset, G);
      const int other_i = __shfl_xor_sync(group_mask, cand_i, offset, G);
      if (earlier_cell(other_j, other_i, cand_j, cand_i)) {
        cand_j = other_j;
        cand_i = other_i;
      }
    }
    if (earlier_cell(cand_j, cand_i, best_jr, best_ir)) {
      best_jr = cand_j;
      best_ir = cand_i;
    }
    if (best_jr != SW_INT_MAX) limit = best_jr;  // later passes: only earlier columns can win
    if (pass + 1 < passes && limit > 0) {  // P(limit - 1), summed by the group
      i64 gains = 0;
      for (int col = t; col < limit; col += G) gains += gain[(int)target[end_j - col]];
#pragma unroll
      for (int offset = G / 2; offset >= 1; offset /= 2)
        gains += __shfl_xor_sync(group_mask, gains, offset, G);
      reachable = __shfl_sync(group_mask, (int)(reach + gains >= (i64)score), G - 1, G);
    }
  }
  if (t == 0) {
    const bool found = best_jr != SW_INT_MAX;
    row_start_i[row] = found ? end_i - best_ir : -1;
    row_start_j[row] = found ? end_j - best_jr : -1;
  }
}

}  // namespace swdask
