#pragma once
// The viewer's compute-raster mode: every skinned avatar through the project's own rasteriser — CUDA for the CUDA
// backend (its visibility buffer shared with Vulkan through interop), Vulkan compute otherwise — into a visibility
// buffer (face id + barycentrics per pixel) that Renderer shades (a compute pass for the whole frame, or a graphics
// pass over the avatars' pixel bounds).
#include <array>
#include <memory>
#include <vector>

#include "app/renderer.h"
#include "armature/ops/raster.h"
#include "armature/vk/timer.h"

namespace armature::cuda {
class Stream;
}

namespace armature::app {

class VisibilityRaster {
 public:
  VisibilityRaster(vk::Context& ctx, std::vector<int32_t> faces, uint32_t vertexCount);
  ~VisibilityRaster();
  VisibilityRaster(const VisibilityRaster&) = delete;
  VisibilityRaster& operator=(const VisibilityRaster&) = delete;

  // The rasteriser's clip space for a camera's: the hardware maps NDC ±1 to pixel edges, the rasteriser (the
  // original's viewport) to pixel centres, so x and y are scaled by W/(W-1) and H/(H-1) and both put a pixel in
  // the same place; z is widened from Vulkan's [0, 1] to [-1, 1] to use all of the rasteriser's depth levels.
  static std::array<float, 16> clipMatrix(const std::array<float, 16>& viewProj, VkExtent2D extent);

  // Records the clip transform and the Vulkan compute rasteriser for `avatars` avatars whose positions
  // (B × V × 3 floats) are in `positions`; the caller puts a barrier before the outputs are read.
  VisibilityBuffers recordVulkan(VkCommandBuffer cmd, VkBuffer positions, uint32_t avatars,
                                 const std::array<float, 16>& viewProj, VkExtent2D extent);
  // The same on CUDA, on `stream` (a cudaStream_t), from CUDA device positions; the outputs are shared buffers
  // Vulkan reads. Returns after the work is queued; the caller synchronises the stream before the draw is submitted.
  VisibilityBuffers runCuda(const float* positions, uint32_t avatars, const std::array<float, 16>& viewProj,
                            VkExtent2D extent, void* stream);
  // Either, on `exec`'s backend.
  VisibilityBuffers record(const Exec& exec, DeviceView positions, uint32_t avatars,
                           const std::array<float, 16>& viewProj, VkExtent2D extent);

 private:
  struct Cuda;
  void ensure(uint32_t avatars, VkExtent2D extent, bool onCuda, void* cudaStream);
  vk::Context& m_ctx;
  std::vector<int32_t> m_faces;
  uint32_t m_vertexCount;
  uint32_t m_avatars = 0;  // the buffers' capacity
  VkExtent2D m_extent{0, 0};
  vk::Buffer m_baseFaces;  // one avatar's, read by crowd_faces.comp
  vk::Buffer m_allFaces, m_clip, m_scratch, m_faceIds, m_barycentrics, m_bounds;  // Vulkan path
  std::unique_ptr<Cuda> m_cuda;
  RasterScratchState m_scratchState;  // the active backend's scratch
};

}  // namespace armature::app
