#version 450
// Variant: 64 items per workgroup (8 per invocation), for many items.
#define SKIN_GRAD_ROWS SKIN_GRAD_ROWS_MANY
#extension GL_GOOGLE_include_directive : require
#include "skin_backward_features.glsl"
