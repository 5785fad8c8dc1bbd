#pragma once
// CUDA-only helpers around the rasteriser (its entry points are in armature/ops/raster.h); a build without CUDA has
// none of them.
#include <cstdint>

#include "armature/cuda/runtime.h"
#include "armature/ops/raster.h"

namespace armature::cuda {
// clip[v] = viewProj · (positions[v], 1) for `count` points of 3 floats: float4 clip-space input for rasterize
// (the viewer's compute-raster mode), and bounds = the pixel rectangle {minX, minY, maxX, maxY} of a width × height
// image that the points can cover (shaders/clip_transform.comp). viewProj: column-major 4×4, passed by value.
void transformToClip(const float* positions, uint32_t count, const float viewProj[16], float* clip, uint32_t width,
                     uint32_t height, uint32_t* bounds, const Stream& stream);
// Diagnostics: the triangle stage's setup (rasterSetup, shaders/shared/raster_setup.h) of `triangles` triangles given
// as three float4 clip-space corners each, into setups (a RasterTri per triangle), for the bit-for-bit test against the
// CPU's (the Vulkan path's is shaders/raster_setup_probe.comp).
void rasterSetupProbe(uint32_t width, uint32_t height, const float* corners, uint32_t triangles, void* setups,
                      void* stream);
}  // namespace armature::cuda
