// The alignment of known local hits on the GPU: one warp per pair traces its path.
//
// Each pair's score and four cells are known (the pairs or search kernels found them), so its
// path is the global affine alignment of the two segments that begins and ends with a
// substitution, exactly as swdask/_traceback.py computes it on the CPU: the same three states
// (S substitution, I query residue against a gap, D target residue against a gap), the same
// boundary rows and the same tie rule (see that module), so CPU and GPU give the same CIGAR.
//
// Fill: the query segment is cut into strips of 32 x TB_ROWS rows; in a strip, lane t holds
// rows t*TB_ROWS .. +TB_ROWS in registers and the lanes sweep the target as a wavefront, lane t
// one column behind lane t-1, whose last row it receives by a shuffle. Lane 0 reads the row
// above the strip from a boundary row in global memory, lane 31 writes the strip's last row
// there. Each cell's predecessors (two bits per state) go to the pair's trace, indexed by the
// wavefront step, so that at each step the warp writes 256 contiguous bytes.
// Walk (lane 0): from the end cell back to (0, 0), ops last first; then the ops are read
// forward into the CIGAR text ("12=1X3I..."), with the counts, in the pair's text slot.
// sw_traceback_gather packs the texts into one buffer for the copy to the host.
//
// One thread per pair was measured first: 22 M cells/s per thread on an H100, so W1's
// largest top hit (about 5,500 x 5,500) took 1.4 s; a warp per pair does 32 rows at once.
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

// out, per pair: score, text length, matches, mismatches, gap opens, columns
constexpr int TB_OUT = 6;

__global__ void sw_traceback(int num_pairs, const int* __restrict__ order,
                             const u8* __restrict__ q_res, const i64* __restrict__ q_begin,
                             const int* __restrict__ q_len, const u8* __restrict__ t_res,
                             const i64* __restrict__ t_begin, const int* __restrict__ t_len,
                             const int* __restrict__ table, int alphabet, int gap_open,
                             int gap_extend, const i64* __restrict__ trace_offset,
                             u8* __restrict__ trace, const i64* __restrict__ work_offset,
                             int* __restrict__ work, const i64* __restrict__ text_offset,
                             u8* __restrict__ text, int* __restrict__ out) {
  if ((int)blockIdx.x >= num_pairs) return;
  const int k = order[blockIdx.x];  // pairs largest first
  const int lane = threadIdx.x;
  const int m = q_len[k], n = t_len[k];
  const u8* a = q_res + q_begin[k];
  const u8* b = t_res + t_begin[k];
  const int width = n + 1;
  const int steps = n + TB_LANES - 1;  // wavefront steps of one strip
  int* bS = work + work_offset[k];
  int* bI = bS + width;
  int* bD = bI + width;
  u8* pair_trace = trace + trace_offset[k];
  // row 0: the empty prefix pair (a substitution ended there) and a D run along the target
  for (int j = lane; j <= n; j += TB_LANES) {
    bS[j] = j == 0 ? 0 : TB_NEG;
    bI[j] = TB_NEG;
    bD[j] = j == 0 ? TB_NEG : -(gap_open + (j - 1) * gap_extend);
  }
  __syncwarp();
  int cS[TB_ROWS], cI[TB_ROWS], cD[TB_ROWS];
  int score = 0;
  const int strips = (m + TB_STRIP - 1) / TB_STRIP;
  for (int strip = 0; strip < strips; ++strip) {
    const int i0 = strip * TB_STRIP + lane * TB_ROWS;  // this lane's rows: i0 + 1 .. (1-based)
    int ar[TB_ROWS];
#pragma unroll
    for (int r = 0; r < TB_ROWS; ++r) {
      ar[r] = i0 + r < m ? a[i0 + r] * alphabet : 0;
      cS[r] = TB_NEG;  // column 0: a query prefix against nothing is one I run
      cD[r] = TB_NEG;
      cI[r] = -(gap_open + (i0 + r) * gap_extend);
    }
    // the row above this lane's rows, at column j - 1 (column 0 to start)
    int diag_S, diag_I, diag_D;
    if (lane == 0) {
      diag_S = bS[0];
      diag_I = bI[0];
      diag_D = bD[0];
    } else {
      diag_S = TB_NEG;
      diag_I = -(gap_open + (i0 - 1) * gap_extend);
      diag_D = TB_NEG;
    }
    int last_S = TB_NEG, last_I = TB_NEG, last_D = TB_NEG;  // this lane's last row, last step
    u8* strip_trace = pair_trace + (i64)strip * steps * TB_STRIP;
    for (int step = 0; step < steps; ++step) {
      const int j = step - lane + 1;  // the column this lane computes now
      int above_S = __shfl_up_sync(TB_ALL, last_S, 1);
      int above_I = __shfl_up_sync(TB_ALL, last_I, 1);
      int above_D = __shfl_up_sync(TB_ALL, last_D, 1);
      if (j < 1 || j > n) continue;
      if (lane == 0) {
        above_S = bS[j];
        above_I = bI[j];
        above_D = bD[j];
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
      if (strip == strips - 1 && j == n && (m - 1) / TB_ROWS % TB_LANES == lane) {
#pragma unroll
        for (int r = 0; r < TB_ROWS; ++r)
          if (r == (m - 1) % TB_ROWS) score = cS[r];
      }
    }
    __syncwarp();
    if (lane == 0) {
      bS[0] = TB_NEG;
      bI[0] = -(gap_open + ((strip + 1) * TB_STRIP - 1) * gap_extend);
      bD[0] = TB_NEG;
    }
    __syncwarp();
  }
  score = __shfl_sync(TB_ALL, score, (m - 1) / TB_ROWS % TB_LANES);
  if (lane != 0) return;
  // the walk, from (m, n) in state S back to (0, 0); ops last first
  u8* raw = text + text_offset[k];
  int i = m, j = n, state = 0, count = 0;
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
      const int code = pair_trace[((i64)((i - 1) / TB_STRIP) * steps + step) * TB_STRIP + within];
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
    raw[count++] = (u8)op;
  }
  // the ops forward, as runs: "<length><op>" in the text slot after the raw ops
  u8* cigar = raw + (m + n);
  int length = 0, matches = 0, mismatches = 0, gap_opens = 0, last = -1, run = 0;
  const char letters[4] = {'=', 'X', 'I', 'D'};
  for (int p = count; p >= 0; --p) {
    const int op = p > 0 ? raw[p - 1] : -1;
    if (op == last) {
      ++run;
    } else {
      if (last >= 0) {  // flush the run: its digits, then its letter
        char digits[12];
        int d = 0;
        for (int value = run; value > 0; value /= 10) digits[d++] = (char)('0' + value % 10);
        while (d > 0) cigar[length++] = (u8)digits[--d];
        cigar[length++] = (u8)letters[last];
      }
      if (op >= 2) ++gap_opens;
      last = op;
      run = 1;
    }
    if (op == 0) ++matches;
    if (op == 1) ++mismatches;
  }
  int* result = out + (i64)k * TB_OUT;
  result[0] = score;
  result[1] = length;
  result[2] = matches;
  result[3] = mismatches;
  result[4] = gap_opens;
  result[5] = count;
}

// Pack each pair's CIGAR text (at text_offset[k] + skip[k], length[k] bytes) into `packed`
// at packed_offset[k]: one thread per pair.
__global__ void sw_traceback_gather(int num_pairs, const i64* __restrict__ text_offset,
                                    const int* __restrict__ skip, const u8* __restrict__ text,
                                    const int* __restrict__ out,
                                    const i64* __restrict__ packed_offset,
                                    u8* __restrict__ packed) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= num_pairs) return;
  const u8* from = text + text_offset[k] + skip[k];
  u8* to = packed + packed_offset[k];
  const int length = out[(i64)k * TB_OUT + 1];
  for (int p = 0; p < length; ++p) to[p] = from[p];
}

}  // namespace swdask
