#version 450
// Culled Gaussian field backward, a Gaussian per invocation (shared/gaussian_grid_io.h): the gradients of its mean,
// of A = L⁻¹ and of its weights over the points of the cells its support covers (cells and points in index order;
// an outsized Gaussian walks every point), written as the one partial row gaussian_finish turns into L's
// parameters' gradient. GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_grid_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
#include "gaussian_culled_buffers.glsl"

float a[6], mean[3], w[MAXC], gw[MAXC], D[3], S[6], cut;

// Point b's term, accumulated into D, S and the weights' gradient (gaussian_io.h's gaussianSideGrads).
void accumulate(uint b) {
  const uint C = p.channels;
  float z[3];
  const float dx = points[b * 3u] - mean[0], dy = points[b * 3u + 1u] - mean[1], dz = points[b * 3u + 2u] - mean[2];
  const float m = gaussianDistance(a, dx, dy, dz, z);  // scaled (gaussian_io.h)
  if (!(m <= cut)) return;
  const float g = gaussianTerm(m);
  float s = 0.0;
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) {
    const float gf = c < C ? gradField[b * C + c] : 0.0;
    s += gf * w[c];
    gw[c] += gf * g;
  }
  gaussianAddSideTerm(-g * s, dx, dy, dz, D, S);  // q = 2·dLoss/dm
}

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.gaussians) return;
  const uint C = p.channels, o = p.prepared + i * GAUSSIAN_PREPARED;
  for (uint k = 0u; k < 6u; ++k) a[k] = uintBitsToFloat(grid[o + k]), S[k] = 0.0;
  for (uint k = 0u; k < 3u; ++k) mean[k] = uintBitsToFloat(grid[o + 6u + k]), D[k] = 0.0;
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[c] = c < C ? weights[i * C + c] : 0.0, gw[c] = 0.0;
  cut = uintBitsToFloat(grid[o + GAUSSIAN_PREPARED_CUT]);
  const uint reach = grid[o + GAUSSIAN_PREPARED_REACH];
  if (reach == GAUSSIAN_REACH_OUTSIZED) {
    for (uint base = 0u; base < p.points; base += 1024u)  // nested: lavapipe caps one loop's trips
      for (uint b = base; b < min(base + 1024u, p.points); ++b) accumulate(b);
  } else if (reach != GAUSSIAN_REACH_NONE) {
    const uint firstCell = grid[o + GAUSSIAN_PREPARED_FIRST_CELL], dimX = gridDim(0), dimXY = dimX * gridDim(1);
    for (uint z = 0u; z <= (reach >> 4u & 3u); ++z)
      for (uint y = 0u; y <= (reach >> 2u & 3u); ++y)
        for (uint x = 0u; x <= (reach & 3u); ++x) {
          const uint cell = firstCell + z * dimXY + y * dimX + x;
          const uint last = grid[p.pointStarts + cell + 1u];
          for (uint e = grid[p.pointStarts + cell]; e < last; ++e) accumulate(grid[p.pointEntries + e]);
        }
  }
  float ar[6], gMean[3], gA[6];
  for (uint k = 0u; k < 6u; ++k) ar[k] = a[k] * (1.0 / GAUSSIAN_EXP2_SCALE);
  gaussianSideGrads(ar, D, S, gMean, gA);
  const uint row = i * (GAUSSIAN_GAUSSIAN_GRADS + C);
  for (uint k = 0u; k < 3u; ++k) outValues[row + k] = gMean[k];
  for (uint k = 0u; k < 6u; ++k) outValues[row + 3u + k] = gA[k];
  [[unroll]] for (uint c = 0u; c < MAXC; ++c)
    if (c < C) outValues[row + GAUSSIAN_GAUSSIAN_GRADS + c] = gw[c];
}
