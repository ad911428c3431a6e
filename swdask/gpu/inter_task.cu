// One query against many targets: the inter-task kernel (CUDASW++ lineage).
//
// Layout. Targets are sorted by length (longest first) and taken two at a time: a "pair" is
// two targets of about the same length, one per 16-bit lane (Lanes16), or a single target
// (Lanes32). A pair's residue codes are interleaved into one uint16 per column (low byte:
// first target, high byte: second; PAD past a target's end) by sw_pair_codes.
//
// Work split. A group of G threads (G = 1..32, a power of two; the engine picks G per
// length bucket of the pairs, see inter_task.py) aligns one pair. The query is cut into
// passes of G*R rows; in a pass thread t owns rows [t*R, t*R + R) and keeps their H
// (as HG = H - gap_open) and E in registers. The threads run as a wavefront over the target
// columns: at step s thread t computes column j = s - t (whose residue codes it loads
// itself), receiving from thread t-1 (warp shuffle) HG and F of the row just above its first
// row. Thread 0 reads that row from the previous pass's last row (global memory), thread
// G-1 writes its last row for the next pass.
//
// Query profile. Each pass, the block copies the profile rows of the pass (every letter,
// G*R rows, sub + gap_open as int32) into shared memory, laid out so that a thread's R rows
// of one letter are contiguous (16-byte loads of four rows per letter per column).
// All groups of a block move through the passes together (one __syncthreads per pass): the
// block's pairs have nearly equal lengths since targets are sorted, and every group steps
// through the longest pair of its block; the cells past a target's end score PAD.
//
// Stacked queries. One launch runs a "stack" of queries: their rows one after another, each
// query padded with PAD rows to a multiple of R, so that every R-row segment (one thread's
// rows in a pass) belongs to one query: seg_query[s] names it (-1: padding after the last).
// A thread whose segment starts its query takes no row from above (H = 0, F = -inf, as at
// the matrix's top), so the queries do not see one another; short queries share passes,
// and the pass count follows the stack's rows, not each query's rounded up to G x R. One
// query is a stack of one.
//
// Parts. The queries of a stack do not depend on one another, so a launch may cut the
// stack's segments, at query starts, into parts run side by side: block b takes the pairs of
// block b / parts for part b % parts (part_segments[p] to part_segments[p + 1]), with its
// own pass boundary (boundary_stride words apart). A launch lasts at least as long as its
// longest pair takes through all its passes, one after another (a group alone on its SM steps
// far slower than the kernel's rate), however few rows the partition has; in parts that chain
// is as many times shorter. One part is the whole stack.
//
// Query lanes (Queries16, a stack of two queries or more on sm_90). The 16-bit lanes of a
// register hold two queries against one target instead of two targets against one query:
// the stack's queries go into two streams, one per lane, each stream a stack as above
// (seg_query gives each segment's query per stream, -1 past a stream's last query), and a
// group of threads aligns one target, a "unit": units 2p and 2p + 1 are pair p's targets,
// read as the low and high bytes of the pair's codes (so the layout is the pairs'), with
// the row above the passes kept per unit. The profile holds both streams' entries of a row
// side by side (a uint32), so a step reads one word per row, where two targets need two
// (see "Profile words by multiply-add"). Where the lanes hold targets
// everything is per lane; here what belongs to a query (fresh, ends, carried, floors, the
// reduction) is per stream, and a register's bits are selected per stream where it
// differs. Results go to slot unit, as pair * 2 + lane would. Their codes and rows above
// are loaded through L1's coherent path (__ldca), not the read-only one: with the latter
// every step waited on those loads, and W1 in stacks ran at half the rate or less
// (docs/notes/gpu-inter-task.md, query lanes). The rows above, which a long stack's previous
// pass wrote long out of L2, load with a 256-byte L2 fetch (load_row_above), faster again,
// and the loop's own instructions could then be trimmed (docs/notes/gpu-inter-task.md, the
// query lanes' own instructions).
//
// End cell. Each thread keeps its best score so far per lane and, when a column strictly
// improves it, that column and the first of its rows holding the new best (a scan of its R
// registers; improvements are rare once the first columns are past). At the end of a pass
// the group reduces the threads' cells by (score desc, j asc, i asc), the CPU tie rule, per
// query (a segmented scan over the threads); the last thread of a query's segments in the
// pass merges them with the best of its earlier passes and, where the query ends, writes
// its results. The query still open at the pass's end carries its best to the next pass,
// whose threads of that query only record cells reaching it.
//
// Shared floors. A cell below the best cell of another thread of the same query in the pass
// cannot be the query's best, so every 16 steps each thread raises its best so far to its
// neighbours' best less one (a cell that ties theirs still passes it and is recorded). Its
// own cell is kept: if it is the thread's candidate at the pass's end, it is reported with
// that floor as its score, below the cell the floor came from (a neighbour's, or one carried
// from an earlier pass), so it never wins. Why: in a query's first pass every thread starts
// from 0, and each one's best rises (and takes the improvement branch) more often than the
// query's. 1,000 queries of sp500k in stacks scanned slower than the same letters joined
// into 14 long queries; with these floors the stacks and W1's 144-letter query are faster
// and W1's kernel as fast. Sharing every 8 steps, and only in passes where a query starts
// (one __any_sync per pass), lost (docs/notes/gpu-inter-task.md, where the stacks lose).
//
// Floors from a scout. A search that keeps only each query's best `top` rows does not need
// the other rows' scores. The host first runs a slice of the targets (a "scout") with floors
// of 0, then gives each query, as its floor, a score that at least `top` rows of the slice
// reach, less one (inter_task.py, `_floors`). Every pass of that query then tracks only cells
// above the floor, as a carried best does: a target whose best stays at or below it reports
// 0, and its threads never take the improvement branch, which in a first pass they take
// each time their best rises. A target scoring more than the floor is exact. One at or below
// it has `top` rows of the slice scoring more, so it is not among the query's best.
//
// Padding and the fill of the wavefront never win. A PAD cell (past a target's end, or a
// row past the query's end) scores sub <= 0 against everything (-gap_open in the 16-bit
// kernels), so its H is at most that of the cell it comes from (diagonal, E from the left,
// F from above), and following those leads back to a real cell at a smaller (j, i), or to
// 0. So a PAD cell never exceeds the best real cell and, when it equals it, that real cell
// comes first in (j asc, i asc); the reductions keep the real one. Fill steps (j < 0) only
// see zeros. The same argument bounds the 16-bit lanes: no value exceeds the best real
// cell plus the largest substitution, which the host checks (see "Adds on the FMA pipe").
//
// Adds on the FMA pipe. The kernel was bound by the ALU pipe (busy nearly all the time), which
// runs the DPX instructions, the maxima and the byte permutes (docs/notes/gpu-inter-task.md,
// the ALU pipe).
// Of the five operations per row, the diagonal's add and U = T - go are plain adds; written
// as 32-bit integer adds of the two lanes at once, they compile to IMAD on the FMA pipe,
// which was nearly idle, leaving four ALU instructions per row (the maxima of E, T, HG and
// F; T becomes a three-input max with its floor): 209 ALU instructions per step of
// <Lanes16, 4, 32> instead of 240. The ALU pipe is then less busy and the kernel waits on
// latencies instead (at its low occupancy); W1 ran a little faster
// (docs/notes/gpu-inter-task.md, adds on the FMA pipe). A 32-bit add is exact per lane only
// while lane 0 neither borrows from nor carries into lane 1, so the values are kept offset:
// - lane 0 of HG and F holds its value + gap_open (low_bias), so HG >= -go is >= 0 there;
// - the profile held sub + gap_open + profile_shift, with profile_shift the least that
//   makes every entry >= 0, so HG_diag + profile added two non-negative lane-0 values;
// - E and T hold their value + profile_shift in both lanes (+ low_bias in lane 0): E was
//   max(E - ge, HG + profile_shift), T = max(HG_diag + profile, E, t_zero) with t_zero
//   the offset H = 0, and U = T - (gap_open + profile_shift) back in HG's offsets, >= 0
//   in lane 0 since T >= t_zero.
// (Today HG and F hold profile_shift too and the profile does not: "E a column ahead".)
// No add of lane 0 ever carries into or borrows from lane 1, even in a lane that
// saturates: the signed maxima keep T in [t_zero, 32767] and HG in [0, 32767] in lane 0,
// so T - (gap_open + profile_shift) >= 0, and HG + profile_shift and HG_diag + profile
// (both terms in [0, 32767]) stay below 65536. Lane 1 takes the wrap of its own adds in
// the register's top bits. Every compare is between values of one offset. A lane's values
// pass 32767 only after its best has reached 32767 - gap_open - profile_shift - max
// substitution (each cell is at most the best so far plus one substitution), which the
// host checks (and recomputes that lane). The 32-bit lanes (Lanes32) take the same code
// with no offsets.
//
// E a column ahead; HG in T's offsets. Each row's E for the next column is computed right
// after the row's HG (E[i][j+1] = max(E[i][j] - ge, HG[i][j])), not before its T: the
// compiler then keeps E in place, where it had rotated it through other registers and copied
// it back (41 moves per two steps of <Queries16, 4, 32>, now 23). HG and F also hold
// profile_shift (hg_shift), so they are in E's and T's offsets and E's update is one add-max
// with no add; the profile then holds sub + gap_open, which may be negative in lane 0. Lane 0
// of HG_diag is >= profile_shift and its profile entry >= -profile_shift, so their 32-bit sum
// still never leaves lane 0's 16 bits, but it carries one into lane 1 where lane 0's entry is
// negative: a profile word is put together as high * 65536 + low, that carry's borrow already
// in it (by the host with query lanes, inter_task.py, _Stack; by the kernel with target
// lanes, below). A step of <Queries16, 4, 32> went from 331.5 to 288.5 instructions, 172.5 of
// them on the ALU pipe (174.5; NVRTC 13.0), and W1 in stacks ran faster
// (docs/notes/gpu-inter-task.md, E a column ahead).
//
// Profile words by multiply-add (target lanes). Two targets' scores of a row come from two
// letters' entries; a byte permute put them side by side, one ALU instruction per row. The
// entries are now int32 (sign-extended) and the word is high * 65536 + low, a multiply-add on
// the FMA pipe, in the offsets above (HG in T's, as with query lanes: E's add went too). A
// step of <Lanes16, 8, 32> went from 348.5 instructions, 208.5 on the ALU pipe, to 334.5 and
// 174.5 (NVRTC 13.0); of the one-pass <Lanes16, 4, 36>, with no row above (ONE_PASS_ROWS),
// from 398 and 231.5 to 354.5 and 185.5. The entries take twice the shared memory and its
// loads: where two groups of a warp read in the same phase of a 16-byte load (G = 4) their
// letters' rows hit the same banks half the time, so those launches keep two copies of the
// profile, 16 banks apart, one per group parity (tile_copies). And G = 4 over several passes
// waited on memory (spills and L1 misses: W1 one query at a time far slower), so target
// lanes take G = 4 only for a query of one pass (inter_task.py, LENGTH_BUCKETS). W1 one
// query at a time, with and without start cells, and the 20 queries in target lanes ran
// faster that way; the 144-letter query, with the one-pass kernel (ONE_PASS_ROWS) and fewer
// host steps around it, faster still (docs/notes/gpu-inter-task.md, profile words by
// multiply-add).
//
// End-to-end modes (MODE != 0, the bits SWP_MODE_* of tie_rule.cuh; swdask/_cpu_modes.py
// states the recurrences). The local kernel is MODE = 0, its code unchanged. A search keeps
// hits scoring above 0, so these kernels report a score only where it is above 0 (and above
// the floor), as the local ones do; every score of .sw.align comes from the row-wise pairs
// kernels (pairs_inter.cu). What changes:
// - no zero floor: every value holds `mode_bias` more (both lanes), at least the depth of
//   the lowest value the mode can reach (the host's bound from the longest query and
//   target), so T's floor t_zero, the same word as the local kernel's, is a value far below
//   every real cell that keeps lane 0 non-negative, the adds' no-borrow argument as above;
//   and no value passes 32767 (the host checks the highest value the mode can reach: no
//   saturation, no recompute);
// - PAD scores 0 against everything (entries gap_open): the fill steps (j < 0) then keep
//   H = 0 exactly, the free boundary column, and rows of PAD above a query keep H = 0, the
//   free boundary row (see the last row below);
// - the boundary row where target ends are not free: a thread starting its query takes
//   -(gap_open + j * gap_extend) from above at column j (its diagonal at column 0, 0);
//   the boundary column where query ends are not free: at its column 0 a thread sets its
//   rows' H (and E) of column -1 to -(gap_open + i * gap_extend), 0 above row 0;
// - the end candidates instead of every cell: the last row at each column (free target
//   ends), the last column (free query ends), the corner (global), by the same rule
//   (score, then j, then i). Where target ends are free the host pads each query with PAD
//   rows before it rather than after, so that its last row is the last register (HG[R -
//   1]) of the thread holding it, read every column with no index; the last column is
//   reduced over the thread's rows of its query once, at that lane's last column
//   (slot_len), each lane its own.
#include "sw_common.cuh"

namespace swdask {

// Rows per thread of the launches that take their whole stack in one pass: no row above a
// pass is read or written, and no best carried to a next pass (swdask/gpu/_kernels.py,
// ONE_PASS_ROWS: the host launches this R only so).
constexpr int ONE_PASS_ROWS = 36;

// Copies of the shared profile a block keeps (see COPIES in sw_inter_forward; inter_task.py,
// tile_bytes, mirrors it).
template <class V, int G>
__host__ __device__ constexpr int tile_copies() {
  return (!V::query_lanes && V::lanes == 2 && G < 8) ? 2 : 1;
}

template <int R>
__host__ __device__ constexpr int tile_stride() {
  // Entries (32-bit) per thread in the shared profile, padded so that the 16-byte loads of
  // eight neighbouring threads hit distinct banks.
  return ((R / 4) % 2 == 0) ? R + 4 : R;
}

// Interleave the residue codes of each pair: pair_codes[pair_start[p] + j] holds the codes of
// column j of both targets (PAD past a target's end), for j < round_up(pair_len[p], 8).
// slot_rows[p * lanes + k] is the row (in residues/offsets) of lane k of pair p, or -1.
__global__ void sw_pair_codes(const u8* __restrict__ residues, const i64* __restrict__ offsets,
                              const int* __restrict__ slot_rows, int lanes,
                              const i64* __restrict__ pair_start,
                              const int* __restrict__ pair_len, int num_pairs, int pad_code,
                              u16* __restrict__ pair_codes) {
  for (int p = blockIdx.x; p < num_pairs; p += gridDim.x) {
    const int row_a = slot_rows[p * lanes];
    const int row_b = lanes == 2 ? slot_rows[p * lanes + 1] : -1;
    const i64 start_a = row_a >= 0 ? offsets[row_a] : 0;
    const i64 start_b = row_b >= 0 ? offsets[row_b] : 0;
    const int len_a = row_a >= 0 ? (int)(offsets[row_a + 1] - start_a) : 0;
    const int len_b = row_b >= 0 ? (int)(offsets[row_b + 1] - start_b) : 0;
    const int columns = (pair_len[p] + 7) & ~7;
    u16* out = pair_codes + pair_start[p];
    for (int c = threadIdx.x; c < columns; c += blockDim.x) {
      const u32 a = c < len_a ? residues[start_a + c] : (u32)pad_code;
      const u32 b = c < len_b ? residues[start_b + c] : (u32)pad_code;
      out[c] = (u16)(a | (b << 8));
    }
  }
}

// A stack's results from slot order to row order, and its checks, in one pass over every
// (query, slot): for query q, score[q * slots + slot] (and the end cell, with
// track_end; without, the end arrays are not read) goes to out_score[q * n + row] (out_end_i, out_end_j) for the slot's row
// (slot_rows, -1 for padding: nothing written); flags[2q] = 1 where a score reached `limit`
// (the lane may have wrapped: the host recomputes it in 32 bits), flags[2q + 1] = 1 where a
// score between 0 and the limit has its end cell outside the query or the target (an
// internal error the host reports). Unwritten rows keep what the output held; flags start at
// 0, and every writer of one stores the same 1.
__global__ void sw_stack_finish(const int* __restrict__ score, const int* __restrict__ ends_i,
                                const int* __restrict__ ends_j, int track_end,
                                const int* __restrict__ slot_rows,
                                const int* __restrict__ query_lengths, int count, int slots,
                                i64 n, int limit, int* __restrict__ out_score,
                                int* __restrict__ out_end_i, int* __restrict__ out_end_j,
                                u8* __restrict__ flags) {
  const i64 total = (i64)count * slots;
  for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < total;
       k += (i64)gridDim.x * blockDim.x) {
    const int q = (int)(k / slots);
    const int slot = (int)(k - (i64)q * slots);
    const int row = slot_rows[slot];
    if (row < 0) continue;
    const i64 out = (i64)q * n + row;
    const int best = score[k];
    out_score[out] = best;
    if (best >= limit) flags[2 * q] = 1;
    if (track_end) {
      const int end_i = ends_i[k];
      const int end_j = ends_j[k];
      out_end_i[out] = end_i;
      out_end_j[out] = end_j;
      if (best > 0 && best < limit && (end_i < 0 || end_i >= query_lengths[q] || end_j < 0))
        flags[2 * q + 1] = 1;
    }
  }
}

// The floors of a stack's queries from the scout's scores (see "Floors from a scout"
// below), one block per query, one thread per run of `width` slots (blockDim.x runs, at
// most 1024): each thread takes its run's best of scores[q * stride + run * width ...];
// the runs' maxima are ranked, highest first and ties by run, and the one ranked `top`
// gives the floor, that maximum less one, clipped to [0, limit - 1]. (Written as swdask's
// own kernel, shipped compiled, where array operations would each be a kernel for CuPy to
// compile on a fresh machine.)
__global__ void sw_floors(const int* __restrict__ scores, i64 stride, int width, int top,
                          int limit, int* __restrict__ floors) {
  __shared__ int maxima[1024];
  const int run = threadIdx.x;
  const int* slots = scores + (i64)blockIdx.x * stride + (i64)run * width;
  int best = slots[0];
  for (int k = 1; k < width; ++k) best = best > slots[k] ? best : slots[k];
  maxima[run] = best;
  __syncthreads();
  int rank = 0;  // runs ranked before this one
  for (int other = 0; other < (int)blockDim.x; ++other)
    rank += maxima[other] > best || (maxima[other] == best && other < run);
  if (rank == top - 1) {
    const int floor = best - 1;
    floors[blockIdx.x] = floor < 0 ? 0 : (floor > limit - 1 ? limit - 1 : floor);
  }
}

// One query's sort keys for its best rows (swdask.gpu.inter_task.top_rows): for row r of
// n, key = (query * (2^32 + 1) + inner) * n + r, inner = 2^31 - score for a hit (a valid
// row scoring above 0), 2^31 + 1 otherwise. Ascending keys put the queries one after
// another, each query's hits first, best first, ties by row, then its other rows by row:
// swdask._results.top_candidates's order. Scores are below 2^31, so inner lies in
// [1, 2^31 + 1].
__global__ void sw_top_keys(const i64* __restrict__ score, const u8* __restrict__ valid,
                            i64 n, i64 query, i64* __restrict__ keys) {
  const i64 base = query * ((1LL << 32) + 1);
  for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n;
       r += (i64)gridDim.x * blockDim.x) {
    const i64 best = score[r];
    const bool hit = valid[r] && best > 0;
    const i64 inner = hit ? (1LL << 31) - best : (1LL << 31) + 1;
    keys[r] = (base + inner) * n + r;
  }
}

// The first `top` sorted keys of each of `count` queries (segments of n keys) to rows and
// whether each is a hit: rows[q * top + t], is_hit[q * top + t].
__global__ void sw_top_rows(const i64* __restrict__ sorted_keys, i64 n, int count, int top,
                            i64* __restrict__ rows, u8* __restrict__ is_hit) {
  const i64 total = (i64)count * top;
  for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < total;
       k += (i64)gridDim.x * blockDim.x) {
    const i64 q = k / top;
    const i64 key = sorted_keys[q * n + (k - q * top)];
    const i64 inner = key / n - q * ((1LL << 32) + 1);
    rows[k] = key % n;
    is_hit[k] = inner < (1LL << 31) + 1;
  }
}

// One column of kernel cells to the API's result column (swdask._results.finish): with
// `cell` the score's own cells, score = max(cell, 0) on valid rows and 0 on null ones;
// for a position column, -1 where that score is 0, else its cell, plus `add` (1 for end
// cells: end-exclusive). int32 cells in, int64 out.
__global__ void sw_finish_column(const int* __restrict__ cell, const int* __restrict__ score,
                                 const u8* __restrict__ valid, i64 n, int add,
                                 i64* __restrict__ out) {
  for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n;
       r += (i64)gridDim.x * blockDim.x) {
    const bool hit = valid[r] && score[r] > 0;
    if (cell == score) out[r] = hit ? score[r] : 0;
    else out[r] = hit ? (i64)cell[r] + add : -1;
  }
}

// The forward pass. profile[letter * m + i] = sub(letter, q_i) + gap_open for letter <
// alpha1 - 1 and the m rows of the stack (m = num_segments * R; PAD's score on padding
// rows); letter alpha1 - 1 is PAD (0 in the 16-bit kernels, a substitution of -gap_open;
// with query lanes each entry holds both streams' as one word, see "E a column ahead").
// profile_shift (0 for Lanes32) is the least that makes every 16-bit entry plus it >= 0.
// seg_query: the query of each R-row segment (see above);
// query_row0: each query's first row in the stack; query_floor: each query's floor (0: none,
// see "Floors from a scout" below). Results per query q and slot (pair * lanes + lane), at
// q * out_stride + slot: the best score and its inclusive end cell (the query's own row; -1
// when the score is 0); a slot whose best is at most its query's floor reports 0. Scores are
// exact unless a lane's reaches 32767 - gap_open - profile_shift - max substitution
// (Lanes16, see "Adds on the FMA pipe"): the host recomputes those. (A
// scores-only variant, without the end cell, was slower: docs/notes/gpu-inter-task.md.)
template <class V, int G, int R, int MODE = 0>
__global__ void __launch_bounds__(256, 2)
sw_inter_forward(const typename V::prof_t* __restrict__ profile, int m, int alpha1,
                 int pad_score, const u16* __restrict__ pair_codes,
                 const i64* __restrict__ pair_start, const int* __restrict__ pair_len,
                 const int* __restrict__ block_len, int num_pairs, u32* __restrict__ boundary,
                 i64 boundary_base, i64 boundary_stride, int gap_open, int gap_extend,
                 int profile_shift, const int* __restrict__ seg_query, int num_segments,
                 const int* __restrict__ part_segments, int parts,
                 const int* __restrict__ query_row0, const int* __restrict__ query_floor,
                 i64 out_stride,
                 int* __restrict__ out_score, int* __restrict__ out_end_i,
                 int* __restrict__ out_end_j, const int* __restrict__ slot_len,
                 const int* __restrict__ query_len, int mode_bias) {
  typedef typename V::reg_t reg_t;
  typedef typename V::prof_t prof_t;
  constexpr int L = V::lanes;
  constexpr int S = tile_stride<R>();
  constexpr int ROWS = G * R;
  // Two copies of the shared profile, 16 banks apart, where two groups of a warp read in
  // the same phase of a 16-byte load (G = 4 with target lanes: two letters per group), the
  // odd groups reading the second: then no two of them ever read one bank.
  constexpr int COPIES = tile_copies<V, G>();
  constexpr int LETTER = COPIES == 2 ? (G * S + 31) / 32 * 32 : G * S;  // entries per letter
  constexpr int CHUNK = 4;  // rows per profile load: a 16-byte load of 32-bit entries
  // R = ONE_PASS_ROWS: the host launches it only where the stack takes one pass (see there)
  constexpr bool ONE_PASS = R == ONE_PASS_ROWS;
  static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G must be a power of two <= 32");
  static_assert(R % 4 == 0, "R must be a multiple of 4");
  // the end-to-end modes ("End-to-end modes" above): the boundary column (query ends free)
  // and row (target ends free) are 0 as in the local mode, where free
  constexpr bool E2E = (MODE & SWP_MODE_END_TO_END) != 0;
  constexpr bool FREE_Q = !E2E || (MODE & SWP_MODE_FREE_QUERY) != 0;
  constexpr bool FREE_T = !E2E || (MODE & SWP_MODE_FREE_TARGET) != 0;
  // the last column (or the corner) is an end candidate
  constexpr bool LAST_COLUMN = E2E && (FREE_Q || !FREE_T);
  static_assert(!E2E || (V::lanes == 2 && !ONE_PASS), "end-to-end modes: 16-bit lanes, passes");
  SW_DYNAMIC_SHARED(prof_t, tile);

  // query streams: one (the lanes hold targets) or one per lane ("Query lanes" above)
  constexpr int QL = V::query_lanes ? L : 1;
  const int t = threadIdx.x % G;
  const int groups = blockDim.x / G;
  const int part = blockIdx.x % parts;
  const int unit_block = blockIdx.x / parts;
  // what the group aligns: a pair (target lanes) or one target of a pair (query lanes:
  // units 2p and 2p + 1 are pair p's two targets, its low and high code bytes)
  const int unit = unit_block * groups + threadIdx.x / G;
  const int pair = V::query_lanes ? unit >> 1 : unit;
  const bool live = pair < num_pairs;
  const int my_len = live ? pair_len[pair] : 0;
  const i64 my_start = live ? pair_start[pair] : pair_start[0];  // a valid place either way
  const int steps = block_len[unit_block] + G - 1;
  // the group's codes: both bytes of each column (target lanes) or its own byte
  constexpr int CODE_STEP = V::query_lanes ? 2 : 1;  // in code_t elements per column
  typedef typename V::code_t code_t;
  const code_t* const codes_at =
      reinterpret_cast<const code_t*>(pair_codes + my_start) + (V::query_lanes ? (unit & 1) : 0);
  // this part's row above each pass, by column from the launch's boundary_base on (query
  // lanes: pair p's columns twice over, its first target's then its second's)
  const i64 unit_column = V::query_lanes
      ? 2 * (my_start - boundary_base) + (unit & 1) * (i64)((my_len + 7) & ~7)
      : my_start - boundary_base;
  u32* const my_boundary = boundary + part * boundary_stride + 2 * unit_column;
  const int seg_begin = part_segments[part];
  // this thread's rows of the shared profile (letter 0; its copy, see COPIES)
  const int copy_stride = alpha1 * LETTER + 16;  // (16 entries: 16 banks further)
  const prof_t* const my_tile =
      tile + (COPIES == 2 ? ((threadIdx.x / G) & 1) * copy_stride : 0) + t * S;

  const reg_t go_neg = V::splat(-gap_open);
  const reg_t ge_neg = V::splat(-gap_extend);
  // F[i+1] = max(F[i] - ge, H[i] - go) with H[i] = max(T[i], F[i]) (T: the diagonal and E
  // terms, >= 0) is max(F[i] - min(ge, go), T[i] - go): one add-max per row on the chain.
  const reg_t fe_neg = V::splat(-min(gap_extend, gap_open));
  // The lanes' offsets ("Adds on the FMA pipe", "E a column ahead" above): HG, F, E and T
  // hold their value + low_bias + profile_shift in lane 0, + profile_shift in lane 1 (the
  // 32-bit lanes none: both are 0 there).
  const int low_bias = L == 2 ? gap_open : 0;
  const int hg_shift = profile_shift + (E2E ? mode_bias : 0);  // (the modes' depth too)
  const reg_t hg_zero =  // HG of a cell with H = 0
      V::pack(low_bias - gap_open + hg_shift, -gap_open + hg_shift);
  // T's floor, H = 0 (as a multiply-add, which the compiler redoes in the loop from the
  // parameters: as a pack it took four ALU instructions per step); in the end-to-end modes
  // the same word is H = -mode_bias, below every real cell
  const reg_t t_zero = (u32)profile_shift * 0x10001u + (u32)low_bias;
  // T - this: U = T - go, in HG's offsets: splat(gap_open), which the compiler otherwise
  // rebuilt in the loop from the parameter, a move per row (opaque).
  const reg_t to_u = opaque(V::splat(gap_open));
  const reg_t neg = V::splat(V::neg);
  const reg_t minus_one = V::splat(-1);
  const u32 pad_code = (u32)(alpha1 - 1);
  const u32 pad_pair = V::query_lanes ? pad_code : pad_code | (pad_code << 8);
  // the bits of a register that lane l (or query stream q) holds
  auto lane_bits = [](int l) -> u32 {
    return L == 2 ? (l ? 0xffff0000u : 0x0000ffffu) : 0xffffffffu;
  };
  // a flag at bits 0 and 16 (see stream_flags) as the register bits of its lanes
  auto flag_bits = [](u32 flags) -> u32 { return (flags & 0x10001u) * 0xffffu; };

  // Best end cell so far, per lane, over the passes done, of the query still open (per
  // query stream) at the last pass's end (open_query; -1: none), the same in every thread
  // of the group.
  int open_query[QL];
#pragma unroll
  for (int q = 0; q < QL; ++q) open_query[q] = -1;
  int run_score[L], run_j[L], run_i[L];
#pragma unroll
  for (int l = 0; l < L; ++l) {
    run_score[l] = 0;
    run_j[l] = SW_INT_MAX;
    run_i[l] = SW_INT_MAX;
  }
  // end-to-end modes: each lane's target's last column (-1: no target)
  int end_col[L];
#pragma unroll
  for (int l = 0; l < L; ++l)
    end_col[l] = E2E && live ? slot_len[V::query_lanes ? unit : pair * L + l] - 1 : -1;

  // the passes: G segments each, from the part's first (seg_begin) to its end (seg_end)
  for (int seg0 = seg_begin;; seg0 += G) {
    const int seg_end = part_segments[part + 1];
    if (seg0 >= seg_end) break;
    const int row0 = seg0 * R;
    const int row_end = min(m, seg_end * R);  // this part's rows end here (PAD beyond)
    __syncthreads();  // every group is done with the previous pass's profile
    for (int idx = threadIdx.x; idx < alpha1 * ROWS; idx += blockDim.x) {
      const int letter = idx / ROWS;
      const int rr = idx - letter * ROWS;
      const int row = row0 + rr;
      const prof_t entry = (prof_t)(row < row_end ? (int)profile[letter * m + row] : pad_score);
      const int at = letter * LETTER + (rr / R) * S + (rr % R);
      tile[at] = entry;
      if constexpr (COPIES == 2) tile[copy_stride + at] = entry;
    }
    __syncthreads();

    // this thread's segment, per query stream: its query, whether it starts the query (no
    // row from above) and whether it ends it (the query's results are written after this
    // pass). For the step loop, with query lanes, in one register (stream_flags; per lane l
    // at bit 16 * l: + 1 its query starts here, + 2 thread t - 1 holds the same query, + 4
    // thread t + 1 does, see "Shared floors"), with target lanes as three predicates. The
    // target lanes' loop compiles as it did before query lanes (the same SASS from NVRTC
    // 13.0): a small change to it halved W1's rate, every step waiting on a global load
    // (docs/notes/gpu-inter-task.md, query lanes).
    const int seg = seg0 + t;
    int my_query[QL], floor_score[QL];
    bool fresh[QL], query_ends[QL], carried[QL];
    u32 stream_flags = 0;
#pragma unroll
    for (int q = 0; q < QL; ++q) {
      my_query[q] = seg < seg_end ? seg_query[seg * QL + q] : -1;
      const int above = seg > 0 && seg - 1 < num_segments ? seg_query[(seg - 1) * QL + q] : -2;
      fresh[q] = my_query[q] != above;
      query_ends[q] = seg + 1 >= seg_end || my_query[q] != seg_query[(seg + 1) * QL + q];
      carried[q] = !ONE_PASS && my_query[q] >= 0 && my_query[q] == open_query[q];
      floor_score[q] = my_query[q] >= 0 ? query_floor[my_query[q]] : 0;
      const u32 flags = (fresh[q] ? 1u : 0u) | (t > 0 && !fresh[q] ? 2u : 0u) |
                        (t + 1 < G && !query_ends[q] ? 4u : 0u);
      stream_flags |= flags << (16 * q);
    }
    const bool starts_query = fresh[0], same_above = t > 0 && !fresh[0];
    const bool same_below = t + 1 < G && !query_ends[0];
    // End-to-end modes: the query row of this thread's first row per stream (negative in
    // the PAD rows before a query), its query's length; per lane the rows [lo, hi) that
    // are end candidates in the last column, and (last_bits) the lanes whose query's last
    // row is this thread's last (the host pads before each query where target ends are
    // free).
    int first_i[QL], length_q[QL], column_lo[L], column_hi[L];
    u32 last_bits = 0;
    if constexpr (E2E) {
#pragma unroll
      for (int q = 0; q < QL; ++q) {
        first_i[q] = my_query[q] >= 0 ? seg * R - query_row0[my_query[q]] : 0;
        length_q[q] = my_query[q] >= 0 ? query_len[my_query[q]] : 0;
      }
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const int q = QL == 1 ? 0 : l;
        int lo = 0, hi = 0;
        if (my_query[q] >= 0 && FREE_Q) {
          lo = max(0, -first_i[q]);
          hi = min(R, length_q[q] - first_i[q]);
        } else if (my_query[q] >= 0 && !FREE_T) {  // global: the corner
          lo = length_q[q] - 1 - first_i[q];
          hi = lo + 1;
          if (lo < 0 || lo >= R) lo = hi = 0;
        }
        column_lo[l] = lo;
        column_hi[l] = hi;
        if (FREE_T && my_query[q] >= 0 && query_ends[q]) last_bits |= lane_bits(l);
      }
    }
    // H of column -1 at this thread's row r (-1: the row above its first), as HG: the
    // query gap -(gap_open + i * gap_extend) at query row i >= 0, 0 above the query
    // (only where query ends are not free)
    auto left_column = [&](int r) -> reg_t {
      int value[L];
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const int q = QL == 1 ? 0 : l;
        const int i = min(first_i[q] + r, length_q[q] - 1);
        value[l] = my_query[q] >= 0 && first_i[q] + r >= 0 ? -(gap_open + i * gap_extend) : 0;
      }
      return V::pack(value[0] - gap_open + low_bias + hg_shift,
                     value[L - 1] - gap_open + hg_shift);
    };

    reg_t HG[R], E[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      HG[r] = hg_zero;
      // E of column 0 (H = 0 on its left): HG in E's offsets ("E a column ahead")
      E[r] = hg_zero;
    }
    reg_t prev_in_HG = hg_zero;  // HG of the row above, previous column (the diagonal)
    reg_t out_HG = hg_zero, out_F = neg;  // what this thread hands to thread t+1 next step
    const bool reads_boundary = !ONE_PASS && seg0 > seg_begin;
    const bool writes_boundary = !ONE_PASS && seg0 + G < seg_end;

    // Inputs loaded two steps ahead: each thread the codes of its own column (j = s - t),
    // thread 0 the row above the pass. Every thread loads, from a clamped, always valid
    // address (neighbouring threads read neighbouring bytes: one transaction), and a value
    // is only checked when used, so no instruction waits on a load just issued. Two slots,
    // one per step parity, and the step loop unrolled by hand twice: each slot is refilled
    // where it is consumed, with no register copies (a rotating buffer in a loop needs
    // copies, and a copy waits for the load, as seen in the SASS of an earlier version).
    const int last_col = my_len > 0 ? my_len - 1 : 0;
    const u32* boundary_at = reads_boundary ? my_boundary : boundary;
    const int boundary_last = reads_boundary ? last_col : 0;
    // Query lanes load through L1's coherent path (__ldca, "Query lanes" above); the target
    // lanes keep the read-only path (a little faster for them than __ldca:
    // docs/notes/gpu-inter-task.md, query lanes).
    auto fetch_codes = [&](int col) -> u32 {
      const code_t* at = codes_at + CODE_STEP * min(max(col, 0), last_col);
      if constexpr (V::query_lanes) return load_code(at);
      return *at;
    };
    auto fetch_boundary = [&](int col) -> uint2 {
      const uint2* at = reinterpret_cast<const uint2*>(boundary_at + 2 * min(col, boundary_last));
      if constexpr (V::query_lanes) return load_row_above(at);
      return *at;
    };
    u32 codes_even = fetch_codes(-t), codes_odd = fetch_codes(1 - t);
    uint2 row_even = fetch_boundary(0), row_odd = fetch_boundary(1);

    // This pass's tracking: only cells reaching the best so far can matter.
    reg_t best = 0;
    int best_j[L], best_r[L];
#pragma unroll
    for (int l = 0; l < L; ++l) {
      const int q = QL == 1 ? 0 : l;
      const int thr = max(carried[q] && run_score[l] > 0 ? run_score[l] - 1 : 0,
                          floor_score[q]) - gap_open;
      best |= V::splat(thr + (l ? 0 : low_bias) + hg_shift) & lane_bits(l);
      best_j[l] = -1;
      best_r[l] = 0;
    }

    auto step = [&](const int s, u32& codes_slot, uint2& row_slot) {
      const int j = s - t;
      // the boundary row where target ends are not free: H = -(gap_open + j * gap_extend)
      // at column j, 0 before column 0 (the diagonal of column 0)
      reg_t top_HG = hg_zero;
      if constexpr (!FREE_T) {
        if (j >= 0) top_HG = V::add_max(hg_zero, V::splat(-(gap_open + j * gap_extend)), neg);
      }
      // whether column j is the target's; with query lanes one unsigned compare, used again
      // for the row below (the target lanes' loop kept as it compiles, see above)
      const bool in_range = V::query_lanes ? (u32)j < (u32)my_len : (j >= 0 && j < my_len);
      const u32 in_codes = in_range ? codes_slot : pad_pair;
      reg_t in_HG = hg_zero, in_F = neg;
      if constexpr (G > 1) {  // G = 1: the thread is its own row above (boundary only)
        in_HG = __shfl_up_sync(SW_FULL_MASK, out_HG, 1, G);
        in_F = __shfl_up_sync(SW_FULL_MASK, out_F, 1, G);
      }
      if (t == 0) {
        // (only at the target's columns: past them the clamped load reads the last column,
        // which this pass's last thread rewrites in place, with another query's cells)
        const bool real = s < my_len && reads_boundary;
        in_HG = real ? row_slot.x : hg_zero;
        in_F = real ? row_slot.y : neg;
      }
      if constexpr (QL == 1) {
        if (starts_query) {  // the first rows of a query: the matrix's top
          in_HG = top_HG;
          in_F = neg;
        }
      } else {  // the same, in the lanes whose query starts (a select, not a branch)
        const u32 fresh_bits = flag_bits(stream_flags);
        in_HG = select_bits(in_HG, top_HG, fresh_bits);
        in_F = select_bits(in_F, neg, fresh_bits);
      }
      if constexpr (!FREE_Q) {
        if (j == 0) {  // the boundary column, over what the fill steps left
#pragma unroll
          for (int r = 0; r < R; ++r) {
            HG[r] = left_column(r);
            E[r] = HG[r];  // E of column 0: H of column -1 less gap_open
          }
          prev_in_HG = left_column(-1);
        }
      }
      codes_slot = fetch_codes(j + 2);
      row_slot = fetch_boundary(s + 2);

      // (with query lanes the code is one byte, loaded as such: no mask)
      const prof_t* pa = my_tile + (V::query_lanes ? in_codes : in_codes & 0xffu) * LETTER;
      const prof_t* pb = V::query_lanes ? pa : my_tile + (in_codes >> 8) * LETTER;
      // Per row: T = max(diag + sub, E, 0), U = T - go, then HG = max(T, F) - go, E of the
      // next column = max(E - ge, HG) and the next row's F = max(F - min(ge, go), U): the
      // only chain through the rows is that last add-max. T of row r+1 is computed before
      // HG[r] is overwritten (it reads the old HG[r]), so every HG[r] updates in place. The
      // adds written `+` and `-` run on the FMA pipe ("Adds on the FMA pipe" above).
      reg_t F = in_F;  // F of this thread's first row, column j
      reg_t sc[R];     // scores of the rows, loaded one chunk ahead of their use
      V::template load_scores<CHUNK>(pa, pb, *reinterpret_cast<reg_t(*)[CHUNK]>(sc));
      reg_t term = V::max3(prev_in_HG + sc[0], E[0], t_zero);  // T of row 0
      prev_in_HG = in_HG;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r % CHUNK == 0 && r + CHUNK < R)
          V::template load_scores<CHUNK>(pa + r + CHUNK, pb + r + CHUNK,
                                         *reinterpret_cast<reg_t(*)[CHUNK]>(sc + r + CHUNK));
        reg_t next_term = 0;
        if (r + 1 < R) {
          next_term = V::max3(HG[r] + sc[r + 1], E[r + 1], t_zero);
        }
        const reg_t U = term - to_u;                    // T - go
        HG[r] = V::add_max(F, go_neg, U);               // H[i][j] - go
        E[r] = V::add_max(E[r], ge_neg, HG[r]);  // E[i][j+1]
        F = V::add_max(F, fe_neg, U);                   // F[i+1][j]
        term = next_term;
      }
      out_HG = HG[R - 1];
      out_F = F;  // F of the row below this thread's last row
      if (V::query_lanes ? writes_boundary && t == G - 1 && in_range
                         : writes_boundary && t == G - 1 && j >= 0 && j < my_len)
        *reinterpret_cast<uint2*>(my_boundary + 2 * j) = make_uint2(out_HG, F);

      // The best so far and this column's rows in one tree of three-input maxima, one compare
      // for "some lane improved". The kernel is bound by the ALU pipe, where the DPX and the
      // maxima run: fewer ALU instructions per step made W1 faster
      // (docs/notes/gpu-inter-task.md, the ALU pipe).
      if constexpr (E2E) {  // the mode's end candidates only ("End-to-end modes" above)
        reg_t cand = best;
        if constexpr (FREE_T) {  // the last row, at the lanes' own columns
          u32 bits = last_bits;
#pragma unroll
          for (int l = 0; l < L; ++l)
            if (j < 0 || j > end_col[l]) bits &= ~lane_bits(l);
          cand = select_bits(best, V::max2(best, HG[R - 1]), bits);
        }
        if constexpr (LAST_COLUMN) {
          bool at_end = false;
#pragma unroll
          for (int l = 0; l < L; ++l) at_end |= j == end_col[l];
          if (at_end) {  // once per lane and pass
#pragma unroll
            for (int l = 0; l < L; ++l) {
              if (j != end_col[l]) continue;
              reg_t column_best = cand;
#pragma unroll
              for (int r = 0; r < R; ++r)
                if (r >= column_lo[l] && r < column_hi[l])
                  column_best = V::max2(column_best, HG[r]);
              cand = select_bits(cand, column_best, lane_bits(l));
            }
          }
        }
        if (cand != best) {  // a lane's best went up: its first candidate row holding it
          const u32 improved = V::improved_lanes(best, cand);
#pragma unroll
          for (int l = 0; l < L; ++l) {
            if (improved >> l & 1u) {
              int first = R - 1;
              if (LAST_COLUMN && j == end_col[l]) {
#pragma unroll
                for (int r = R - 1; r >= 0; --r)
                  if (r >= column_lo[l] && r < column_hi[l] && V::lane_equal(HG[r], cand, l))
                    first = r;
              }
              best_j[l] = j;
              best_r[l] = first;
            }
          }
        }
        best = cand;
        return;
      }
      reg_t column[R + 1];
#pragma unroll
      for (int r = 0; r < R; ++r) column[r] = HG[r];
      column[R] = best;
      const reg_t new_best = TreeMax<V, 0, R + 1>::run(column);
      // A cheaper scan here (both lanes at once: one add-max and one select per row, 77
      // instructions instead of ~240) ran W1 far slower: with 127 registers and no spills,
      // ptxas moved the next columns' loads down to just before their use
      // (docs/notes/gpu-inter-task.md, the improvement branch). Keep this scan's register use.
      if (new_best != best) {  // rare: a lane's best just went up; find its first row holding it
        const u32 improved = V::improved_lanes(best, new_best);
#pragma unroll
        for (int l = 0; l < L; ++l) {
          if (improved >> l & 1u) {
            int first = 0;
#pragma unroll
            for (int r = R - 1; r >= 0; --r)
              if (V::lane_equal(HG[r], new_best, l)) first = r;
            best_j[l] = j;
            best_r[l] = first;
          }
        }
      }
      best = new_best;
    };
    // Every 16 steps each thread raises its floor to its neighbours' best less one where they
    // hold the same query ("Shared floors" above).
    auto share_floor = [&]() {
      const reg_t from_above = __shfl_up_sync(SW_FULL_MASK, best, 1, G);
      const reg_t from_below = __shfl_down_sync(SW_FULL_MASK, best, 1, G);
      if constexpr (QL == 1) {
        if (same_above) best = V::add_max(from_above, minus_one, best);
        if (same_below) best = V::add_max(from_below, minus_one, best);
      } else {  // per lane
        const u32 above_bits = flag_bits(stream_flags >> 1);
        const u32 below_bits = flag_bits(stream_flags >> 2);
        if (above_bits)
          best = (V::add_max(from_above, minus_one, best) & above_bits) | (best & ~above_bits);
        if (below_bits)
          best = (V::add_max(from_below, minus_one, best) & below_bits) | (best & ~below_bits);
      }
    };
    int s = 0;
    for (; s + 1 < steps; s += 2) {
      step(s, codes_even, row_even);
      step(s + 1, codes_odd, row_odd);
      if constexpr (G > 1) {
        if ((s & 14) == 14) share_floor();
      }
    }
    if (s < steps) {
      if constexpr (V::query_lanes) {
        // the last step's inputs loaded again: with the slots read after the loop, the
        // device's ptxas copied the row above into the register that read uses soon after
        // loading it (docs/notes/gpu-inter-task.md, query lanes; the final code was measured
        // with this form only)
        u32 codes_last = fetch_codes(s - t);
        uint2 row_last = fetch_boundary(s);
        step(s, codes_last, row_last);
      } else {
        step(s, codes_even, row_even);
      }
    }

    // Per query: a segmented inclusive scan of the threads' cells (threads of one query
    // are consecutive), so the last thread of each query's run holds the run's best; it
    // merges the best carried from earlier passes and, where the query ends, writes it.
    // The run of thread G-1, if its query goes on, is carried to the next pass.
#pragma unroll
    for (int l = 0; l < L; ++l) {
      const int q = QL == 1 ? 0 : l;
      const bool run_last = t == G - 1 || query_ends[q];
      int cand_score = 0, cand_j = SW_INT_MAX, cand_i = SW_INT_MAX;
      if (best_j[l] >= 0) {
        cand_score = V::lane(best, l) - (l ? 0 : low_bias) - hg_shift + gap_open;
        cand_j = best_j[l];
        cand_i = row0 + t * R + best_r[l];
      }
#pragma unroll
      for (int offset = 1; offset < G; offset *= 2) {
        const int other_score = __shfl_up_sync(SW_FULL_MASK, cand_score, offset, G);
        const int other_j = __shfl_up_sync(SW_FULL_MASK, cand_j, offset, G);
        const int other_i = __shfl_up_sync(SW_FULL_MASK, cand_i, offset, G);
        const int other_query = __shfl_up_sync(SW_FULL_MASK, my_query[q], offset, G);
        if (t >= offset && other_query == my_query[q] &&
            better_end(other_score, other_j, other_i, cand_score, cand_j, cand_i)) {
          cand_score = other_score;
          cand_j = other_j;
          cand_i = other_i;
        }
      }
      int best_score = carried[q] ? run_score[l] : 0;
      int best_col = carried[q] ? run_j[l] : SW_INT_MAX;
      int best_row = carried[q] ? run_i[l] : SW_INT_MAX;
      if (cand_score > 0 && better_end(cand_score, cand_j, cand_i, best_score, best_col, best_row)) {
        best_score = cand_score;
        best_col = cand_j;
        best_row = cand_i;
      }
      if (run_last && query_ends[q] && my_query[q] >= 0 && live) {
        // the slot of the target: pair * lanes + lane, here unit (query lanes) or
        // pair * L + l (target lanes)
        const i64 slot = (i64)my_query[q] * out_stride + (V::query_lanes ? unit : pair * L + l);
        out_score[slot] = best_score;
        out_end_i[slot] = best_score > 0 ? best_row - query_row0[my_query[q]] : -1;
        out_end_j[slot] = best_score > 0 ? best_col : -1;
      }
      // the next pass's carried best: thread G-1's, if its query goes on
      run_score[l] = __shfl_sync(SW_FULL_MASK, best_score, G - 1, G);
      run_j[l] = __shfl_sync(SW_FULL_MASK, best_col, G - 1, G);
      run_i[l] = __shfl_sync(SW_FULL_MASK, best_row, G - 1, G);
    }
#pragma unroll
    for (int q = 0; q < QL; ++q)
      open_query[q] = __shfl_sync(SW_FULL_MASK, query_ends[q] ? -1 : my_query[q], G - 1, G);
  }
}

}  // namespace swdask
