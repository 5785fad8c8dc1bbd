#version 450
// Deformable aggregation backward (shared/aggregation_io.h): an invocation per (batch, texel, channel) gathers the
// gradient its bucket's samples send it, in the bucket's (sorted) order.
#extension GL_GOOGLE_include_directive : require
#include "shared/aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#include "aggregation_buffers.glsl"

void main() {
  const uint t = workgroupIndex() * AGGREGATION_THREADS + gl_LocalInvocationID.x, C = p.channels;
  if (t >= p.batch * p.features * C) return;
  const uint c = t % C, bucket = t / C, group = c / (C / p.groups);
  float sum = 0.0;
  const uint last = words[p.starts + bucket + 1u];
  for (uint e = words[p.starts + bucket]; e < last; ++e) {
    const uint entry = words[p.entries + e], k = entry % 4u, sampleLevel = entry / 4u;
    const uint lvl = sampleLevel % p.levels, s = sampleLevel / p.levels, cam = s % p.cameras;
    const uint ba = s / (p.points * p.cameras);
    const ivec3 map = mapOf(cam, lvl);
    const vec2 xy = locationOf(s);
    int corner[2];
    float coef[4], dh[4], dw[4];
    aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw);
    sum += gradOut[ba * C + c] * weights[sampleLevel * p.groups + group] * coef[k];
  }
  outA[t] = sum;
}
