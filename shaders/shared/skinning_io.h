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
// Per-item work buffers: features (B, P+K): [poseFeatures, coefficients]; transforms (B,J,12) row-major 3x4 A_j;
// saved (B,J,SKIN_SAVED) what the backward needs of the chain: R_j (9), G_j (9), rest joint (3).
// Backward work buffers: gradVPosed (B,V*3); gradA (B,J,12) dL/dA_j; chainGrads (B,J,12) the chain's dL/dR_j (9)
// and dL/drest-joint (3); gradPartials (slices, B, P+K) dL/dfeatures summed over each column slice.
#ifndef ARMATURE_SKINNING_IO_H
#define ARMATURE_SKINNING_IO_H
#include "common_io.h"

#define SKIN_MAX_JOINTS 64          // per-item joint kernels keep the chain in registers/local arrays
#define SKIN_MAX_COEFS 512          // Vulkan joint kernel: shape + expression components it holds in shared memory
#define SKIN_VERTEX_GROUP 256       // skinning kernel: vertices per workgroup
#define SKIN_GEMM_ROWS 8            // Vulkan streaming blend (skin_blend): batch rows per workgroup; it serves up to 8 items
#define SKIN_BLEND_COLUMNS 32       // skin_blend: columns per workgroup (one coalesced 128-byte row read)
#define SKIN_BLEND_SLICES 8         // skin_blend: K slices per workgroup, summed in order (8 KB shared)
#define SKIN_TILE_COLUMNS 128       // tiled blend GEMMs (skin_blend_tiled.glsl): columns per workgroup
#define SKIN_TILE_ROWS_MID 32       // skin_blend_mid: items per workgroup, for up to SKIN_TILE_MID_MAX items
#define SKIN_TILE_MID_MAX 64
#define SKIN_TILE_ROWS_MANY 128     // skin_blend_tiled: items per workgroup beyond that
#define SKIN_SAVED 21               // floats per joint the forward keeps for the backward
#define SKIN_REDUCE_GROUP 256       // skin_backward_joints: invocations per workgroup
// skin_backward_features: dL/dfeatures (B × F) = dL/dv_posed (B × V3) · blendMatrixᵀ as a split-K GEMM. A workgroup
// of 256 owns 64 features × 32 items over one slice of the V3 columns, 32 columns a step; the slices' partial sums
// are added in slice order by skin_backward_params.
#define SKIN_GRAD_FEATURES 64
#define SKIN_GRAD_ITEMS 32
#define SKIN_GRAD_STEP 32
#define SKIN_GRAD_TARGET_GROUPS 1024  // slices are added until about this many workgroups run
#define SKIN_GRAD_MIN_SLICE 512       // columns

ARM_SHARED_STRUCT(SkinningPush) {
  uint batch;        // B
  uint vertexCount;  // V
  uint jointCount;   // J
  uint featureCount; // P = (J-1)*9
  uint coefCount;    // K = shape + expression components
  uint shapeCount;   // shape components (first of the K)
  uint jointGrads;   // backward: 1 when a gradient on the posed joints is given
  uint slices;       // backward: column slices of the dL/dfeatures product (skinGradSlices)
};

// How many column slices the dL/dfeatures product of `batch` items splits into, and the columns of each (a multiple
// of SKIN_GRAD_STEP; the last slice may be shorter): enough workgroups to fill a GPU at batch 1, none at large batches.
ARM_FN uint skinGradSlices(uint batch, uint features, uint columns) {
  uint groups = ((features + SKIN_GRAD_FEATURES - 1u) / SKIN_GRAD_FEATURES) * ((batch + SKIN_GRAD_ITEMS - 1u) / SKIN_GRAD_ITEMS);
  uint wanted = (SKIN_GRAD_TARGET_GROUPS + groups - 1u) / groups, most = (columns + SKIN_GRAD_MIN_SLICE - 1u) / SKIN_GRAD_MIN_SLICE;
  wanted = wanted < most ? wanted : most;
  return wanted > 1u ? wanted : 1u;
}
ARM_FN uint skinGradSliceColumns(uint slices, uint columns) {
  uint perSlice = (columns + slices - 1u) / slices;
  return (perSlice + SKIN_GRAD_STEP - 1u) / SKIN_GRAD_STEP * SKIN_GRAD_STEP;
}

#ifdef __cplusplus
static_assert(sizeof(SkinningPush) == 32);
#endif
#endif
