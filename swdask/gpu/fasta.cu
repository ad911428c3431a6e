// A FASTA file's text cut into records and encoded on the GPU (the one-GPU search job's read,
// swdask.gpu._encode.encode_fasta_text), and the residue lookup of a column already in the
// Arrow layout (encode_device_layout). All of it in one module that ships compiled with the
// package: the CuPy operations this replaces (whole-array passes, an elementwise lookup) were
// some thirty CuPy kernels that a fresh machine compiled with NVRTC before its first search
// (docs/notes/gpu-search-job.md, warm and cold; issue 45). An earlier version of these
// kernels (dd1e08e) lost while the search itself still ran CuPy operations that load most of
// those kernels anyway ("`fasta.cu` lost" in that note); the search no longer does.
//
// The plain form only: printable ASCII lines (spaces in headers only) ended by '\n', nothing
// but empty lines before the first header, an id in every header, every residue a letter of
// the scoring. Whatever else the kernels find is flagged, and the host reader
// (swdask._fasta.parse_block) reads the file instead, accepting it or naming its problem.
//
// Work split. The text is cut into chunks of `chunk` bytes, one thread each. A chunk that
// starts inside a line cannot tell by itself whether that line is a header, so fasta_chunks
// counts its bytes up to its first newline (its "head") apart from the rest, and records what
// kind of line follows its last newline. The host then knows each chunk's state at its first
// byte (the kind of line that follows the last newline of the chunks before it), and turns
// the counts into each chunk's first residue, record and line number (prefix sums over one
// number per chunk). fasta_records walks the chunks again from those and writes the residue
// codes, each record's first residue and each header's span and line number. No thread looks
// back, so no line is too long for this read.
#include "sw_common.cuh"

namespace swdask {

constexpr u32 FASTA_NEWLINE = 10;
constexpr u32 FASTA_BLANK = 32;
constexpr u32 FASTA_GT = 62;

// Fields of fasta_chunks' output, each a row of `chunks` numbers (swdask.gpu._encode reads
// them by these positions).
enum FastaChunkField {
  CHUNK_RESIDUES = 0,       // residues after the head
  CHUNK_HEADERS = 1,        // header lines starting in the chunk
  CHUNK_NEWLINES = 2,       // newlines in the chunk
  CHUNK_FIRST_HEADER = 3,   // the first header's '>' (n: none)
  CHUNK_FIRST_RESIDUE = 4,  // the first residue after the head (n: none)
  CHUNK_HEAD = 5,           // bytes before the first newline (0 where the chunk starts a line)
  CHUNK_NEXT_LINE = 6,      // after the last newline: 1 a header line, 0 another, -1 no newline
  CHUNK_FLAGS = 7,          // 1: a byte outside the plain form; 2: a blank in the head
  CHUNK_FIELDS = 8
};

__device__ inline bool fasta_printable(u32 byte) { return byte >= 32 && byte < 127; }

// Per chunk k, into counts[field * chunks + k]: the fields above.
__global__ void fasta_chunks(const u8* __restrict__ text, i64 n, i64 chunk, i64 chunks,
                             i64* __restrict__ counts) {
  for (i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x; k < chunks;
       k += (i64)gridDim.x * blockDim.x) {
    const i64 start = k * chunk;
    const i64 end = start + chunk < n ? start + chunk : n;
    bool line_start = start == 0 || text[start - 1] == FASTA_NEWLINE;
    i64 flags = 0;
    i64 i = start;
    if (!line_start) {  // the head: the rest of a line begun in an earlier chunk
      for (; i < end && text[i] != FASTA_NEWLINE; ++i) {
        if (!fasta_printable(text[i])) flags |= 1;
        if (text[i] == FASTA_BLANK) flags |= 2;  // wrong only if the line is a sequence line
      }
    }
    const i64 head = i - start;
    bool header = false;
    i64 residues = 0, headers = 0, newlines = 0, next_line = -1;
    i64 first_header = n, first_residue = n;
    for (; i < end; ++i) {
      const u32 byte = text[i];
      if (byte == FASTA_NEWLINE) {
        ++newlines;
        line_start = true;
        header = false;
        next_line = (i + 1 < n && text[i + 1] == FASTA_GT) ? 1 : 0;
        continue;
      }
      if (!fasta_printable(byte)) flags |= 1;
      if (line_start) {
        line_start = false;
        if (byte == FASTA_GT) {
          header = true;
          ++headers;
          if (first_header == n) first_header = i;
        }
      }
      if (!header) {
        if (byte == FASTA_BLANK) flags |= 1;  // a blank inside a sequence line
        ++residues;
        if (first_residue == n) first_residue = i;
      }
    }
    counts[CHUNK_RESIDUES * chunks + k] = residues;
    counts[CHUNK_HEADERS * chunks + k] = headers;
    counts[CHUNK_NEWLINES * chunks + k] = newlines;
    counts[CHUNK_FIRST_HEADER * chunks + k] = first_header;
    counts[CHUNK_FIRST_RESIDUE * chunks + k] = first_residue;
    counts[CHUNK_HEAD * chunks + k] = head;
    counts[CHUNK_NEXT_LINE * chunks + k] = next_line;
    counts[CHUNK_FLAGS * chunks + k] = flags;
  }
}

// Per chunk k, from starts[field * chunks + k] (fields: 0 its first residue, 1 its first
// record, 2 the 0-based line number of its first byte, 3 whether its first byte lies inside a
// header line begun in an earlier chunk; the host's prefix sums of fasta_chunks' counts): the
// codes of its residues (lookup[byte]), and for each header line starting in it the record's
// first residue, the '>' position, the line's end (its newline, or n) and its line number.
// The thread of chunk 0 also writes record_offsets[records] = total. Sets *reader_needed to 1
// where a residue's code is `unknown_code` or a header holds no id (nothing but blanks after
// its '>'): the host reader then reads the file, or names its problem.
__global__ void fasta_records(const u8* __restrict__ text, i64 n, i64 chunk, i64 chunks,
                              const i64* __restrict__ starts, const u8* __restrict__ lookup,
                              int unknown_code, i64 records, i64 total,
                              u8* __restrict__ codes, i64* __restrict__ record_offsets,
                              i64* __restrict__ header_starts, i64* __restrict__ header_ends,
                              i64* __restrict__ header_lines, int* __restrict__ reader_needed) {
  for (i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x; k < chunks;
       k += (i64)gridDim.x * blockDim.x) {
    const i64 start = k * chunk;
    const i64 end = start + chunk < n ? start + chunk : n;
    i64 residue = starts[k], record = starts[chunks + k], line = starts[2 * chunks + k];
    bool line_start = start == 0 || text[start - 1] == FASTA_NEWLINE;
    int problem = 0;
    i64 i = start;
    if (!line_start && starts[3 * chunks + k] != 0) {  // the rest of a header line: no residues
      while (i < end && text[i] != FASTA_NEWLINE) ++i;
    }
    for (; i < end; ++i) {
      const u32 byte = text[i];
      if (byte == FASTA_NEWLINE) {
        ++line;
        line_start = true;
        continue;
      }
      if (line_start && byte == FASTA_GT) {
        // a header: the whole line read here, past the chunk's end if it goes on
        i64 j = i + 1;
        bool has_id = false;
        for (; j < n && text[j] != FASTA_NEWLINE; ++j) has_id |= text[j] > FASTA_BLANK;
        if (!has_id) problem = 1;
        record_offsets[record] = residue;
        header_starts[record] = i;
        header_ends[record] = j;
        header_lines[record] = line;
        ++record;
        line_start = false;
        i = j - 1;  // on to the line's newline (or past the chunk)
        continue;
      }
      line_start = false;
      const u8 code = lookup[byte];
      codes[residue++] = code;
      if (code == unknown_code) problem = 1;
    }
    if (problem) *reader_needed = 1;
    if (k == 0) record_offsets[records] = total;
  }
}

// codes[i] = lookup[data[i]] for a column's n text bytes; *unknown = 1 where a code is
// `unknown_code` (a byte that is no residue of the scoring).
__global__ void lookup_codes(const u8* __restrict__ data, i64 n, const u8* __restrict__ lookup,
                             int unknown_code, u8* __restrict__ codes, int* __restrict__ unknown) {
  int found = 0;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
       i += (i64)gridDim.x * blockDim.x) {
    const u8 code = lookup[data[i]];
    codes[i] = code;
    found |= code == unknown_code;
  }
  if (found) *unknown = 1;
}

// *found = 1 where a null row (valid[k] == 0) covers bytes (offsets[k] < offsets[k + 1]),
// as the Arrow layout allows; `rows` rows, offsets of rows + 1.
__global__ void null_bytes(const i64* __restrict__ offsets, const u8* __restrict__ valid,
                           i64 rows, int* __restrict__ found) {
  int covered = 0;
  for (i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x; k < rows;
       k += (i64)gridDim.x * blockDim.x) {
    covered |= !valid[k] && offsets[k + 1] > offsets[k];
  }
  if (covered) *found = 1;
}

// Rows of a column in the Arrow layout taken into a column of their own (a search's top
// rows, for their start positions): span k, data[starts[k]:starts[k] + (offsets[k + 1] -
// offsets[k])], to out[offsets[k]:offsets[k + 1]]; one block per span at a time, its
// threads over the bytes.
__global__ void gather_spans(const u8* __restrict__ data, const i64* __restrict__ starts,
                             const i64* __restrict__ offsets, i64 spans,
                             u8* __restrict__ out) {
  for (i64 k = blockIdx.x; k < spans; k += gridDim.x) {
    const u8* from = data + starts[k];
    const i64 first = offsets[k], length = offsets[k + 1] - first;
    for (i64 i = threadIdx.x; i < length; i += blockDim.x) out[first + i] = from[i];
  }
}

}  // namespace swdask
