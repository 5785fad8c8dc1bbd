#version 450
// Culled Gaussian field, a point per invocation (shared/gaussian_grid_io.h): the field (GAUSSIAN_BACKWARD 0) or the
// point's gradient (1) over the Gaussians of its cell, then the outsized ones, each list in index order; a term
// counts where m' ≤ the Gaussian's cut. GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_grid_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
#include "gaussian_culled_buffers.glsl"

void main() {
  const uint b = gl_GlobalInvocationID.x;
  if (b >= p.points) return;
  const uint C = p.channels;
  const float x = points[b * 3u], y = points[b * 3u + 1u], zc = points[b * 3u + 2u];
#if GAUSSIAN_BACKWARD
  float gradIn[MAXC], gx = 0.0, gy = 0.0, gz = 0.0;
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) gradIn[c] = c < C ? gradField[b * C + c] : 0.0;
#else
  float acc[MAXC];
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) acc[c] = 0.0;
#endif
  uint cell;
  const bool inGrid = pointCell(b, cell);
  for (uint pass = inGrid ? 0u : 1u; pass < 2u; ++pass) {
    const uint list = pass == 0u ? cell : p.cells;
    const uint first = grid[p.gaussianStarts + list], last = grid[p.gaussianStarts + list + 1u];
    for (uint e = first; e < last; ++e) {
      const uint i = grid[p.gaussianEntries + e], o = p.prepared + i * GAUSSIAN_PREPARED;
      float a[6], z[3];
      [[unroll]] for (uint k = 0u; k < 6u; ++k) a[k] = uintBitsToFloat(grid[o + k]);
      const float m = gaussianDistance(a, x - uintBitsToFloat(grid[o + 6u]), y - uintBitsToFloat(grid[o + 7u]),
                                       zc - uintBitsToFloat(grid[o + 8u]), z);  // scaled (gaussian_io.h)
      if (!(m <= uintBitsToFloat(grid[o + GAUSSIAN_PREPARED_CUT]))) continue;
      const float g = gaussianTerm(m);
#if GAUSSIAN_BACKWARD
      float s = 0.0;
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) s += c < C ? gradIn[c] * weights[i * C + c] : 0.0;
      const float q2 = -g * s;  // 2·dLoss/dm
      gx += q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]);
      gy += q2 * (a[2] * z[1] + a[4] * z[2]);
      gz += q2 * (a[5] * z[2]);
#else
      [[unroll]] for (uint c = 0u; c < MAXC; ++c)
        if (c < C) acc[c] += weights[i * C + c] * g;
#endif
    }
  }
#if GAUSSIAN_BACKWARD
  // A'ᵀz' is the unscaled Aᵀz times the scale's square.
  outValues[b * 3u] = gx * GAUSSIAN_UNSCALE, outValues[b * 3u + 1u] = gy * GAUSSIAN_UNSCALE;
  outValues[b * 3u + 2u] = gz * GAUSSIAN_UNSCALE;
#else
  [[unroll]] for (uint c = 0u; c < MAXC; ++c)
    if (c < C) outValues[b * C + c] = acc[c];
#endif
}
