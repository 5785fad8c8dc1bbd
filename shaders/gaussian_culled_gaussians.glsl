#version 450
// Culled Gaussian field backward, a Gaussian per GAUSSIAN_CULLED_SLOTS invocations (shared/gaussian_grid_io.h): the
// gradients of its mean, of A = L⁻¹ and of its weights over the points of the cells its support covers (an
// outsized Gaussian: every binned point), written as the one partial row gaussian_finish turns into L's parameters'
// gradient. The cells' lists (sorted, gathered before) are walked end to end in cell order, slot k taking entries
// k, k + SLOTS, …; then each sum adds its slots in order: the same bits on every run. GAUSSIAN_CHANNELS_MAX: the
// channel arrays' size (1, 8 or 32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_grid_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
#include "gaussian_culled_buffers.glsl"
// The points and gradField bindings hold the gathered points (x, y, z, 0) and their gradients, in list order
// (shared/gaussian_grid_io.h): entry e, not point b.
layout(std430, binding = GAUSSIAN_CULLED_BINDING_POINTS) readonly buffer GatheredPoints { vec4 gathered[]; };

#define SLOTS GAUSSIAN_CULLED_SLOTS
#define PER_GROUP GAUSSIAN_CULLED_GAUSSIANS_PER_GROUP
#define SPAN_CELLS GAUSSIAN_CULLED_SPAN_CELLS
#define SUMS (GAUSSIAN_GAUSSIAN_GRADS + MAXC)  // an invocation's partial sums: D (3), S (6), the weights' (MAXC)

shared uint sCellFirst[PER_GROUP * SPAN_CELLS], sCellCount[PER_GROUP * SPAN_CELLS];
shared float sPartial[PER_GROUP * SUMS * (SLOTS + 1u)];  // [Gaussian][sum][slot], padded: no bank conflicts
shared float sTotal[PER_GROUP * GAUSSIAN_GAUSSIAN_GRADS];

float a[6], mean[3], w[MAXC], gw[MAXC], D[3], S[6], cut;

// Entry e's term, accumulated into D, S and the weights' gradient (gaussian_io.h's gaussianSideGrads).
void accumulate(uint e) {
  const uint C = p.channels;
  float z[3];
  const vec3 x = gathered[e].xyz;
  const float dx = x.x - mean[0], dy = x.y - mean[1], dz = x.z - mean[2];
  const float m = gaussianDistance(a, dx, dy, dz, z);  // scaled (gaussian_io.h)
  if (!(m <= cut)) return;
  const float g = gaussianTerm(m);
  float s = 0.0;
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) {
    const float gf = c < C ? gradField[e * C + c] : 0.0;
    s += gf * w[c];
    gw[c] += gf * g;
  }
  gaussianAddSideTerm(-g * s, dx, dy, dz, D, S);  // q = 2·dLoss/dm
}

// The gradients of Gaussians group·PER_GROUP … (the workgroup's PER_GROUP Gaussians).
void gradsOf(uint group) {
  const uint lid = gl_LocalInvocationID.x, local = lid / SLOTS, slot = lid % SLOTS;
  const uint i = group * PER_GROUP + local, C = p.channels, cellsAt = local * SPAN_CELLS;
  const bool inRange = i < p.gaussians;
  for (uint k = 0u; k < 6u; ++k) S[k] = 0.0;
  for (uint k = 0u; k < 3u; ++k) D[k] = 0.0;
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) gw[c] = 0.0;
  uint reach = GAUSSIAN_REACH_NONE, cells = 0u;
  if (inRange) {
    const uint o = p.prepared + i * GAUSSIAN_PREPARED;
    for (uint k = 0u; k < 6u; ++k) a[k] = uintBitsToFloat(grid[o + k]);
    for (uint k = 0u; k < 3u; ++k) mean[k] = uintBitsToFloat(grid[o + 6u + k]);
    [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[c] = c < C ? weights[i * C + c] : 0.0;
    cut = uintBitsToFloat(grid[o + GAUSSIAN_PREPARED_CUT]);
    reach = grid[o + GAUSSIAN_PREPARED_REACH];
    if (reach != GAUSSIAN_REACH_NONE && reach != GAUSSIAN_REACH_OUTSIZED) {
      cells = gaussianReachCells(reach);
      if (slot < cells) {  // slot k looks up the k-th cell of the box
        const uint cell = gaussianReachCell(grid[o + GAUSSIAN_PREPARED_FIRST_CELL], reach, slot, gridDim(0), gridDim(1));
        const uint first = grid[p.pointStarts + cell];
        sCellFirst[cellsAt + slot] = first, sCellCount[cellsAt + slot] = grid[p.pointStarts + cell + 1u] - first;
      }
    }
  }
  barrier();
  // Loops nested: lavapipe caps one loop's trips.
  if (reach == GAUSSIAN_REACH_OUTSIZED) {  // every binned point (those off the grid are beyond every support)
    const uint entries = grid[p.pointStarts + p.cells];
    for (uint base = 0u; base < entries; base += SLOTS * 1024u)
      for (uint e = base + slot; e < min(base + SLOTS * 1024u, entries); e += SLOTS) accumulate(e);
  } else if (cells > 0u) {
    uint total = 0u, c = 0u, before = 0u;  // c: the cell entry f lies in; before: the entries of cells before c
    for (uint k = 0u; k < cells; ++k) total += sCellCount[cellsAt + k];
    for (uint base = 0u; base < total; base += SLOTS * 1024u)
      for (uint f = base + slot; f < min(base + SLOTS * 1024u, total); f += SLOTS) {
        while (f >= before + sCellCount[cellsAt + c]) before += sCellCount[cellsAt + c], ++c;
        accumulate(sCellFirst[cellsAt + c] + (f - before));
      }
  }
  const uint partials = local * SUMS * (SLOTS + 1u);
  for (uint k = 0u; k < 3u; ++k) sPartial[partials + k * (SLOTS + 1u) + slot] = D[k];
  for (uint k = 0u; k < 6u; ++k) sPartial[partials + (3u + k) * (SLOTS + 1u) + slot] = S[k];
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) sPartial[partials + (GAUSSIAN_GAUSSIAN_GRADS + c) * (SLOTS + 1u) + slot] = gw[c];
  barrier();
  const uint row = i * (GAUSSIAN_GAUSSIAN_GRADS + C);
  for (uint v = slot; v < GAUSSIAN_GAUSSIAN_GRADS + C; v += SLOTS) {  // sum v over the slots, in slot order
    float sum = 0.0;
    for (uint k = 0u; k < SLOTS; ++k) sum += sPartial[partials + v * (SLOTS + 1u) + k];
    if (v < GAUSSIAN_GAUSSIAN_GRADS)
      sTotal[local * GAUSSIAN_GAUSSIAN_GRADS + v] = sum;
    else if (inRange)
      outValues[row + v] = sum;  // the weights' gradient
  }
  barrier();
  if (inRange && slot == 0u) {
    float ar[6], gMean[3], gA[6];
    for (uint k = 0u; k < 6u; ++k) ar[k] = a[k] * (1.0 / GAUSSIAN_EXP2_SCALE), S[k] = sTotal[local * GAUSSIAN_GAUSSIAN_GRADS + 3u + k];
    for (uint k = 0u; k < 3u; ++k) D[k] = sTotal[local * GAUSSIAN_GAUSSIAN_GRADS + k];
    gaussianSideGrads(ar, D, S, gMean, gA);
    for (uint k = 0u; k < 3u; ++k) outValues[row + k] = gMean[k];
    for (uint k = 0u; k < 6u; ++k) outValues[row + 3u + k] = gA[k];
  }
}

void main() {
  // (A workgroup may take several rounds: dispatches stop at 65535 workgroups. The shared arrays' reuse across
  // rounds is ordered by gradsOf's barriers.)
  for (uint group = gl_WorkGroupID.x; group * PER_GROUP < p.gaussians; group += gl_NumWorkGroups.x) gradsOf(group);
}
