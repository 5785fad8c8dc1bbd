// axpy: y[i] = a * x[i] + y[i]. The plumbing check that every backend runs the same contract.
#ifndef ARMATURE_AXPY_IO_H
#define ARMATURE_AXPY_IO_H
#include "common_io.h"

#define AXPY_WORKGROUP_SIZE 256  // a multiple of every subgroup size we meet (8 lavapipe, 32 NVIDIA, 64 AMD)
#define AXPY_BINDING_X 0
#define AXPY_BINDING_Y 1
#define AXPY_BINDINGS 2

ARM_SHARED_STRUCT(AxpyPush) {
  float a;    // scale
  uint count; // elements in x and y
};

#ifdef __cplusplus
static_assert(sizeof(AxpyPush) == 8);
#endif
#endif
