#version 450
// One generation of joint propagation, backward (generations last to first): an invocation per (skeleton, path)
// walks the path bottom up. A joint's adjoint is the gradient of its own outputs, plus its heavy child's adjoint
// carried through that child's local (from the step before on the same path), plus each light child's (finished in
// a later generation, summed in the children's fixed order): no atomics, the same bits on every run.
#extension GL_GOOGLE_include_directive : require
#include "shared/joints_io.h"

layout(local_size_x = JOINTS_WORKGROUP_SIZE) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Order { uint order[]; };
layout(std430, binding = JOINTS_BINDING_PATH_START) readonly buffer PathStart { uint pathStart[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_START) readonly buffer LightStart { uint lightStart[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_CHILDREN) readonly buffer LightChildren { uint lightChildren[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { float localA[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { float inverseBind[]; };
layout(std430, binding = JOINTS_BINDING_GLOBALS) readonly buffer Globals { float globals[]; };
layout(std430, binding = JOINTS_BINDING_SKINNING) readonly buffer GradSkinning { float gradSkinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) readonly buffer GradPositions { float gradPositions[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_GLOBALS) readonly buffer GradGlobals { float gradGlobals[]; };
layout(std430, binding = JOINTS_BINDING_ADJOINT) buffer Adjoint { float adjoint[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_A) writeonly buffer GradA { float gradA[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_B) writeonly buffer GradB { float gradB[]; };
layout(push_constant) uniform Push { JointsPush p; };

void localOf(uint i, out float m[12]) {
  if ((p.flags & JOINTS_AFFINE) != 0u) {
    for (int k = 0; k < 12; ++k) m[k] = localA[i * 12u + uint(k)];
  } else {
    jointRigid(localA[i * 4u], localA[i * 4u + 1u], localA[i * 4u + 2u], localA[i * 4u + 3u], localB[i * 3u],
               localB[i * 3u + 1u], localB[i * 3u + 2u], m);
  }
}

void main() {
  const uint total = p.paths * p.batch, stride = gl_NumWorkGroups.x * JOINTS_WORKGROUP_SIZE;
  for (uint item = gl_GlobalInvocationID.x; item < total; item += stride) {
    const uint b = item / p.paths, path = p.firstPath + item % p.paths, base = b * p.joints;
    float carry[12], a[12], l[12], t[12], gp[12], dl[12];
    for (int k = 0; k < 12; ++k) carry[k] = 0.0;
    const uint first = pathStart[path], count = pathStart[path + 1u] - first;
    for (uint step = 0u; step < count; ++step) {
      const uint j = order[first + count - 1u - step], i = base + j;
      a = carry;
      if ((p.flags & JOINTS_GRAD_GLOBALS) != 0u)
        for (int k = 0; k < 12; ++k) a[k] += gradGlobals[i * 12u + uint(k)];
      if ((p.flags & JOINTS_SKINNING) != 0u) {  // S = G · IB: dG += dS · IBᵀ
        float ds[12], ib[12];
        for (int k = 0; k < 12; ++k) ds[k] = gradSkinning[i * 12u + uint(k)], ib[k] = inverseBind[j * 12u + uint(k)];
        jointTimesTranspose(ds, ib, t);
        for (int k = 0; k < 12; ++k) a[k] += t[k];
      }
      if ((p.flags & JOINTS_POSITIONS) != 0u)
        for (int r = 0; r < 3; ++r) a[r * 4 + 3] += gradPositions[i * 3u + uint(r)];
      for (uint c = lightStart[j]; c < lightStart[j + 1u]; ++c) {
        const uint child = base + lightChildren[c];
        float ac[12];
        for (int k = 0; k < 12; ++k) ac[k] = adjoint[child * 12u + uint(k)];
        localOf(child, l);
        jointTimesTranspose(ac, l, t);
        for (int k = 0; k < 12; ++k) a[k] += t[k];
      }
      for (int k = 0; k < 12; ++k) adjoint[i * 12u + uint(k)] = a[k];
      // G_j = G_parent · L_j: dL_j = G_parentᵀ · dG_j (a root's dL is its adjoint); dG_parent += dG_j · L_jᵀ.
      const int parent = parents[j];
      if (parent >= 0) {
        for (int k = 0; k < 12; ++k) gp[k] = globals[(base + uint(parent)) * 12u + uint(k)];
        jointTransposeTimes(gp, a, dl);
      } else {
        dl = a;
      }
      localOf(i, l);
      jointTimesTranspose(a, l, carry);
      if ((p.flags & JOINTS_AFFINE) != 0u) {
        for (int k = 0; k < 12; ++k) gradA[i * 12u + uint(k)] = dl[k];
      } else {
        float dq[4];
        jointRigidBackward(localA[i * 4u], localA[i * 4u + 1u], localA[i * 4u + 2u], localA[i * 4u + 3u], dl, dq);
        for (int k = 0; k < 4; ++k) gradA[i * 4u + uint(k)] = dq[k];
        for (int r = 0; r < 3; ++r) gradB[i * 3u + uint(r)] = dl[r * 4 + 3];
      }
    }
  }
}
