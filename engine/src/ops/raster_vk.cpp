#include "armature/ops/raster.h"
#include <volk.h>  // the library's own Vulkan function table
#include "armature/shaders.h"
#include "shared/raster_io.h"

// Paths by the context's features (vk::ContextOptions::hide emulates a device without them): doubles for the
// setup's estimates and the barycentrics, else the same results from 64-bit integers; 64-bit z-buffer atomics, else
// two 32-bit passes; subgroup sums in the backward, else an atomic per pixel.
namespace armature::vk {

void rasterize(const Exec& exec, const RasterizeArgs& a) {
  vk::Context& ctx = exec.context();
  const VkCommandBuffer cmd = exec.commandBuffer();
  const RasterDesc& d = a.desc;
  ARM_CHECK(ctx.info().int64, "rasterize: '%s' has no shaderInt64 (the exact edge functions need it)",
            ctx.info().name.c_str());
  const RasterScratchLayout layout = rasterScratchLayout(d, a.tuning);
  const size_t pixels = d.pixels();
  const bool instanced = d.batch == RasterBatch::Instanced;
  const uint32_t faceCount = a.faceCount;
  RasterPush push = rasterPush(d, a.vertexCount, faceCount, a.tuning);
  // One fill: the queue's counts to ~0 (empty) and, where this call clears it (RasterDesc::scratchCall), the
  // z-buffer before them to the empty token (above every fragment).
  const VkDeviceSize fillFrom = rasterClearsZBuffer(d) ? 0 : layout.queueOffset;
  vkCmdFillBuffer(cmd, a.scratch.vkBuffer, a.scratch.offset + fillFrom, layout.queueOffset + 16 - fillFrom,
                  0xffffffffu);
  vk::computeBarrier(cmd);
  const bool fp64 = ctx.info().float64;
  bool atomic64 = ctx.info().int64Atomics;
  const auto& tri =
      ctx.program(fp64 ? (atomic64 ? shaders::raster_triangles_fp64 : shaders::raster_triangles_fp64_atomic32)
                       : (atomic64 ? shaders::raster_triangles : shaders::raster_triangles_atomic32),
                  RASTER_TRIANGLES_BINDINGS, sizeof push);
  const vk::BufferView zbuffer = a.scratch.slice(0, layout.zbufferBytes).vulkan(),
                       queue = a.scratch.slice(layout.queueOffset, layout.queueBytes).vulkan(),
                       records = a.scratch.slice(layout.recordsOffset, layout.recordsBytes).vulkan();
  // Unused bindings point at the z-buffer so every descriptor is valid; they are never read.
  std::vector<vk::BufferView> views{a.positions.vulkan(),
                                    a.faces.vulkan(),
                                    d.useDepthPrior ? a.depthPrior.vulkan() : zbuffer,
                                    zbuffer,
                                    instanced ? zbuffer : a.ranges.vulkan(),
                                    queue,
                                    records};
  const uint32_t chunkGroups = std::min<uint32_t>(layout.queueCapacity, RASTER_CHUNK_GROUPS);
  for (uint32_t pass = 1; pass <= (atomic64 ? 1u : 2u) && faceCount; ++pass) {
    if (pass == 2) {  // the lowest face among the fragments at each pixel's nearest level; the queue refills
      vkCmdFillBuffer(cmd, a.scratch.vkBuffer, a.scratch.offset + layout.queueOffset, 16, 0xffffffffu);
      vk::computeBarrier(cmd);
    }
    push.pass = pass;
    push.stage = 0;
    vk::dispatch(cmd, tri, vk::groupCount(faceCount, RASTER_GROUP, RASTER_TRIANGLE_GROUPS), views, push, d.images);
    vk::computeBarrier(cmd);
    push.stage = 1;
    vk::dispatch(cmd, tri, chunkGroups, views, push);
    vk::computeBarrier(cmd);
  }
  push.pass = atomic64 ? 1 : 2;  // the resolve empties the face words for the 32-bit path's next call
  const auto& resolve =
      ctx.program(fp64 ? shaders::raster_resolve_fp64 : shaders::raster_resolve, RASTER_RESOLVE_BINDINGS, sizeof push);
  vk::dispatch(cmd, resolve, vk::groupCount(pixels, RASTER_RESOLVE_GROUP),
               {a.positions.vulkan(), a.faces.vulkan(), zbuffer, a.findices.vulkan(), a.barycentrics.vulkan()}, push);
}

void rasterizeBackward(const Exec& exec, const RasterizeBackwardArgs& a) {
  vk::Context& ctx = exec.context();
  const VkCommandBuffer cmd = exec.commandBuffer();
  const RasterDesc& d = a.desc;
  ARM_CHECK(ctx.info().float32AtomicAdd,
            "rasterize backward: '%s' lacks float32 buffer atomic add (VK_EXT_shader_atomic_float)",
            ctx.info().name.c_str());
  const size_t pixels = d.pixels(), positionBytes = rasterPositionRows(d, a.vertexCount) * 16;
  const RasterPush push = rasterPush(d, a.vertexCount, a.faceCount);
  vkCmdFillBuffer(cmd, a.gradPositions.vkBuffer, a.gradPositions.offset, positionBytes, 0);  // the sums start from zero
  vk::computeBarrier(cmd);
  // Runs of invocations on one face summed before the atomics where the device has the subgroup operations.
  const bool sums = ctx.info().subgroupSums;
  const auto& prog =
      ctx.program(ctx.info().float64 ? (sums ? shaders::raster_backward_fp64_sums : shaders::raster_backward_fp64)
                                     : (sums ? shaders::raster_backward_sums : shaders::raster_backward),
                  RASTER_BACKWARD_BINDINGS, sizeof push);
  vk::dispatch(cmd, prog, vk::groupCount(pixels, RASTER_GROUP),
               {a.positions.vulkan(), a.faces.vulkan(), a.findices.vulkan(), a.gradBarycentrics.vulkan(),
                a.gradPositions.vulkan()},
               push);
}

}  // namespace armature::vk
