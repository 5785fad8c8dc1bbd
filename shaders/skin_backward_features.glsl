// Skinning backward (4): dL/dfeatures = dL/dv_posed · blendMatrixᵀ (v_posed = v_template + features · blendMatrix),
// a register-tiled split-K GEMM. Workgroup (feature tile, slice) × item tile owns 128 features × SKIN_GRAD_ROWS·8
// items over one slice of the V·3 columns: invocation `lane` of each group of 32 holds features 4·lane..4·lane+3,
// group g items g·SKIN_GRAD_ROWS.. (one broadcast shared read per 4 items, one conflict-free vec4 per lane). Each step
// takes SKIN_GRAD_STEP columns through shared memory; the next step's share is loaded into registers meanwhile. Out:
// the slice's partial sums, partials (slices, B, F); skin_backward_params adds them in slice order, so every output
// is summed in a fixed order (the same bits on every run). The variants (shaders/CMakeLists.txt) define SKIN_GRAD_ROWS (SKIN_GRAD_ROWS_FEW or _MANY).
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

#define ITEMS (SKIN_GRAD_ROWS * 8)
#define BLEND_LOADS (SKIN_GRAD_FEATURES * SKIN_GRAD_STEP / 256)
#define GRAD_LOADS ((ITEMS * SKIN_GRAD_STEP + 255) / 256)

layout(local_size_x = 256) in;
layout(std430, binding = SKIN_BACKWARD_FEATURES_BINDING_GRAD_V_POSED) readonly buffer GradVPosed { float gradVPosed[]; };
layout(std430, binding = SKIN_BACKWARD_FEATURES_BINDING_BLEND) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = SKIN_BACKWARD_FEATURES_BINDING_PARTIALS) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { SkinningPush p; };

// [column][features or items]. The loads write a column per invocation (a row of the matrix is contiguous in
// memory): a padding vec4 per column spreads 16 consecutive columns over 8 banks instead of one.
shared vec4 blendTile[SKIN_GRAD_STEP][SKIN_GRAD_FEATURES / 4 + 1];
shared vec4 gradTile[SKIN_GRAD_STEP][(ITEMS + 3) / 4 + 1];

float blendNext[BLEND_LOADS];
float gradNext[GRAD_LOADS];

// 128 rows of the blend matrix and ITEMS rows of dL/dv_posed, SKIN_GRAD_STEP columns each from column k; zeros
// outside the matrix and the slice.
void loadStep(uint k, uint f0, uint b0, uint n1) {
  const uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount, tid = gl_LocalInvocationID.x;
  for (uint i = 0; i < BLEND_LOADS; ++i) {
    uint e = tid + 256 * i, f = f0 + e / SKIN_GRAD_STEP, n = k + e % SKIN_GRAD_STEP;
    blendNext[i] = f < F && n < n1 ? blendMatrix[f * N + n] : 0.0;
  }
  for (uint i = 0; i < GRAD_LOADS; ++i) {
    uint e = tid + 256 * i, b = b0 + e / SKIN_GRAD_STEP, n = k + e % SKIN_GRAD_STEP;
    gradNext[i] = e < ITEMS * SKIN_GRAD_STEP && b < p.batch && n < n1 ? gradVPosed[b * N + n] : 0.0;
  }
}

void storeStep() {
  const uint tid = gl_LocalInvocationID.x;
  for (uint i = 0; i < BLEND_LOADS; ++i) {
    uint e = tid + 256 * i, f = e / SKIN_GRAD_STEP;
    blendTile[e % SKIN_GRAD_STEP][f / 4][f % 4] = blendNext[i];
  }
  for (uint i = 0; i < GRAD_LOADS; ++i) {
    uint e = tid + 256 * i, b = e / SKIN_GRAD_STEP;
    if (e < ITEMS * SKIN_GRAD_STEP) gradTile[e % SKIN_GRAD_STEP][b / 4][b % 4] = gradNext[i];
  }
}

void main() {
  const uint N = p.vertexCount * 3, F = p.featureCount + p.coefCount, B = p.batch, tid = gl_LocalInvocationID.x;
  const uint featureTiles = (F + SKIN_GRAD_FEATURES - 1) / SKIN_GRAD_FEATURES;
  const uint slice = gl_WorkGroupID.x / featureTiles, f0 = (gl_WorkGroupID.x % featureTiles) * SKIN_GRAD_FEATURES;
  const uint b0 = gl_WorkGroupID.y * ITEMS, width = skinGradSliceColumns(p.slices, N);
  const uint n0 = slice * width, n1 = min(N, n0 + width);
  const uint lane = tid % 32, firstItem = (tid / 32) * SKIN_GRAD_ROWS;
  vec4 acc[SKIN_GRAD_ROWS];
  for (uint r = 0; r < SKIN_GRAD_ROWS; ++r) acc[r] = vec4(0.0);
  loadStep(n0, f0, b0, n1);
  for (uint k0 = n0; k0 < n1; k0 += SKIN_GRAD_STEP) {
    storeStep();
    barrier();
    if (k0 + SKIN_GRAD_STEP < n1) loadStep(k0 + SKIN_GRAD_STEP, f0, b0, n1);  // in flight during the products
    if (b0 + firstItem < B)  // (at small batches most groups only load: the product is memory-bound there)
      for (uint k = 0; k < SKIN_GRAD_STEP; ++k) {
        vec4 w = blendTile[k][lane];
#if SKIN_GRAD_ROWS == 1
        acc[0] += gradTile[k][firstItem / 4][firstItem % 4] * w;
#else
        for (uint r4 = 0; r4 < SKIN_GRAD_ROWS / 4; ++r4) {
          vec4 g = gradTile[k][firstItem / 4 + r4];
          acc[4 * r4] += g.x * w;
          acc[4 * r4 + 1] += g.y * w;
          acc[4 * r4 + 2] += g.z * w;
          acc[4 * r4 + 3] += g.w * w;
        }
#endif
      }
    barrier();
  }
  for (uint r = 0; r < SKIN_GRAD_ROWS; ++r) {
    uint b = b0 + firstItem + r;
    if (b >= B) break;
    for (uint c = 0; c < 4; ++c) {
      uint f = f0 + 4 * lane + c;
      if (f < F) partials[(slice * B + b) * F + f] = acc[r][c];
    }
  }
}
