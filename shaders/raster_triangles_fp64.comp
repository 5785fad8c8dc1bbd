#version 450
// Variant: double divide/barycentrics, 64-bit atomics.
#define RASTER_FP64 1
#define RASTER_ATOMIC64 1
#extension GL_GOOGLE_include_directive : require
#include "raster_triangles.glsl"
