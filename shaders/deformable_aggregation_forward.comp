#version 450
// Deformable aggregation forward (shared/deformable_aggregation_io.h): each (batch, anchor) and AGGREGATION_LANES channels (a
// slot) sums its samples (points × cameras) and their levels in order. AGGREGATION_SPLITS 1: an invocation per slot.
// Else a workgroup takes AGGREGATION_THREADS / AGGREGATION_SPLITS slots, each over AGGREGATION_SPLITS invocations:
// split k sums samples k, k + AGGREGATION_SPLITS, … and the partial sums are added in split order (anchors with
// many samples and few slots, the map head's).
#extension GL_GOOGLE_include_directive : require
#include "shared/deformable_aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#include "deformable_aggregation_buffers.glsl"

#if AGGREGATION_SPLITS > 1
shared AggValue sPartial[AGGREGATION_THREADS];
#endif

void main() {
  const uint lid = gl_LocalInvocationID.x, C = p.channels;
  const uint slots = C / AGGREGATION_LANES;  // a slot: AGGREGATION_LANES channels
  const uint slotsPerGroup = AGGREGATION_THREADS / AGGREGATION_SPLITS, split = lid / slotsPerGroup;
  const uint t = workgroupIndex() * slotsPerGroup + lid % slotsPerGroup;
  const bool valid = t < p.batch * p.anchors * slots;
#if AGGREGATION_SPLITS == 1
  if (!valid) return;
#endif
  const uint slot = t % slots, ba = t / slots, b = ba / p.anchors, group = slot * AGGREGATION_LANES / (C / p.groups);
  AggValue sum = AggValue(0.0);
  for (uint ps = split; valid && ps < p.points * p.cameras; ps += AGGREGATION_SPLITS) {
    const uint s = ba * p.points * p.cameras + ps, cam = ps % p.cameras;
    const vec2 xy = locationOf(s);
    for (uint lvl = 0u; lvl < p.levels; ++lvl) {
      const ivec3 map = mapOf(cam, lvl);
      int corner[2];
      float coef[4], dh[4], dw[4];
      if (!aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw)) break;  // the same for every level
      AggValue value = AggValue(0.0);
      for (int k = 0; k < 4; ++k) {
        const int texel = cornerTexel(corner, k, map);
        if (texel >= 0) value += coef[k] * features[(b * p.features + uint(texel)) * slots + slot];
      }
      sum += weights[(s * p.levels + lvl) * p.groups + group] * value;
    }
  }
#if AGGREGATION_SPLITS > 1
  sPartial[lid] = sum;
  barrier();
  if (!valid || split != 0u) return;
  for (uint k = 1u; k < AGGREGATION_SPLITS; ++k) sum += sPartial[k * slotsPerGroup + lid];
#endif
  outA[ba * slots + slot] = sum;
}
