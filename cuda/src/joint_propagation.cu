// Joint propagation on CUDA: the Vulkan shaders' segmented scans (shaders/joints_*.comp) with the same math
// (shaders/shared/joints_io.h), one single-pass launch per generation in order on the exec's stream.
#include <algorithm>

#include "check.h"
#include "ops/joint_propagation_backend.h"

namespace armature::cuda {
namespace {

struct Tables {
  const uint32_t* order;
  const int32_t* parents;
  const uint32_t* lightStart;
  const uint32_t* lightChildren;
};

struct Locals {
  const float* a;  // rotations (B,N,4) or affine (B,N,12)
  const float* b;  // translations (B,N,3)
  bool affine;
  __device__ void at(size_t i, float m[12]) const {
    if (affine) {
#pragma unroll
      for (int k = 0; k < 12; ++k) m[k] = a[i * 12 + k];
    } else {
      jointRigid(a[i * 4], a[i * 4 + 1], a[i * 4 + 2], a[i * 4 + 3], b[i * 3], b[i * 3 + 1], b[i * 3 + 2], m);
    }
  }
};

__device__ __forceinline__ void copy12(const float* from, float* to) {
#pragma unroll
  for (int k = 0; k < 12; ++k) to[k] = from[k];
}

__device__ __forceinline__ void identity12(float* m) {
#pragma unroll
  for (int k = 0; k < 12; ++k) m[k] = (k == 0 || k == 5 || k == 10) ? 1.0f : 0.0f;
}

__device__ __forceinline__ void zero12(float* m) {
#pragma unroll
  for (int k = 0; k < 12; ++k) m[k] = 0.0f;
}

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

// The block's inclusive scan of `mine` (Hillis–Steele in shared memory); returns the exclusive prefix and the total.
template <bool Backward>
__device__ void scanBlock(State mine, State& exclusive, State& total) {
  __shared__ uint32_t sFlag[JOINTS_THREADS];
  __shared__ float sU[Backward ? JOINTS_THREADS * 12 : 1], sProduct[JOINTS_THREADS * 12];
  const unsigned t = threadIdx.x;
  auto store = [&](unsigned at, const State& s) {
    sFlag[at] = s.flag;
    if constexpr (Backward) copy12(s.u, &sU[at * 12]);
    copy12(s.product, &sProduct[at * 12]);
  };
  auto load = [&](unsigned at, State& s) {
    s.flag = sFlag[at];
    if constexpr (Backward) copy12(&sU[at * 12], s.u);
    copy12(&sProduct[at * 12], s.product);
  };
  __syncthreads();  // the previous tile's reads are done
  store(t, mine);
  __syncthreads();
  for (unsigned offset = 1; offset < JOINTS_THREADS; offset <<= 1) {
    State y;
    if (t >= offset) {
      State x;
      load(t - offset, x);
      combine<Backward>(x, mine, y);
    }
    __syncthreads();
    if (t >= offset) {
      mine = y;
      store(t, mine);
    }
    __syncthreads();
  }
  if (t > 0) {
    load(t - 1, exclusive);
  } else {
    identityState(exclusive);
  }
  load(JOINTS_THREADS - 1, total);
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

// SINGLE, by one thread: publishes the tile's aggregate, then combines its predecessors' back to the first that
// starts a segment (waiting for each to be published): the tile's exclusive prefix. Never taking a predecessor's
// finished prefix keeps the products' association fixed: the same bits on every run.
template <bool Backward>
__device__ void lookBack(float* scratch, const JointsPush& p, uint32_t tile, const State& aggregate, State& exclusive) {
  uint32_t* status = reinterpret_cast<uint32_t*>(scratch) + p.statusStart;
  identityState(exclusive);
  writeTile(scratch, p, tile, aggregate);
  __threadfence();
  atomicExch(&status[tile], JOINTS_HAS_AGGREGATE);
  for (uint32_t before = tile; before-- > 0;) {
    while (atomicAdd(&status[before], 0u) == 0u) {
    }
    __threadfence();
    State x, y;
    readTile(scratch, p, before, x);
    combine<Backward>(x, exclusive, y);
    exclusive = y;
    if (x.flag) break;
  }
}

// CARRY (one block): the tiles' aggregates become each tile's exclusive prefix, in place.
template <bool Backward>
__device__ void carryTiles(float* scratch, const JointsPush& p) {
  State run, next;
  identityState(run);
  for (uint32_t base = 0; base < p.tiles; base += JOINTS_THREADS) {
    const uint32_t tile = base + threadIdx.x;
    State mine, exclusive, total;
    identityState(mine);
    if (tile < p.tiles) readTile(scratch, p, tile, mine);
    scanBlock<Backward>(mine, exclusive, total);
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
  float value[JOINTS_ITEMS][12];
  uint32_t flag[JOINTS_ITEMS], joint[JOINTS_ITEMS];
  size_t index[JOINTS_ITEMS];
};

struct Forward {
  using Items = ForwardItems;
  Tables t;
  Locals locals;
  const float* inverseBind;
  float* globals;
  float* skinning;
  float* positions;
  float* scratch;
  JointsPush p;

  // Element e of the generation's sequence: its flag and value (a path's top takes its parent's global).
  __device__ void load(uint32_t e, Items& it, int n) const {
    const uint32_t b = e / p.genLength, o = t.order[p.genStart + e % p.genLength];
    const uint32_t j = o & ~JOINTS_HEAD;
    const size_t i = size_t(b) * p.joints + j;
    it.joint[n] = j, it.index[n] = i, it.flag[n] = (o & JOINTS_HEAD) ? 1u : 0u;
    float l[12];
    locals.at(i, l);
    const int parent = t.parents[j];
    if (!(o & JOINTS_HEAD) || parent < 0) {
      copy12(l, it.value[n]);
    } else {
      float g[12];
      copy12(&globals[(size_t(b) * p.joints + size_t(parent)) * 12], g);
      jointCompose(g, l, it.value[n]);
    }
  }

  __device__ void aggregate(const Items& it, int count, State& s) const {
    identityState(s);
    float y[12];
#pragma unroll
    for (int n = 0; n < JOINTS_ITEMS; ++n) {
      if (n < count) {
        jointsCombineForward(s.product, it.flag[n], it.value[n], y);
        copy12(y, s.product);
        s.flag |= it.flag[n];
      }
    }
  }

  __device__ void apply(const State& before, const Items& it, int count) const {
    float g[12], y[12];
    copy12(before.product, g);
#pragma unroll
    for (int n = 0; n < JOINTS_ITEMS; ++n) {
      if (n >= count) break;
      const size_t i = it.index[n];
      jointsCombineForward(g, it.flag[n], it.value[n], y);
      copy12(y, g);
      copy12(g, &globals[i * 12]);
      if (p.flags & JOINTS_POSITIONS)
        for (int r = 0; r < 3; ++r) positions[i * 3 + r] = g[r * 4 + 3];
      if (p.flags & JOINTS_SKINNING) {
        float ib[12], s[12];
        copy12(&inverseBind[size_t(it.joint[n]) * 12], ib);
        jointCompose(g, ib, s);
        copy12(s, &skinning[i * 12]);
      }
    }
  }
};

struct Grads {
  const float* globals;
  const float* skinning;
  const float* positions;
};

struct BackwardItems {
  float a[JOINTS_ITEMS][12], local[JOINTS_ITEMS][12];
  uint32_t flag[JOINTS_ITEMS], joint[JOINTS_ITEMS];
  size_t index[JOINTS_ITEMS], base[JOINTS_ITEMS];
};

struct Backward {
  using Items = BackwardItems;
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

  // Element e of the sequence taken from its end (a path's bottom first): its flag (a path's bottom), its a (own
  // gradient plus the light children's adjoints through their locals) and its local.
  __device__ void load(uint32_t e, Items& it, int n) const {
    const uint32_t v = p.batch * p.genLength - 1u - e, position = v % p.genLength;
    const size_t base = size_t(v / p.genLength) * p.joints;
    const uint32_t j = t.order[p.genStart + position] & ~JOINTS_HEAD;
    const size_t i = base + j;
    it.joint[n] = j, it.index[n] = i, it.base[n] = base;
    it.flag[n] = (position + 1 == p.genLength || (t.order[p.genStart + position + 1] & JOINTS_HEAD)) ? 1u : 0u;
    float* a = it.a[n];
    float tmp[12];
    zero12(a);
    if (p.flags & JOINTS_GRAD_GLOBALS)
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] += grads.globals[i * 12 + k];
    if (p.flags & JOINTS_SKINNING) {  // S = G · IB: dG += dS · IBᵀ
      float ds[12], ib[12];
      copy12(&grads.skinning[i * 12], ds);
      copy12(&inverseBind[size_t(j) * 12], ib);
      jointTimesTranspose(ds, ib, tmp);
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] += tmp[k];
    }
    if (p.flags & JOINTS_POSITIONS)
      for (int r = 0; r < 3; ++r) a[r * 4 + 3] += grads.positions[i * 3 + r];
    for (uint32_t c = t.lightStart[j]; c < t.lightStart[j + 1]; ++c) {
      const size_t child = base + t.lightChildren[c];
      float ac[12], lc[12];
      copy12(&adjoint[child * 12], ac);
      locals.at(child, lc);
      jointTimesTranspose(ac, lc, tmp);
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] += tmp[k];
    }
    locals.at(i, it.local[n]);
  }

  __device__ void aggregate(const Items& it, int count, State& s) const {
    identityState(s);
#pragma unroll
    for (int n = 0; n < JOINTS_ITEMS; ++n) {
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

  __device__ void apply(const State& before, const Items& it, int count) const {
    float c[12], a[12];
    copy12(before.u, c);
#pragma unroll
    for (int n = 0; n < JOINTS_ITEMS; ++n) {
      if (n >= count) break;
      const size_t i = it.index[n];
      if (it.flag[n]) zero12(c);
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] = it.a[n][k] + c[k];
      copy12(a, &adjoint[i * 12]);
      // G_j = G_parent · L_j: dL_j = G_parentᵀ · dG_j (a root's dL is its adjoint); dG_parent += dG_j · L_jᵀ.
      float dl[12];
      const int parent = t.parents[it.joint[n]];
      if (parent >= 0) {
        float gp[12];
        copy12(&globals[(it.base[n] + size_t(parent)) * 12], gp);
        jointTransposeTimes(gp, a, dl);
      } else {
        copy12(a, dl);
      }
      jointTimesTranspose(a, it.local[n], c);
      if (locals.affine) {
        copy12(dl, &gradA[i * 12]);
      } else {
        float dq[4];
        const float* q = &locals.a[i * 4];
        jointRigidBackward(q[0], q[1], q[2], q[3], dl, dq);
#pragma unroll
        for (int k = 0; k < 4; ++k) gradA[i * 4 + k] = dq[k];
        for (int r = 0; r < 3; ++r) gradB[i * 3 + r] = dl[r * 4 + 3];
      }
    }
  }
};

// One dispatch of one generation (JointsPush::phase), as the shaders' main().
template <bool IsBackward, typename Op>
__global__ void __launch_bounds__(JOINTS_THREADS) scanKernel(Op op) {
  const JointsPush& p = op.p;
  if (p.phase == JOINTS_CARRY) {
    carryTiles<IsBackward>(op.scratch, p);
    return;
  }
  __shared__ State sCarry;
  const uint32_t count = p.batch * p.genLength;
  for (uint32_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const uint32_t first = min(tile * JOINTS_TILE + threadIdx.x * JOINTS_ITEMS, count);
    const int items = int(min(first + JOINTS_ITEMS, count) - first);
    typename Op::Items it;
#pragma unroll
    for (int n = 0; n < JOINTS_ITEMS; ++n)
      if (n < items) op.load(first + n, it, n);
    State mine, exclusive, total;
    op.aggregate(it, items, mine);
    scanBlock<IsBackward>(mine, exclusive, total);
    if (p.phase == JOINTS_REDUCE) {
      if (threadIdx.x == 0) writeTile(op.scratch, p, tile, total);
      continue;
    }
    if (p.tiles > 1) {  // this tile's carry, then the block's prefix
      if (p.phase == JOINTS_SINGLE) {
        if (threadIdx.x == 0) lookBack<IsBackward>(op.scratch, p, tile, total, sCarry);
      } else if (threadIdx.x == 0) {
        readTile(op.scratch, p, tile, sCarry);
      }
      __syncthreads();
      State before;
      combine<IsBackward>(sCarry, exclusive, before);
      op.apply(before, it, items);
    } else {
      op.apply(exclusive, it, items);
    }
  }
}

Tables tablesOf(const DeviceJointForest& f) {
  return {f.order().cuda<uint32_t>(), f.parents().cuda<int32_t>(), f.lightStart().cuda<uint32_t>(),
          f.lightChildren().cuda<uint32_t>()};
}

Locals localsOf(LocalTransform kind, const DeviceView& rotations, const DeviceView& translations,
                const DeviceView& affine) {
  const bool isAffine = kind == LocalTransform::Affine;
  return {isAffine ? affine.cuda<float>() : rotations.cuda<float>(), translations.cuda<float>(), isAffine};
}

}  // namespace

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  Forward op{tablesOf(*a.forest),         localsOf(a.kind, a.rotations, a.translations, a.affine),
             a.inverseBind.cuda<float>(), a.globals.cuda<float>(),
             a.skinning.cuda<float>(),    a.positions.cuda<float>(),
             a.scratch.cuda<float>(),     {}};
  CUDA_CHECK(cudaMemsetAsync(a.scratch.cuda<float>(), 0, a.forest->scratchStatusWords(a.batch) * 4, stream(exec)));
  forEachPhase(*a.forest, a.batch, jointsFlags(a), false, UINT32_MAX, [&](const JointsPush& push, uint32_t groups) {
    op.p = push;
    scanKernel<false><<<groups, JOINTS_THREADS, 0, stream(exec)>>>(op);
    CUDA_CHECK_LAUNCH();
  });
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
  CUDA_CHECK(cudaMemsetAsync(a.scratch.cuda<float>(), 0, a.forest->scratchStatusWords(a.batch) * 4, stream(exec)));
  forEachPhase(*a.forest, a.batch, jointsFlags(a), true, UINT32_MAX, [&](const JointsPush& push, uint32_t groups) {
    op.p = push;
    scanKernel<true><<<groups, JOINTS_THREADS, 0, stream(exec)>>>(op);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace armature::cuda
