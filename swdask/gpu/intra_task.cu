// Intra-task kernel (ADEPT): one thread block per pair, threads along the anti-diagonal.
//
// The block's W*32 threads own R rows each (a strip of W*32*R query rows) and sweep the target
// as one wavefront (chain_core.cuh): values pass between lanes by warp shuffle and between warps
// through shared memory; every thread keeps only its current column of H/E and a running best
// cell, and a block reduction applies the tie rule at the end. Longer queries take several
// strips, the bottom row of one feeding the next through global memory (one row per block:
// O(target length)). Blocks are persistent and take pairs from a counter, largest first.
//
// REV = true is the reverse pass over q[end_i::-1] x t[end_j::-1] (start cell); it stops once
// every thread is past the first column where some cell reached the forward score.
#include "chain_core.cuh"

using namespace swpairs;

template <int W, int R, int KIND, bool REV>
__global__ void __launch_bounds__(W * 32)
    pairs_intra(const u8* __restrict__ q_res, const i64* __restrict__ q_start,
                const int* __restrict__ q_len, const u8* __restrict__ t_res,
                const i64* __restrict__ t_start, const int* __restrict__ t_len,
                const int* __restrict__ order, int count, int* score, int* end_i, int* end_j,
                int* start_i, int* start_j, int2* scratch, long long scratch_stride, int* ticket,
                const int* __restrict__ table, int match, int mismatch, int limit, int gap_open,
                int gap_extend) {
  __shared__ int shared_table[KIND == 1 ? SWP_TABLE_CELLS : 1];
  __shared__ ChainShared<W> sh;
  typedef typename SubFor<KIND>::type Sub;
  const Sub sub =
      SubFor<KIND>::make(shared_table, table, match + gap_open, mismatch + gap_open, limit);
  int2* buf = scratch + (i64)blockIdx.x * scratch_stride;

  while (true) {
    if (threadIdx.x == 0) {
      sh.job = atomicAdd(ticket, 1);
      sh.hitcol = SWP_NO_HIT;
    }
    __syncthreads();
    const int job = sh.job;
    __syncthreads();  // all have read the job before thread 0 takes the next one
    if (job >= count) break;
    const int pair = order[job];
    const i64 qs = q_start[pair], ts = t_start[pair];
    int m, n, target = 0;
    if (REV) {
      target = score[pair];
      m = target > 0 ? end_i[pair] + 1 : 0;
      n = target > 0 ? end_j[pair] + 1 : 0;
    } else {
      m = q_len[pair];
      n = t_len[pair];
    }
    Best best;
    best.score = 0;
    best.i = -1;
    best.j = -1;
    int ncols = n;
    const int rows = W * 32 * R;
    const int nstrips = (m + rows - 1) / rows;
    for (int strip = 0; strip < nstrips; ++strip) {
      chain_strip<W, R, Sub, REV, false, REV>(sh, sub, best, q_res, qs, m, t_res, ts, n, ncols,
                                              strip, target, strip > 0 ? buf : nullptr,
                                              strip + 1 < nstrips ? buf : nullptr, nullptr,
                                              nullptr, gap_open, gap_extend);
      if (REV) {
        const int hc = sh.hitcol;
        __syncthreads();  // read before any thread of the next strip can lower it
        if (hc < ncols) ncols = hc;
      }
    }
    reduce_best_block<W>(best, sh.red);
    if (threadIdx.x == 0) {
      if (REV) {
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
}
