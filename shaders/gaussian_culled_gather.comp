#version 450
// Culled Gaussian field backward: the binned points gathered in list order with the field's gradient at each, for
// the Gaussians' pass (shared/gaussian_grid_io.h). An invocation per entry of the lists.
#extension GL_GOOGLE_include_directive : require
#include "shared/gaussian_grid_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
#include "gaussian_culled_buffers.glsl"

void main() {
  const uint e = gl_GlobalInvocationID.x, C = p.channels;
  if (e >= grid[p.pointStarts + p.cells]) return;
  const uint b = grid[p.pointEntries + e];
  for (uint k = 0u; k < 3u; ++k) outValues[e * 4u + k] = points[b * 3u + k];
  outValues[e * 4u + 3u] = 0.0;
  for (uint c = 0u; c < C; ++c) outValues[p.gatheredGrads + e * C + c] = gradField[b * C + c];
}
