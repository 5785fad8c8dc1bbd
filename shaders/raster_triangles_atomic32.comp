#version 450
// Variant: float divide/barycentrics, two 32-bit passes (no 64-bit atomics).
#define RASTER_FP64 0
#define RASTER_ATOMIC64 0
#extension GL_GOOGLE_include_directive : require
#include "raster_triangles.glsl"
