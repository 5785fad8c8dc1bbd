// Body skinning (lbs) on the GPU: layouts shared by GLSL, CUDA and C++.
//
// Model tables (built once per model and component count, see engine/src/ops/skinning_tables.cpp):
//   blendMatrix   ((P+K), V*3) row-major: rows 0..P-1 = posedirs transposed, rows P.. = shape then expression
//                 directions; so v_posed = v_template + [poseFeatures, coefficients] · blendMatrix (one GEMM).
//   jointTemplate (J,3)        J_regressor · v_template
//   jointDirs     (K,J,3)      J_regressor · direction_k   (joint regression costs J·3·(1+K) per item, not J·V)
//   weightStart   (V+1)        CSR of the skinning weights: vertex v uses entries weightStart[v]..weightStart[v+1)
//   weightJoint   (nnz), weightValue (nnz)
//   order         (J)          joints with parents first;  parents (J), -1 for the root
//   jointStart    (J+1)        CSC of the same weights (the backward's per-joint sums): joint j uses entries
//   jointVertex, jointWeight   jointStart[j]..jointStart[j+1)
// The Vulkan backward's per-joint sums go by parts (engine/src/ops/skinning_vk.cpp): part q sums entries
//   partRange[2q]..partRange[2q+1] of joint partJoint[q] (joint J: the translation's gradient, a vertex range);
//   joint j's parts are jointPartStart[j]..jointPartStart[j+1), in entry order. A joint is one part, or for a few
//   items parts of at most SKIN_SUM_PART entries (so that no workgroup walks a heavy joint's thousands alone) and
//   SKIN_SUM_PART_VERTICES vertices.
// Per-item work buffers: features (B, P+K): [poseFeatures, coefficients]; transforms (B,J,12) row-major 3x4 A_j;
// saved (B,J,SKIN_SAVED) what the backward needs of the chain: R_j (9), G_j (9), rest joint (3).
// Backward work buffers: gradVPosed (B,V*3); gradParts (parts,B,12) each part's share of dL/dA_j (or of
// dL/dtransl); chainGrads (B,J,12) the chain's dL/dR_j (9)
// and dL/drest-joint (3); gradPartials (slices, B, P+K) dL/dfeatures summed over each column slice.
#ifndef ARMATURE_SKINNING_IO_H
#define ARMATURE_SKINNING_IO_H
#include "common_io.h"

#define SKIN_MAX_JOINTS 64          // per-item joint kernels keep the chain in registers/local arrays
#define SKIN_MAX_COEFS 512          // Vulkan joint kernel: shape + expression components it holds in shared memory
#define SKIN_VERTEX_GROUP 256       // skinning kernel: vertices per workgroup
#define SKIN_FEATURE_GROUP 256      // skin_features: feature units (a joint's nine, or a coefficient) per workgroup
#define SKIN_BLEND_COLUMNS 32       // skin_blend: columns per workgroup (one coalesced 128-byte row read)
#define SKIN_BLEND_SLICES 8         // skin_blend: K slices per workgroup, summed in order
#define SKIN_TILE_COLUMNS 128       // tiled blend GEMMs (skin_blend_tiled.glsl): columns per workgroup
#define SKIN_TILE_ROWS_MID 32       // skin_blend_mid: items per workgroup, for up to SKIN_TILE_MID_MAX items
#define SKIN_TILE_MID_MAX 64
#define SKIN_TILE_ROWS_MANY 128     // skin_blend_tiled: items per workgroup beyond that
#define SKIN_SAVED 21               // floats per joint the forward keeps for the backward
#define SKIN_MAX_FEATURES ((SKIN_MAX_JOINTS - 1) * 9 + SKIN_MAX_COEFS)  // P + K the Vulkan backward holds
#define SKIN_REDUCE_GROUP 256       // skin_backward_joints: invocations per workgroup (split over 1–4 items)
#define SKIN_SUM_PART 512           // skin_backward_joints: entries per part below SKIN_SUM_PART_BELOW items
#define SKIN_SUM_PART_VERTICES 4096 // (the translation's parts: vertices, 3 loads each)
#define SKIN_SUM_PART_BELOW 8       // (from 8 items on, a part per joint: enough workgroups already, each with its tree)
// skin_backward_features: dL/dfeatures (B × F) = dL/dv_posed (B × V3) · blendMatrixᵀ as a register-tiled split-K
// GEMM. A workgroup of 256 owns 128 features × 8 or 64 items (skinGradTileItems) over one slice of the V3 columns,
// 16 columns a step; the slices' partial sums are added in slice order by skin_backward_params.
#define SKIN_GRAD_FEATURES 128
#define SKIN_GRAD_STEP 16
#define SKIN_GRAD_FEW_MAX 8           // up to this many items skin_backward_features_few runs, else _many
#define SKIN_GRAD_ROWS_FEW 1          // items per invocation (× 8 groups of 32: 8 items a workgroup)
#define SKIN_GRAD_ROWS_MANY 8         // (64 items a workgroup)
#define SKIN_GRAD_TARGET_GROUPS 1024  // slices are added until about this many workgroups run
#define SKIN_GRAD_MIN_SLICE 256       // columns

// Bindings of each program, shared by its shader and skinning_vk.cpp (whose views come in this order).
// skin_features.comp
#define SKIN_FEATURES_BINDING_POSE 0
#define SKIN_FEATURES_BINDING_BETAS 1
#define SKIN_FEATURES_BINDING_EXPR 2
#define SKIN_FEATURES_BINDING_FEATURES 3
#define SKIN_FEATURES_BINDINGS 4
// skin_joints.comp
#define SKIN_JOINTS_BINDING_POSE 0
#define SKIN_JOINTS_BINDING_BETAS 1
#define SKIN_JOINTS_BINDING_EXPR 2
#define SKIN_JOINTS_BINDING_TRANSL 3
#define SKIN_JOINTS_BINDING_JOINT_TEMPLATE 4
#define SKIN_JOINTS_BINDING_JOINT_DIRS 5
#define SKIN_JOINTS_BINDING_PARENTS 6
#define SKIN_JOINTS_BINDING_TRANSFORMS 7
#define SKIN_JOINTS_BINDING_JOINTS 8
#define SKIN_JOINTS_BINDING_SAVED 9
#define SKIN_JOINTS_BINDINGS 10
// skin_blend.comp
#define SKIN_BLEND_BINDING_POSE 0
#define SKIN_BLEND_BINDING_BETAS 1
#define SKIN_BLEND_BINDING_EXPR 2
#define SKIN_BLEND_BINDING_BLEND 3
#define SKIN_BLEND_BINDING_TEMPLATE 4
#define SKIN_BLEND_BINDING_V_POSED 5
#define SKIN_BLEND_BINDINGS 6
// skin_blend_tiled.glsl
#define SKIN_BLEND_TILED_BINDING_FEATURES 0
#define SKIN_BLEND_TILED_BINDING_BLEND 1
#define SKIN_BLEND_TILED_BINDING_TEMPLATE 2
#define SKIN_BLEND_TILED_BINDING_V_POSED 3
#define SKIN_BLEND_TILED_BINDINGS 4
// skin_vertices.comp
#define SKIN_VERTICES_BINDING_V_POSED 0
#define SKIN_VERTICES_BINDING_TRANSFORMS 1
#define SKIN_VERTICES_BINDING_WEIGHT_START 2
#define SKIN_VERTICES_BINDING_WEIGHT_JOINT 3
#define SKIN_VERTICES_BINDING_WEIGHT_VALUE 4
#define SKIN_VERTICES_BINDING_TRANSL 5
#define SKIN_VERTICES_BINDING_VERTICES 6
#define SKIN_VERTICES_BINDINGS 7
// skin_backward_vertices.comp
#define SKIN_BACKWARD_VERTICES_BINDING_GRAD_V 0
#define SKIN_BACKWARD_VERTICES_BINDING_TRANSFORMS 1
#define SKIN_BACKWARD_VERTICES_BINDING_WEIGHT_START 2
#define SKIN_BACKWARD_VERTICES_BINDING_WEIGHT_JOINT 3
#define SKIN_BACKWARD_VERTICES_BINDING_WEIGHT_VALUE 4
#define SKIN_BACKWARD_VERTICES_BINDING_GRAD_V_POSED 5
#define SKIN_BACKWARD_VERTICES_BINDINGS 6
// skin_backward_joints.comp
#define SKIN_BACKWARD_JOINTS_BINDING_GRAD_V 0
#define SKIN_BACKWARD_JOINTS_BINDING_V_POSED 1
#define SKIN_BACKWARD_JOINTS_BINDING_PART_RANGE 2
#define SKIN_BACKWARD_JOINTS_BINDING_PART_JOINT 3
#define SKIN_BACKWARD_JOINTS_BINDING_JOINT_VERTEX 4
#define SKIN_BACKWARD_JOINTS_BINDING_JOINT_WEIGHT 5
#define SKIN_BACKWARD_JOINTS_BINDING_GRAD_PARTS 6
#define SKIN_BACKWARD_JOINTS_BINDINGS 7
// skin_backward_chain.comp
#define SKIN_BACKWARD_CHAIN_BINDING_SAVED 0
#define SKIN_BACKWARD_CHAIN_BINDING_GRAD_PARTS 1
#define SKIN_BACKWARD_CHAIN_BINDING_JOINT_PART_START 2
#define SKIN_BACKWARD_CHAIN_BINDING_GRAD_JOINTS 3
#define SKIN_BACKWARD_CHAIN_BINDING_PARENTS 4
#define SKIN_BACKWARD_CHAIN_BINDING_CHAIN_GRADS 5
#define SKIN_BACKWARD_CHAIN_BINDING_GRAD_TRANSL 6
#define SKIN_BACKWARD_CHAIN_BINDINGS 7
// skin_backward_features.glsl
#define SKIN_BACKWARD_FEATURES_BINDING_GRAD_V_POSED 0
#define SKIN_BACKWARD_FEATURES_BINDING_BLEND 1
#define SKIN_BACKWARD_FEATURES_BINDING_PARTIALS 2
#define SKIN_BACKWARD_FEATURES_BINDINGS 3
// skin_backward_params.comp
#define SKIN_BACKWARD_PARAMS_BINDING_POSE 0
#define SKIN_BACKWARD_PARAMS_BINDING_CHAIN_GRADS 1
#define SKIN_BACKWARD_PARAMS_BINDING_PARTIALS 2
#define SKIN_BACKWARD_PARAMS_BINDING_JOINT_DIRS 3
#define SKIN_BACKWARD_PARAMS_BINDING_GRAD_POSE 4
#define SKIN_BACKWARD_PARAMS_BINDING_GRAD_BETAS 5
#define SKIN_BACKWARD_PARAMS_BINDING_GRAD_EXPR 6
#define SKIN_BACKWARD_PARAMS_BINDINGS 7

ARM_SHARED_STRUCT(SkinningPush) {
  uint batch;        // B
  uint vertexCount;  // V
  uint jointCount;   // J
  uint featureCount; // P = (J-1)*9
  uint coefCount;    // K = shape + expression components
  uint shapeCount;   // shape components (first of the K)
  uint jointGrads;   // backward: 1 when a gradient on the posed joints is given
  uint slices;       // backward: column slices of the dL/dfeatures product (skinGradSlices)
  uint sumItems;     // backward: items per workgroup of the per-joint sums (skinJointSumItems)
};

// Rodrigues' formula and its backward, as smplx's batch_rodrigues: angle = |r + 1e-8|, u = r / angle,
// R = I + sin(angle)·K + (1 − cos(angle))·K², K = skew(u) (so K² = u uᵀ − |u|² I). Row-major 3×3.
ARM_SHARED_STRUCT(SkinMat3) {
  float m[9];
};
ARM_SHARED_STRUCT(SkinVec3) {
  float v[3];
};
// sin(angle) and 1 − cos(angle), by their series below 1e-3 rad: GLSL's sin and cos carry an absolute error
// (SPIR-V allows 2⁻¹¹ on [−π, π]), so at a zero pose (angle = √3·1e-8) a GPU's sin may return 0 and the rotation's
// gradient, s·dK with dK ~ 1/angle, vanish; and 1 − cos(angle) cancels there.
ARM_SHARED_STRUCT(SkinSinCos) {
  float s, oneMinusCos;
};
ARM_FN SkinSinCos skinSinCos(float angle) {
  SkinSinCos r;
  float a2 = angle * angle;
  r.s = angle < 1e-3f ? angle * (1.0f - a2 / 6.0f) : sin(angle);
  r.oneMinusCos = angle < 1e-3f ? a2 * (0.5f - a2 / 24.0f) : 1.0f - cos(angle);
  return r;
}
ARM_FN SkinMat3 skinRodrigues(SkinVec3 r) {
  float e0 = r.v[0] + 1e-8f, e1 = r.v[1] + 1e-8f, e2 = r.v[2] + 1e-8f;
  float angle = sqrt(e0 * e0 + e1 * e1 + e2 * e2);
  float u0 = r.v[0] / angle, u1 = r.v[1] / angle, u2 = r.v[2] / angle;
  SkinSinCos sc = skinSinCos(angle);
  float s = sc.s, oc = sc.oneMinusCos, uu = u0 * u0 + u1 * u1 + u2 * u2;
  SkinMat3 R;
  R.m[0] = 1.0f + oc * (u0 * u0 - uu), R.m[1] = -s * u2 + oc * u0 * u1, R.m[2] = s * u1 + oc * u0 * u2;
  R.m[3] = s * u2 + oc * u1 * u0, R.m[4] = 1.0f + oc * (u1 * u1 - uu), R.m[5] = -s * u0 + oc * u1 * u2;
  R.m[6] = -s * u1 + oc * u2 * u0, R.m[7] = s * u0 + oc * u2 * u1, R.m[8] = 1.0f + oc * (u2 * u2 - uu);
  return R;
}
// dL/dr from dL/dR.
ARM_FN SkinVec3 skinRodriguesBackward(SkinVec3 r, SkinMat3 gR) {
  float e[3];
  for (int i = 0; i < 3; ++i) e[i] = r.v[i] + 1e-8f;
  float angle = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  float u0 = r.v[0] / angle, u1 = r.v[1] / angle, u2 = r.v[2] / angle;
  SkinSinCos sc = skinSinCos(angle);
  float s = sc.s, c = sc.oneMinusCos, cosA = 1.0f - c;
  float K[9];
  K[0] = 0.0f, K[1] = -u2, K[2] = u1, K[3] = u2, K[4] = 0.0f, K[5] = -u0, K[6] = -u1, K[7] = u0, K[8] = 0.0f;
  float K2[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) K2[i * 3 + j] = K[i * 3] * K[j] + K[i * 3 + 1] * K[3 + j] + K[i * 3 + 2] * K[6 + j];
  SkinVec3 g;
  for (int i = 0; i < 3; ++i) {
    float dA = e[i] / angle;  // d angle / d r_i
    float du[3];              // d u / d r_i
    for (int k = 0; k < 3; ++k) du[k] = (k == i ? 1.0f / angle : 0.0f) - r.v[k] * dA / (angle * angle);
    float dK[9];
    dK[0] = 0.0f, dK[1] = -du[2], dK[2] = du[1], dK[3] = du[2], dK[4] = 0.0f, dK[5] = -du[0], dK[6] = -du[1];
    dK[7] = du[0], dK[8] = 0.0f;
    float acc = 0.0f;
    for (int p = 0; p < 3; ++p)
      for (int q = 0; q < 3; ++q) {
        float dKK = dK[p * 3] * K[q] + dK[p * 3 + 1] * K[3 + q] + dK[p * 3 + 2] * K[6 + q];
        float KdK = K[p * 3] * dK[q] + K[p * 3 + 1] * dK[3 + q] + K[p * 3 + 2] * dK[6 + q];
        float dR = cosA * dA * K[p * 3 + q] + s * dK[p * 3 + q] + s * dA * K2[p * 3 + q] + c * (dKK + KdK);
        acc += gR.m[p * 3 + q] * dR;
      }
    g.v[i] = acc;
  }
  return g;
}

// Items per workgroup of the dL/dfeatures product of `batch` items.
ARM_FN uint skinGradTileItems(uint batch) {
  return 8u * (batch <= SKIN_GRAD_FEW_MAX ? SKIN_GRAD_ROWS_FEW : SKIN_GRAD_ROWS_MANY);
}
// How many column slices that product splits into, and the columns of each (a multiple of SKIN_GRAD_STEP; the last
// slice may be shorter): enough workgroups to fill a GPU at batch 1, none at large batches.
ARM_FN uint skinGradSlices(uint batch, uint features, uint columns) {
  uint tileItems = skinGradTileItems(batch);
  uint groups = ((features + SKIN_GRAD_FEATURES - 1u) / SKIN_GRAD_FEATURES) * ((batch + tileItems - 1u) / tileItems);
  uint wanted = (SKIN_GRAD_TARGET_GROUPS + groups - 1u) / groups, most = (columns + SKIN_GRAD_MIN_SLICE - 1u) / SKIN_GRAD_MIN_SLICE;
  wanted = wanted < most ? wanted : most;
  return wanted > 1u ? wanted : 1u;
}
ARM_FN uint skinGradSliceColumns(uint slices, uint columns) {
  uint perSlice = (columns + slices - 1u) / slices;
  return (perSlice + SKIN_GRAD_STEP - 1u) / SKIN_GRAD_STEP * SKIN_GRAD_STEP;
}
// Items per workgroup of the per-joint sums (skin_backward_joints), a power of two.
ARM_FN uint skinJointSumItems(uint batch) { return batch >= 128u ? 4u : batch >= 32u ? 2u : 1u; }

#ifdef __cplusplus
static_assert(sizeof(SkinningPush) == 36);
#endif
#endif
