// Joint propagation on CUDA: the Vulkan shaders (shaders/joints_*.comp) with the same math
// (shaders/shared/joint_propagation_io.h): a small forest in one launch; any other forward in one single-pass scan of all paths
// then one elementwise launch per later generation, and any other backward in one single-pass scan per generation;
// launched in order on the exec's stream, each a programmatic dependent of the one before.
#include <algorithm>

#include "check.h"
#include "launch.h"
#include "ops/joint_propagation_backend.h"

namespace armature::cuda {
namespace {

// A tile's threads and each one's elements, as the shaders' (JOINTS_TILE in all); the block scans by warp shuffles.
// The backward's scans of many tiles take twice the threads a tile, of few half (jointsTileLength).
constexpr int kScanThreads = JOINTS_THREADS, kWideScanThreads = JOINTS_WIDE_TILE / JOINTS_ITEMS;
constexpr int kNarrowScanThreads = JOINTS_NARROW_TILE / JOINTS_ITEMS;
constexpr int kScanItems = JOINTS_ITEMS;

struct Tables {
  const uint32_t* order;
  const int32_t* parents;
  const uint32_t* lightStart;
  const uint32_t* lightChildren;
  const int32_t* topParents;
};

__device__ __forceinline__ void copy12(const float* from, float* to) {
#pragma unroll
  for (int k = 0; k < 12; ++k) to[k] = from[k];
}

// A transform in global memory as three 16-byte accesses: OpChecks holds every CUDA tensor to 16 bytes, and a
// transform is 48.
__device__ __forceinline__ void load12(const float* from, float* m) {
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    const float4 v = reinterpret_cast<const float4*>(from)[k];
    m[4 * k] = v.x, m[4 * k + 1] = v.y, m[4 * k + 2] = v.z, m[4 * k + 3] = v.w;
  }
}

__device__ __forceinline__ void store12(const float* m, float* to) {
#pragma unroll
  for (int k = 0; k < 3; ++k)
    reinterpret_cast<float4*>(to)[k] = make_float4(m[4 * k], m[4 * k + 1], m[4 * k + 2], m[4 * k + 3]);
}

// `rows` 16-byte rows from `from` to `to`, over the block's threads: coalesced.
__device__ __forceinline__ void copyRows(const float* from, float* to, uint32_t rows) {
  for (uint32_t x = threadIdx.x; x < rows; x += blockDim.x)
    reinterpret_cast<float4*>(to)[x] = reinterpret_cast<const float4*>(from)[x];
}

__device__ __forceinline__ void identity12(float* m) {
#pragma unroll
  for (int k = 0; k < 12; ++k) m[k] = (k == 0 || k == 5 || k == 10) ? 1.0f : 0.0f;
}

__device__ __forceinline__ void zero12(float* m) {
#pragma unroll
  for (int k = 0; k < 12; ++k) m[k] = 0.0f;
}

struct Locals {
  const float* a;  // rotations (B,N,4) or affine (B,N,12)
  const float* b;  // translations (B,N,3)
  bool affine;
  __device__ void at(size_t i, float m[12]) const {
    if (affine) {
      load12(&a[i * 12], m);
    } else {
      const float4 q = reinterpret_cast<const float4*>(a)[i];
      jointRigid(q.x, q.y, q.z, q.w, b[i * 3], b[i * 3 + 1], b[i * 3 + 2], m);
    }
  }
};

// A scan state: the forward's uses `product` alone; the backward's map is c -> u + c·productᵀ.
struct State {
  uint32_t flag;
  float u[12], product[12];
};

template <bool Backward>
__device__ __forceinline__ void combine(const State& x, const State& y, State& out) {
  if constexpr (Backward) {
    jointsCombineBackward(x.u, x.product, y.flag, y.u, y.product, out.u, out.product);
  } else {
    jointsCombineForward(x.product, y.flag, y.product, out.product);
  }
  out.flag = x.flag | y.flag;
}

__device__ __forceinline__ void identityState(State& s) {
  s.flag = 0;
  zero12(s.u);
  identity12(s.product);
}

// Every word of `s` through `shuffle` (one of the warp's shuffles).
template <bool Backward, typename Shuffle>
__device__ __forceinline__ State shuffleState(const State& s, Shuffle shuffle) {
  State r;
  r.flag = shuffle(s.flag);
#pragma unroll
  for (int k = 0; k < 12; ++k) {
    if constexpr (Backward) r.u[k] = shuffle(s.u[k]);
    r.product[k] = shuffle(s.product[k]);
  }
  return r;
}

// `s` of the lane `delta` below (a lane below delta gets its own back).
template <bool Backward>
__device__ __forceinline__ State shuffleUp(const State& s, unsigned delta) {
  return shuffleState<Backward>(s, [delta](auto v) { return __shfl_up_sync(~0u, v, delta); });
}

// Lane `from`'s `s`.
template <bool Backward>
__device__ __forceinline__ State shuffleFrom(const State& s, int from) {
  return shuffleState<Backward>(s, [from](auto v) { return __shfl_sync(~0u, v, from); });
}

// The warp's inclusive scan of `mine`, in registers, over its first `lanes` lanes at least (the same for the whole
// warp; each lane's prefix from lane `lanes` - 1's on needs only that many steps).
template <bool Backward>
__device__ __forceinline__ void scanWarp(State& mine, unsigned lane, unsigned lanes = 32) {
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    if (offset >= lanes) break;
    const State x = shuffleUp<Backward>(mine, offset);
    if (lane >= offset) {
      State y;
      combine<Backward>(x, mine, y);
      mine = y;
    }
  }
}

// The block's scan of `mine`: each warp's by shuffles, then the warps' totals by the first warp, so a tile waits at
// three barriers. Returns the exclusive prefix and the block's total.
template <bool Backward, int Threads>
__device__ void scanBlock(State mine, State& exclusive, State& total) {
  constexpr unsigned kWarps = Threads / 32;
  static_assert(kWarps <= 32 && Threads % 32 == 0, "one warp scans the warps' totals");
  __shared__ State sWarp[kWarps];  // each warp's total, then what comes before the warp
  __shared__ State sTotal;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  scanWarp<Backward>(mine, lane);
  const State below = shuffleUp<Backward>(mine, 1);  // the lane below's inclusive prefix (lane 0: unused)
  __syncthreads();                                   // the previous tile's reads are done
  if (lane == 31) sWarp[warp] = mine;
  __syncthreads();
  if (warp == 0) {
    State inclusive;
    if (lane < kWarps) {
      inclusive = sWarp[lane];
    } else {
      identityState(inclusive);
    }
    scanWarp<Backward>(inclusive, lane, kWarps);
    State before = shuffleUp<Backward>(inclusive, 1);
    if (lane == 0) identityState(before);
    if (lane < kWarps) sWarp[lane] = before;
    if (lane == kWarps - 1) sTotal = inclusive;
  }
  __syncthreads();
  if (lane == 0) {
    exclusive = sWarp[warp];
  } else {
    combine<Backward>(sWarp[warp], below, exclusive);
  }
  total = sTotal;
}

// A tile's record in the scratch: its aggregate (REDUCE, SINGLE), or its carry (CARRY).
__device__ void readTile(const float* scratch, const JointsPush& p, uint32_t tile, State& s) {
  const float* o = scratch + p.recordStart + size_t(tile) * JOINTS_STATE_WORDS;
  s.flag = __ldcg(o) != 0.0f ? 1u : 0u;  // past L1: another block wrote it during this launch
#pragma unroll
  for (int k = 0; k < 12; ++k) s.u[k] = __ldcg(o + 1 + k), s.product[k] = __ldcg(o + 13 + k);
}

__device__ void writeTile(float* scratch, const JointsPush& p, uint32_t tile, const State& s) {
  float* o = scratch + p.recordStart + size_t(tile) * JOINTS_STATE_WORDS;
  o[0] = float(s.flag);
  copy12(s.u, o + 1);
  copy12(s.product, o + 13);
}

// SINGLE, by the block's first warp: publishes the tile's aggregate, then combines its predecessors' back to the
// first that starts a segment, 32 at a time: each lane waits for one predecessor's record, the nearest flagged one
// bounds the window, and a warp scan combines the window in a fixed association. Never taking a predecessor's
// finished prefix keeps the products' association fixed: the same bits on every run. `exclusive` is lane 0's.
template <bool Backward>
__device__ void lookBack(float* scratch, const JointsPush& p, uint32_t tile, const State& aggregate, State& exclusive) {
  uint32_t* status = reinterpret_cast<uint32_t*>(scratch) + p.statusStart;
  const unsigned lane = threadIdx.x & 31u;
  if (lane == 0) {
    writeTile(scratch, p, tile, aggregate);
    __threadfence();
    atomicExch(&status[tile], JOINTS_HAS_AGGREGATE);
  }
  State run;
  identityState(run);
  for (uint32_t end = tile; end > 0; end = end > 32 ? end - 32 : 0) {
    const int before = int(end) - 32 + int(lane);  // lane 31 reads the nearest predecessor
    const float* record = scratch + p.recordStart + size_t(max(before, 0)) * JOINTS_STATE_WORDS;
    bool flagged = false;
    if (before >= 0) {
      while (atomicAdd(&status[before], 0u) == 0u) {
      }
      __threadfence();
      flagged = __ldcg(record) != 0.0f;
    }
    const unsigned starts = __ballot_sync(~0u, flagged);
    const int first = starts ? 31 - __clz(starts) : 0;  // the window's lanes from here on count
    State x;
    identityState(x);
    if (before >= 0 && int(lane) >= first) readTile(scratch, p, uint32_t(before), x);
    scanWarp<Backward>(x, lane, 32u - unsigned(first));  // lane 31 combines the window
    State y;
    combine<Backward>(shuffleFrom<Backward>(x, 31), run, y);
    run = y;
    if (starts) break;
  }
  exclusive = run;
}

// CARRY (one block): the tiles' aggregates become each tile's exclusive prefix, in place.
template <bool Backward, int Threads>
__device__ void carryTiles(float* scratch, const JointsPush& p) {
  State run, next;
  identityState(run);
  for (uint32_t base = 0; base < p.tiles; base += Threads) {
    const uint32_t tile = base + threadIdx.x;
    State mine, exclusive, total;
    identityState(mine);
    if (tile < p.tiles) readTile(scratch, p, tile, mine);
    scanBlock<Backward, Threads>(mine, exclusive, total);
    if (tile < p.tiles) {
      combine<Backward>(run, exclusive, next);
      writeTile(scratch, p, tile, next);
    }
    combine<Backward>(run, total, next);
    run = next;
  }
}

// An invocation's elements, loaded together (their loads overlap) and kept in registers for the scan's two walks.
struct ForwardItems {
  static constexpr bool kAhead = false;  // launched first in its call
  float value[kScanItems][12];
  uint32_t flag[kScanItems], joint[kScanItems];
  bool placed[kScanItems];  // on a root's path: its path product is its global
  size_t index[kScanItems];
};

struct Forward {
  template <int Threads>
  using Items = ForwardItems;
  Tables t;
  Locals locals;
  const float* inverseBind;
  float* globals;
  float* skinning;
  float* positions;
  float* scratch;
  JointsPush p;

  // Element e of the sequence (every path, top first): its flag (a path's top) and value (its local).
  __device__ void load(uint32_t e, ForwardItems& it, int n) const {
    const uint32_t b = e / p.genLength, position = p.genStart + e % p.genLength, o = t.order[position];
    const uint32_t j = o & ~JOINTS_HEAD;
    const size_t i = size_t(b) * p.joints + j;
    it.joint[n] = j, it.index[n] = i, it.flag[n] = (o & JOINTS_HEAD) ? 1u : 0u;
    it.placed[n] = t.topParents[position] < 0;
    locals.at(i, it.value[n]);
  }

  // Joint j's inverse bind, where the skinning matrices are asked for (else ib is left unset: store ignores it).
  __device__ void inverseBindOf(uint32_t j, float ib[12]) const {
    if (p.flags & JOINTS_SKINNING) load12(&inverseBind[size_t(j) * 12], ib);
  }

  // Joint i's global g: stored, with the outputs it makes (ib: inverseBindOf the joint).
  __device__ void store(size_t i, const float g[12], const float ib[12]) const {
    store12(g, &globals[i * 12]);
    if (p.flags & JOINTS_POSITIONS)
      for (int r = 0; r < 3; ++r) positions[i * 3 + r] = g[r * 4 + 3];
    if (p.flags & JOINTS_SKINNING) {
      float s[12];
      jointCompose(g, ib, s);
      store12(s, &skinning[i * 12]);
    }
  }

  __device__ void gather(ForwardItems&, int) const {}

  __device__ void aggregate(const ForwardItems& it, int count, State& s) const {
    identityState(s);
    float y[12];
#pragma unroll
    for (int n = 0; n < kScanItems; ++n) {
      if (n < count) {
        jointsCombineForward(s.product, it.flag[n], it.value[n], y);
        copy12(y, s.product);
        s.flag |= it.flag[n];
      }
    }
  }

  // Each element's path product: its global on a root's path, else kept in the globals for placeKernel.
  __device__ void apply(const State& before, const ForwardItems& it, int count) const {
    float g[12], y[12];
    copy12(before.product, g);
#pragma unroll
    for (int n = 0; n < kScanItems; ++n) {
      if (n >= count) break;
      jointsCombineForward(g, it.flag[n], it.value[n], y);
      copy12(y, g);
      if (it.placed[n]) {
        float ib[12];
        inverseBindOf(it.joint[n], ib);
        store(it.index[n], g, ib);
      } else {
        store12(g, &globals[it.index[n] * 12]);
      }
    }
  }
};

struct Grads {
  const float* globals;
  const float* skinning;
  const float* positions;
};

// With `Ahead`, also each element's parent's global and where its light children are, loaded with the rest before
// the previous launch's results are ready: the wide tiles' block has no registers to spare for them.
template <bool Ahead>
struct BackwardItems {
  static constexpr bool kAhead = Ahead;
  static constexpr int kAheadItems = Ahead ? kScanItems : 1;
  float a[kScanItems][12], local[kScanItems][12], parentGlobal[kAheadItems][12];
  uint32_t flag[kScanItems], joint[kScanItems];
  bool top[kScanItems];                                                              // its path's top
  uint32_t lightFirst[kAheadItems], lightEnd[kAheadItems], firstLight[kAheadItems];  // its light children (CSR)
  size_t index[kScanItems], base[kScanItems];
};

struct Backward {
  template <int Threads>
  using Items = BackwardItems<Threads != kWideScanThreads>;
  Tables t;
  Locals locals;
  const float* inverseBind;
  const float* globals;
  Grads grads;
  float* adjoint;
  float* gradA;
  float* gradB;
  float* scratch;
  JointsPush p;

  // Element e of the sequence taken from its end (a path's bottom first): its flag (a path's bottom), its a (its
  // own gradient, until gather adds its light children's messages) and its local.
  template <typename Items>
  __device__ void load(uint32_t e, Items& it, int n) const {
    const uint32_t v = p.batch * p.genLength - 1u - e, position = v % p.genLength;
    const size_t base = size_t(v / p.genLength) * p.joints;
    const uint32_t o = t.order[p.genStart + position], j = o & ~JOINTS_HEAD;
    const size_t i = base + j;
    it.joint[n] = j, it.index[n] = i, it.base[n] = base, it.top[n] = (o & JOINTS_HEAD) != 0;
    it.flag[n] = (position + 1 == p.genLength || (t.order[p.genStart + position + 1] & JOINTS_HEAD)) ? 1u : 0u;
    float* a = it.a[n];
    float tmp[12];
    zero12(a);
    if (p.flags & JOINTS_GRAD_GLOBALS)
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] += grads.globals[i * 12 + k];
    if (p.flags & JOINTS_SKINNING) {  // S = G · IB: dG += dS · IBᵀ
      float ds[12], ib[12];
      load12(&grads.skinning[i * 12], ds);
      load12(&inverseBind[size_t(j) * 12], ib);
      jointTimesTranspose(ds, ib, tmp);
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] += tmp[k];
    }
    if (p.flags & JOINTS_POSITIONS)
      for (int r = 0; r < 3; ++r) a[r * 4 + 3] += grads.positions[i * 3 + r];
    locals.at(i, it.local[n]);
    if constexpr (Items::kAhead) {
      const int parent = t.parents[j];
      if (parent >= 0) load12(&globals[(base + size_t(parent)) * 12], it.parentGlobal[n]);
      it.lightFirst[n] = t.lightStart[j], it.lightEnd[n] = t.lightStart[j + 1];
      if (it.lightFirst[n] < it.lightEnd[n]) it.firstLight[n] = t.lightChildren[it.lightFirst[n]];
    }
  }

  // Item n's light children's messages (each its adjoint through its local, which the previous launch wrote in
  // the adjoint scratch) added to its a, in the children's order.
  template <typename Items>
  __device__ void gather(Items& it, int n) const {
    const uint32_t j = it.joint[n];
    const uint32_t first = Items::kAhead ? it.lightFirst[n] : t.lightStart[j];
    const uint32_t end = Items::kAhead ? it.lightEnd[n] : t.lightStart[j + 1];
    for (uint32_t c = first; c < end; ++c) {
      const size_t child = it.base[n] + (Items::kAhead && c == first ? it.firstLight[n] : t.lightChildren[c]);
      float m[12];
      load12(&adjoint[child * 12], m);
#pragma unroll
      for (int k = 0; k < 12; ++k) it.a[n][k] += m[k];
    }
  }

  template <typename Items>
  __device__ void aggregate(const Items& it, int count, State& s) const {
    identityState(s);
#pragma unroll
    for (int n = 0; n < kScanItems; ++n) {
      if (n < count) {
        State x, y;
        x.flag = it.flag[n];
        jointTimesTranspose(it.a[n], it.local[n], x.u);
        copy12(it.local[n], x.product);
        combine<true>(s, x, y);
        s = y;
      }
    }
  }

  template <typename Items>
  __device__ void apply(const State& before, const Items& it, int count) const {
    float c[12], a[12];
    copy12(before.u, c);
#pragma unroll
    for (int n = 0; n < kScanItems; ++n) {
      if (n >= count) break;
      const size_t i = it.index[n];
      if (it.flag[n]) zero12(c);
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] = it.a[n][k] + c[k];
      // G_j = G_parent · L_j: dL_j = G_parentᵀ · dG_j (a root's dL is its adjoint); dG_parent += dG_j · L_jᵀ, which a
      // path's top sends its parent, a joint of an earlier generation, through the adjoint scratch.
      const int parent = t.parents[it.joint[n]];
      float dl[12];
      if (parent >= 0) {
        float gp[12];
        if constexpr (Items::kAhead) {
          copy12(it.parentGlobal[n], gp);
        } else {
          load12(&globals[(it.base[n] + size_t(parent)) * 12], gp);
        }
        jointTransposeTimes(gp, a, dl);
      } else {
        copy12(a, dl);
      }
      storeLocalGradient(i, dl);
      jointTimesTranspose(a, it.local[n], c);
      if (it.top[n] && parent >= 0) store12(c, &adjoint[i * 12]);
    }
  }

  // Local i's gradient dl (as a 3×4) stored: as (dq, dt) for rigid locals. The shaders' is storeLocalGradient in
  // shared/joint_propagation_locals.h.
  __device__ void storeLocalGradient(size_t i, const float dl[12]) const {
    if (locals.affine) {
      store12(dl, &gradA[i * 12]);
    } else {
      const float4 q = reinterpret_cast<const float4*>(locals.a)[i];
      float dq[4];
      jointRigidBackward(q.x, q.y, q.z, q.w, dl, dq);
      reinterpret_cast<float4*>(gradA)[i] = make_float4(dq[0], dq[1], dq[2], dq[3]);
      gradB[i * 3] = dl[3], gradB[i * 3 + 1] = dl[7], gradB[i * 3 + 2] = dl[11];
    }
  }
};

// One dispatch of one generation (JointsPush::phase), as the shaders' main().
template <bool IsBackward, int Threads, typename Op>
__global__ void __launch_bounds__(Threads) scanKernel(Op op) {
  // The backward's next scan may start loading its inputs; the forward's passes wait for its end (launched while
  // the scan runs, they slowed it).
  if constexpr (IsBackward) releaseNext();
  const JointsPush& p = op.p;
  if (p.phase == JOINTS_CARRY) {
    waitForPrevious();
    carryTiles<IsBackward, Threads>(op.scratch, p);
    return;
  }
  __shared__ State sCarry;
  const uint32_t count = p.batch * p.genLength;
  for (uint32_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const uint32_t first = min(tile * (Threads * kScanItems) + threadIdx.x * kScanItems, count);
    const int items = int(min(first + kScanItems, count) - first);
    using Items = typename Op::template Items<Threads>;
    Items it;
    // A dependent launch's loads of what the call's earlier launches wrote (gather), and its writes to the scratch
    // they share, wait for them; with Items::kAhead the rest of its elements is loaded before.
    if constexpr (!Items::kAhead) waitForPrevious();
#pragma unroll
    for (int n = 0; n < kScanItems; ++n) {
      if (n < items) {
        op.load(first + n, it, n);
        if constexpr (!Items::kAhead) op.gather(it, n);
      }
    }
    if constexpr (Items::kAhead) {
      waitForPrevious();
#pragma unroll
      for (int n = 0; n < kScanItems; ++n)
        if (n < items) op.gather(it, n);
    }
    State mine, exclusive, total;
    op.aggregate(it, items, mine);
    scanBlock<IsBackward, Threads>(mine, exclusive, total);
    if (p.phase == JOINTS_REDUCE) {
      if (threadIdx.x == 0) writeTile(op.scratch, p, tile, total);
      continue;
    }
    if (p.tiles > 1) {  // this tile's carry, then the block's prefix
      State carry;
      if (p.phase == JOINTS_SINGLE) {
        if (threadIdx.x < 32) lookBack<IsBackward>(op.scratch, p, tile, total, carry);
      } else if (threadIdx.x == 0) {
        readTile(op.scratch, p, tile, carry);
      }
      // Every thread has read scanBlock's total before sCarry is written: the compiler may give the two the same
      // shared memory (compute-sanitizer's racecheck saw the write meet the reads without this barrier).
      __syncthreads();
      if (threadIdx.x == 0) sCarry = carry;
      __syncthreads();
      State before;
      combine<IsBackward>(sCarry, exclusive, before);
      op.apply(before, it, items);
    } else {
      op.apply(exclusive, it, items);
    }
  }
}

// PLACE, one generation after the first: each element's path product S becomes its global G_t · S, t its path top's
// parent (finished by the launch before). Only the reads of earlier launches' results wait for them.
__global__ void __launch_bounds__(JOINTS_THREADS) placeKernel(Forward op) {
  releaseNext();
  const JointsPush& p = op.p;
  for (uint32_t e = blockIdx.x * JOINTS_THREADS + threadIdx.x; e < p.batch * p.genLength;
       e += gridDim.x * JOINTS_THREADS) {
    const uint32_t b = e / p.genLength, position = p.genStart + e % p.genLength;
    const uint32_t j = op.t.order[position] & ~JOINTS_HEAD;
    const size_t base = size_t(b) * p.joints, i = base + j, parent = base + uint32_t(op.t.topParents[position]);
    float ib[12];
    op.inverseBindOf(j, ib);
    waitForPrevious();
    float product[12], top[12], g[12];
    load12(&op.globals[i * 12], product);
    load12(&op.globals[parent * 12], top);
    jointCompose(top, product, g);
    op.store(i, g, ib);
  }
}

// A small forest (DeviceJointForest::small()), forward: shaders/joint_propagation_small_forward.comp.
__global__ void __launch_bounds__(JOINTS_SMALL_THREADS) smallForwardKernel(Forward op, const uint32_t* levels) {
  __shared__ __align__(16) float sG[JOINTS_SMALL_JOINTS * 12];  // locals, becoming globals level by level
  const JointsPush& p = op.p;
  const uint32_t N = p.joints, t = threadIdx.x, levelCount = p.genStart;
  for (uint32_t first = blockIdx.x * p.tiles; first < p.batch; first += gridDim.x * p.tiles) {
    const uint32_t skeletons = min(p.tiles, p.batch - first), count = skeletons * N;
    const size_t base = size_t(first) * N;
    if (op.locals.affine) {
      copyRows(&op.locals.a[base * 12], sG, count * 3);
    } else {
      for (uint32_t e = t; e < count; e += JOINTS_SMALL_THREADS) {
        float m[12];
        op.locals.at(base + e, m);
        store12(m, &sG[e * 12]);
      }
    }
    __syncthreads();
    for (uint32_t d = 1; d < levelCount; ++d) {  // level 0: roots, whose globals are their locals
      const uint32_t start = levels[N + d], width = levels[N + d + 1] - start;
      for (uint32_t x = t; x < skeletons * width; x += JOINTS_SMALL_THREADS) {
        const uint32_t s = x / width, j = levels[start + x % width], e = s * N + j;
        float g[12], l[12], y[12];
        load12(&sG[(s * N + uint32_t(op.t.parents[j])) * 12], g);
        load12(&sG[e * 12], l);
        jointCompose(g, l, y);
        store12(y, &sG[e * 12]);
      }
      __syncthreads();
    }
    copyRows(sG, &op.globals[base * 12], count * 3);
    if (p.flags & JOINTS_POSITIONS)
      for (uint32_t x = t; x < count * 3; x += JOINTS_SMALL_THREADS)
        op.positions[base * 3 + x] = sG[x / 3 * 12 + x % 3 * 4 + 3];
    if (p.flags & JOINTS_SKINNING) {
      for (uint32_t e = t; e < count; e += JOINTS_SMALL_THREADS) {
        float g[12], ib[12], y[12];
        load12(&sG[e * 12], g);
        load12(&op.inverseBind[size_t(e % N) * 12], ib);
        jointCompose(g, ib, y);
        store12(y, &op.skinning[(base + e) * 12]);
      }
    }
    __syncthreads();  // before the next round's locals
  }
}

// A small forest, backward: shaders/joint_propagation_small_backward.comp, with twice the joints of the forward's block. A level
// keeps few threads busy, so more skeletons share its barrier; NVIDIA's Vulkan driver ran the shader slower so, as if
// it gave it less shared memory an SM, and holds six skeletons there (docs/joint_propagation.md).
constexpr uint32_t kSmallBackwardJoints = 2 * JOINTS_SMALL_JOINTS;
__global__ void __launch_bounds__(JOINTS_SMALL_THREADS)
    smallBackwardKernel(Backward op, const uint32_t* levels, const uint32_t* childStart, const uint32_t* children) {
  // Each joint's own gradient, then its adjoint.
  __shared__ __align__(16) float sA[kSmallBackwardJoints * 12];
  const JointsPush& p = op.p;
  const uint32_t N = p.joints, t = threadIdx.x, levelCount = p.genStart;
  for (uint32_t first = blockIdx.x * p.tiles; first < p.batch; first += gridDim.x * p.tiles) {
    const uint32_t skeletons = min(p.tiles, p.batch - first), count = skeletons * N;
    const size_t base = size_t(first) * N;
    if (p.flags & JOINTS_GRAD_GLOBALS) {
      copyRows(&op.grads.globals[base * 12], sA, count * 3);
    } else {
      for (uint32_t x = t; x < count * 12; x += JOINTS_SMALL_THREADS) sA[x] = 0.0f;
    }
    __syncthreads();
    if (p.flags & (JOINTS_SKINNING | JOINTS_POSITIONS)) {
      for (uint32_t e = t; e < count; e += JOINTS_SMALL_THREADS) {
        const size_t i = base + e;
        float a[12], tmp[12];
        load12(&sA[e * 12], a);
        if (p.flags & JOINTS_SKINNING) {  // S = G · IB: dG += dS · IBᵀ
          float ds[12], ib[12];
          load12(&op.grads.skinning[i * 12], ds);
          load12(&op.inverseBind[size_t(e % N) * 12], ib);
          jointTimesTranspose(ds, ib, tmp);
#pragma unroll
          for (int k = 0; k < 12; ++k) a[k] += tmp[k];
        }
        if (p.flags & JOINTS_POSITIONS)
          for (int r = 0; r < 3; ++r) a[r * 4 + 3] += op.grads.positions[i * 3 + r];
        store12(a, &sA[e * 12]);
      }
      __syncthreads();
    }
    // The walk, deepest level first: each joint's adjoint, its own gradient plus what each child sends (the child's
    // adjoint through the child's local), in place of the own gradient.
    for (uint32_t d = levelCount; d-- > 0;) {
      const uint32_t start = levels[N + d], width = levels[N + d + 1] - start;
      for (uint32_t x = t; x < skeletons * width; x += JOINTS_SMALL_THREADS) {
        const uint32_t s = x / width, j = levels[start + x % width], e = s * N + j;
        float a[12];
        load12(&sA[e * 12], a);
        for (uint32_t c = childStart[j]; c < childStart[j + 1]; ++c) {  // the level below, in the children's order
          const uint32_t child = s * N + children[c];
          float l[12], ac[12], m[12];
          op.locals.at(base + child, l);
          load12(&sA[child * 12], ac);
          jointTimesTranspose(ac, l, m);  // G_c = G_j · L_c: dG_j += dG_c · L_cᵀ
#pragma unroll
          for (int k = 0; k < 12; ++k) a[k] += m[k];
        }
        store12(a, &sA[e * 12]);
      }
      __syncthreads();
    }
    // Every joint's local's gradient at once, off the walk's chain: dL_j = G_parentᵀ · dG_j (a root's, its adjoint).
    for (uint32_t e = t; e < count; e += JOINTS_SMALL_THREADS) {
      const size_t i = base + e;
      const int parent = op.t.parents[e % N];
      float a[12], dl[12];
      load12(&sA[e * 12], a);
      if (parent >= 0) {
        float gp[12];
        load12(&op.globals[(i - e % N + uint32_t(parent)) * 12], gp);
        jointTransposeTimes(gp, a, dl);
      } else {
        copy12(a, dl);
      }
      op.storeLocalGradient(i, dl);
    }
    __syncthreads();  // before the next round's gradients
  }
}

// Points attached to joints: shaders/joint_propagation_points.comp.
__global__ void pointsKernel(const int32_t* pointJoints, const uint32_t* pointStart, const uint32_t* pointOrder,
                             const float* points, const float* globals, float* moved, const float* gradGlobals,
                             float* jointGrads, float* gradPoints, JointsPointsPush p) {
  const size_t stride = size_t(gridDim.x) * blockDim.x, first = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (p.mode == JOINTS_POINTS_FORWARD) {
    for (size_t item = first; item < size_t(p.batch) * p.points; item += stride) {
      const size_t q = item % p.points, g = (item / p.points * p.joints + size_t(pointJoints[q])) * 12;
      const float* x = &points[q * 3];
      for (int r = 0; r < 3; ++r)
        moved[item * 3 + r] = globals[g + r * 4] * x[0] + globals[g + r * 4 + 1] * x[1] +
                              globals[g + r * 4 + 2] * x[2] + globals[g + r * 4 + 3];
    }
  } else if (p.mode == JOINTS_POINTS_JOINT_GRADS) {  // d<dY, G·[x;1]>/dG = dY ⊗ [x;1]
    for (size_t item = first; item < size_t(p.batch) * p.joints; item += stride) {
      const size_t b = item / p.joints, j = item % p.joints;
      float d[12];
#pragma unroll
      for (int k = 0; k < 12; ++k) d[k] = (p.flags & JOINTS_GRAD_GLOBALS) ? gradGlobals[item * 12 + k] : 0.0f;
      for (uint32_t c = pointStart[j]; c < pointStart[j + 1]; ++c) {
        const size_t q = pointOrder[c], at = (b * p.points + q) * 3;
        for (int r = 0; r < 3; ++r) {
          const float dy = moved[at + r];
          d[r * 4] += dy * points[q * 3], d[r * 4 + 1] += dy * points[q * 3 + 1];
          d[r * 4 + 2] += dy * points[q * 3 + 2], d[r * 4 + 3] += dy;
        }
      }
#pragma unroll
      for (int k = 0; k < 12; ++k) jointGrads[item * 12 + k] = d[k];
    }
  } else {  // d<dY, G·[x;1]>/dx = Rᵀ dY, summed over the batch
    for (size_t q = first; q < p.points; q += stride) {
      const size_t j = size_t(pointJoints[q]);
      float d[3] = {0.0f, 0.0f, 0.0f};
      for (uint32_t b = 0; b < p.batch; ++b) {
        const size_t g = (b * size_t(p.joints) + j) * 12, at = (b * size_t(p.points) + q) * 3;
        for (int c = 0; c < 3; ++c)
          d[c] += globals[g + c] * moved[at] + globals[g + 4 + c] * moved[at + 1] + globals[g + 8 + c] * moved[at + 2];
      }
      for (int c = 0; c < 3; ++c) gradPoints[q * 3 + c] = d[c];
    }
  }
}

Tables tablesOf(const DeviceJointForest& f) {
  return {f.order().cuda<uint32_t>(), f.parents().cuda<int32_t>(), f.lightStart().cuda<uint32_t>(),
          f.lightChildren().cuda<uint32_t>(), f.topParents().cuda<int32_t>()};
}

Locals localsOf(LocalTransform kind, const DeviceView& rotations, const DeviceView& translations,
                const DeviceView& affine) {
  const bool isAffine = kind == LocalTransform::Affine;
  return {isAffine ? affine.cuda<float>() : rotations.cuda<float>(), translations.cuda<float>(), isAffine};
}

// A large forest's passes (forEachPhase): the status words zeroed, then one launch each, in order on the exec's
// stream, each after the first a programmatic dependent of the one before.
template <bool IsBackward, typename Op>
void launchScans(const Exec& exec, const DeviceJointForest& forest, uint32_t batch, uint32_t flags,
                 const DeviceView& scratch, Op& op) {
  CUDA_CHECK(cudaMemsetAsync(scratch.cuda<float>(), 0, forest.scratchStatusWords(batch) * 4, stream(exec)));
  // A backward scan's block holds a multiprocessor: narrow tiles below one wave of blocks, wide from two.
  const DeviceTraits traits = deviceTraits();
  JointsTileChoice choice;
  if (IsBackward) choice = {uint32_t(traits.multiprocessors), 2 * uint32_t(traits.multiprocessors)};
  bool first = true;  // follows the memset
  forEachPhase(forest, batch, flags, IsBackward, UINT32_MAX, choice, [&](const JointsPush& push, uint32_t groups) {
    op.p = push;
    const bool dependent = traits.dependentLaunches && !first;
    first = false;
    const auto launch = [&](auto kernel, int threads) {
      launchAfterPrevious(dependent, kernel, dim3(groups), dim3(threads), stream(exec), op);
    };
    if constexpr (IsBackward) {
      if (push.tileLength == JOINTS_WIDE_TILE) return launch(scanKernel<true, kWideScanThreads, Op>, kWideScanThreads);
      if (push.tileLength == JOINTS_NARROW_TILE)
        return launch(scanKernel<true, kNarrowScanThreads, Op>, kNarrowScanThreads);
    } else if (push.phase == JOINTS_PLACE) {
      return launch(placeKernel, JOINTS_THREADS);
    }
    launch(scanKernel<IsBackward, kScanThreads, Op>, kScanThreads);
  });
}

}  // namespace

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  Forward op{tablesOf(*a.forest),         localsOf(a.kind, a.rotations, a.translations, a.affine),
             a.inverseBind.cuda<float>(), a.globals.cuda<float>(),
             a.skinning.cuda<float>(),    a.positions.cuda<float>(),
             a.scratch.cuda<float>(),     {}};
  if (a.forest->small()) {
    uint32_t groups;
    op.p = jointsSmallPush(*a.forest, a.batch, jointsFlags(a), JOINTS_SMALL_JOINTS, groups);
    smallForwardKernel<<<groups, JOINTS_SMALL_THREADS, 0, stream(exec)>>>(op, a.forest->levels().cuda<uint32_t>());
    CUDA_CHECK_LAUNCH();
    return;
  }
  launchScans<false>(exec, *a.forest, a.batch, jointsFlags(a), a.scratch, op);
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const bool affine = a.kind == LocalTransform::Affine;
  Backward op{tablesOf(*a.forest),
              localsOf(a.kind, a.rotations, a.translations, a.affine),
              a.inverseBind.cuda<float>(),
              a.globals.cuda<float>(),
              {a.gradGlobals.cuda<float>(), a.gradSkinning.cuda<float>(), a.gradPositions.cuda<float>()},
              a.adjoint.cuda<float>(),
              affine ? a.gradAffine.cuda<float>() : a.gradRotations.cuda<float>(),
              a.gradTranslations.cuda<float>(),
              a.scratch.cuda<float>(),
              {}};
  if (a.forest->small()) {
    uint32_t groups;
    op.p = jointsSmallPush(*a.forest, a.batch, jointsFlags(a), kSmallBackwardJoints, groups);
    smallBackwardKernel<<<groups, JOINTS_SMALL_THREADS, 0, stream(exec)>>>(op, a.forest->levels().cuda<uint32_t>(),
                                                                           a.forest->childStart().cuda<uint32_t>(),
                                                                           a.forest->children().cuda<uint32_t>());
    CUDA_CHECK_LAUNCH();
    return;
  }
  launchScans<true>(exec, *a.forest, a.batch, jointsFlags(a), a.scratch, op);
}

void jointPoints(const Exec& exec, const JointPointsArgs& a) {
  const JointsPointsPush push = jointsPointsPush(a);
  const uint64_t items = a.mode == JOINTS_POINTS_FORWARD       ? uint64_t(a.batch) * push.points
                         : a.mode == JOINTS_POINTS_JOINT_GRADS ? uint64_t(a.batch) * push.joints
                                                               : push.points;
  pointsKernel<<<unsigned(std::min<uint64_t>((items + 127) / 128, 65535 * 8)), 128, 0, stream(exec)>>>(
      a.forest->pointJoints().cuda<int32_t>(), a.forest->pointStart().cuda<uint32_t>(),
      a.forest->pointOrder().cuda<uint32_t>(), a.points.cuda<float>(), a.globals.cuda<float>(), a.moved.cuda<float>(),
      a.gradGlobals.cuda<float>(), a.jointGrads.cuda<float>(), a.gradPoints.cuda<float>(), push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
