#version 450
// Deformable aggregation backward (shared/deformable_aggregation_io.h): an invocation per sample and level puts each of its
// corners on the map into that texel's bucket: counted (AGGREGATION_PAIRS_COUNT), then, after the scan, filled
// (AGGREGATION_PAIRS_FILL) with the entry (sample·levels + level)·4 + corner.
#extension GL_GOOGLE_include_directive : require
#include "shared/deformable_aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#include "deformable_aggregation_buffers.glsl"

void main() {
  const uint t = workgroupIndex() * AGGREGATION_THREADS + gl_LocalInvocationID.x;
  if (t >= p.batch * p.anchors * p.points * p.cameras * p.levels) return;
  const uint lvl = t % p.levels, s = t / p.levels, cam = s % p.cameras;
  const uint b = s / (p.anchors * p.points * p.cameras);
  const ivec3 map = mapOf(cam, lvl);
  const vec2 xy = locationOf(s);
  int corner[2];
  float coef[4], dh[4], dw[4];
  if (!aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw)) return;
  for (int k = 0; k < 4; ++k) {
    const int texel = cornerTexel(corner, k, map);
    if (texel < 0) continue;
    const uint bucket = b * p.features + uint(texel);
    const uint slot = atomicAdd(words[p.counts + bucket], 1u);
    if (p.mode == AGGREGATION_PAIRS_FILL) words[p.entries + slot] = t * 4u + uint(k);
  }
}
