#version 450
// Variant: double arithmetic (devices with shaderFloat64).
#define RASTER_FP64 1
#extension GL_GOOGLE_include_directive : require
#include "raster_backward.glsl"
