// A FASTA file's text cut into records and encoded on the GPU: the one-GPU search job's read
// (swdask.gpu._encode.encode_fasta_text). Three kernels, one module: an earlier version made of
// CuPy's array operations spent 0.4 s of a 4.7 s W1 job loading some thirty CuPy kernels
// (benchmarks/NOTES-gpu.md), where one module loads in milliseconds.
//
// The plain form only: printable ASCII lines (spaces in headers only) ended by '\n', nothing
// but empty lines before the first header, an id in every header, every residue a letter of
// the scoring. Whatever else a chunk or a header finds is flagged, and the host reader
// (swdask._fasta.parse_block) reads the file instead, accepting it or naming its problem.
//
// Work split. The text is cut into chunks of `chunk` bytes, one thread each. A thread finds
// the state at its chunk's first byte (at a line start, or inside a header line or a
// sequence line) by looking back to the previous newline, at most `lookback` bytes (a longer
// line is flagged), then walks its bytes. fasta_chunks counts each chunk's residues, header
// lines and newlines; the host turns those into each chunk's first residue, record and line
// number (prefix sums of a few thousand numbers); fasta_records walks the chunks again and
// writes the residue codes, each record's first residue and each header's position and line;
// fasta_header_ends finds each header line's end and whether it holds an id.
#include "sw_common.cuh"

namespace swdask {

__device__ inline void fasta_state(const u8* __restrict__ text, i64 start, i64 lookback,
                                   bool& line_start, bool& header, bool& found) {
  found = true;
  header = false;
  line_start = start == 0 || text[start - 1] == 10;
  if (line_start) return;
  const i64 stop = start > lookback ? start - lookback : 0;
  i64 p = start - 1;  // moves to the first byte of the line holding byte start - 1
  while (p > stop && text[p - 1] != 10) --p;
  if (p > 0 && text[p - 1] != 10) {  // no newline within the look-back
    found = false;
    return;
  }
  header = text[p] == 62;
}

// Per chunk k: residues[k], headers[k] (header lines starting in it), newlines[k],
// first_header[k] and first_residue[k] (positions; n where none), plain[k] (1: nothing
// outside the plain form seen).
__global__ void fasta_chunks(const u8* __restrict__ text, i64 n, i64 chunk, i64 chunks,
                             i64 lookback, i64* __restrict__ residues, i64* __restrict__ headers,
                             i64* __restrict__ newlines, i64* __restrict__ first_header,
                             i64* __restrict__ first_residue, int* __restrict__ plain) {
  for (i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x; k < chunks;
       k += (i64)gridDim.x * blockDim.x) {
    const i64 start = k * chunk;
    const i64 end = start + chunk < n ? start + chunk : n;
    bool line_start, header, ok;
    fasta_state(text, start, lookback, line_start, header, ok);
    i64 count_residues = 0, count_headers = 0, count_newlines = 0;
    i64 header0 = n, residue0 = n;
    for (i64 i = start; i < end; ++i) {
      const u32 b = text[i];
      if (b == 10) {
        ++count_newlines;
        line_start = true;
        header = false;
        continue;
      }
      if (b < 32 || b >= 127) ok = false;
      if (line_start) {
        line_start = false;
        if (b == 62) {
          header = true;
          ++count_headers;
          if (header0 == n) header0 = i;
        }
      }
      if (!header) {
        if (b == 32) ok = false;  // a blank inside a sequence line
        ++count_residues;
        if (residue0 == n) residue0 = i;
      }
    }
    residues[k] = count_residues;
    headers[k] = count_headers;
    newlines[k] = count_newlines;
    first_header[k] = header0;
    first_residue[k] = residue0;
    plain[k] = ok ? 1 : 0;
  }
}

// Per chunk k, from its first residue, record and line numbers (exclusive prefix sums of
// fasta_chunks' counts): the codes of its residues (lookup[byte]), and for each header line
// starting in it the record's first residue, the '>' position and the 0-based line number.
// known[k]: 0 where a residue's code is `unknown_code`. The thread of chunk 0 also writes
// record_offsets[records] = total.
__global__ void fasta_records(const u8* __restrict__ text, i64 n, i64 chunk, i64 chunks,
                              i64 lookback, const i64* __restrict__ residue_start,
                              const i64* __restrict__ record_start,
                              const i64* __restrict__ line_start_number,
                              const u8* __restrict__ lookup, int unknown_code, i64 records,
                              i64 total, u8* __restrict__ codes,
                              i64* __restrict__ record_offsets,
                              i64* __restrict__ header_positions,
                              i64* __restrict__ header_lines, int* __restrict__ known) {
  for (i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x; k < chunks;
       k += (i64)gridDim.x * blockDim.x) {
    const i64 start = k * chunk;
    const i64 end = start + chunk < n ? start + chunk : n;
    bool line_start, header, found;
    fasta_state(text, start, lookback, line_start, header, found);
    i64 r = residue_start[k], h = record_start[k], line = line_start_number[k];
    int all_known = 1;
    for (i64 i = start; i < end; ++i) {
      const u32 b = text[i];
      if (b == 10) {
        ++line;
        line_start = true;
        header = false;
        continue;
      }
      if (line_start) {
        line_start = false;
        if (b == 62) {
          header = true;
          record_offsets[h] = r;
          header_positions[h] = i;
          header_lines[h] = line;
          ++h;
        }
      }
      if (!header) {
        const u8 code = lookup[b];
        codes[r++] = code;
        if (code == unknown_code) all_known = 0;
      }
    }
    known[k] = all_known;
    if (k == 0) record_offsets[records] = total;
  }
}

// Per header h: the end of its line (the newline's position, or n) and has_id[h] = 1 where
// a byte other than a blank follows its '>'.
__global__ void fasta_header_ends(const u8* __restrict__ text, i64 n,
                                  const i64* __restrict__ header_positions, i64 records,
                                  i64* __restrict__ header_ends, int* __restrict__ has_id) {
  for (i64 h = blockIdx.x * (i64)blockDim.x + threadIdx.x; h < records;
       h += (i64)gridDim.x * blockDim.x) {
    i64 i = header_positions[h] + 1;
    int visible = 0;
    while (i < n && text[i] != 10) {
      if (text[i] > 32) visible = 1;
      ++i;
    }
    header_ends[h] = i;
    has_id[h] = visible;
  }
}

}  // namespace swdask
