#version 450
// Variant: 32 items × 128 columns per workgroup (a few dozen items: less of the tile wasted), 16 terms per step.
#define SKIN_TILE_ROWS SKIN_TILE_ROWS_MID
#define SKIN_TILE_K 16
#extension GL_GOOGLE_include_directive : require
#include "skin_blend_tiled.glsl"
