#version 450
// Deformable aggregation backward, a subgroup per sample (batch, anchor, point, camera) (shared/deformable_aggregation_io.h):
// CUDA's warp per sample for any power-of-two subgroup size S. The entry point takes this shader only where the
// channels come in rounds of 4·S (a vec4 per lane) and a group spans a power of two of a round's lanes, and
// dispatches AGGREGATION_THREADS / S samples a workgroup (the workgroup is whole subgroups). Each lane sums its 4
// channels; each group's weight gradient and the location's are then sums over lanes by shuffle-xor trees, the same
// bits on every run.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "shared/deformable_aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#define AGGREGATION_LANES 4
#define AGGREGATION_OUT_A float  // the locations' gradient
#include "deformable_aggregation_buffers.glsl"

void main() {
  const uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  const uint s = workgroupIndex() * gl_NumSubgroups + gl_SubgroupID;
  if (s >= p.batch * p.anchors * p.points * p.cameras) return;  // whole subgroups
  const uint C = p.channels, slots = C / 4u, perGroup = C / p.groups, groupLanes = perGroup / 4u;
  const uint cam = s % p.cameras, ba = s / (p.points * p.cameras), b = ba / p.anchors;
  const vec2 xy = locationOf(s);
  float dx = 0.0, dy = 0.0;
  for (uint round = 0u; round < C / (4u * S); ++round) {
    const uint slot = round * S + lane, group = slot * 4u / perGroup;
    const vec4 go = gradOut[ba * slots + slot];
    for (uint lvl = 0u; lvl < p.levels; ++lvl) {
      const ivec3 map = mapOf(cam, lvl);
      int corner[2];
      float coef[4], dh[4], dw[4];
      vec4 value = vec4(0.0), vh = vec4(0.0), vw = vec4(0.0);
      if (aggregationCorners(xy.x, xy.y, map.x, map.y, corner, coef, dh, dw))
        for (int k = 0; k < 4; ++k) {
          const int texel = cornerTexel(corner, k, map);
          if (texel < 0) continue;
          const vec4 f = features[(b * p.features + uint(texel)) * slots + slot];
          value += coef[k] * f, vh += dh[k] * f, vw += dw[k] * f;
        }
      if ((p.mode & AGGREGATION_GRAD_WEIGHTS) != 0u) {
        float product = dot(go, value);
        for (uint offset = 1u; offset < groupLanes; offset <<= 1) product += subgroupShuffleXor(product, offset);
        if (lane % groupLanes == 0u) outB[(s * p.levels + lvl) * p.groups + group] = product;
      }
      const float w = weights[(s * p.levels + lvl) * p.groups + group];
      dx += w * dot(go, vw) * float(map.y), dy += w * dot(go, vh) * float(map.x);
    }
  }
  if ((p.mode & AGGREGATION_GRAD_LOCATIONS) == 0u) return;
  for (uint offset = S / 2u; offset > 0u; offset >>= 1) {
    dx += subgroupShuffleXor(dx, offset);
    dy += subgroupShuffleXor(dy, offset);
  }
  if (lane == 0u) outA[s * 2u] = dx, outA[s * 2u + 1u] = dy;
}
