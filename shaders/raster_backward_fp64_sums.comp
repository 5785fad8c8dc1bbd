#version 450
// Variant: double arithmetic, runs of invocations on one face summed before the atomics (subgroup ballot and
// relative shuffles).
#define RASTER_FP64 1
#define RASTER_SUBGROUP_SUMS 1
#extension GL_GOOGLE_include_directive : require
#include "raster_backward.glsl"
