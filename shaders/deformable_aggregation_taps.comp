#version 450
// Deformable aggregation backward (shared/deformable_aggregation_io.h): an invocation per sorted bucket entry
// ((sample·levels + level)·4 + corner) writes its tap: the sample's output row (batch·anchors + anchor), sample·levels
// + level (the weights' row) and the corner's bilinear coefficient, so the gather decodes no entry per channel.
#extension GL_GOOGLE_include_directive : require
#include "shared/deformable_aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#include "deformable_aggregation_buffers.glsl"

void main() {
  const uint e = workgroupIndex() * AGGREGATION_THREADS + gl_LocalInvocationID.x;
  if (e >= words[p.starts + p.batch * p.features]) return;  // the buckets' total
  const uint entry = words[p.entries + e], k = entry % 4u, sampleLevel = entry / 4u;
  const uint lvl = sampleLevel % p.levels, s = sampleLevel / p.levels, cam = s % p.cameras;
  const ivec3 map = mapOf(cam, lvl);
  const vec2 xy = locationOf(s);
  int corner[2];
  float coef[4], dh[4], dw[4];
  aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw);
  const uint tap = p.taps + e * AGGREGATION_TAP_WORDS;
  words[tap] = s / (p.points * p.cameras);
  words[tap + 1u] = sampleLevel;
  words[tap + 2u] = floatBitsToUint(coef[k]);
}
