// The alignment of known local hits on the GPU: warps trace the pairs' paths.
//
// Each pair's score and four cells are known (the pairs or search kernels found them), so its
// path is the global affine alignment of the two segments, exactly as swdask/_traceback.py
// computes it on the CPU: the same three states (S substitution, I query residue against a
// gap, D target residue against a gap), the same boundary rows, the same tie rule and the
// same last state, the best of S, I and D at the corner (S then I then D on a tie; a local
// hit always ends in S, an end-to-end mode's segment may end in a gap), so CPU and GPU give
// the same CIGAR. (Segments with no residue of one sequence are the CPU's.)
//
// Fill: the query segment is cut into strips of 32 x TB_ROWS rows; in a strip, lane t holds
// rows t*TB_ROWS .. +TB_ROWS in registers and the lanes sweep the target as a wavefront, lane t
// one column behind lane t-1, whose last row it receives by a shuffle. The row above the strip
// comes from the pair's boundary row in global memory, 32 columns at a time (loaded by the
// whole warp 16 steps ahead, handed to lane 0 by a shuffle); lane 31 writes the strip's last
// row into the same boundary row, in place: each column is read by a strip before that strip
// overwrites it. Each cell's predecessors (two bits per state) go to the pair's trace,
// indexed by the wavefront step, so that at each step the warp writes 256 contiguous bytes.
// Walk (lane 0): from the end cell back to (0, 0), ops last first, each run of equal ops
// written into the CIGAR text ("12=1X3I...") in front of the runs after it, with the counts,
// so the text ends at its slot's end. (Before, it wrote every op to memory and read them all
// back in a second loop; writing the runs as they end made W2's reads' traceback kernels a
// little faster. The walk itself, a chain of dependent loads, is a large part of their
// time: docs/notes/gpu-traceback.md.) sw_traceback_gather packs the texts into one buffer
// for the copy to the host.
//
// Jobs: a warp takes jobs from a counter (`ticket`) until none is left. A job is a run of
// consecutive strips of one pair: all of them when there are enough pairs to fill the GPU,
// else one strip each, so that the strips of one long pair run at once on many warps, strip
// s a little behind strip s-1 (it waits until strip s-1's progress word says the boundary
// columns it is about to load are written; the word is published every 32 steps, after a
// fence). Jobs are numbered in counter order, so a strip only waits for one taken earlier by
// a running warp: no deadlock, whatever the number of resident warps. The warp that runs a
// pair's last strip walks it (the strips before have all finished: each waited for the one
// before it to publish its last column, and fenced its trace before publishing).
//
// Measured (docs/notes/gpu-traceback.md): one thread per pair was far too slow (deleted);
// every pair on one warp ran the 100,000 x 100,000 W2 pair's 391 strips in turn, many times
// slower than spread over warps as above.
//
// Scores are int32: the host sends only pairs whose scores and boundary values stay far from
// the int32 limits (TB_NEG and the per-row gap costs), the rest go to the CPU.
namespace swdask {

typedef unsigned char u8;
typedef long long i64;

constexpr int TB_ROWS = 8;
constexpr int TB_LANES = 32;
constexpr int TB_STRIP = TB_ROWS * TB_LANES;
constexpr int TB_NEG = -(1 << 29);
constexpr unsigned TB_ALL = 0xffffffffu;
constexpr int TB_LEAD = 16;  // steps between a boundary chunk's load and its first use

// out, per pair: score, text length, matches, mismatches, gap opens, columns, last state
constexpr int TB_OUT = 7;
// jobs, per job: pair, first strip, strips
constexpr int TB_JOB = 3;

// Rows strip*TB_STRIP + 1 .. of the pair (1-based), all columns. `bS/bI/bD`: the boundary
// row (the row above on entry, the strip's last row on exit; column j at [j]). `waited`:
// the progress word of the strip above when another warp runs it (else null); `published`:
// this strip's, when another warp runs the strip below.
__device__ __forceinline__ void trace_strip(int strip, const u8* a, int m, const u8* b, int n,
                                            const int* table, int alphabet, int gap_open,
                                            int gap_extend, int* bS, int* bI, int* bD,
                                            u8* pair_trace, const volatile int* waited,
                                            volatile int* published, int* score_out) {
  const int lane = threadIdx.x & (TB_LANES - 1);
  const int steps = n + TB_LANES - 1;  // wavefront steps of one strip
  const int i0 = strip * TB_STRIP + lane * TB_ROWS;  // this lane's rows: i0 + 1 .. (1-based)
  int ar[TB_ROWS], cS[TB_ROWS], cI[TB_ROWS], cD[TB_ROWS];
#pragma unroll
  for (int r = 0; r < TB_ROWS; ++r) {
    ar[r] = i0 + r < m ? a[i0 + r] * alphabet : 0;
    cS[r] = TB_NEG;  // column 0: a query prefix against nothing is one I run
    cD[r] = TB_NEG;
    cI[r] = -(gap_open + (i0 + r) * gap_extend);
  }
  // the row above this lane's rows at column 0: (0, 0) is where a substitution ended
  int diag_S = i0 == 0 ? 0 : TB_NEG;
  int diag_I = i0 == 0 ? TB_NEG : -(gap_open + (i0 - 1) * gap_extend);
  int diag_D = TB_NEG;
  // the row above the strip, columns 32c + 1 .. 32c + 32: lane t holds column 32c + 1 + t
  auto load_chunk = [&](int c, int& vS, int& vI, int& vD) {
    const int j = 32 * c + 1 + lane;
    if (strip == 0) {  // row 0: a D run along the target
      vS = TB_NEG;
      vI = TB_NEG;
      vD = -(gap_open + (j - 1) * gap_extend);
      return;
    }
    if (waited) {
      if (lane == 0) {
        const int need = min(32 * c + 32, n);
        while (*waited < need) __nanosleep(64);
        __threadfence();
      }
      __syncwarp();
    }
    if (j <= n) {
      vS = __ldcg(bS + j);
      vI = __ldcg(bI + j);
      vD = __ldcg(bD + j);
    } else {
      vS = vI = vD = TB_NEG;
    }
  };
  int cur_S, cur_I, cur_D, next_S = TB_NEG, next_I = TB_NEG, next_D = TB_NEG;
  load_chunk(0, cur_S, cur_I, cur_D);
  int last_S = TB_NEG, last_I = TB_NEG, last_D = TB_NEG;  // this lane's last row, last step
  u8* strip_trace = pair_trace + (i64)strip * steps * TB_STRIP;
  for (int step = 0; step < steps; ++step) {
    const int k = step & 31;
    if (k == 0 && step > 0) {
      if (published && lane == TB_LANES - 1) {  // columns up to step - 31 are written
        __threadfence();
        *published = min(step - 31, n);
      }
      cur_S = next_S;
      cur_I = next_I;
      cur_D = next_D;
    }
    if (k == 32 - TB_LEAD && step + TB_LEAD < n) load_chunk(step / 32 + 1, next_S, next_I, next_D);
    const int j = step - lane + 1;  // the column this lane computes now
    int above_S = __shfl_up_sync(TB_ALL, last_S, 1);
    int above_I = __shfl_up_sync(TB_ALL, last_I, 1);
    int above_D = __shfl_up_sync(TB_ALL, last_D, 1);
    const int chunk_S = __shfl_sync(TB_ALL, cur_S, k);
    const int chunk_I = __shfl_sync(TB_ALL, cur_I, k);
    const int chunk_D = __shfl_sync(TB_ALL, cur_D, k);
    if (j < 1 || j > n) continue;
    if (lane == 0) {
      above_S = chunk_S;
      above_I = chunk_I;
      above_D = chunk_D;
    }
    const int bj = b[j - 1];
    int up_S = above_S, up_I = above_I, up_D = above_D;
    int code[TB_ROWS];
#pragma unroll
    for (int r = 0; r < TB_ROWS; ++r) {
      const int left_S = cS[r], left_I = cI[r], left_D = cD[r];
      // S: from the diagonal, S then I then D
      int best = diag_S, state = 0;
      if (diag_I > best) { best = diag_I; state = 1; }
      if (diag_D > best) { best = diag_D; state = 2; }
      const int new_S = best + table[ar[r] + bj];
      // I: from above, S (open) then I (extend) then D (open)
      int value = up_S - gap_open, from_i = 0;
      int other = up_I - gap_extend;
      if (other > value) { value = other; from_i = 1; }
      other = up_D - gap_open;
      if (other > value) { value = other; from_i = 2; }
      const int new_I = value;
      // D: from the left, S (open) then D (extend) then I (open)
      value = left_S - gap_open;
      int from_d = 0;
      other = left_D - gap_extend;
      if (other > value) { value = other; from_d = 2; }
      other = left_I - gap_open;
      if (other > value) { value = other; from_d = 1; }
      cS[r] = new_S;
      cI[r] = new_I;
      cD[r] = value;
      code[r] = state | (from_i << 2) | (from_d << 4);
      diag_S = left_S;
      diag_I = left_I;
      diag_D = left_D;
      up_S = new_S;
      up_I = new_I;
      up_D = value;
    }
    // the next column's diagonal for row 0 of this lane: the row above, at this column
    diag_S = above_S;
    diag_I = above_I;
    diag_D = above_D;
    last_S = cS[TB_ROWS - 1];
    last_I = cI[TB_ROWS - 1];
    last_D = cD[TB_ROWS - 1];
    unsigned low = 0, high = 0;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      low |= (unsigned)code[r] << (8 * r);
      high |= (unsigned)code[r + 4] << (8 * r);
    }
    *(uint2*)(strip_trace + ((i64)step * TB_STRIP + lane * TB_ROWS)) = make_uint2(low, high);
    if (lane == TB_LANES - 1) {  // the strip's last row, for the next strip
      bS[j] = last_S;
      bI[j] = last_I;
      bD[j] = last_D;
    }
    if (j == n && i0 < m && m <= i0 + TB_ROWS) {  // this lane holds row m: the pair's score
#pragma unroll
      for (int r = 0; r < TB_ROWS; ++r)
        if (r == (m - 1) % TB_ROWS) {  // the best state there: S, then I, then D
          int best = cS[r], state = 0;
          if (cI[r] > best) { best = cI[r]; state = 1; }
          if (cD[r] > best) { best = cD[r]; state = 2; }
          score_out[0] = best;
          score_out[6] = state;
        }
    }
  }
  if (published) {  // every lane's trace and the whole last row, then the last column
    __threadfence();
    __syncwarp();
    if (lane == TB_LANES - 1) *published = n;
  }
}

// Lane 0 only: the walk of a filled pair from (m, n) in its last state (result[6], the fill's)
// back to (0, 0), ops last
// first, its CIGAR text written as it goes: each run of equal ops, once it ends, goes in
// front of the runs after it ("<length><op>", the letter first, then the digits, backwards),
// so the text ends at the end of the pair's text slot (2 bytes per residue of both
// segments hold it: a run of k ops takes at most 2k characters), and the counts (out[1..5];
// out[0], the score, is the fill's).
__device__ __forceinline__ void trace_walk(const u8* a, int m, const u8* b, int n,
                                           const u8* pair_trace, u8* slot_end, int* result) {
  const int steps = n + TB_LANES - 1;
  const char letters[4] = {'=', 'X', 'I', 'D'};
  int i = m, j = n, state = result[6], count = 0, length = 0;
  int matches = 0, mismatches = 0, gap_opens = 0, last = -1, run = 0;
  auto flush = [&]() {  // the run just ended, in front of those after it
    slot_end[-1 - length++] = (u8)letters[last];
    for (int value = run; value > 0; value /= 10)
      slot_end[-1 - length++] = (u8)('0' + value % 10);
    if (last >= 2) ++gap_opens;
  };
  while (i > 0 || j > 0) {
    int op;
    if (i == 0) {  // row 0: a D run from (0, 0)
      op = 3;
      state = j == 1 ? 0 : 2;
      --j;
    } else if (j == 0) {  // column 0: an I run from (0, 0)
      op = 2;
      state = i == 1 ? 0 : 1;
      --i;
    } else {
      const int within = (i - 1) % TB_STRIP;  // row i's place in its strip
      const int step = j - 1 + within / TB_ROWS;
      // written by other warps' strips: read from L2, past this multiprocessor's L1
      const int code =
          __ldcg(pair_trace + ((i64)((i - 1) / TB_STRIP) * steps + step) * TB_STRIP + within);
      if (state == 0) {
        op = a[i - 1] == b[j - 1] ? 0 : 1;
        state = code & 3;
        --i;
        --j;
      } else if (state == 1) {
        op = 2;
        state = (code >> 2) & 3;
        --i;
      } else {
        op = 3;
        state = (code >> 4) & 3;
        --j;
      }
    }
    if (op != last) {
      if (last >= 0) flush();
      last = op;
      run = 0;
    }
    ++run;
    ++count;
    matches += op == 0;
    mismatches += op == 1;
  }
  if (last >= 0) flush();
  result[1] = length;
  result[2] = matches;
  result[3] = mismatches;
  result[4] = gap_opens;
  result[5] = count;
}

// Blocks of one warp. `jobs`: TB_JOB ints per job (see above), largest pairs first;
// `control`: the job counter, then one progress word per job, all zero at launch.
__global__ void sw_traceback(int num_jobs, const int* __restrict__ jobs,
                             int* __restrict__ control, const u8* __restrict__ q_res,
                             const i64* __restrict__ q_begin, const int* __restrict__ q_len,
                             const u8* __restrict__ t_res, const i64* __restrict__ t_begin,
                             const int* __restrict__ t_len, const int* __restrict__ table,
                             int alphabet, int gap_open, int gap_extend,
                             const i64* __restrict__ trace_offset, u8* __restrict__ trace,
                             const i64* __restrict__ work_offset, int* __restrict__ work,
                             const i64* __restrict__ text_end, u8* __restrict__ text,
                             int* __restrict__ out) {
  const int lane = threadIdx.x;
  int* ticket = control;
  volatile int* progress = control + 1;
  while (true) {
    int job = 0;
    if (lane == 0) job = atomicAdd(ticket, 1);
    job = __shfl_sync(TB_ALL, job, 0);
    if (job >= num_jobs) return;
    const int k = jobs[TB_JOB * job], first = jobs[TB_JOB * job + 1];
    const int stop = first + jobs[TB_JOB * job + 2];
    const int m = q_len[k], n = t_len[k];
    const int strips = (m + TB_STRIP - 1) / TB_STRIP;
    const u8* a = q_res + q_begin[k];
    const u8* b = t_res + t_begin[k];
    int* bS = work + work_offset[k];
    int* bI = bS + (n + 1);
    int* bD = bI + (n + 1);
    u8* pair_trace = trace + trace_offset[k];
    int* result = out + (i64)k * TB_OUT;
    for (int strip = first; strip < stop; ++strip)
      trace_strip(strip, a, m, b, n, table, alphabet, gap_open, gap_extend, bS, bI, bD,
                  pair_trace, strip == first && first > 0 ? progress + job - 1 : nullptr,
                  strip + 1 == stop && stop < strips ? progress + job : nullptr, result);
    if (stop < strips) continue;
    __syncwarp();
    if (lane == 0) trace_walk(a, m, b, n, pair_trace, text + text_end[k], result);
  }
}

// Pack each pair's CIGAR text (the last length[k] bytes of its slot, which ends at
// text_end[k]) into `packed` at packed_offset[k]: one thread per pair.
__global__ void sw_traceback_gather(int num_pairs, const i64* __restrict__ text_end,
                                    const u8* __restrict__ text, const int* __restrict__ out,
                                    const i64* __restrict__ packed_offset,
                                    u8* __restrict__ packed) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= num_pairs) return;
  const int length = out[(i64)k * TB_OUT + 1];
  const u8* from = text + text_end[k] - length;
  u8* to = packed + packed_offset[k];
  for (int p = 0; p < length; ++p) to[p] = from[p];
}

}  // namespace swdask
