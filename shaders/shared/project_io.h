// project (forward and backward): points to clip space for B views. Push constants shared by GLSL, C++ and CUDA.
#ifndef ARMATURE_PROJECT_IO_H
#define ARMATURE_PROJECT_IO_H
#include "common_io.h"

#define PROJECT_GROUP 256
#define PROJECT_MATRIX_GROUP 128  // the matrices' gradient: one workgroup per view, its points summed in a fixed order

// Bindings: project_forward (points, matrices, clip), project_backward (gradClip, matrices, gradPoints),
// project_matrix_grad (points, gradClip, gradMatrices): inputs first, the output last.
#define PROJECT_BINDING_IN0 0
#define PROJECT_BINDING_IN1 1
#define PROJECT_BINDING_OUT 2
#define PROJECT_BINDINGS 3

ARM_SHARED_STRUCT(ProjectPush) {
  uint views;          // B: one column-major 4×4 matrix each
  uint points;         // N per view
  uint pointsPerView;  // 0: points (N,3) seen by every view; 1: points (B,N,3), set b seen by view b
};
#ifdef __cplusplus
static_assert(sizeof(ProjectPush) == 12);
#endif
#endif
