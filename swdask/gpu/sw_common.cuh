// Shared pieces of the swdask CUDA kernels: score lanes and small helpers.
//
// Conventions (binding for every kernel, CPU and GPU; see swdask/_cpu.py):
//   query along rows i, target along columns j (both 0-based);
//   H[i][j] = max(0, H[i-1][j-1] + sub(q_i, t_j), E[i][j], F[i][j]),
//   E[i][j] = max(H[i][j-1] - gap_open, E[i][j-1] - gap_extend)   (gap in the query),
//   F[i][j] = max(H[i-1][j] - gap_open, F[i-1][j] - gap_extend)   (gap in the target),
//   so a gap of length k costs gap_open + (k-1) * gap_extend.
//
// The kernels keep HG = H - gap_open instead of H: E then needs a single add-and-max from
// it (E' = max(E - ge, HG)), and the diagonal term H_diag + sub becomes HG_diag +
// (sub + gap_open), so the query profile stores sub + gap_open. Five operations per cell,
// only one of them on the dependency chain down the rows; in the forward kernel one of them
// is a plain add on the FMA pipe, as is the add of U = T - go (inter_task.cu, "Adds on the
// FMA pipe", "E a column ahead").
//
// This file compiles three ways: NVRTC (through cupy.RawModule), nvcc (tests), and plain
// g++ with host_emulation.h (tests on machines without a GPU).
#pragma once

#include "tie_rule.cuh"

namespace swdask {

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef long long i64;

#define SW_INT_MAX 0x7fffffff
#define SW_FULL_MASK 0xffffffffu

// Dynamic shared memory as a typed pointer (the host emulation supplies its own).
#ifndef SW_DYNAMIC_SHARED
#define SW_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char sw_dynamic_smem[]; \
  T* name = reinterpret_cast<T*>(sw_dynamic_smem)
#endif

// N consecutive 32-bit profile entries as they are, one 16-byte load per four.
template <int N, class P>
__device__ __forceinline__ void load_words(const P* at, u32 (&s)[N]) {
  static_assert(N % 4 == 0, "rows per load must be a multiple of 4");
#pragma unroll
  for (int k = 0; k < N; k += 4) {
    const uint4 w = *reinterpret_cast<const uint4*>(at + k);
    s[k + 0] = w.x;
    s[k + 1] = w.y;
    s[k + 2] = w.z;
    s[k + 3] = w.w;
  }
}

// Two targets per 32-bit register, one signed 16-bit lane each (low lane: the first target of
// the pair). On sm_90 every operation below is one DPX instruction; on older GPUs the CUDA
// headers expand them into __vadd2/__vmaxs2 SIMD sequences (the non-DPX path).
struct Lanes16 {
  typedef u32 reg_t;
  typedef int prof_t;
  static constexpr int lanes = 2;
  static constexpr bool query_lanes = false;  // lanes hold targets (see Queries16)
  typedef u16 code_t;  // a column's codes as the forward kernel reads them: both targets'
  // "minus infinity" for E/F: any value <= -gap_open works (H >= 0 absorbs it), and it must
  // stay above -32768 after subtracting gap_extend (the host checks gap costs < 8192).
  static constexpr int neg = -16384;
  static __device__ __forceinline__ reg_t splat(int v) {
    return (u32)(u16)(short)v * 0x10001u;
  }
  // Lane 0 (low) = low, lane 1 = high.
  static __device__ __forceinline__ reg_t pack(int low, int high) {
    return (u32)(u16)(short)low | ((u32)(u16)(short)high << 16);
  }
  static __device__ __forceinline__ reg_t add_max(reg_t a, reg_t b, reg_t c) {
    return __viaddmax_s16x2(a, b, c);  // max(a + b, c) per lane
  }
  static __device__ __forceinline__ reg_t add_max_relu(reg_t a, reg_t b, reg_t c) {
    return __viaddmax_s16x2_relu(a, b, c);  // max(a + b, c, 0)
  }
  static __device__ __forceinline__ reg_t max3(reg_t a, reg_t b, reg_t c) {
    return __vimax3_s16x2(a, b, c);
  }
  static __device__ __forceinline__ reg_t max2(reg_t a, reg_t b) { return __vmaxs2(a, b); }
  static __device__ __forceinline__ int lane(reg_t x, int k) {
    return (int)(short)(u16)(k ? (x >> 16) : (x & 0xffffu));
  }
  // Bit k set where lane k of `after` differs from `before` (after = max(before, ...): where
  // it went up). (Not __vibmax_s16x2: its inline PTX in CUDA 13.0's headers writes the
  // result before it reads its first operand again, without an early-clobber constraint, so
  // when the compiler gives both one register, as for best = max(best, ...), the predicates
  // come out always true. Seen on an H200: end cells that missed an improvement.)
  static __device__ __forceinline__ u32 improved_lanes(reg_t before, reg_t after) {
    const u32 changed = after ^ before;
    return ((changed & 0xffffu) ? 1u : 0u) | ((changed >> 16) ? 2u : 0u);
  }
  static __device__ __forceinline__ bool lane_equal(reg_t a, reg_t b, int k) {
    return ((a ^ b) & (k ? 0xffff0000u : 0x0000ffffu)) == 0;
  }
  // Scores of N consecutive rows against the two targets' current letters: each letter's
  // entries are int32 (sign-extended), and lane 0's plus lane 1's times 65536 puts them
  // side by side as a multiply-add on the FMA pipe (a byte permute of int16 entries was
  // one ALU instruction per row; inter_task.cu, "Profile words by multiply-add"). Where
  // lane 0's entry is negative the word borrows one from lane 1, which HG_diag's add
  // carries back ("E a column ahead").
  template <int N>
  static __device__ __forceinline__ void load_scores(const prof_t* pa, const prof_t* pb,
                                                     reg_t (&s)[N]) {
    u32 wa[N], wb[N];
    load_words<N>(pa, wa);
    load_words<N>(pb, wb);
#pragma unroll
    for (int k = 0; k < N; ++k) s[k] = wb[k] * 0x10000u + wa[k];
  }
};

// (a & ~mask) | (b & mask) as one three-input logic instruction. Written in C++, the
// forward kernel's per-step select of the query lanes' fresh rows compiled to seven
// (docs/notes/gpu-inter-task.md, the query lanes' own instructions).
__device__ __forceinline__ u32 select_bits(u32 a, u32 b, u32 mask) {
#ifdef SWDASK_HOST_EMULATION  // inline PTX does not go through g++
  return (a & ~mask) | (b & mask);
#else
  u32 d;
  asm("lop3.b32 %0, %1, %2, %3, 0xD8;" : "=r"(d) : "r"(a), "r"(b), "r"(mask));
  return d;
#endif
}

// The row above a pass, two words of one column, loaded through L1 (as __ldca) with PTX's
// L2::256B prefetch size: a miss in L2 fetches the whole 256-byte line, 32 columns of one
// target, not the 32-byte sector of four. The rows above were written a pass earlier, which
// for a long stack is long gone from L2 (16 bytes per column of every target pair: over
// 1.8 GB for sp500k's 226 million letters, against 50 MB of L2). With this, W1 in stacks
// ran faster; the same loop without it, every step waiting on these loads, slower still
// (docs/notes/gpu-inter-task.md, the query lanes' own instructions).
__device__ __forceinline__ uint2 load_row_above(const uint2* at) {
#ifdef SWDASK_HOST_EMULATION  // inline PTX does not go through g++
  return *at;
#else
  // volatile, with a memory clobber: the rows are rewritten in place every pass, so a load
  // must stay behind the pass's barrier and never merge with another pass's (NVRTC 13.0
  // compiles the query lanes' kernels to the same SASS as without)
  uint2 v;
  asm volatile("ld.global.ca.L2::256B.v2.u32 {%0, %1}, [%2];"
               : "=r"(v.x), "=r"(v.y)
               : "l"(at)
               : "memory");
  return v;
#endif
}

// x, as a value the compiler cannot see through: it keeps it in a register instead of
// rebuilding it from the kernel's parameters where it is used.
__device__ __forceinline__ u32 opaque(u32 x) {
#ifndef SWDASK_HOST_EMULATION  // inline PTX does not go through g++
  asm("mov.b32 %0, %0;" : "+r"(x));
#endif
  return x;
}

// A target's code through L1's coherent path (as __ldca), zero-extended into a 32-bit
// register by the load itself (__ldca of a byte compiled to the load and an AND).
__device__ __forceinline__ u32 load_code(const u8* at) {
#ifdef SWDASK_HOST_EMULATION  // inline PTX does not go through g++
  return *at;
#else
  u32 v;
  asm("ld.global.ca.u8 %0, [%1];" : "=r"(v) : "l"(at));
  return v;
#endif
}

// Two queries per 32-bit register against one target: Lanes16's arithmetic, with the lanes
// holding two queries' rows (low lane: the first query stream of a stack, see inter_task.cu,
// "Query lanes"). The profile stores both queries' scores of a row against one letter side by
// side (a uint32 per row), so a thread reads its rows' scores as they are: one 16-byte load
// per four rows, half of Lanes16's.
struct Queries16 : Lanes16 {
  typedef u32 prof_t;
  static constexpr bool query_lanes = true;
  typedef u8 code_t;  // its own target's code: one byte of the pair's column
  template <int N>
  static __device__ __forceinline__ void load_scores(const prof_t* pa, const prof_t*,
                                                     reg_t (&s)[N]) {
    load_words<N>(pa, s);
  }
};

// One target per 32-bit register: the exact path (16-bit overflow recompute, scoring schemes
// too large for 16 bits). Scores stay far below 2**29 (the host checks), so nothing wraps.
struct Lanes32 {
  typedef u32 reg_t;
  typedef int prof_t;
  static constexpr int lanes = 1;
  static constexpr bool query_lanes = false;
  typedef u16 code_t;
  static constexpr int neg = -(1 << 29);
  static __device__ __forceinline__ reg_t splat(int v) { return (u32)v; }
  static __device__ __forceinline__ reg_t pack(int low, int) { return (u32)low; }
  static __device__ __forceinline__ reg_t add_max(reg_t a, reg_t b, reg_t c) {
    return (u32)__viaddmax_s32((int)a, (int)b, (int)c);
  }
  static __device__ __forceinline__ reg_t add_max_relu(reg_t a, reg_t b, reg_t c) {
    return (u32)__viaddmax_s32_relu((int)a, (int)b, (int)c);
  }
  static __device__ __forceinline__ reg_t max3(reg_t a, reg_t b, reg_t c) {
    return (u32)__vimax3_s32((int)a, (int)b, (int)c);
  }
  static __device__ __forceinline__ reg_t max2(reg_t a, reg_t b) {
    return (u32)max((int)a, (int)b);
  }
  static __device__ __forceinline__ int lane(reg_t x, int) { return (int)x; }
  static __device__ __forceinline__ u32 improved_lanes(reg_t before, reg_t after) {
    return after != before ? 1u : 0u;
  }
  static __device__ __forceinline__ bool lane_equal(reg_t a, reg_t b, int) { return a == b; }
  template <int N>
  static __device__ __forceinline__ void load_scores(const prof_t* pa, const prof_t*,
                                                     reg_t (&s)[N]) {
    load_words<N>(pa, s);
  }
};

// Maximum of x[LO .. LO+N) with three-input max instructions, N / 2 of them (rounded down,
// the fewest possible; one two-input max where N is even): split into parts of A, A and
// N - 2A values, A odd (an odd part reduces by max3 alone), in a balanced tree.
template <int N>
__host__ __device__ constexpr int odd_third() {
  return (N / 3) % 2 ? N / 3 : (N / 3 > 1 ? N / 3 - 1 : 1);
}

template <class V, int LO, int N>
struct TreeMax {
  static __device__ __forceinline__ typename V::reg_t run(const typename V::reg_t* x) {
    if constexpr (N == 1) {
      return x[LO];
    } else if constexpr (N == 2) {
      return V::max2(x[LO], x[LO + 1]);
    } else if constexpr (N == 3) {
      return V::max3(x[LO], x[LO + 1], x[LO + 2]);
    } else {
      constexpr int A = odd_third<N>();
      return V::max3(TreeMax<V, LO, A>::run(x), TreeMax<V, LO + A, A>::run(x),
                     TreeMax<V, LO + 2 * A, N - 2 * A>::run(x));
    }
  }
};

}  // namespace swdask
