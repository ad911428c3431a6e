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
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
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

template <class T>
T exchange(unsigned mask, T value, unsigned source_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  Barrier& b = warp_barrier(mask);
  unsigned long long raw = 0;
  std::memcpy(&raw, &value, sizeof(T));
  g_block->slots[warp][lane] = raw;
  wait(b);
  const unsigned long long got = g_block->slots[warp][source_lane];
  wait(b);
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

template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned segment = lane & ~(unsigned)(width - 1);
  const unsigned source = (lane - segment >= delta) ? lane - delta : lane;
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
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emu::Barrier& b = emu::warp_barrier(mask);
  emu::g_block->slots[warp][lane] = predicate ? 1 : 0;
  emu::wait(b);
  unsigned bits = 0;
  for (unsigned k = 0; k < 32; ++k)
    if ((mask >> k & 1) && emu::g_block->slots[warp][k]) bits |= 1u << k;
  emu::wait(b);
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }

inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
template <class T>
inline T __ldg(const T* p) { return *p; }
using std::max;
using std::min;

inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long both = (unsigned long long)x | ((unsigned long long)y << 32);
  unsigned out = 0;
  for (int k = 0; k < 4; ++k) {
    const unsigned selector = (s >> (4 * k)) & 7u;
    out |= (unsigned)((both >> (8 * selector)) & 0xffu) << (8 * k);
  }
  return out;
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
inline unsigned __vimax_s16x2_relu(unsigned a, unsigned b) {
  using namespace emu;
  return pack16(std::max({(int)lo16(a), (int)lo16(b), 0}), std::max({(int)hi16(a), (int)hi16(b), 0}));
}
inline unsigned __vimax3_s16x2(unsigned a, unsigned b, unsigned c) {
  using namespace emu;
  return pack16(std::max({lo16(a), lo16(b), lo16(c)}), std::max({hi16(a), hi16(b), hi16(c)}));
}
inline unsigned __vibmax_s16x2(unsigned a, unsigned b, bool* pred_hi, bool* pred_lo) {
  using namespace emu;
  *pred_hi = hi16(a) >= hi16(b);
  *pred_lo = lo16(a) >= lo16(b);
  return __vmaxs2(a, b);
}
inline int __viaddmax_s32(int a, int b, int c) { return std::max(a + b, c); }
inline int __viaddmax_s32_relu(int a, int b, int c) { return std::max({a + b, c, 0}); }
inline int __vimax_s32_relu(int a, int b) { return std::max({a, b, 0}); }
inline int __vimax3_s32(int a, int b, int c) { return std::max({a, b, c}); }
inline int __vibmax_s32(int a, int b, bool* pred) {
  *pred = a >= b;
  return std::max(a, b);
}
