#version 450
// Variant: 8 items per workgroup (1 per invocation), for a few items.
#define SKIN_GRAD_ROWS SKIN_GRAD_ROWS_FEW
#extension GL_GOOGLE_include_directive : require
#include "skin_backward_features.glsl"
