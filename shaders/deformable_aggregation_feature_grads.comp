#version 450
// Deformable aggregation backward (shared/deformable_aggregation_io.h): an invocation per (batch, texel) and AGGREGATION_LANES
// channels gathers the gradient its bucket's taps send it, in the bucket's (sorted) order.
#extension GL_GOOGLE_include_directive : require
#include "shared/deformable_aggregation_io.h"

layout(local_size_x = AGGREGATION_THREADS) in;
#include "deformable_aggregation_buffers.glsl"

void main() {
  const uint t = workgroupIndex() * AGGREGATION_THREADS + gl_LocalInvocationID.x, C = p.channels;
  const uint slots = C / AGGREGATION_LANES;
  if (t >= p.batch * p.features * slots) return;
  const uint slot = t % slots, bucket = t / slots, group = slot * AGGREGATION_LANES / (C / p.groups);
  AggValue sum = AggValue(0.0);
  const uint last = words[p.starts + bucket + 1u];
  for (uint e = words[p.starts + bucket]; e < last; ++e) {
    const uint tap = p.taps + e * AGGREGATION_TAP_WORDS;
    const float scale = weights[words[tap + 1u] * p.groups + group] * uintBitsToFloat(words[tap + 2u]);
    sum += gradOut[words[tap] * slots + slot] * scale;
  }
  outA[bucket * slots + slot] = sum;
}
