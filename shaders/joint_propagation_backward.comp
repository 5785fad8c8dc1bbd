#version 450
// One dispatch of one generation of joint propagation, backward (generations last to first; shared/joint_propagation_io.h): a
// segmented scan, bottom up along each path, of the maps c -> (a + c)·Lᵀ that carry the adjoint from a joint's heavy
// child to its parent. A joint's a is the gradient of its own outputs plus its light children's messages: each one's
// adjoint carried through its local, which a later generation's dispatch left in the adjoint scratch (summed in the
// children's fixed order).
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_io.h"

layout(local_size_x = JOINTS_THREADS) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Order { uint order[]; };
layout(std430, binding = JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_START) readonly buffer LightStart { uint lightStart[]; };
layout(std430, binding = JOINTS_BINDING_LIGHT_CHILDREN) readonly buffer LightChildren { uint lightChildren[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { vec4 localA[]; };  // quaternions or rows
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { vec4 inverseBind[]; };  // rows
layout(std430, binding = JOINTS_BINDING_GLOBALS) readonly buffer Globals { vec4 globals[]; };  // three rows a joint
layout(std430, binding = JOINTS_BINDING_SKINNING) readonly buffer GradSkinning { vec4 gradSkinning[]; };  // rows
layout(std430, binding = JOINTS_BINDING_POSITIONS) readonly buffer GradPositions { float gradPositions[]; };
layout(std430, binding = JOINTS_BINDING_GRAD_GLOBALS) readonly buffer GradGlobals { vec4 gradGlobals[]; };  // rows
layout(std430, binding = JOINTS_BINDING_ADJOINT) buffer Adjoint { vec4 adjoint[]; };  // three rows a joint
layout(std430, binding = JOINTS_BINDING_GRAD_A) writeonly buffer GradA { vec4 gradA[]; };  // a quaternion or a row
layout(std430, binding = JOINTS_BINDING_GRAD_B) writeonly buffer GradB { float gradB[]; };
layout(std430, binding = JOINTS_BINDING_SCRATCH) coherent buffer Scratch { uint scratchWords[]; };
layout(push_constant) uniform Push { JointsPush p; };

#define JOINTS_BACKWARD 1
#include "shared/joint_propagation_scan.h"

#define JOINTS_LOCAL_GRADIENTS
#include "shared/joint_propagation_locals.h"

// An invocation's elements, loaded together (their loads overlap) and kept for the scan's two walks.
float itemA[JOINTS_ITEMS][12], itemLocal[JOINTS_ITEMS][12];
uint itemFlag[JOINTS_ITEMS], itemJoint[JOINTS_ITEMS], itemIndex[JOINTS_ITEMS], itemBase[JOINTS_ITEMS];
bool itemTop[JOINTS_ITEMS];  // its path's top

// Element e of the generation's sequence taken from its end (so a path is met bottom first) into item n: its
// segment flag (a path's bottom), its a and its local.
void load(uint e, int n) {
  const uint v = p.batch * p.genLength - 1u - e, position = v % p.genLength;
  const uint o = order[p.genStart + position], base = v / p.genLength * p.joints, j = o & ~JOINTS_HEAD, i = base + j;
  itemJoint[n] = j, itemIndex[n] = i, itemBase[n] = base, itemTop[n] = (o & JOINTS_HEAD) != 0u;
  const bool bottom = position + 1u == p.genLength || (order[p.genStart + position + 1u] & JOINTS_HEAD) != 0u;
  itemFlag[n] = bottom ? 1u : 0u;
  float a[12] = kJointsZero, t[12];
  if ((p.flags & JOINTS_GRAD_GLOBALS) != 0u) JOINTS_ROWS_READ(gradGlobals, i, a);
  if ((p.flags & JOINTS_SKINNING) != 0u) {  // S = G · IB: dG += dS · IBᵀ
    float ds[12], ib[12];
    JOINTS_ROWS_READ(gradSkinning, i, ds);
    JOINTS_ROWS_READ(inverseBind, j, ib);
    jointTimesTranspose(ds, ib, t);
    for (int k = 0; k < 12; ++k) a[k] += t[k];
  }
  if ((p.flags & JOINTS_POSITIONS) != 0u)
    for (int r = 0; r < 3; ++r) a[r * 4 + 3] += gradPositions[i * 3u + uint(r)];
  for (uint c = lightStart[j]; c < lightStart[j + 1u]; ++c) {
    float m[12];
    JOINTS_ROWS_READ(adjoint, base + lightChildren[c], m);
    for (int k = 0; k < 12; ++k) a[k] += m[k];
  }
  itemA[n] = a;
  float l[12];
  localOf(i, l);
  itemLocal[n] = l;
}

void apply(JointsState before, int count) {
  // What arrives from below the first item: the prefix applied to nothing (the sequence starts at a path's bottom).
  float c[12] = before.u;
  for (int n = 0; n < count; ++n) {
    const uint i = itemIndex[n];
    if (itemFlag[n] != 0u) c = kJointsZero;
    float a[12];
    for (int k = 0; k < 12; ++k) a[k] = itemA[n][k] + c[k];
    const int parent = parents[itemJoint[n]];
    storeLocalGradient(i, a, parent >= 0, itemBase[n] + uint(parent));
    jointTimesTranspose(a, itemLocal[n], c);  // dG_parent += dG_j · L_jᵀ: a path's top sends it as its message
    if (itemTop[n] && parent >= 0) JOINTS_ROWS_WRITE(adjoint, i, c);
  }
}

void main() {
  if (p.phase == JOINTS_CARRY) {
    jointsCarry();
    return;
  }
  const uint count = p.batch * p.genLength;
  for (uint tile = jointsFirstTile(); tile < p.tiles; tile += gl_NumWorkGroups.x) {
    const uint first = min(tile * JOINTS_TILE + gl_LocalInvocationID.x * JOINTS_ITEMS, count);
    const int items = int(min(first + JOINTS_ITEMS, count) - first);
    for (int n = 0; n < JOINTS_ITEMS; ++n)
      if (n < items) load(first + uint(n), n);
    JointsState mine = jointsIdentityState(), total;
    for (int n = 0; n < items; ++n) {
      JointsState x;
      x.flag = itemFlag[n], x.m = itemLocal[n];
      jointTimesTranspose(itemA[n], itemLocal[n], x.u);
      mine = jointsCombine(mine, x);
    }
    const JointsState exclusive = jointsScanWorkgroup(mine, total);
    if (p.phase == JOINTS_REDUCE) {
      if (gl_LocalInvocationID.x == 0u) jointsWriteTile(tile, total);
      continue;
    }
    apply(p.tiles > 1u ? jointsCombine(jointsTileCarry(tile, total), exclusive) : exclusive, items);
  }
}
