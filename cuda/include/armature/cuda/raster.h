#pragma once
// The rasteriser on CUDA (armature/ops/raster.h for the contract). Device pointers, the caller's stream, no host
// synchronisation. scratch: rasterScratchBytes(desc) bytes, 16-byte aligned (as cudaMalloc's); ranges: device (B,2)
// int32 in Ranges mode. On compute capability 9.0+ the call's kernels, and interpolate's, are launched as
// programmatic dependents of the work before them in the stream (each waits for it before reading its results).
// barycentrics must not overlap the inputs: before the resolve writes it, the call keeps each vertex's setup there
// (8 bytes a vertex, where that fits in its 12 a pixel). Scratch and outputs in compressible memory
// (cuda::MemoryKind::Compressible) cost fewer DRAM bytes: the cleared z-buffer and background pixels compress.
// Calling again on the same scratch, count desc.scratchCall (RasterScratchState): most calls then skip the z-buffer's
// clear.
#include <cstdint>

#include "armature/cuda/runtime.h"
#include "armature/ops/raster.h"

namespace armature::cuda {
void rasterize(const RasterDesc& desc, const float* positions, uint32_t vertexCount, const int32_t* faces,
               uint32_t faceCount, const float* depthPrior, void* scratch, int32_t* findices, float* barycentrics,
               const Stream& stream, const int32_t* ranges = nullptr);
// The backward (armature/ops/raster.h, rasterizeBackwardRef): writes gradPositions (the shape of positions) from
// gradBarycentrics (B,H,W,3) at the faces of findices; float atomics, so not bitwise reproducible.
void rasterizeBackward(const RasterDesc& desc, const float* positions, uint32_t vertexCount, const int32_t* faces,
                       uint32_t faceCount, const int32_t* findices, const float* gradBarycentrics, float* gradPositions,
                       const Stream& stream);
// interpolate (armature/ops/raster.h): out (H,W,C); backward accumulates gradAttr with float atomics (zero it
// first; not bitwise reproducible) and writes gradBarycentrics. imagePixels > 0: attr and gradAttr are (B,N,C).
void interpolate(uint32_t pixels, uint32_t channels, uint32_t vertexCount, const float* attr, const int32_t* findices,
                 const float* barycentrics, const int32_t* faces, uint32_t faceCount, float* out, const Stream& stream,
                 uint32_t imagePixels = 0);
void interpolateBackward(uint32_t pixels, uint32_t channels, uint32_t vertexCount, const float* attr,
                         const int32_t* findices, const float* barycentrics, const int32_t* faces, uint32_t faceCount,
                         const float* gradOut, float* gradAttr, float* gradBarycentrics, const Stream& stream,
                         uint32_t imagePixels = 0);
// clip[v] = viewProj · (positions[v], 1) for `count` points of 3 floats: float4 clip-space input for rasterize
// (the viewer's compute-raster mode), and bounds = the pixel rectangle {minX, minY, maxX, maxY} of a width × height
// image that the points can cover (shaders/clip_transform.comp). viewProj: column-major 4×4, passed by value.
void transformToClip(const float* positions, uint32_t count, const float viewProj[16], float* clip, uint32_t width,
                     uint32_t height, uint32_t* bounds, const Stream& stream);
// Diagnostics: the triangle stage's setup (rasterSetup, shaders/shared/raster_io.h) of `triangles` triangles given as
// three float4 clip-space corners each, into setups (a RasterTri per triangle), for the bit-for-bit test against
// the CPU's (the Vulkan path's is shaders/raster_setup_probe.comp).
void rasterSetupProbe(uint32_t width, uint32_t height, const float* corners, uint32_t triangles, void* setups,
                      const Stream& stream);
}  // namespace armature::cuda
