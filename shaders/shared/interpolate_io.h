// interpolate (forward and backward): push constants and sizes shared by GLSL and C++.
#ifndef ARMATURE_INTERPOLATE_IO_H
#define ARMATURE_INTERPOLATE_IO_H
#include "common_io.h"

#define INTERP_GROUP 256
// Bindings of both passes; the forward's output takes the gradients' first slot.
#define INTERP_BINDING_ATTR 0
#define INTERP_BINDING_FINDICES 1
#define INTERP_BINDING_BARY 2
#define INTERP_BINDING_FACES 3
#define INTERP_BINDING_OUT 4
#define INTERP_BINDING_GRAD_OUT 4
#define INTERP_BINDING_GRAD_ATTR 5
#define INTERP_BINDING_GRAD_BARY 6
#define INTERP_FORWARD_BINDINGS 5
#define INTERP_BACKWARD_BINDINGS 7

ARM_SHARED_STRUCT(InterpolatePush) {
  uint pixels;
  uint channels;
  uint vertexCount;
  uint faceCount;
  uint imagePixels;  // 0: attr (N,C) shared by every pixel; else attr (B,N,C), pixel p reads image p / imagePixels's
};
#ifdef __cplusplus
static_assert(sizeof(InterpolatePush) == 20);
#endif
#endif
