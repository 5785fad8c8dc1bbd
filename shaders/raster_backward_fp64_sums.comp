#version 450
// Variant: double arithmetic, per-face sums over the subgroup before the atomics (subgroup arithmetic and vote).
#define RASTER_FP64 1
#define RASTER_SUBGROUP_SUMS 1
#extension GL_GOOGLE_include_directive : require
#include "raster_backward.glsl"
