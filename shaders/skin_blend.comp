#version 450
// v_posed (1 × V3) = features (1 × F) · blendMatrix (F × V3) + v_template for one item: pose correctives and
// shape/expression blends in one pass over the 64 MB matrix. A workgroup owns SKIN_BLEND_COLUMNS columns; its
// SKIN_BLEND_SLICES groups of invocations split the F terms and add their partial sums in a fixed order
// (deterministic), so one item still spreads the matrix over the whole GPU. Each workgroup computes the item's F
// features itself (skin_feature.glsl) rather than reading them from a dispatch before it: one dispatch and barrier
// fewer on the path of one item. (A running sum per item for up to 8 items is slower than the register-tiled GEMM
// from two items on.)
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_BLEND_COLUMNS, local_size_y = SKIN_BLEND_SLICES) in;
layout(std430, binding = SKIN_BLEND_BINDING_POSE) readonly buffer Pose { float pose[]; };
layout(std430, binding = SKIN_BLEND_BINDING_BETAS) readonly buffer Betas { float betas[]; };
layout(std430, binding = SKIN_BLEND_BINDING_EXPR) readonly buffer Expr { float expression[]; };
layout(std430, binding = SKIN_BLEND_BINDING_BLEND) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = SKIN_BLEND_BINDING_TEMPLATE) readonly buffer Template { float vTemplate[]; };
layout(std430, binding = SKIN_BLEND_BINDING_V_POSED) writeonly buffer VPosed { float vPosed[]; };
layout(push_constant) uniform Push { SkinningPush p; };

#include "skin_feature.glsl"

shared float features[SKIN_MAX_FEATURES];
shared float partial[SKIN_BLEND_SLICES][SKIN_BLEND_COLUMNS];

void main() {
  uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount;
  uint col = gl_LocalInvocationID.x, slice = gl_LocalInvocationID.y;
  for (uint u = gl_LocalInvocationIndex; u < skinFeatureUnits(); u += SKIN_BLEND_COLUMNS * SKIN_BLEND_SLICES) {
    uint count;
    float v[9];
    uint first = skinFeatureUnit(0, u, v, count);
    for (uint e = 0; e < count; ++e) features[first + e] = v[e];
  }
  barrier();
  uint n = gl_WorkGroupID.x * SKIN_BLEND_COLUMNS + col;
  float acc = 0.0;
  if (n < N)
    for (uint k = slice; k < F; k += SKIN_BLEND_SLICES) acc += features[k] * blendMatrix[k * N + n];
  partial[slice][col] = acc;
  barrier();
  if (slice == 0 && n < N) {
    float sum = vTemplate[n];
    for (uint s = 0; s < SKIN_BLEND_SLICES; ++s) sum += partial[s][col];
    vPosed[n] = sum;
  }
}
