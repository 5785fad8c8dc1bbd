// interpolate (forward and backward): push constants and sizes shared by GLSL and C++.
#ifndef ARMATURE_INTERPOLATE_IO_H
#define ARMATURE_INTERPOLATE_IO_H
#include "common_io.h"

#define INTERP_GROUP 256

ARM_SHARED_STRUCT(InterpolatePush) {
  uint pixels;
  uint channels;
  uint vertexCount;
  uint faceCount;
  uint imagePixels;  // 0: attr (N,C) shared by every pixel; else attr (B,N,C), pixel p reads image p / imagePixels's
};
#endif
