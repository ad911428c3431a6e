// The end-cell tie rule of every swdask kernel, written once (swdask/_results.py states it for
// the Python side, best_cell): the best score, then the smallest target index j, then the
// smallest query index i. Included by sw_common.cuh (one query against many targets) and
// pairs_core.cuh (row-wise pairs). The start cell follows from it: the reverse passes score
// the reversed prefixes from the end cell and take, among the cells reaching the score, the
// earliest by (j, i) of the reversed matrix, i.e. the start nearest the end.
//
// Each form is written out rather than composed (better_end calling earlier_cell, a bool
// helper in a column loop): nvcc materialises such an inner bool (PRMT, SEL, one more compare,
// seen in the SASS). Written out, the SASS of the one-against-many kernels is what it was
// before this header (sm_80, sm_90), and that of the pairs kernels up to their final
// reduction (now branch-free and a few instructions shorter).
#pragma once

// The end-to-end modes (the MODE template argument of pairs_inter.cu and inter_task.cu): bits,
// the same flags as swdask/_cpu_modes.py's (swdask/gpu/_kernels.py, MODE_CODES). They say
// which cells may end an alignment, so they live beside the rule that picks among them.
#define SWP_MODE_END_TO_END 1
#define SWP_MODE_FREE_QUERY 2   // query ends free: boundary column 0, end in the last column
#define SWP_MODE_FREE_TARGET 4  // target ends free: boundary row 0, end in the last row

namespace swdask {

// (j asc, i asc): whether cell (j, i) comes before cell (j2, i2); the rule among cells of
// equal score (the reverse passes' hits).
__device__ __forceinline__ bool earlier_cell(int j, int i, int j2, int i2) {
  return j < j2 || (j == j2 && i < i2);
}

// (score desc, j asc, i asc): whether end cell (s, j, i) beats (s2, j2, i2).
__device__ __forceinline__ bool better_end(int s, int j, int i, int s2, int j2, int i2) {
  return s > s2 || (s == s2 && (j < j2 || (j == j2 && i < i2)));
}

}  // namespace swdask

// better_end for one thread's own scan, which meets a column again only in a later strip of
// rows (columns in increasing j within a strip, strips in increasing i): a cell as high at
// the same column has the larger i and loses, so the row never decides (it is looked up only
// once a cell wins). Scores of 0 never win (the wavefront's fill steps, j < 0, see only 0).
// A macro: it runs once per column, where a bool helper would cost instructions (above).
#define SW_BETTER_IN_SCAN(s, j, s2, j2) ((s) > (s2) || ((s) == (s2) && (s) > 0 && (j) < (j2)))
