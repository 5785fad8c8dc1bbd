#version 450
// v_posed (B × V3) = features (B × F) · blendMatrix (F × V3) + v_template: pose correctives and shape/expression
// blends in one pass. A workgroup owns SKIN_BLEND_COLUMNS columns for SKIN_GEMM_ROWS items; its
// SKIN_BLEND_SLICES groups of invocations split the F terms and add their partial sums in a fixed order
// (deterministic), so few items still spread the 64 MB matrix over the whole GPU.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_BLEND_COLUMNS, local_size_y = SKIN_BLEND_SLICES) in;
layout(std430, binding = 0) readonly buffer Features { float features[]; };
layout(std430, binding = 1) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = 2) readonly buffer Template { float vTemplate[]; };
layout(std430, binding = 3) writeonly buffer VPosed { float vPosed[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float partial[SKIN_BLEND_SLICES][SKIN_GEMM_ROWS][SKIN_BLEND_COLUMNS];

void main() {
  uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount;
  uint col = gl_LocalInvocationID.x, slice = gl_LocalInvocationID.y;
  uint n = gl_WorkGroupID.x * SKIN_BLEND_COLUMNS + col;
  uint row0 = gl_WorkGroupID.y * SKIN_GEMM_ROWS;
  uint rows = min(uint(SKIN_GEMM_ROWS), p.batch - row0);
  float acc[SKIN_GEMM_ROWS];
  for (uint r = 0; r < SKIN_GEMM_ROWS; ++r) acc[r] = 0.0;
  if (n < N)
    for (uint k = slice; k < F; k += SKIN_BLEND_SLICES) {
      float bv = blendMatrix[k * N + n];
      for (uint r = 0; r < rows; ++r) acc[r] += features[(row0 + r) * F + k] * bv;
    }
  for (uint r = 0; r < SKIN_GEMM_ROWS; ++r) partial[slice][r][col] = acc[r];
  barrier();
  if (slice == 0 && n < N)
    for (uint r = 0; r < rows; ++r) {
      float sum = vTemplate[n];
      for (uint s = 0; s < SKIN_BLEND_SLICES; ++s) sum += partial[s][r][col];
      vPosed[(row0 + r) * N + n] = sum;
    }
}
