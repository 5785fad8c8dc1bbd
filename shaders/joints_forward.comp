#version 450
// One generation of joint propagation, forward: an invocation per (skeleton, path) walks the path top down, each
// global its parent's times its local (the path's top takes its parent's from an earlier generation).
#extension GL_GOOGLE_include_directive : require
#include "shared/joints_io.h"

layout(local_size_x = JOINTS_WORKGROUP_SIZE) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Order { uint order[]; };
layout(std430, binding = JOINTS_BINDING_PATH_START) readonly buffer PathStart { uint pathStart[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { float localA[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { float inverseBind[]; };
layout(std430, binding = JOINTS_BINDING_GLOBALS) buffer Globals { float globals[]; };
layout(std430, binding = JOINTS_BINDING_SKINNING) writeonly buffer Skinning { float skinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) writeonly buffer Positions { float positions[]; };
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
    float g[12], l[12], next[12];
    const int top = parents[order[pathStart[path]]];
    if (top >= 0)
      for (int k = 0; k < 12; ++k) g[k] = globals[(base + uint(top)) * 12u + uint(k)];
    const uint first = pathStart[path], end = pathStart[path + 1u];
    for (uint n = first; n < end; ++n) {
      const uint i = base + order[n];
      localOf(i, l);
      if (n == first && top < 0) {
        g = l;
      } else {
        jointCompose(g, l, next);
        g = next;
      }
      for (int k = 0; k < 12; ++k) globals[i * 12u + uint(k)] = g[k];
      if ((p.flags & JOINTS_POSITIONS) != 0u)
        for (int r = 0; r < 3; ++r) positions[i * 3u + uint(r)] = g[r * 4 + 3];
      if ((p.flags & JOINTS_SKINNING) != 0u) {
        float ib[12], s[12];
        for (int k = 0; k < 12; ++k) ib[k] = inverseBind[order[n] * 12u + uint(k)];
        jointCompose(g, ib, s);
        for (int k = 0; k < 12; ++k) skinning[i * 12u + uint(k)] = s[k];
      }
    }
  }
}
