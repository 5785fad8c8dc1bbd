#version 450
// Float-only variant for devices without shaderFloat64.
#define RASTER_FP64 0
#extension GL_GOOGLE_include_directive : require
#include "raster_backward.glsl"
