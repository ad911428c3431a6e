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

// One pair's strips in a batch: they are the jobs [first, first + nstrips) of the batch's
// counter; its slot rows (nslots rows of n columns) start `slots` int2s into the batch's slot
// memory, its progress words `progress` words into the batch's.
struct StripPart {
  int first, nstrips, n, nslots;
  i64 slots, progress;
};

// No cell yet: the tie rule's start.
__device__ __forceinline__ Best no_best() {
  Best none;
  none.score = 0;
  none.i = -1;
  none.j = -1;
  return none;
}

// A launch's one pair: its strips are the jobs [0, nstrips), its slots the first.
__device__ __forceinline__ StripPart one_part(int nstrips, int n, int nslots) {
  StripPart one;
  one.first = 0;
  one.nstrips = nstrips;
  one.n = n;
  one.nslots = nslots;
  one.slots = 0;
  one.progress = 0;
  return one;
}

// The strips of a batch of pairs (nparts, `jobs` strips in all; part_at(p) the StripPart of
// pair p, in job order), taken from one counter by the blocks in turn:
// body(p, strip, in, out, in_progress, out_progress) runs each with its slots (the row above,
// null for a pair's strip 0; its bottom row, null for a pair's last strip) and their progress
// words. A pair's strips are consecutive jobs, so a strip still only ever waits for the strip
// before it, which an earlier job, held by a running block, is.
template <int W, class PartAt, class Body>
__device__ __forceinline__ void take_strips(ChainShared<W>& sh, int* ticket, int nparts,
                                            int jobs, PartAt part_at, int2* slots,
                                            unsigned long long* progress, Body body) {
  while (true) {
    if (threadIdx.x == 0) {
      const int job = atomicAdd(ticket, 1);
      int lo = 0, hi = nparts - 1;  // the last pair whose first job is at most `job`
      while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (part_at(mid).first <= job) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      sh.job = job;
      sh.part = lo;
    }
    __syncthreads();
    const int job = sh.job;
    const int p = sh.part;
    __syncthreads();
    if (job >= jobs) break;
    const StripPart part = part_at(p);
    const int strip = job - part.first;
    int2* rows = slots + part.slots;
    unsigned long long* words = progress + part.progress;
    const int2* in = strip > 0 ? rows + (i64)((strip - 1) % part.nslots) * part.n : nullptr;
    int2* out = strip + 1 < part.nstrips ? rows + (i64)(strip % part.nslots) * part.n : nullptr;
    const volatile u64* in_progress = strip > 0 ? words + (strip - 1) % part.nslots : nullptr;
    volatile u64* out_progress = strip + 1 < part.nstrips ? words + strip % part.nslots : nullptr;
    body(p, strip, in, out, in_progress, out_progress);
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
  Best best = no_best();
  int ncols = n;
  const StripPart one = one_part(nstrips, n, nslots);
  take_strips<W>(sh, ticket, 1, nstrips, [&](int) { return one; }, slots, progress,
                 [&](int, int strip, const int2* in, int2* out, const volatile u64* in_progress,
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

// long_pair's forward pass over target sections from a given column (align_long's top > 1:
// the first pass and the frames of swdask/_long_top.py): `left` (H, E of every query row in the
// column before column 0; null: zeros), the sections ending at `cuts` (ncuts columns, the last
// n), each section's best per strip into `section_best` (nstrips * ncuts keys, zeroed by the
// host: chain_core.cuh's section_key) and, where `columns`, H and E of every row at each cut.
template <int W, int R, int KIND, bool REV>
__global__ void __launch_bounds__(W * 32)
    long_sections(const u8* __restrict__ q_res, long long qs, int m,
                  const u8* __restrict__ t_res, long long ts, int n, int nstrips, int* ticket,
                  int2* slots, int nslots, unsigned long long* progress, const int2* left,
                  const int* __restrict__ cuts, int ncuts, int strip_bits, int2* columns,
                  unsigned long long* section_best, const int* __restrict__ table, int match,
                  int mismatch, int limit, int gap_open, int gap_extend) {
  __shared__ int shared_table[KIND == 1 ? SWP_TABLE_CELLS : 1];
  __shared__ ChainShared<W> sh;
  typedef typename SubFor<KIND>::type Sub;
  const Sub sub =
      SubFor<KIND>::make(shared_table, table, match + gap_open, mismatch + gap_open, limit);
  Best unused = no_best();
  Sections sections;
  sections.left = left;
  sections.cuts = cuts;
  sections.ncuts = ncuts;
  sections.strip_bits = strip_bits;
  sections.m = m;
  sections.columns = columns;
  sections.best = section_best;
  int ncols = n;
  const StripPart one = one_part(nstrips, n, nslots);
  take_strips<W>(sh, ticket, 1, nstrips, [&](int) { return one; }, slots, progress,
                 [&](int, int strip, const int2* in, int2* out, const volatile u64* in_progress,
                     volatile u64* out_progress) {
                   chain_strip<W, R, Sub, false, true, false, false, true>(
                       sh, sub, unused, q_res, qs, m, t_res, ts, n, ncols, strip, 0, in, out,
                       in_progress, out_progress, gap_open, gap_extend, GlobalEdges(),
                       sections);
                 });
}

// The last rows of a batch of global alignments over the whole GPU (the linear-memory
// traceback's halves, swdask/gpu/_pairs.py's LongRows: every part of one level of the
// divide and conquer in one launch): each pair's strips as long_pair runs them, without the
// zero floor, from its edges (lead, corner, top: chain_core.cuh's GlobalEdges); H and F of
// its query's last row go to `last` (n columns). `parts` holds ROWS_FIELDS int64s per pair:
// qs, m, ts, n (its letters: q[qs, qs + m) x t[ts, ts + n), both read backwards where REV),
// its strips' first job and count, its slot rows, the offsets of its slots, progress words and
// last row, and its edges lead, corner and top.
#define ROWS_FIELDS 13
template <int W, int R, int KIND, bool REV>
__global__ void __launch_bounds__(W * 32)
    long_rows(const u8* __restrict__ q_res, const u8* __restrict__ t_res,
              const long long* __restrict__ parts, int nparts, int jobs, int* ticket,
              int2* slots, unsigned long long* progress, int2* last,
              const int* __restrict__ table, int match, int mismatch, int limit, int gap_open,
              int gap_extend) {
  __shared__ int shared_table[KIND == 1 ? SWP_TABLE_CELLS : 1];
  __shared__ ChainShared<W> sh;
  typedef typename SubFor<KIND>::type Sub;
  const Sub sub =
      SubFor<KIND>::make(shared_table, table, match + gap_open, mismatch + gap_open, limit);
  Best unused;
  auto part_at = [&](int p) {
    const long long* f = parts + (i64)p * ROWS_FIELDS;
    StripPart part;
    part.n = (int)f[3];
    part.first = (int)f[4];
    part.nstrips = (int)f[5];
    part.nslots = (int)f[6];
    part.slots = f[7];
    part.progress = f[8];
    return part;
  };
  take_strips<W>(sh, ticket, nparts, jobs, part_at, slots, progress,
                 [&](int p, int strip, const int2* in, int2* out,
                     const volatile u64* in_progress, volatile u64* out_progress) {
                   const long long* f = parts + (i64)p * ROWS_FIELDS;
                   GlobalEdges edges;
                   edges.lead = (int)f[10];
                   edges.corner = (int)f[11];
                   edges.top = (int)f[12];
                   edges.last = last + f[9];
                   int ncols = (int)f[3];
                   chain_strip<W, R, Sub, REV, true, false, true>(
                       sh, sub, unused, q_res, f[0], (int)f[1], t_res, f[2], (int)f[3], ncols,
                       strip, 0, in, out, in_progress, out_progress, gap_open, gap_extend,
                       edges);
                 });
}
