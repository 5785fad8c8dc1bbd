#version 450
// Skinning backward (4): dL/dfeatures = dL/dv_posed · blendMatrixᵀ (v_posed = v_template + features · blendMatrix),
// a split-K GEMM: workgroup (feature tile, slice) × item tile computes 64 features × 32 items over one slice of the
// V·3 columns, 32 columns a step through shared memory, each invocation 4 features × 2 items. Out: the slice's
// partial sums, partials (slices, B, F); skin_backward_params adds them in slice order (the same bits on every run).
// One slice's workgroup per (feature tile, item tile) reads the blend matrix once for 32 items.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

#define BLEND_LOADS (SKIN_GRAD_FEATURES * SKIN_GRAD_STEP / 256)
#define GRAD_LOADS (SKIN_GRAD_ITEMS * SKIN_GRAD_STEP / 256)

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer GradVPosed { float gradVPosed[]; };
layout(std430, binding = 1) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = 2) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { SkinningPush p; };

// [column][feature or item], one float of padding per column: the loads below write a column per invocation, and
// without it all 32 of a subgroup's writes would fall in one bank.
shared float blendTile[SKIN_GRAD_STEP][SKIN_GRAD_FEATURES + 1];
shared float gradTile[SKIN_GRAD_STEP][SKIN_GRAD_ITEMS + 1];

// The next step's share of this invocation, loaded into registers while the current step is computed.
float blendNext[BLEND_LOADS];
float gradNext[GRAD_LOADS];

// 64 rows × 32 columns of the blend matrix and 32 items × 32 columns of dL/dv_posed from column k, each row's 32
// columns read as one 128-byte line; zeros outside the matrix and the slice.
void loadStep(uint k, uint f0, uint b0, uint n1) {
  const uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount, tid = gl_LocalInvocationID.x;
  for (uint i = 0; i < BLEND_LOADS; ++i) {
    uint e = tid + 256 * i, f = f0 + e / SKIN_GRAD_STEP, n = k + e % SKIN_GRAD_STEP;
    blendNext[i] = f < F && n < n1 ? blendMatrix[f * N + n] : 0.0;
  }
  for (uint i = 0; i < GRAD_LOADS; ++i) {
    uint e = tid + 256 * i, b = b0 + e / SKIN_GRAD_STEP, n = k + e % SKIN_GRAD_STEP;
    gradNext[i] = b < p.batch && n < n1 ? gradVPosed[b * N + n] : 0.0;
  }
}

void main() {
  const uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount, B = p.batch, tid = gl_LocalInvocationID.x;
  const uint featureTiles = (F + SKIN_GRAD_FEATURES - 1) / SKIN_GRAD_FEATURES;
  const uint slice = gl_WorkGroupID.x / featureTiles, f0 = (gl_WorkGroupID.x % featureTiles) * SKIN_GRAD_FEATURES;
  const uint b0 = gl_WorkGroupID.y * SKIN_GRAD_ITEMS, width = skinGradSliceColumns(p.slices, N);
  const uint n0 = slice * width, n1 = min(N, n0 + width);
  const uint tf = tid % (SKIN_GRAD_FEATURES / 4), ti = tid / (SKIN_GRAD_FEATURES / 4);  // 16 × 16 invocations
  vec4 acc0 = vec4(0.0), acc1 = vec4(0.0);  // features 4tf..4tf+3 of items 2ti and 2ti + 1
  loadStep(n0, f0, b0, n1);
  for (uint k0 = n0; k0 < n1; k0 += SKIN_GRAD_STEP) {
    for (uint i = 0; i < BLEND_LOADS; ++i) {
      uint e = tid + 256 * i;
      blendTile[e % SKIN_GRAD_STEP][e / SKIN_GRAD_STEP] = blendNext[i];
    }
    for (uint i = 0; i < GRAD_LOADS; ++i) {
      uint e = tid + 256 * i;
      gradTile[e % SKIN_GRAD_STEP][e / SKIN_GRAD_STEP] = gradNext[i];
    }
    barrier();
    if (k0 + SKIN_GRAD_STEP < n1) loadStep(k0 + SKIN_GRAD_STEP, f0, b0, n1);  // in flight during the products
    if (b0 + 2 * ti < B)  // (at small batches most invocations only load: the product is memory-bound there)
      for (uint k = 0; k < SKIN_GRAD_STEP; ++k) {
        vec4 w = vec4(blendTile[k][4 * tf], blendTile[k][4 * tf + 1], blendTile[k][4 * tf + 2], blendTile[k][4 * tf + 3]);
        acc0 += gradTile[k][2 * ti] * w;
        acc1 += gradTile[k][2 * ti + 1] * w;
      }
    barrier();
  }
  for (uint q = 0; q < 4; ++q) {
    uint f = f0 + 4 * tf + q, b = b0 + 2 * ti;
    if (f < F && b < B) partials[(slice * B + b) * F + f] = acc0[q];
    if (f < F && b + 1 < B) partials[(slice * B + b + 1) * F + f] = acc1[q];
  }
}
