#version 450
// v_posed (B × V3) = features (B × F) · blendMatrix (F × V3) + v_template: pose correctives and shape/expression
// blends in one pass. Each invocation owns one column for SKIN_GEMM_ROWS items, so each matrix load serves them all.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Features { float features[]; };
layout(std430, binding = 1) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = 2) readonly buffer Template { float vTemplate[]; };
layout(std430, binding = 3) writeonly buffer VPosed { float vPosed[]; };
layout(push_constant) uniform Push { SkinningPush p; };

void main() {
  uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount;
  uint n = gl_GlobalInvocationID.x;
  uint row0 = gl_WorkGroupID.y * SKIN_GEMM_ROWS;
  if (n >= N) return;
  float acc[SKIN_GEMM_ROWS];
  for (uint r = 0; r < SKIN_GEMM_ROWS; ++r) acc[r] = 0.0;
  uint rows = min(uint(SKIN_GEMM_ROWS), p.batch - row0);
  for (uint k = 0; k < F; ++k) {
    float bv = blendMatrix[k * N + n];
    for (uint r = 0; r < rows; ++r) acc[r] += features[(row0 + r) * F + k] * bv;
  }
  for (uint r = 0; r < rows; ++r) vPosed[(row0 + r) * N + n] = acc[r] + vTemplate[n];
}
