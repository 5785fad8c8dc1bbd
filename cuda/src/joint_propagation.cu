// Joint propagation on CUDA: the Vulkan shaders' walk (shaders/joints_*.comp) with the same math
// (shaders/shared/joints_io.h); one launch per generation on the exec's stream, which orders them.
#include <algorithm>

#include "check.h"
#include "ops/joint_propagation_backend.h"

namespace armature::cuda {
namespace {

struct Tables {
  const uint32_t* order;
  const uint32_t* pathStart;
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

__global__ void forwardKernel(Tables t, Locals locals, const float* __restrict__ inverseBind, float* globals,
                              float* __restrict__ skinning, float* __restrict__ positions, JointsPush p) {
  const size_t total = size_t(p.paths) * p.batch;
  for (size_t item = blockIdx.x * size_t(blockDim.x) + threadIdx.x; item < total;
       item += size_t(gridDim.x) * blockDim.x) {
    const size_t b = item / p.paths, path = p.firstPath + item % p.paths, base = b * p.joints;
    float g[12], l[12], next[12];
    const int top = t.parents[t.order[t.pathStart[path]]];
    if (top >= 0)
#pragma unroll
      for (int k = 0; k < 12; ++k) g[k] = globals[(base + size_t(top)) * 12 + k];
    for (uint32_t n = t.pathStart[path]; n < t.pathStart[path + 1]; ++n) {
      const size_t j = t.order[n], i = base + j;
      locals.at(i, l);
      if (n == t.pathStart[path] && top < 0) {
#pragma unroll
        for (int k = 0; k < 12; ++k) g[k] = l[k];
      } else {
        jointCompose(g, l, next);
#pragma unroll
        for (int k = 0; k < 12; ++k) g[k] = next[k];
      }
#pragma unroll
      for (int k = 0; k < 12; ++k) globals[i * 12 + k] = g[k];
      if (p.flags & JOINTS_POSITIONS)
        for (int r = 0; r < 3; ++r) positions[i * 3 + r] = g[r * 4 + 3];
      if (p.flags & JOINTS_SKINNING) {
        float ib[12], s[12];
#pragma unroll
        for (int k = 0; k < 12; ++k) ib[k] = inverseBind[j * 12 + k];
        jointCompose(g, ib, s);
#pragma unroll
        for (int k = 0; k < 12; ++k) skinning[i * 12 + k] = s[k];
      }
    }
  }
}

struct Grads {
  const float* globals;
  const float* skinning;
  const float* positions;
};

__global__ void backwardKernel(Tables t, Locals locals, const float* __restrict__ inverseBind,
                               const float* __restrict__ globals, Grads grads, float* adjoint,
                               float* __restrict__ gradA, float* __restrict__ gradB, JointsPush p) {
  const size_t total = size_t(p.paths) * p.batch;
  for (size_t item = blockIdx.x * size_t(blockDim.x) + threadIdx.x; item < total;
       item += size_t(gridDim.x) * blockDim.x) {
    const size_t b = item / p.paths, path = p.firstPath + item % p.paths, base = b * p.joints;
    float carry[12], a[12], l[12], tmp[12], gp[12], dl[12];
#pragma unroll
    for (int k = 0; k < 12; ++k) carry[k] = 0.0f;
    for (uint32_t n = t.pathStart[path + 1]; n-- > t.pathStart[path];) {
      const size_t j = t.order[n], i = base + j;
#pragma unroll
      for (int k = 0; k < 12; ++k) a[k] = carry[k];
      if (p.flags & JOINTS_GRAD_GLOBALS)
#pragma unroll
        for (int k = 0; k < 12; ++k) a[k] += grads.globals[i * 12 + k];
      if (p.flags & JOINTS_SKINNING) {  // S = G · IB: dG += dS · IBᵀ
        float ds[12], ib[12];
#pragma unroll
        for (int k = 0; k < 12; ++k) ds[k] = grads.skinning[i * 12 + k], ib[k] = inverseBind[j * 12 + k];
        jointTimesTranspose(ds, ib, tmp);
#pragma unroll
        for (int k = 0; k < 12; ++k) a[k] += tmp[k];
      }
      if (p.flags & JOINTS_POSITIONS)
        for (int r = 0; r < 3; ++r) a[r * 4 + 3] += grads.positions[i * 3 + r];
      for (uint32_t c = t.lightStart[j]; c < t.lightStart[j + 1]; ++c) {
        const size_t child = base + t.lightChildren[c];
        float ac[12];
#pragma unroll
        for (int k = 0; k < 12; ++k) ac[k] = adjoint[child * 12 + k];
        locals.at(child, l);
        jointTimesTranspose(ac, l, tmp);
#pragma unroll
        for (int k = 0; k < 12; ++k) a[k] += tmp[k];
      }
#pragma unroll
      for (int k = 0; k < 12; ++k) adjoint[i * 12 + k] = a[k];
      const int parent = t.parents[j];
      if (parent >= 0) {
#pragma unroll
        for (int k = 0; k < 12; ++k) gp[k] = globals[(base + size_t(parent)) * 12 + k];
        jointTransposeTimes(gp, a, dl);
      } else {
#pragma unroll
        for (int k = 0; k < 12; ++k) dl[k] = a[k];
      }
      locals.at(i, l);
      jointTimesTranspose(a, l, carry);
      if (locals.affine) {
#pragma unroll
        for (int k = 0; k < 12; ++k) gradA[i * 12 + k] = dl[k];
      } else {
        float dq[4];
        jointRigidBackward(locals.a[i * 4], locals.a[i * 4 + 1], locals.a[i * 4 + 2], locals.a[i * 4 + 3], dl, dq);
#pragma unroll
        for (int k = 0; k < 4; ++k) gradA[i * 4 + k] = dq[k];
        for (int r = 0; r < 3; ++r) gradB[i * 3 + r] = dl[r * 4 + 3];
      }
    }
  }
}

Tables tablesOf(const DeviceJointForest& f) {
  return {f.order().cuda<uint32_t>(), f.pathStart().cuda<uint32_t>(), f.parents().cuda<int32_t>(),
          f.lightStart().cuda<uint32_t>(), f.lightChildren().cuda<uint32_t>()};
}

// One launch per generation on the exec's stream, which orders them.
template <typename Kernel>
void launchEach(const Exec& exec, const DeviceJointForest& forest, uint32_t batch, uint32_t flags, bool reverse,
                Kernel kernel) {
  forEachGeneration(forest, batch, flags, reverse, [&](const JointsPush& push) {
    const size_t items = size_t(push.paths) * batch;
    kernel(unsigned(std::min<size_t>((items + 127) / 128, 65535 * 8)), stream(exec), push);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  const bool affine = a.kind == LocalTransform::Affine;
  const Locals locals{affine ? a.affine.cuda<float>() : a.rotations.cuda<float>(), a.translations.cuda<float>(),
                      affine};
  const Tables t = tablesOf(*a.forest);
  launchEach(exec, *a.forest, a.batch, jointsFlags(a), false, [&](unsigned blocks, cudaStream_t s, JointsPush push) {
    forwardKernel<<<blocks, 128, 0, s>>>(t, locals, a.inverseBind.cuda<float>(), a.globals.cuda<float>(),
                                         a.skinning.cuda<float>(), a.positions.cuda<float>(), push);
  });
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const bool affine = a.kind == LocalTransform::Affine;
  const Locals locals{affine ? a.affine.cuda<float>() : a.rotations.cuda<float>(), a.translations.cuda<float>(),
                      affine};
  const Tables t = tablesOf(*a.forest);
  const Grads grads{a.gradGlobals.cuda<float>(), a.gradSkinning.cuda<float>(), a.gradPositions.cuda<float>()};
  launchEach(exec, *a.forest, a.batch, jointsFlags(a), true, [&](unsigned blocks, cudaStream_t s, JointsPush push) {
    backwardKernel<<<blocks, 128, 0, s>>>(
        t, locals, a.inverseBind.cuda<float>(), a.globals.cuda<float>(), grads, a.adjoint.cuda<float>(),
        affine ? a.gradAffine.cuda<float>() : a.gradRotations.cuda<float>(), a.gradTranslations.cuda<float>(), push);
  });
}

}  // namespace armature::cuda
