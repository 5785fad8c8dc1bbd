#pragma once
// Triangle rasteriser producing a visibility buffer: per pixel the visible face (index + 1, 0 = background) and its
// perspective-correct barycentrics — Hunyuan3D-2 custom_rasterizer's rasterize_image contract (see
// shaders/shared/raster_io.h and the arithmetic headers it names for the semantics and where they deliberately differ).
// CPU reference and the GPU entry points (Vulkan compute and CUDA) here; interpolate reads its outputs
// (armature/ops/interpolate.h).
#include <cstdint>
#include <vector>

#include "armature/ops/interpolate.h"

#include "armature/device.h"

struct RasterPush;  // shaders/shared/raster_io.h: the GPU passes' push constants

namespace armature {

// A batch of B images (nvdiffrast's two modes): Instanced — positions (B,N,4), every image draws all of F (many views
// of one mesh, texture baking); Ranges — positions (N,4) shared, image b draws faces ranges[2b] ..
// ranges[2b] + ranges[2b+1] - 1 (many meshes packed in one buffer). Face ids are indices into F either way.
enum class RasterBatch { Instanced, Ranges };

struct RasterDesc {
  uint32_t width = 0, height = 0;
  bool useDepthPrior = false;         // keep only fragments at or behind the prior + truncation (depth peeling)
  float occlusionTruncation = 1e-6f;  // the original wrapper's value
  uint32_t images = 1;                // B
  RasterBatch batch = RasterBatch::Instanced;
  // GPU: this call's place in the scratch's history, so that it need not clear the z-buffer (B·H·W·8 bytes of
  // stores). 0: unknown, the call clears it. n > 0: the previous call on this scratch — finished, or earlier in
  // stream order, of at least as many pixels, on the same device (a device uses one z-buffer path) — had
  // scratchCall n − 1 (RasterScratchState counts). Every z-buffer token carries its call's tag (rasterTokenTag):
  // tags fall from call to call, so a fragment replaces any earlier call's token and the resolve reads those as
  // background; every 8,191 calls the z-buffer is cleared again (rasterClearsZBuffer). Set it wrongly and the image
  // is wrong, never a fault (tokens whose face is beyond F read as background); the call leaves the z-buffer fit for
  // the next call either way.
  uint32_t scratchCall = 0;
  size_t imagePixels() const { return size_t(width) * height; }
  size_t pixels() const { return imagePixels() * images; }
};

// The GPU paths' automatic choices, overridden (tests force each path; a renderer may size the queue itself).
// Vulkan's device-dependent paths (64-bit atomics, subgroup sums, doubles) follow the context's features instead
// (vk::ContextOptions::hide).
struct RasterTuning {
  uint32_t queueCapacity = 0;        // big-triangle queue entries; 0 = automatic (enough for ~4 walks of each pixel)
  uint32_t smallTrianglePixels = 0;  // boxes one invocation walks, at most 64; 0 = automatic (rasterSmallPixels)
};

// One scratch called with one layout again and again (a renderer's frames): counts RasterDesc::scratchCall, so
// the first call clears the z-buffer and most later ones skip that. reset() where the scratch is reallocated.
class RasterScratchState {
 public:
  RasterDesc next(RasterDesc desc) {
    desc.scratchCall = m_calls++;  // wraps to 0 after 2^32 calls: a clear
    return desc;
  }
  void reset() { m_calls = 0; }

 private:
  uint32_t m_calls = 0;
};

struct RasterResult {
  std::vector<int32_t> findices;    // (B,H,W): face + 1, 0 = background; row 0 is NDC y = -1
  std::vector<float> barycentrics;  // (B,H,W,3): for the face's vertices in F's order; 0 for background
};

// positions (B,N,4) or (N,4) clip space; faces (M,3); depthPrior (B,H,W) in NDC z when useDepthPrior; ranges (B,2)
// in Ranges mode. Throws armature::Error for wrong sizes, out-of-range face indices or ranges, sizes beyond 8192.
RasterResult rasterizeRef(const std::vector<float>& positions, const std::vector<int32_t>& faces,
                          const RasterDesc& desc, const std::vector<float>& depthPrior = {},
                          const std::vector<int32_t>& ranges = {});
// The rasteriser's backward (as nvdiffrast's rasterize gradient, without its derivative outputs): dL/dpositions from
// dL/dbarycentrics (B,H,W,3) at the faces `findices` holds (from a rasterize of the same inputs). Which face is
// visible is piecewise constant, so only the barycentrics carry gradient: through x, y and w of each covered
// pixel's three corners (z gets none). Returns the shape of positions, (B,N,4) or (N,4); face ids outside F and
// background pixels contribute nothing. Chain it with interpolate's gradBarycentrics to fit geometry to images.
std::vector<double> rasterizeBackwardRef(const std::vector<float>& positions, const std::vector<int32_t>& faces,
                                         const RasterDesc& desc, const std::vector<int32_t>& findices,
                                         const std::vector<double>& gradBarycentrics);
// How many triangles cover each pixel centre, ignoring depth (w > 0 triangles): 1 everywhere inside a
// watertight mesh seen from one side shows the fill rule covers shared edges exactly once.
std::vector<uint32_t> rasterCoverageRef(const std::vector<float>& positions, const std::vector<int32_t>& faces,
                                        const RasterDesc& desc);
// Checks sizes and face indices (and ranges when given); returns the vertex count per image (instanced) or in all.
uint32_t validateRasterInputs(size_t positionFloats, const std::vector<int32_t>& faces, const RasterDesc& desc,
                              size_t depthPriorFloats, const std::vector<int32_t>* ranges = nullptr);

// GPU scratch: the z-buffer (B·H·W uint64), the big-triangle queue of chunks and the queued triangles' records
// (RasterQueued, as many as entries at most), laid out by rasterScratchLayout.
struct RasterScratchLayout {
  size_t zbufferBytes, queueOffset, queueBytes, recordsOffset, recordsBytes, totalBytes;
  uint32_t queueCapacity;  // entries
};
RasterScratchLayout rasterScratchLayout(const RasterDesc& desc, const RasterTuning& tuning = {});
// The GPU paths' split between boxes one invocation walks and boxes cut into chunks for a workgroup: few triangles
// leave most of the GPU idle, so medium ones are spread over workgroups; many keep the GPU full one per invocation.
uint32_t rasterSmallPixels(const RasterDesc& desc, uint32_t faceCount, const RasterTuning& tuning = {});
inline size_t rasterScratchBytes(const RasterDesc& desc, const RasterTuning& tuning = {}) {
  return rasterScratchLayout(desc, tuning).totalBytes;
}
// Rows (x, y, z, w) of the positions buffer: vertexCount per image (Instanced) or in all (Ranges).
inline size_t rasterPositionRows(const RasterDesc& desc, uint32_t vertexCount) {
  return size_t(vertexCount) * (desc.batch == RasterBatch::Instanced ? desc.images : 1);
}
// The push constants of a GPU call (every pass, forward and backward, on CUDA and Vulkan); include
// shared/raster_io.h to call it.
RasterPush rasterPush(const RasterDesc& desc, uint32_t vertexCount, uint32_t faceCount,
                      const RasterTuning& tuning = {});
// A GPU call's tag in its z-buffer tokens (shaders/shared/raster_io.h, RASTER_TOKEN_TAGS), from
// RasterDesc::scratchCall, and whether the call clears its z-buffer first: where the tags restart from the top.
uint32_t rasterTokenTag(const RasterDesc& desc);
bool rasterClearsZBuffer(const RasterDesc& desc);

// The GPU entry points (armature/device.h). Face ids are identical on every backend and the CPU reference.
// Vulkan needs shaderInt64 (the exact edge functions); it uses 64-bit buffer atomics where the device has them, else
// two passes with 32-bit atomics (same results). CUDA: on compute capability 9.0+ the call's kernels, and
// interpolate's, are launched as programmatic dependents of the work before them in the stream; scratch and outputs in
// compressible memory (Device::allocateCompressible) cost fewer DRAM bytes.
struct RasterizeArgs {
  RasterDesc desc;
  uint32_t vertexCount = 0;  // per image (Instanced) or in all (Ranges)
  uint32_t faceCount = 0;
  DeviceView positions;     // float32, rasterPositionRows(desc, vertexCount)·4, clip space
  DeviceView faces;         // int32, faceCount·3
  DeviceView depthPrior;    // float32 (B,H,W) in NDC z with desc.useDepthPrior, else empty
  DeviceView ranges;        // int32 (B,2) in Ranges mode (a range outside F draws nothing), else empty
  DeviceView scratch;       // bytes, rasterScratchBytes(desc, tuning) (desc.scratchCall on later calls)
  DeviceView findices;      // int32 (B,H,W), overwritten
  DeviceView barycentrics;  // float32 (B,H,W,3), overwritten; must not overlap the inputs (CUDA keeps each
                            // vertex's setup there before the resolve)
  RasterTuning tuning;      // the scratch is rasterScratchBytes(desc, tuning)
};
// The backward (rasterizeBackwardRef): gradPositions (the shape of positions, overwritten) from gradBarycentrics at
// the faces of findices. Float atomics: the sums over pixels are not bitwise reproducible. Vulkan needs float32
// buffer atomic add (VK_EXT_shader_atomic_float); on devices without doubles each pixel's chain runs in float: good
// to ~1e-4 of the largest gradient where the pixel's triangle is well conditioned (tests/raster_op_test.cpp,
// wellConditioned), while on slivers the error grows with their conditioning.
struct RasterizeBackwardArgs {
  RasterDesc desc;
  uint32_t vertexCount = 0, faceCount = 0;
  DeviceView positions, faces;  // as the forward's
  DeviceView findices;          // int32 (B,H,W), from a rasterize of the same inputs
  DeviceView gradBarycentrics;  // float32 (B,H,W,3)
  DeviceView gradPositions;     // float32, the shape of positions
};
void rasterize(const Exec& exec, const RasterizeArgs& args);
void rasterizeBackward(const Exec& exec, const RasterizeBackwardArgs& args);
// Image size 1..8192, 1..65535 images, at most 2^28 pixels in all: the limits every backend shares.
void checkRasterDesc(const RasterDesc& desc);

}  // namespace armature
