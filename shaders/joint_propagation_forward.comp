#version 450
// Joint propagation's forward over a large forest (shared/joint_propagation_io.h): one dispatch of the segmented scan of every
// path's locals (whose products are the globals on a root's path, and the path products S elsewhere), or PLACE: one
// later generation, each joint's S premultiplied by its path top's parent's global.
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_io.h"

layout(local_size_x = JOINTS_THREADS) in;
layout(std430, binding = JOINTS_BINDING_ORDER) readonly buffer Order { uint order[]; };
layout(std430, binding = JOINTS_BINDING_TOP_PARENTS) readonly buffer TopParents { int topParents[]; };
layout(std430, binding = JOINTS_BINDING_LOCAL_A) readonly buffer LocalA { vec4 localA[]; };  // quaternions or rows
layout(std430, binding = JOINTS_BINDING_LOCAL_B) readonly buffer LocalB { float localB[]; };
layout(std430, binding = JOINTS_BINDING_INVERSE_BIND) readonly buffer InverseBind { vec4 inverseBind[]; };
layout(std430, binding = JOINTS_BINDING_GLOBALS) buffer Globals { vec4 globals[]; };  // three rows a joint
layout(std430, binding = JOINTS_BINDING_SKINNING) writeonly buffer Skinning { vec4 skinning[]; };
layout(std430, binding = JOINTS_BINDING_POSITIONS) writeonly buffer Positions { float positions[]; };
layout(std430, binding = JOINTS_BINDING_SCRATCH) coherent buffer Scratch { uint scratchWords[]; };
layout(push_constant) uniform Push { JointsPush p; };

#define JOINTS_BACKWARD 0
#include "shared/joint_propagation_scan.h"

#include "shared/joint_propagation_locals.h"

// An invocation's elements, loaded together (their loads overlap) and kept for the scan's two walks.
float itemValue[JOINTS_ITEMS][12];
uint itemFlag[JOINTS_ITEMS], itemJoint[JOINTS_ITEMS], itemIndex[JOINTS_ITEMS];
bool itemPlaced[JOINTS_ITEMS];  // on a root's path: its path product is its global

// Element e of the sequence (skeleton e / length, position genStart + e % length) into item n: its segment flag (a
// path's top) and value (its local).
void load(uint e, int n) {
  const uint b = e / p.genLength, position = p.genStart + e % p.genLength, o = order[position], j = o & ~JOINTS_HEAD;
  const uint i = b * p.joints + j;
  itemJoint[n] = j, itemIndex[n] = i, itemFlag[n] = (o & JOINTS_HEAD) != 0u ? 1u : 0u;
  itemPlaced[n] = topParents[position] < 0;
  float l[12];
  localOf(i, l);
  itemValue[n] = l;
}

// Joint j's global g (at i): stored, with the outputs it makes.
void store(uint i, uint j, float g[12]) {
  JOINTS_ROWS_WRITE(globals, i, g)
  if ((p.flags & JOINTS_POSITIONS) != 0u)
    for (int r = 0; r < 3; ++r) positions[i * 3u + uint(r)] = g[r * 4 + 3];
  if ((p.flags & JOINTS_SKINNING) != 0u) {
    float ib[12], s[12];
    JOINTS_ROWS_READ(inverseBind, j, ib)
    jointCompose(g, ib, s);
    JOINTS_ROWS_WRITE(skinning, i, s)
  }
}

// Each element's path product: its global on a root's path, else kept in the globals for PLACE.
void apply(JointsState before, int count) {
  float g[12] = before.m, y[12];
  for (int n = 0; n < count; ++n) {
    jointsCombineForward(g, itemFlag[n], itemValue[n], y);
    g = y;
    if (itemPlaced[n]) {
      store(itemIndex[n], itemJoint[n], g);
    } else {
      JOINTS_ROWS_WRITE(globals, itemIndex[n], g)
    }
  }
}

void place() {
  for (uint e = gl_GlobalInvocationID.x; e < p.batch * p.genLength; e += gl_NumWorkGroups.x * JOINTS_THREADS) {
    const uint b = e / p.genLength, position = p.genStart + e % p.genLength;
    const uint j = order[position] & ~JOINTS_HEAD, i = b * p.joints + j;
    const uint parent = b * p.joints + uint(topParents[position]);
    float product[12], top[12], g[12];
    JOINTS_ROWS_READ(globals, i, product)
    JOINTS_ROWS_READ(globals, parent, top)
    jointCompose(top, product, g);
    store(i, j, g);
  }
}

void main() {
  if (p.phase == JOINTS_PLACE) {
    place();
    return;
  }
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
