#version 450
// Joint propagation of a small forest, forward (shared/joint_propagation_io.h): a workgroup takes p.tiles skeletons at a time,
// their locals read whole into shared memory, walks them level by level (a joint's global is its parent's times its
// local), and writes them whole.
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_io.h"

layout(local_size_x = JOINTS_SMALL_THREADS) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Levels { uint levels[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { vec4 localA[]; };  // quaternions or rows
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { vec4 inverseBind[]; };  // rows
layout(std430, binding = JOINTS_BINDING_GLOBALS) writeonly buffer Globals { vec4 globals[]; };
layout(std430, binding = JOINTS_BINDING_SKINNING) writeonly buffer Skinning { vec4 skinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) writeonly buffer Positions { float positions[]; };
layout(push_constant) uniform Push { JointsPush p; };

shared vec4 sG[JOINTS_SMALL_FORWARD_JOINTS * 3];  // locals, becoming globals level by level (JOINTS_ROWS_READ)

#include "shared/joint_propagation_locals.h"

void main() {
  const uint N = p.joints, t = gl_LocalInvocationID.x, levelCount = p.genStart;
  for (uint first = gl_WorkGroupID.x * p.tiles; first < p.batch; first += gl_NumWorkGroups.x * p.tiles) {
    const uint skeletons = min(p.tiles, p.batch - first), count = skeletons * N, base = first * N;
    if ((p.flags & JOINTS_AFFINE) != 0u) {
      for (uint x = t; x < count * 3u; x += JOINTS_SMALL_THREADS) sG[x] = localA[base * 3u + x];  // coalesced rows
    } else {
      for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
        float m[12];
        localOf(base + e, m);
        JOINTS_ROWS_WRITE(sG, e, m);
      }
    }
    barrier();
    for (uint d = 1u; d < levelCount; ++d) {  // level 0: roots, whose globals are their locals
      const uint start = levels[N + d], width = levels[N + d + 1u] - start;
      for (uint x = t; x < skeletons * width; x += JOINTS_SMALL_THREADS) {
        const uint s = x / width, j = levels[start + x % width], e = s * N + j;
        float g[12], l[12], y[12];
        JOINTS_ROWS_READ(sG, s * N + uint(parents[j]), g);
        JOINTS_ROWS_READ(sG, e, l);
        jointCompose(g, l, y);
        JOINTS_ROWS_WRITE(sG, e, y);
      }
      barrier();
    }
    for (uint x = t; x < count * 3u; x += JOINTS_SMALL_THREADS) globals[base * 3u + x] = sG[x];  // coalesced rows
    if ((p.flags & JOINTS_POSITIONS) != 0u)
      for (uint x = t; x < count * 3u; x += JOINTS_SMALL_THREADS) positions[base * 3u + x] = sG[x / 3u * 3u + x % 3u].w;
    if ((p.flags & JOINTS_SKINNING) != 0u) {
      for (uint e = t; e < count; e += JOINTS_SMALL_THREADS) {
        float g[12], ib[12], y[12];
        JOINTS_ROWS_READ(sG, e, g);
        JOINTS_ROWS_READ(inverseBind, e % N, ib);
        jointCompose(g, ib, y);
        JOINTS_ROWS_WRITE(skinning, base + e, y);
      }
    }
    barrier();  // before the next round's locals
  }
}
