#version 450
// One dispatch of one generation of joint propagation, forward (shared/joints_io.h): a segmented scan of the
// generation's locals, each path's top taking its parent's global, whose products are the globals.
#extension GL_GOOGLE_include_directive : require
#include "shared/joints_io.h"

layout(local_size_x = JOINTS_THREADS) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Order { uint order[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { float localA[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { float inverseBind[]; };
layout(std430, binding = JOINTS_BINDING_GLOBALS) buffer Globals { float globals[]; };
layout(std430, binding = JOINTS_BINDING_SKINNING) writeonly buffer Skinning { float skinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) writeonly buffer Positions { float positions[]; };
layout(std430, binding = JOINTS_BINDING_SCRATCH) coherent buffer Scratch { uint scratchWords[]; };
layout(push_constant) uniform Push { JointsPush p; };

#define JOINTS_BACKWARD 0
#include "shared/joints_scan.h"

#include "shared/joints_locals.h"

// An invocation's elements, loaded together (their loads overlap) and kept for the scan's two walks.
float itemValue[JOINTS_ITEMS][12];
uint itemFlag[JOINTS_ITEMS], itemJoint[JOINTS_ITEMS], itemIndex[JOINTS_ITEMS];

// Element e of the generation's sequence (skeleton e / length, position e % length) into item n: its segment flag
// (a path's top) and value (the local, a top's taking its parent's global).
void load(uint e, int n) {
  const uint b = e / p.genLength, o = order[p.genStart + e % p.genLength], j = o & ~JOINTS_HEAD;
  const uint i = b * p.joints + j;
  itemJoint[n] = j, itemIndex[n] = i, itemFlag[n] = (o & JOINTS_HEAD) != 0u ? 1u : 0u;
  float l[12];
  localOf(i, l);
  const int parent = parents[j];
  if ((o & JOINTS_HEAD) == 0u || parent < 0) {
    itemValue[n] = l;
  } else {
    float g[12], m[12];
    for (int k = 0; k < 12; ++k) g[k] = globals[(b * p.joints + uint(parent)) * 12u + uint(k)];
    jointCompose(g, l, m);
    itemValue[n] = m;
  }
}

void apply(JointsState before, int count) {
  float g[12] = before.m, y[12];
  for (int n = 0; n < count; ++n) {
    const uint i = itemIndex[n];
    jointsCombineForward(g, itemFlag[n], itemValue[n], y);
    g = y;
    for (int k = 0; k < 12; ++k) globals[i * 12u + uint(k)] = g[k];
    if ((p.flags & JOINTS_POSITIONS) != 0u)
      for (int r = 0; r < 3; ++r) positions[i * 3u + uint(r)] = g[r * 4 + 3];
    if ((p.flags & JOINTS_SKINNING) != 0u) {
      float ib[12], s[12];
      for (int k = 0; k < 12; ++k) ib[k] = inverseBind[itemJoint[n] * 12u + uint(k)];
      jointCompose(g, ib, s);
      for (int k = 0; k < 12; ++k) skinning[i * 12u + uint(k)] = s[k];
    }
  }
}

void main() {
  if (p.phase == JOINTS_CARRY) {
    jointsCarry();
    return;
  }
  const uint count = p.batch * p.genLength;
  for (uint tile = gl_WorkGroupID.x; tile < p.tiles; tile += gl_NumWorkGroups.x) {
    const uint first = min(tile * JOINTS_TILE + gl_LocalInvocationID.x * JOINTS_ITEMS, count);
    const int items = int(min(first + JOINTS_ITEMS, count) - first);
    for (int n = 0; n < JOINTS_ITEMS; ++n)
      if (n < items) load(first + uint(n), n);
    JointsState mine = jointsIdentityState(), total;
    for (int n = 0; n < items; ++n) {
      float y[12];
      jointsCombineForward(mine.m, itemFlag[n], itemValue[n], y);
      mine.m = y, mine.flag |= itemFlag[n];
    }
    const JointsState exclusive = jointsScanWorkgroup(mine, total);
    if (p.phase == JOINTS_REDUCE) {
      if (gl_LocalInvocationID.x == 0u) jointsWriteTile(tile, total);
      continue;
    }
    apply(p.tiles > 1u ? jointsCombine(jointsTileCarry(tile, total), exclusive) : exclusive, items);
  }
}
