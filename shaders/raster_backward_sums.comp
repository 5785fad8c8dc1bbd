#version 450
// Variant: float-only (devices without shaderFloat64), runs of invocations on one face summed before the atomics
// (subgroup ballot and relative shuffles).
#define RASTER_FP64 0
#define RASTER_SUBGROUP_SUMS 1
#extension GL_GOOGLE_include_directive : require
#include "raster_backward.glsl"
