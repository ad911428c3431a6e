// One very long pair across the whole GPU: a wavefront of strips over thread blocks.
//
// The query is cut into strips of W*32*R rows. A block takes the next strip from a counter and
// sweeps the whole target with it (chain_core.cuh: one block-wide anti-diagonal wavefront); the
// strip's bottom row goes to a slot in global memory that the block holding the next strip
// reads, 32 columns at a time, as soon as the progress word of that slot says they are written
// (published once per window, after a fence). So strip k runs a fixed distance behind strip
// k-1 and all blocks work at once. Counter order makes this deadlock-free whatever the number
// of resident blocks: a strip only ever waits for the strip before it, which some running
// block already holds. Slots: (grid + 1) rows of the target (a slot is reused only after its
// reader has finished), so memory is O(grid * target length), independent of the query length.
//
// Each block keeps the best cell of its strips; the host reduces the per-block results with
// the tie rule. REV = true runs the reverse pass (start cell) over q[end_i::-1] x t[end_j::-1],
// with m = end_i + 1 and n = end_j + 1 given by the host.
#include "chain_core.cuh"

using namespace swpairs;

// The strips of one pair, taken from the counter by the blocks in turn:
// body(strip, in, out, in_progress, out_progress) runs each with its slots (the row above,
// null for strip 0; its bottom row, null for the last strip) and their progress words.
template <int W, class Body>
__device__ __forceinline__ void take_strips(ChainShared<W>& sh, int* ticket, int nstrips, int n,
                                            int2* slots, int nslots,
                                            unsigned long long* progress, Body body) {
  while (true) {
    if (threadIdx.x == 0) sh.job = atomicAdd(ticket, 1);
    __syncthreads();
    const int strip = sh.job;
    __syncthreads();
    if (strip >= nstrips) break;
    const int2* in = strip > 0 ? slots + (i64)((strip - 1) % nslots) * n : nullptr;
    int2* out = strip + 1 < nstrips ? slots + (i64)(strip % nslots) * n : nullptr;
    const volatile u64* in_progress = strip > 0 ? progress + (strip - 1) % nslots : nullptr;
    volatile u64* out_progress = strip + 1 < nstrips ? progress + strip % nslots : nullptr;
    body(strip, in, out, in_progress, out_progress);
  }
}

template <int W, int R, int KIND, bool REV>
__global__ void __launch_bounds__(W * 32)
    long_pair(const u8* __restrict__ q_res, long long qs, int m, const u8* __restrict__ t_res,
              long long ts, int n, int target, int nstrips, int* ticket, int2* slots,
              int nslots, unsigned long long* progress, int* block_best,
              const int* __restrict__ table, int match, int mismatch, int limit, int gap_open,
              int gap_extend) {
  __shared__ int shared_table[KIND == 1 ? SWP_TABLE_CELLS : 1];
  __shared__ ChainShared<W> sh;
  typedef typename SubFor<KIND>::type Sub;
  const Sub sub =
      SubFor<KIND>::make(shared_table, table, match + gap_open, mismatch + gap_open, limit);
  Best best;
  best.score = 0;
  best.i = -1;
  best.j = -1;
  int ncols = n;
  take_strips<W>(sh, ticket, nstrips, n, slots, nslots, progress,
                 [&](int strip, const int2* in, int2* out, const volatile u64* in_progress,
                     volatile u64* out_progress) {
                   chain_strip<W, R, Sub, REV, true, false>(
                       sh, sub, best, q_res, qs, m, t_res, ts, n, ncols, strip, target, in, out,
                       in_progress, out_progress, gap_open, gap_extend);
                 });
  reduce_best_block<W>(best, sh.red);
  if (threadIdx.x == 0) {
    block_best[3 * blockIdx.x] = best.score;
    block_best[3 * blockIdx.x + 1] = best.i;
    block_best[3 * blockIdx.x + 2] = best.j;
  }
}

// The last row of a global alignment over the whole GPU (the linear-memory traceback's halves,
// swdask/gpu/_traceback.py): the strips as long_pair runs them, without the zero floor, from
// the edges (lead, corner, top: chain_core.cuh's GlobalEdges); H and F of the query's last row
// go to `last` (n columns). REV runs q[qs + m - 1 .. qs] x t[ts + n - 1 .. ts].
template <int W, int R, int KIND, bool REV>
__global__ void __launch_bounds__(W * 32)
    long_rows(const u8* __restrict__ q_res, long long qs, int m, const u8* __restrict__ t_res,
              long long ts, int n, int nstrips, int* ticket, int2* slots, int nslots,
              unsigned long long* progress, int2* last, const int* __restrict__ table, int match,
              int mismatch, int limit, int gap_open, int gap_extend, int lead, int corner,
              int top) {
  __shared__ int shared_table[KIND == 1 ? SWP_TABLE_CELLS : 1];
  __shared__ ChainShared<W> sh;
  typedef typename SubFor<KIND>::type Sub;
  const Sub sub =
      SubFor<KIND>::make(shared_table, table, match + gap_open, mismatch + gap_open, limit);
  Best unused;
  GlobalEdges edges;
  edges.lead = lead;
  edges.corner = corner;
  edges.top = top;
  edges.last = last;
  int ncols = n;
  take_strips<W>(sh, ticket, nstrips, n, slots, nslots, progress,
                 [&](int strip, const int2* in, int2* out, const volatile u64* in_progress,
                     volatile u64* out_progress) {
                   chain_strip<W, R, Sub, REV, true, false, true>(
                       sh, sub, unused, q_res, qs, m, t_res, ts, n, ncols, strip, 0, in, out,
                       in_progress, out_progress, gap_open, gap_extend, edges);
                 });
}
