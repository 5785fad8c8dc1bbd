#pragma once
// The viewer's compute-raster mode on CUDA: skinned positions to the rasteriser's clip space, and the pixel
// rectangle the avatars can cover (the graphics pass that shades the visibility buffer covers only that).
#include <cstdint>

#include "armature/cuda/runtime.h"

namespace armature::app {
// clip[v] = viewProj · (positions[v], 1) for `count` points of 3 floats (float4 out), and bounds = the pixel
// rectangle {minX, minY, maxX, maxY} of a width × height image that the points can cover; a point at w <= 0 makes
// it the whole image. viewProj: column-major 4×4, passed by value. As shaders/clip_transform.comp.
void transformToClip(const float* positions, uint32_t count, const float viewProj[16], float* clip, uint32_t width,
                     uint32_t height, uint32_t* bounds, void* stream);
}  // namespace armature::app
