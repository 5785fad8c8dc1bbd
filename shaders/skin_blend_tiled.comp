#version 450
// Variant: 128 items × 128 columns per workgroup (many items), 8 terms per step.
#define SKIN_TILE_ROWS SKIN_TILE_ROWS_MANY
#define SKIN_TILE_K 8
#extension GL_GOOGLE_include_directive : require
#include "skin_blend_tiled.glsl"
