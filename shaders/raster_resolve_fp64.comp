#version 450
// Doubles for the divide and barycentrics (devices with shaderFloat64).
#define RASTER_FP64 1
#extension GL_GOOGLE_include_directive : require
#include "raster_resolve.glsl"
