#version 450
// Joint propagation of a small forest, backward (shared/joints_io.h): a workgroup takes p.tiles skeletons at a
// time, their locals and outputs' gradients read whole into shared memory, and walks them level by level from the
// deepest: a joint's adjoint is its own gradient plus what each child sends (the child's adjoint through its local;
// children in their fixed order: no atomics, the same bits on every run). The locals' gradients need only the
// adjoints and the globals, so they are made after the walk, every joint at once (a level holds few joints), and
// written out whole. The adjoint scratch is not used.
#extension GL_GOOGLE_include_directive : require
#include "shared/joints_io.h"

layout(local_size_x = JOINTS_SMALL_THREADS) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Levels { uint levels[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_START) readonly buffer ChildStart { uint childStart[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_CHILDREN) readonly buffer Children { uint children[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { float localA[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { float inverseBind[]; };
layout(std430, binding = JOINTS_BINDING_GLOBALS) readonly buffer Globals { float globals[]; };
layout(std430, binding = JOINTS_BINDING_SKINNING) readonly buffer GradSkinning { float gradSkinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) readonly buffer GradPositions { float gradPositions[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_GLOBALS) readonly buffer GradGlobals { float gradGlobals[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_A) writeonly buffer GradA { float gradA[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_B) writeonly buffer GradB { float gradB[]; };
layout(push_constant) uniform Push { JointsPush p; };

shared float sA[JOINTS_SMALL_JOINTS * 12];   // each joint's own gradient; after the walk, its adjoint
shared float sL[JOINTS_SMALL_JOINTS * 12];   // the locals as 3×4 matrices; after the walk, their gradients
shared float sUp[JOINTS_SMALL_JOINTS * 12];  // what each joint sends its parent: its adjoint · its localᵀ

#include "shared/joints_locals.h"

void main() {
  const uint N = p.joints, t = gl_LocalInvocationID.x, levelCount = p.genStart;
  for (uint first = gl_WorkGroupID.x * p.tiles; first < p.batch; first += gl_NumWorkGroups.x * p.tiles) {
    const uint skeletons = min(p.tiles, p.batch - first), count = skeletons * N, base = first * N;
    for (uint x = t; x < count * 12u; x += JOINTS_SMALL_THREADS)
      sA[x] = (p.flags & JOINTS_GRAD_GLOBALS) != 0u ? gradGlobals[base * 12u + x] : 0.0;
    if ((p.flags & JOINTS_AFFINE) != 0u) {
      for (uint x = t; x < count * 12u; x += JOINTS_SMALL_THREADS) sL[x] = localA[base * 12u + x];  // coalesced
    } else {
      for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
        float m[12];
        localOf(base + e, m);
        for (int k = 0; k < 12; ++k) sL[e * 12u + uint(k)] = m[k];
      }
    }
    barrier();
    if ((p.flags & (JOINTS_SKINNING | JOINTS_POSITIONS)) != 0u) {
      for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
        const uint i = base + e;
        float a[12], tmp[12];
        for (int k = 0; k < 12; ++k) a[k] = sA[e * 12u + uint(k)];
        if ((p.flags & JOINTS_SKINNING) != 0u) {  // S = G · IB: dG += dS · IBᵀ
          float ds[12], ib[12];
          for (int k = 0; k < 12; ++k) ds[k] = gradSkinning[i * 12u + uint(k)], ib[k] = inverseBind[e % N * 12u + uint(k)];
          jointTimesTranspose(ds, ib, tmp);
          for (int k = 0; k < 12; ++k) a[k] += tmp[k];
        }
        if ((p.flags & JOINTS_POSITIONS) != 0u)
          for (int r = 0; r < 3; ++r) a[r * 4 + 3] += gradPositions[i * 3u + uint(r)];
        for (int k = 0; k < 12; ++k) sA[e * 12u + uint(k)] = a[k];
      }
      barrier();
    }
    // The walk, deepest level first, does only what a parent waits for: a joint's adjoint is its own gradient plus
    // what each child sends (children in their fixed order), and it sends G_j = G_parent · L_j's dG_parent += dG_j · L_jᵀ.
    for (uint d = levelCount; d-- > 0u;) {
      const uint start = levels[N + d], width = levels[N + d + 1u] - start;
      for (uint x = t; x < skeletons * width; x += JOINTS_SMALL_THREADS) {
        const uint s = x / width, j = levels[start + x % width], e = s * N + j;
        float a[12], l[12], up[12];
        for (int k = 0; k < 12; ++k) a[k] = sA[e * 12u + uint(k)];
        for (uint c = childStart[j]; c < childStart[j + 1u]; ++c)
          for (int k = 0; k < 12; ++k) a[k] += sUp[(s * N + children[c]) * 12u + uint(k)];
        for (int k = 0; k < 12; ++k) sA[e * 12u + uint(k)] = a[k];
        if (parents[j] >= 0) {
          for (int k = 0; k < 12; ++k) l[k] = sL[e * 12u + uint(k)];
          jointTimesTranspose(a, l, up);
          for (int k = 0; k < 12; ++k) sUp[e * 12u + uint(k)] = up[k];
        }
      }
      barrier();
    }
    // Then every joint at once: dL_j = G_parentᵀ · dG_j (a root's dL is its adjoint), through the rotation if rigid.
    for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
      const uint s = e / N, j = e % N, i = base + e;
      float a[12], dl[12];
      for (int k = 0; k < 12; ++k) a[k] = sA[e * 12u + uint(k)];
      const int parent = parents[j];
      if (parent >= 0) {
        float gp[12];
        for (int k = 0; k < 12; ++k) gp[k] = globals[(base + s * N + uint(parent)) * 12u + uint(k)];
        jointTransposeTimes(gp, a, dl);
      } else {
        dl = a;
      }
      if ((p.flags & JOINTS_AFFINE) == 0u) {  // (dq, dt) in the first 7 floats
        float dq[4];
        jointRigidBackward(localA[i * 4u], localA[i * 4u + 1u], localA[i * 4u + 2u], localA[i * 4u + 3u], dl, dq);
        dl[4] = dl[3], dl[5] = dl[7], dl[6] = dl[11];
        for (int k = 0; k < 4; ++k) dl[k] = dq[k];
      }
      for (int k = 0; k < 12; ++k) sL[e * 12u + uint(k)] = dl[k];
    }
    barrier();
    if ((p.flags & JOINTS_AFFINE) != 0u) {
      for (uint x = t; x < count * 12u; x += JOINTS_SMALL_THREADS) gradA[base * 12u + x] = sL[x];
    } else {
      for (uint x = t; x < count * 4u; x += JOINTS_SMALL_THREADS) gradA[base * 4u + x] = sL[x / 4u * 12u + x % 4u];
      for (uint x = t; x < count * 3u; x += JOINTS_SMALL_THREADS) gradB[base * 3u + x] = sL[x / 3u * 12u + 4u + x % 3u];
    }
    barrier();  // before the next round's reads
  }
}
