#pragma once
// CUDA-only diagnostics of the rasteriser (its entry points are in armature/ops/raster.h); a build without CUDA
// has none of them.
#include <cstdint>

#include "armature/cuda/runtime.h"
#include "armature/ops/raster.h"

namespace armature::cuda {
// Diagnostics: the triangle stage's setup (rasterSetup, shaders/shared/raster_setup.h) of `triangles` triangles given
// as three float4 clip-space corners each, into setups (a RasterTri per triangle), for the bit-for-bit test against the
// CPU's (the Vulkan path's is shaders/raster_setup_probe.comp).
void rasterSetupProbe(uint32_t width, uint32_t height, const float* corners, uint32_t triangles, void* setups,
                      void* stream);
}  // namespace armature::cuda
