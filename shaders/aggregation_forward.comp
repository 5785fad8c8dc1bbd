#version 450
// Deformable aggregation forward (shared/aggregation_io.h): an invocation per (batch, anchor, channel) sums its
// points, cameras and levels in order.
#extension GL_GOOGLE_include_directive : require
#include "shared/aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#include "aggregation_buffers.glsl"

void main() {
  const uint t = workgroupIndex() * AGGREGATION_THREADS + gl_LocalInvocationID.x, C = p.channels;
  if (t >= p.batch * p.anchors * C) return;
  const uint c = t % C, ba = t / C, b = ba / p.anchors, group = c / (C / p.groups);
  float sum = 0.0;
  for (uint pt = 0u; pt < p.points; ++pt)
    for (uint cam = 0u; cam < p.cameras; ++cam) {
      const uint s = (ba * p.points + pt) * p.cameras + cam;
      const vec2 xy = locationOf(s);
      for (uint lvl = 0u; lvl < p.levels; ++lvl) {
        const ivec3 map = mapOf(cam, lvl);
        int corner[2];
        float coef[4], dh[4], dw[4];
        if (!aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw)) break;  // the same for every level
        float value = 0.0;
        for (int k = 0; k < 4; ++k) {
          const int r = corner[0] + k / 2, col = corner[1] + k % 2;
          if (r >= 0 && r < map.x && col >= 0 && col < map.y)
            value += coef[k] * features[(b * p.features + uint(map.z + r * map.y + col)) * C + c];
        }
        sum += weights[(s * p.levels + lvl) * p.groups + group] * value;
      }
    }
  outA[t] = sum;
}
