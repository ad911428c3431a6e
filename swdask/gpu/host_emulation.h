// Host emulation of the few CUDA features the swdask kernels use, so that the real kernel
// sources run under g++ on machines without a GPU (tests; development).
//
// Model: a launch runs its blocks one after another; the threads of a block are fibers
// (ucontext) on one OS thread, switched only at barriers (__syncthreads, and the warp
// shuffles/votes, which exchange values through a barrier among the threads of their mask).
// That is enough for kernels whose threads meet at the same barriers in the same order,
// as the CUDA model requires anyway. Arithmetic intrinsics follow the CUDA documentation
// (16-bit lanes wrap, as the hardware does). Nothing here is fast; it is for correctness.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#define SWDASK_HOST_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)

struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct uint3 { unsigned x, y, z; };
struct int2 { int x, y; };
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

inline uint3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {

struct Fiber {
  ucontext_t context;
  std::vector<unsigned char> stack;
  bool done = false;
  unsigned thread = 0;
};

// A barrier among `count` fibers: arrivals wait until the generation moves on.
struct Barrier {
  unsigned count = 0, arrived = 0;
  unsigned long long generation = 0;
};

struct Block {
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  unsigned current = 0;
  Barrier block_barrier;
  // per warp: barriers keyed by the shuffle mask, and the exchange slots
  std::vector<std::map<unsigned, Barrier>> warp_barriers;
  std::vector<std::vector<unsigned long long>> slots;
  std::vector<unsigned char> shared;
};

inline Block* g_block = nullptr;

inline void yield() {
  Fiber& me = g_block->fibers[g_block->current];
  swapcontext(&me.context, &g_block->scheduler);
}

inline void wait(Barrier& b) {
  const unsigned long long generation = b.generation;
  if (++b.arrived == b.count) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation) yield();
}

inline Barrier& warp_barrier(unsigned mask) {
  auto& table = g_block->warp_barriers[threadIdx.x / 32];
  Barrier& b = table[mask];
  if (b.count == 0) b.count = (unsigned)__builtin_popcount(mask);
  return b;
}

// Every lane of `mask` posts `value`; each gets what the lanes of its warp posted, by lane
// (the lanes outside `mask`: stale). Shuffles, votes and reductions are built on it.
inline std::array<unsigned long long, 32> warp_values(unsigned mask, unsigned long long value) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  Barrier& b = warp_barrier(mask);
  auto& slots = g_block->slots[warp];
  slots[lane] = value;
  wait(b);
  std::array<unsigned long long, 32> out;
  std::copy(slots.begin(), slots.end(), out.begin());
  wait(b);
  return out;
}

template <class T>
T exchange(unsigned mask, T value, unsigned source_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  unsigned long long raw = 0;
  std::memcpy(&raw, &value, sizeof(T));
  const unsigned long long got = warp_values(mask, raw)[source_lane];
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}

inline unsigned char* dynamic_shared() { return g_block->shared.data(); }

template <class... A, std::size_t... I>
void call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
  kernel(*reinterpret_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(args[I])...);
}

template <class... A>
struct Entry {
  static inline void (*kernel)(A...) = nullptr;
  static inline void** args = nullptr;
  static void run() {
    call(kernel, args, std::index_sequence_for<A...>{});
    g_block->fibers[g_block->current].done = true;
    // falls back to the scheduler through uc_link
  }
};

template <class... A>
void launch(void (*kernel)(A...), unsigned grid, unsigned block, std::size_t shared_bytes,
            void** args) {
  gridDim = uint3{grid, 1, 1};
  blockDim = uint3{block, 1, 1};
  Entry<A...>::kernel = kernel;
  Entry<A...>::args = args;
  for (unsigned b = 0; b < grid; ++b) {
    Block state;
    g_block = &state;
    state.fibers.resize(block);
    state.block_barrier.count = block;
    const unsigned warps = (block + 31) / 32;
    state.warp_barriers.resize(warps);
    state.slots.assign(warps, std::vector<unsigned long long>(32, 0));
    state.shared.assign(shared_bytes + 16, 0);
    for (unsigned t = 0; t < block; ++t) {
      Fiber& f = state.fibers[t];
      f.thread = t;
      f.stack.resize(1 << 18);
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack.data();
      f.context.uc_stack.ss_size = f.stack.size();
      f.context.uc_link = &state.scheduler;
      makecontext(&f.context, (void (*)()) & Entry<A...>::run, 0);
    }
    bool any_left = true;
    while (any_left) {
      any_left = false;
      for (unsigned t = 0; t < block; ++t) {
        Fiber& f = state.fibers[t];
        if (f.done) continue;
        any_left = true;
        state.current = t;
        threadIdx = uint3{t, 0, 0};
        blockIdx = uint3{b, 0, 0};
        swapcontext(&state.scheduler, &f.context);
      }
    }
    g_block = nullptr;
  }
}

}  // namespace emu

#define SW_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(emu::dynamic_shared())

inline void __syncthreads() { emu::wait(emu::g_block->block_barrier); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::wait(emu::warp_barrier(mask)); }
// Memory is one address space with no caches to bypass, and fibers switch only at barriers
// (or a poll's __nanosleep), so a read-modify-write is atomic and every store visible.
inline void __threadfence() {}
inline void __nanosleep(unsigned) { emu::yield(); }
// Cached loads (L2 only): a plain read here.
template <class T>
inline T __ldcg(const T* p) { return *p; }
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
inline int atomicMin(int* p, int v) {
  const int old = *p;
  *p = std::min(old, v);
  return old;
}
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = std::max(old, v);
  return old;
}

template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned segment = lane & ~(unsigned)(width - 1);
  const unsigned source = (lane - segment >= delta) ? lane - delta : lane;
  return emu::exchange(mask, v, source);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned segment = lane & ~(unsigned)(width - 1);
  const unsigned source = (lane - segment + delta < (unsigned)width) ? lane + delta : lane;
  return emu::exchange(mask, v, source);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const unsigned lane = threadIdx.x % 32;
  unsigned source = lane ^ (unsigned)lane_mask;
  if ((source & ~(unsigned)(width - 1)) != (lane & ~(unsigned)(width - 1))) source = lane;
  return emu::exchange(mask, v, source);
}
template <class T>
T __shfl_sync(unsigned mask, T v, int source_lane, int width = 32) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned segment = lane & ~(unsigned)(width - 1);
  return emu::exchange(mask, v, segment + ((unsigned)source_lane % (unsigned)width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  const auto posted = emu::warp_values(mask, predicate ? 1 : 0);
  unsigned bits = 0;
  for (unsigned k = 0; k < 32; ++k)
    if ((mask >> k & 1) && posted[k]) bits |= 1u << k;
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == mask;
}
namespace emu {
// The mask's threads' values reduced by `pick` (a min or a max of two ints).
template <class Pick>
int reduce(unsigned mask, int value, int start, Pick pick) {
  const auto posted = warp_values(mask, (unsigned)value);
  int best = start;
  for (unsigned k = 0; k < 32; ++k)
    if (mask >> k & 1) best = pick(best, (int)(unsigned)posted[k]);
  return best;
}
}  // namespace emu
inline int __reduce_min_sync(unsigned mask, int value) {
  return emu::reduce(mask, value, INT32_MAX, [](int a, int b) { return std::min(a, b); });
}
inline int __reduce_max_sync(unsigned mask, int value) {
  return emu::reduce(mask, value, INT32_MIN, [](int a, int b) { return std::max(a, b); });
}

inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
using std::max;
using std::min;

namespace emu {
// PTX prmt.b32 d, a, b, c (default mode): byte k of d is byte (c >> 4k) & 7 of the eight bytes
// of b:a, or, when bit 3 of that selector nibble is set, that byte's sign bit in all 8 bits.
inline unsigned prmt(unsigned a, unsigned b, unsigned c) {
  const unsigned long long both = (unsigned long long)a | ((unsigned long long)b << 32);
  unsigned out = 0;
  for (int k = 0; k < 4; ++k) {
    const unsigned selector = (c >> (4 * k)) & 0xfu;
    unsigned byte = (unsigned)((both >> (8 * (selector & 7u))) & 0xffu);
    if (selector & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
    out |= byte << (8 * k);
  }
  return out;
}
}  // namespace emu

// the selector's bit 3 (sign replication) is ignored here, as by CUDA's __byte_perm
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  return emu::prmt(x, y, s & 0x7777u);
}

namespace emu {
inline short lo16(unsigned x) { return (short)(unsigned short)(x & 0xffffu); }
inline short hi16(unsigned x) { return (short)(unsigned short)(x >> 16); }
inline unsigned pack16(int lo, int hi) {
  return (unsigned)(unsigned short)(short)lo | ((unsigned)(unsigned short)(short)hi << 16);
}
// 16-bit wrap-around add, as add.s16x2 does
inline int wrap16(int v) { return (int)(short)(unsigned short)(v & 0xffff); }
}  // namespace emu

inline unsigned __vmaxs2(unsigned a, unsigned b) {
  using namespace emu;
  return pack16(std::max(lo16(a), lo16(b)), std::max(hi16(a), hi16(b)));
}
inline unsigned __viaddmax_s16x2(unsigned a, unsigned b, unsigned c) {
  using namespace emu;
  return pack16(std::max(wrap16(lo16(a) + lo16(b)), (int)lo16(c)),
                std::max(wrap16(hi16(a) + hi16(b)), (int)hi16(c)));
}
inline unsigned __viaddmax_s16x2_relu(unsigned a, unsigned b, unsigned c) {
  using namespace emu;
  return pack16(std::max({wrap16(lo16(a) + lo16(b)), (int)lo16(c), 0}),
                std::max({wrap16(hi16(a) + hi16(b)), (int)hi16(c), 0}));
}
inline unsigned __vimax3_s16x2(unsigned a, unsigned b, unsigned c) {
  using namespace emu;
  return pack16(std::max({lo16(a), lo16(b), lo16(c)}), std::max({hi16(a), hi16(b), hi16(c)}));
}
inline int __viaddmax_s32(int a, int b, int c) { return std::max(a + b, c); }
inline int __viaddmax_s32_relu(int a, int b, int c) { return std::max({a + b, c, 0}); }
inline int __vimax3_s32(int a, int b, int c) { return std::max({a, b, c}); }
