// Linear blend skinning on the GPU (GLSL and CUDA): bindings and push constants of linear_blend_skinning.comp and
// its CUDA twin. An invocation per (skeleton, vertex): the vertex's K influences, each its weight times its joint's
// skinning matrix (3×4 row-major, the last row 0 0 0 1 implied) applied to the rest position, summed in order.
#ifndef ARMATURE_LBS_IO_H
#define ARMATURE_LBS_IO_H
#include "common_io.h"

#define LBS_WORKGROUP_SIZE 128
#define LBS_MAX_INFLUENCES 8

#define LBS_BINDING_REST 0       // float (V,3)
#define LBS_BINDING_JOINTS 1     // uint (V,K)
#define LBS_BINDING_WEIGHTS 2    // float (V,K)
#define LBS_BINDING_SKINNING 3   // float (B,J,12)
#define LBS_BINDING_POSITIONS 4  // float (B,V,3), out
#define LBS_BINDINGS 5

ARM_SHARED_STRUCT(LbsPush) {
  uint batch, vertices, joints, influences;
};

#ifdef __cplusplus
static_assert(sizeof(LbsPush) == 16);
#endif
#endif
