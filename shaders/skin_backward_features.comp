#version 450
// Skinning backward (4): dL/dfeatures = dL/dv_posed · blendMatrixᵀ (v_posed = v_template + features · blendMatrix).
// One workgroup per (feature row f, SKIN_FEATURE_ITEMS items): the row is read once for those items, each invocation
// sums a fixed stride of its columns in order, then a shared-memory tree: the same bits on every run.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_REDUCE_GROUP) in;
layout(std430, binding = 0) readonly buffer GradVPosed { float gradVPosed[]; };
layout(std430, binding = 1) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = 2) writeonly buffer GradFeatures { float gradFeatures[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float red[SKIN_FEATURE_ITEMS][SKIN_REDUCE_GROUP];

void main() {
  uint f = gl_WorkGroupID.x, b0 = gl_WorkGroupID.y * SKIN_FEATURE_ITEMS, tid = gl_LocalInvocationID.x;
  uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount;
  uint items = min(uint(SKIN_FEATURE_ITEMS), p.batch - b0);
  float acc[SKIN_FEATURE_ITEMS];
  for (uint i = 0; i < SKIN_FEATURE_ITEMS; ++i) acc[i] = 0.0;
  for (uint n = tid; n < N; n += SKIN_REDUCE_GROUP) {
    float w = blendMatrix[f * N + n];
    for (uint i = 0; i < items; ++i) acc[i] += gradVPosed[(b0 + i) * N + n] * w;
  }
  for (uint i = 0; i < SKIN_FEATURE_ITEMS; ++i) red[i][tid] = acc[i];
  barrier();
  for (uint s = SKIN_REDUCE_GROUP / 2; s > 0; s >>= 1) {
    if (tid < s)
      for (uint i = 0; i < SKIN_FEATURE_ITEMS; ++i) red[i][tid] += red[i][tid + s];
    barrier();
  }
  if (tid < items) gradFeatures[(b0 + tid) * F + f] = red[tid][0];
}
