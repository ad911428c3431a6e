// Inter-task kernel for row-wise pairs: a group of G lanes of one warp aligns one pair.
//
// Lane t of a group owns query rows [strip * G*R + t*R, +R) and works on column s - t at step s
// (an anti-diagonal wavefront across the group, one column per lane per step). H and F of the
// row above, and the target letter, come from lane t-1 by warp shuffle; lane 0 reads them, in
// chunks of G columns loaded one chunk ahead, from the target and from the bottom row that the
// previous strip left in global memory (queries longer than G*R rows take several strips;
// O(target length) memory per pair). Pairs come sorted by size, so the groups of a warp do
// about the same work.
//
// Forward pass (REV = false): score and end cell by the tie rule. Reverse pass (REV = true):
// the same recurrences over q[end_i::-1] x t[end_j::-1]; a group stops as soon as every lane
// is past the first column where some lane reached the forward score (later columns cannot
// hold the start cell), which makes the reverse pass short for reads inside long targets.
//
// End-to-end modes (MODE != 0, the bits of SWP_MODE_*: swdask/_cpu_modes.py states the
// rules, which these kernels follow cell for cell). No zero floor (column<R, true>); the
// boundary column -1 holds H = 0 where query ends are free, else the query gap
// -(go + i * ge), and row -1 likewise with the target, read by lane 0 of the first strip. A
// lane keeps its boundary column through the wavefront's fill steps (j < 0: no cell is
// computed, and what it hands down is its last row's boundary), so the lane below starts
// from the boundary, not from cells of virtual columns. The end cell is the tie rule's best
// among the mode's candidates: the corner, the last row (free target ends: the lane holding
// query row m - 1 reads it each column), the last column (free query ends: every lane at
// j = n - 1). The reverse pass is anchored at the end cell (boundaries pay their gaps), runs
// every column (no early stop: without the floor a later column may still hold the start),
// and counts the boundary's cell of the last row or column as a candidate (an alignment whose
// segment of one sequence is empty); a global alignment starts at (0, 0) and has no reverse
// pass. Where the reverse pass does not find the forward score again it writes start -1, which
// the host reports as an internal error. Values stay in int32: the host bounds the lengths
// times the costs (swdask/gpu/_pairs.py, score_bound).
#include "pairs_core.cuh"

using namespace swpairs;

template <int G, int R, int KIND, bool REV, int MODE = 0>
__global__ void __launch_bounds__(128)
    pairs_inter(const u8* __restrict__ q_res, const i64* __restrict__ q_start,
                const int* __restrict__ q_len, const u8* __restrict__ t_res,
                const i64* __restrict__ t_start, const int* __restrict__ t_len,
                const int* __restrict__ order, int count, int* score, int* end_i, int* end_j,
                int* start_i, int* start_j, int2* scratch, const i64* __restrict__ scratch_off,
                const int* __restrict__ table, int match, int mismatch, int limit, int gap_open,
                int gap_extend) {
  static_assert(G == 4 || G == 8 || G == 16 || G == 32, "G must be 4, 8, 16 or 32");
  __shared__ int shared_table[KIND == 1 ? SWP_TABLE_CELLS : 1];
  const typename SubFor<KIND>::type sub =
      SubFor<KIND>::make(shared_table, table, match + gap_open, mismatch + gap_open, limit);

  const int lane = threadIdx.x & 31;
  const int t = lane & (G - 1);
  const i64 group = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / G;
  const int neg_extend = -gap_extend;
  constexpr bool E2E = (MODE & SWP_MODE_END_TO_END) != 0;
  constexpr bool FREE_Q = (MODE & SWP_MODE_FREE_QUERY) != 0;   // ends in the last column
  constexpr bool FREE_T = (MODE & SWP_MODE_FREE_TARGET) != 0;  // ends in the last row
  constexpr bool LEAD_Q = FREE_Q && !REV;  // boundary column -1 free (else a query gap)
  constexpr bool LEAD_T = FREE_T && !REV;  // boundary row -1 free (else a target gap)
  constexpr bool EARLY = REV && !E2E;      // the reverse pass's early stop
  // H of the boundary column at row i (>= 0) and of the boundary row at column j (>= 0)
  auto column_edge = [&](int i) { return LEAD_Q ? 0 : -(gap_open + i * gap_extend); };
  auto row_edge = [&](int j) { return LEAD_T ? 0 : -(gap_open + j * gap_extend); };

  int pair = -1, m = 0, n = 0, target = 0;
  i64 qs = 0, ts = 0;
  if (group < count) {
    pair = order[group];
    qs = q_start[pair];
    ts = t_start[pair];
    if (REV) {
      target = score[pair];
      if (E2E || target > 0) {
        m = end_i[pair] + 1;
        n = end_j[pair] + 1;
      }
    } else {
      m = q_len[pair];
      n = t_len[pair];
    }
  }
  const int rows = G * R;
  const int nstrips = (m + rows - 1) / rows;
  const int warp_strips = __reduce_max_sync(SWP_FULL_MASK, nstrips);
  int2* buf = scratch + ((nstrips > 1) ? scratch_off[group] : 0);
  // lanes of this group in the warp's ballot
  const unsigned group_bits = (G == 32 ? SWP_FULL_MASK : ((1u << G) - 1u)) << (lane & ~(G - 1));

  Best best;
  best.score = E2E ? SWP_NO_SCORE : 0;
  best.i = -1;
  best.j = -1;
  // the reverse pass's candidate in the boundary row: the whole target segment against no
  // query residue (one lane of the group holds it)
  if (E2E && REV && FREE_Q && t == 0 && m > 0) {
    best.score = -(gap_open + (n - 1) * gap_extend);
    best.j = n - 1;
  }
  int ncols = n;  // reverse pass: columns that can still hold the start cell

  for (int strip = 0; strip < warp_strips; ++strip) {
    const bool live = strip < nstrips;
    const bool read_in = live && strip > 0;
    const bool write_out = live && strip + 1 < nstrips;
    const int i0 = strip * rows + t * R;
    // end-to-end: this lane holds the query's last row (its place among the lane's rows)
    const int last_r = (E2E && live && i0 <= m - 1 && m - 1 < i0 + R) ? m - 1 - i0 : -1;
    int q[R], hg[R], e[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int i = i0 + r;
      q[r] = (live && i < m) ? sub.query(letter<REV>(q_res, qs, m, i)) : sub.query_pad();
      // H in the column before this lane's first column: 0, or the mode's boundary
      hg[r] = (E2E ? column_edge(i) : 0) - gap_open;
      e[r] = SWP_NEG;
    }
    if (E2E && REV && FREE_T && last_r >= 0) {  // the last row's boundary cell: no target
      const Best edge = {column_edge(m - 1), m - 1, -1};
      if (better_end(edge.score, edge.j, edge.i, best.score, best.j, best.i)) best = edge;
    }
    __syncwarp();  // the bottom row of the previous strip (lane G-1's stores) is now visible

    // lane 0's inputs, G columns per chunk: target letter, H and F of the row above
    int cur_tc, cur_h, cur_f, nxt_tc, nxt_h, nxt_f;
    auto load_chunk = [&](int first, int& tc, int& bh, int& bf) {
      const int c = first + t;
      tc = (live && c < n) ? sub.target(letter<REV>(t_res, ts, n, c)) : sub.target_pad();
      if (read_in && c < n) {
        const int2 v = buf[c];
        bh = v.x;
        bf = v.y;
      } else {
        bh = (E2E && strip == 0) ? row_edge(c) : 0;
        bf = SWP_NEG;
      }
    };
    load_chunk(0, cur_tc, cur_h, cur_f);
    load_chunk(G, nxt_tc, nxt_h, nxt_f);

    // what this lane hands down before its first column: its last row's boundary (H = 0 in
    // the local mode); lane 0's diagonal at column 0: the row above at column -1
    int hg_out = (E2E ? column_edge(i0 + R - 1) : 0) - gap_open, f_out = SWP_NEG;
    int tc_mine = sub.target_pad();
    int hg_diag = (E2E && i0 > 0 ? column_edge(i0 - 1) : 0) - gap_open;
    int my_steps = live ? ncols + G - 1 : 0;
    const int warp_steps = EARLY ? 0 : __reduce_max_sync(SWP_FULL_MASK, my_steps);

    for (int s = 0; EARLY ? __any_sync(SWP_FULL_MASK, s < my_steps) : s < warp_steps; ++s) {
      const int k = s & (G - 1);
      if (k == 0 && s > 0) {
        cur_tc = nxt_tc;
        cur_h = nxt_h;
        cur_f = nxt_f;
        load_chunk(s + G, nxt_tc, nxt_h, nxt_f);
      }
      const int in_tc = __shfl_sync(SWP_FULL_MASK, cur_tc, k, G);
      const int in_h = __shfl_sync(SWP_FULL_MASK, cur_h, k, G);
      const int in_f = __shfl_sync(SWP_FULL_MASK, cur_f, k, G);
      const int up_hg = __shfl_up_sync(SWP_FULL_MASK, hg_out, 1, G);
      const int up_f = __shfl_up_sync(SWP_FULL_MASK, f_out, 1, G);
      const int up_tc = __shfl_up_sync(SWP_FULL_MASK, tc_mine, 1, G);
      int hv, fv;
      if (t == 0) {
        hv = in_h - gap_open;
        fv = in_f;
        tc_mine = in_tc;
      } else {
        hv = up_hg;
        fv = up_f;
        tc_mine = up_tc;
      }
      const int d = hg_diag;
      hg_diag = hv;
      const int j = s - t;
      if (E2E) {
        if (j >= 0) {  // (fill steps keep the boundary column and hand it down)
          column<R, true>(hg, e, q, sub, tc_mine, d, hv, fv, gap_open, neg_extend);
          hg_out = hv;
          f_out = fv;
          if (j < n) end_candidates<R, FREE_Q, FREE_T>(best, hg, gap_open, i0, j, m, n, last_r);
        }
      } else {
        const int colmax = column<R>(hg, e, q, sub, tc_mine, d, hv, fv, gap_open, neg_extend);
        hg_out = hv;
        f_out = fv;
        // reverse pass: columns from ncols on may read a row above that the previous strip
        // never wrote (it stopped early); they can no longer hold the start cell anyway
        if (!REV || j < ncols) track<R>(best, hg, colmax, gap_open, i0, j);
        if (EARLY) {
          const unsigned hits =
              __ballot_sync(SWP_FULL_MASK, colmax + gap_open == target && j >= 0) & group_bits;
          if (hits) {
            // the lowest hitting lane is at the smallest column; lanes below it only need the
            // columns before (at that column the hit has the smaller row)
            const int col = s - ((31 - __clz(hits)) & (G - 1));
            if (col < ncols) {
              ncols = col;
              my_steps = ncols + G - 1;
            }
          }
        }
      }
      if (write_out && t == G - 1 && j >= 0 && j < n) buf[j] = make_int2(hv + gap_open, fv);
    }
  }

  reduce_best<G>(best);
  if (t == 0 && pair >= 0) {
    if (REV && E2E) {
      const bool found = best.score == target;  // anything else is a kernel bug
      start_i[pair] = found ? end_i[pair] - best.i : -1;
      start_j[pair] = found ? end_j[pair] - best.j : -1;
    } else if (REV) {
      if (target > 0) {
        start_i[pair] = end_i[pair] - best.i;
        start_j[pair] = end_j[pair] - best.j;
      }
    } else {
      score[pair] = best.score;
      end_i[pair] = best.i;
      end_j[pair] = best.j;
    }
  }
}
