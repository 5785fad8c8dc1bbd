#version 450
// Deformable aggregation backward, a workgroup per sample (batch, anchor, point, camera) (shared/deformable_aggregation_io.h):
// its invocations take the channels and leave each channel's gradient·value per level and their part of the
// location's gradient in shared memory; then fixed-order sums give the weights' gradient (per level and group, in
// channel order) and the location's (in invocation order).
#extension GL_GOOGLE_include_directive : require
#include "shared/deformable_aggregation_io.h"

layout(local_size_x = AGGREGATION_SAMPLE_THREADS) in;
#include "deformable_aggregation_buffers.glsl"

shared float sProduct[AGGREGATION_MAX_LEVEL_CHANNELS];
shared float sDx[AGGREGATION_SAMPLE_THREADS], sDy[AGGREGATION_SAMPLE_THREADS];

void main() {
  const uint s = workgroupIndex(), lid = gl_LocalInvocationID.x, C = p.channels, perGroup = C / p.groups;
  const uint samples = p.batch * p.anchors * p.points * p.cameras;
  if (s >= samples) return;  // whole workgroups: the barriers below stay uniform
  const uint cam = s % p.cameras, ba = s / (p.points * p.cameras), b = ba / p.anchors;
  const vec2 xy = locationOf(s);
  float dx = 0.0, dy = 0.0;
  for (uint c = lid; c < C; c += AGGREGATION_SAMPLE_THREADS) {
    const float go = gradOut[ba * C + c];
    for (uint lvl = 0u; lvl < p.levels; ++lvl) {
      const ivec3 map = mapOf(cam, lvl);
      int corner[2];
      float coef[4], dh[4], dw[4];
      float value = 0.0, vh = 0.0, vw = 0.0;
      if (aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw))
        for (int k = 0; k < 4; ++k) {
          const int texel = cornerTexel(corner, k, map);
          if (texel < 0) continue;
          const float f = features[(b * p.features + uint(texel)) * C + c];
          value += coef[k] * f, vh += dh[k] * f, vw += dw[k] * f;
        }
      if ((p.mode & AGGREGATION_GRAD_WEIGHTS) != 0u) sProduct[lvl * C + c] = go * value;  // within its size then
      const float gw = go * weights[(s * p.levels + lvl) * p.groups + c / perGroup];
      dx += gw * vw * float(map.y), dy += gw * vh * float(map.x);
    }
  }
  sDx[lid] = dx, sDy[lid] = dy;
  barrier();
  if ((p.mode & AGGREGATION_GRAD_WEIGHTS) != 0u)
    for (uint t = lid; t < p.levels * p.groups; t += AGGREGATION_SAMPLE_THREADS) {
      const uint lvl = t / p.groups, group = t % p.groups;
      float sum = 0.0;
      for (uint j = 0u; j < perGroup; ++j) sum += sProduct[lvl * C + group * perGroup + j];
      outB[s * p.levels * p.groups + t] = sum;
    }
  if ((p.mode & AGGREGATION_GRAD_LOCATIONS) != 0u && lid == 0u) {
    float sx = 0.0, sy = 0.0;
    for (uint k = 0u; k < AGGREGATION_SAMPLE_THREADS; ++k) sx += sDx[k], sy += sDy[k];
    outA[s * 2u] = sx, outA[s * 2u + 1u] = sy;
  }
}
