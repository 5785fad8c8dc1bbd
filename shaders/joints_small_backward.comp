#version 450
// Joint propagation of a small forest, backward (shared/joints_io.h): a workgroup takes p.tiles skeletons at a
// time, their globals and outputs' gradients read whole into shared memory, and walks them level by level from the
// deepest: a joint's adjoint is its own gradient plus what each child sends (the child's adjoint through its local;
// children in their fixed order: no atomics, the same bits on every run), then its local's gradient, written out
// whole. The adjoint scratch is not used.
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

// Three vec4 rows per joint (JOINTS_ROWS_READ).
shared vec4 sA[JOINTS_SMALL_JOINTS * 3];  // each joint's own gradient; once done, what it sends its parent
shared vec4 sG[JOINTS_SMALL_JOINTS * 3];  // globals; once a joint's children are done, its local's gradient

#include "shared/joints_locals.h"

void main() {
  const uint N = p.joints, t = gl_LocalInvocationID.x, levelCount = p.genStart;
  for (uint first = gl_WorkGroupID.x * p.tiles; first < p.batch; first += gl_NumWorkGroups.x * p.tiles) {
    const uint skeletons = min(p.tiles, p.batch - first), count = skeletons * N, base = first * N;
    for (uint x = t; x < count * 12u; x += JOINTS_SMALL_THREADS) {
      sG[x / 4u][x % 4u] = globals[base * 12u + x];
      sA[x / 4u][x % 4u] = (p.flags & JOINTS_GRAD_GLOBALS) != 0u ? gradGlobals[base * 12u + x] : 0.0;
    }
    barrier();
    if ((p.flags & (JOINTS_SKINNING | JOINTS_POSITIONS)) != 0u) {
      for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
        const uint i = base + e;
        float a[12], tmp[12];
        JOINTS_ROWS_READ(sA, e, a);
        if ((p.flags & JOINTS_SKINNING) != 0u) {  // S = G · IB: dG += dS · IBᵀ
          float ds[12], ib[12];
          for (int k = 0; k < 12; ++k) ds[k] = gradSkinning[i * 12u + uint(k)], ib[k] = inverseBind[e % N * 12u + uint(k)];
          jointTimesTranspose(ds, ib, tmp);
          for (int k = 0; k < 12; ++k) a[k] += tmp[k];
        }
        if ((p.flags & JOINTS_POSITIONS) != 0u)
          for (int r = 0; r < 3; ++r) a[r * 4 + 3] += gradPositions[i * 3u + uint(r)];
        JOINTS_ROWS_WRITE(sA, e, a);
      }
      barrier();
    }
    for (uint d = levelCount; d-- > 0u;) {
      const uint start = levels[N + d], width = levels[N + d + 1u] - start;
      for (uint x = t; x < skeletons * width; x += JOINTS_SMALL_THREADS) {
        const uint s = x / width, j = levels[start + x % width], e = s * N + j, i = base + e;
        float a[12], l[12], dl[12], up[12];
        JOINTS_ROWS_READ(sA, e, a);
        for (uint c = childStart[j]; c < childStart[j + 1u]; ++c) {  // the level below: what each child sent
          float m[12];
          JOINTS_ROWS_READ(sA, s * N + children[c], m);
          for (int k = 0; k < 12; ++k) a[k] += m[k];
        }
        // G_j = G_parent · L_j: dL_j = G_parentᵀ · dG_j (a root's dL is its adjoint); dG_parent += dG_j · L_jᵀ.
        const int parent = parents[j];
        if (parent >= 0) {
          float gp[12];
          JOINTS_ROWS_READ(sG, s * N + uint(parent), gp);
          jointTransposeTimes(gp, a, dl);
        } else {
          dl = a;
        }
        localOf(i, l);
        jointTimesTranspose(a, l, up);
        if ((p.flags & JOINTS_AFFINE) == 0u) {  // (dq, dt) in the first 7 floats
          float dq[4];
          jointRigidBackward(localA[i * 4u], localA[i * 4u + 1u], localA[i * 4u + 2u], localA[i * 4u + 3u], dl, dq);
          dl[4] = dl[3], dl[5] = dl[7], dl[6] = dl[11];
          for (int k = 0; k < 4; ++k) dl[k] = dq[k];
        }
        JOINTS_ROWS_WRITE(sA, e, up);
        JOINTS_ROWS_WRITE(sG, e, dl);
      }
      barrier();
    }
    if ((p.flags & JOINTS_AFFINE) != 0u) {
      for (uint x = t; x < count * 12u; x += JOINTS_SMALL_THREADS) gradA[base * 12u + x] = sG[x / 4u][x % 4u];
    } else {
      for (uint x = t; x < count * 4u; x += JOINTS_SMALL_THREADS) gradA[base * 4u + x] = sG[x / 4u * 3u][x % 4u];
      for (uint x = t; x < count * 3u; x += JOINTS_SMALL_THREADS) gradB[base * 3u + x] = sG[x / 3u * 3u + 1u][x % 3u];
    }
    barrier();  // before the next round's reads
  }
}
