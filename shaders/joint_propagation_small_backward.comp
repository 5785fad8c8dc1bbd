#version 450
// Joint propagation of a small forest, backward (shared/joint_propagation_io.h): a workgroup takes p.tiles skeletons at a
// time, their outputs' gradients read whole into shared memory, and walks them level by level from the deepest: a
// joint's adjoint is its own gradient plus what each child sends (the child's adjoint through its local; children in
// their fixed order: no atomics, the same bits on every run). Then every joint's local's gradient at once, from its
// parent's global: the walk's chain of levels carries only the adjoints, and only they take shared memory, so that
// more skeletons share a level's barrier. The adjoint scratch is not used.
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_io.h"

layout(local_size_x = JOINTS_SMALL_THREADS) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Levels { uint levels[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_START) readonly buffer ChildStart { uint childStart[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_CHILDREN) readonly buffer Children { uint children[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { vec4 localA[]; };  // quaternions or rows
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { vec4 inverseBind[]; };  // rows
layout(std430, binding = JOINTS_BINDING_GLOBALS) readonly buffer Globals { vec4 globals[]; };  // three rows a joint
layout(std430, binding = JOINTS_BINDING_SKINNING) readonly buffer GradSkinning { vec4 gradSkinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) readonly buffer GradPositions { float gradPositions[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_GLOBALS) readonly buffer GradGlobals { vec4 gradGlobals[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_A) writeonly buffer GradA { vec4 gradA[]; };  // a quaternion or a row
layout(std430, binding = JOINTS_BINDING_GRAD_B) writeonly buffer GradB { float gradB[]; };
layout(push_constant) uniform Push { JointsPush p; };

// Three vec4 rows per joint (JOINTS_ROWS_READ): each joint's own gradient, then its adjoint.
shared vec4 sA[JOINTS_SMALL_BACKWARD_JOINTS * 3];

#define JOINTS_LOCAL_GRADIENTS
#include "shared/joint_propagation_locals.h"

void main() {
  const uint N = p.joints, t = gl_LocalInvocationID.x, levelCount = p.genStart;
  for (uint first = gl_WorkGroupID.x * p.tiles; first < p.batch; first += gl_NumWorkGroups.x * p.tiles) {
    const uint skeletons = min(p.tiles, p.batch - first), count = skeletons * N, base = first * N;
    for (uint x = t; x < count * 3u; x += JOINTS_SMALL_THREADS)  // coalesced rows
      sA[x] = (p.flags & JOINTS_GRAD_GLOBALS) != 0u ? gradGlobals[base * 3u + x] : vec4(0.0);
    barrier();
    if ((p.flags & (JOINTS_SKINNING | JOINTS_POSITIONS)) != 0u) {
      for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
        const uint i = base + e;
        float a[12], tmp[12];
        JOINTS_ROWS_READ(sA, e, a);
        if ((p.flags & JOINTS_SKINNING) != 0u) {  // S = G · IB: dG += dS · IBᵀ
          float ds[12], ib[12];
          JOINTS_ROWS_READ(gradSkinning, i, ds);
          JOINTS_ROWS_READ(inverseBind, e % N, ib);
          jointTimesTranspose(ds, ib, tmp);
          for (int k = 0; k < 12; ++k) a[k] += tmp[k];
        }
        if ((p.flags & JOINTS_POSITIONS) != 0u)
          for (int r = 0; r < 3; ++r) a[r * 4 + 3] += gradPositions[i * 3u + uint(r)];
        JOINTS_ROWS_WRITE(sA, e, a);
      }
      barrier();
    }
    // The walk, deepest level first: each joint's adjoint, its own gradient plus what each child sends (the child's
    // adjoint through the child's local), in place of the own gradient.
    for (uint d = levelCount; d-- > 0u;) {
      const uint start = levels[N + d], width = levels[N + d + 1u] - start;
      for (uint x = t; x < skeletons * width; x += JOINTS_SMALL_THREADS) {
        const uint s = x / width, j = levels[start + x % width], e = s * N + j;
        float a[12];
        JOINTS_ROWS_READ(sA, e, a);
        for (uint c = childStart[j]; c < childStart[j + 1u]; ++c) {  // the level below, in the children's order
          const uint child = s * N + children[c];
          float l[12], ac[12], m[12];
          localOf(base + child, l);
          JOINTS_ROWS_READ(sA, child, ac);
          jointTimesTranspose(ac, l, m);  // G_c = G_j · L_c: dG_j += dG_c · L_cᵀ
          for (int k = 0; k < 12; ++k) a[k] += m[k];
        }
        JOINTS_ROWS_WRITE(sA, e, a);
      }
      barrier();
    }
    // Every joint's local's gradient at once, off the walk's chain.
    for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
      const int parent = parents[e % N];
      float a[12];
      JOINTS_ROWS_READ(sA, e, a);
      storeLocalGradient(base + e, a, parent >= 0, base + e - e % N + uint(parent));
    }
    barrier();  // before the next round's gradients
  }
}
