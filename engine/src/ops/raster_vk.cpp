#include "armature/ops/raster.h"
#include "armature/shaders.h"
#include "shared/raster_io.h"

namespace armature {
namespace {
// Double estimates and barycentrics where the device has doubles; elsewhere the same results from 64-bit integers
// (tests can ask for the float-only shaders on any device).
bool usesFloat64(const vk::Context& ctx, const RasterDesc& d) { return ctx.info().float64 && !d.noFloat64; }
}  // namespace

void rasterizeVk(vk::Context& ctx, VkCommandBuffer cmd, const RasterDesc& d, const vk::Buffer& positions,
                 uint32_t vertexCount, const vk::Buffer& faces, uint32_t faceCount, const vk::Buffer* depthPrior,
                 vk::Buffer& scratch, vk::Buffer& findices, vk::Buffer& barycentrics, const vk::Buffer* ranges) {
  ARM_CHECK(ctx.info().int64, "rasterizeVk: '%s' has no shaderInt64 (the exact edge functions need it)",
            ctx.info().name.c_str());
  RasterScratchLayout layout = rasterScratchLayout(d);
  const size_t pixels = d.pixels();
  const bool instanced = d.batch == RasterBatch::Instanced;
  ARM_CHECK(positions.size() >= rasterPositionRows(d, vertexCount) * 16 && faces.size() >= size_t(faceCount) * 12,
            "rasterizeVk: position or face buffer smaller than its count");
  ARM_CHECK(scratch.size() >= layout.totalBytes && findices.size() >= pixels * 4 && barycentrics.size() >= pixels * 12,
            "rasterizeVk: scratch or output buffers smaller than %u images of %ux%u", d.images, d.width, d.height);
  ARM_CHECK(!d.useDepthPrior || (depthPrior && depthPrior->size() >= pixels * 4),
            "rasterizeVk: depth prior must hold B*H*W floats");
  ARM_CHECK(instanced || (ranges && ranges->size() >= size_t(d.images) * 8),
            "rasterizeVk: Ranges mode needs a (B,2) ranges buffer");
  RasterPush push = rasterPush(d, vertexCount, faceCount);
  // One fill: the queue's counts to ~0 (empty) and, where this call clears it (RasterDesc::scratchCall), the
  // z-buffer before them to the empty token (above every fragment).
  const VkDeviceSize fillFrom = rasterClearsZBuffer(d) ? 0 : layout.queueOffset;
  vkCmdFillBuffer(cmd, scratch.handle(), fillFrom, layout.queueOffset + 16 - fillFrom, 0xffffffffu);
  vk::computeBarrier(cmd);
  const bool fp64 = usesFloat64(ctx, d);
  bool atomic64 = ctx.info().int64Atomics && !d.noInt64Atomics;
  const auto& tri =
      ctx.program(fp64 ? (atomic64 ? shaders::raster_triangles_fp64 : shaders::raster_triangles_fp64_atomic32)
                       : (atomic64 ? shaders::raster_triangles : shaders::raster_triangles_atomic32),
                  7, sizeof push);
  vk::BufferView zbuffer = scratch.view(0, layout.zbufferBytes),
                 queue = scratch.view(layout.queueOffset, layout.queueBytes),
                 records = scratch.view(layout.recordsOffset, layout.recordsBytes);
  // Unused bindings point at the z-buffer so every descriptor is valid; they are never read.
  std::vector<vk::BufferView> views{positions.view(),
                                    faces.view(),
                                    d.useDepthPrior ? depthPrior->view() : zbuffer,
                                    zbuffer,
                                    instanced ? zbuffer : ranges->view(),
                                    queue,
                                    records};
  const uint32_t chunkGroups = std::min<uint32_t>(layout.queueCapacity, RASTER_CHUNK_GROUPS);
  for (uint32_t pass = 1; pass <= (atomic64 ? 1u : 2u) && faceCount; ++pass) {
    if (pass == 2) {  // the lowest face among the fragments at each pixel's nearest level; the queue refills
      vkCmdFillBuffer(cmd, scratch.handle(), layout.queueOffset, 16, 0xffffffffu);
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
  const auto& resolve = ctx.program(fp64 ? shaders::raster_resolve_fp64 : shaders::raster_resolve, 5, sizeof push);
  vk::dispatch(cmd, resolve, vk::groupCount(pixels, RASTER_RESOLVE_GROUP),
               {positions.view(), faces.view(), zbuffer, findices.view(), barycentrics.view()}, push);
}

void rasterizeBackwardVk(vk::Context& ctx, VkCommandBuffer cmd, const RasterDesc& d, const vk::Buffer& positions,
                         uint32_t vertexCount, const vk::Buffer& faces, uint32_t faceCount, const vk::Buffer& findices,
                         const vk::Buffer& gradBary, vk::Buffer& gradPositions) {
  checkRasterDesc(d);
  ARM_CHECK(ctx.info().float32AtomicAdd,
            "rasterize backward: '%s' lacks float32 buffer atomic add (VK_EXT_shader_atomic_float)",
            ctx.info().name.c_str());
  const size_t pixels = d.pixels(), positionBytes = rasterPositionRows(d, vertexCount) * 16;
  ARM_CHECK(
      positions.size() >= positionBytes && gradPositions.size() >= positionBytes &&
          faces.size() >= size_t(faceCount) * 12 && findices.size() >= pixels * 4 && gradBary.size() >= pixels * 12,
      "rasterize backward: a buffer is smaller than %u images of %ux%u or its count", d.images, d.width, d.height);
  const RasterPush push = rasterPush(d, vertexCount, faceCount);
  vkCmdFillBuffer(cmd, gradPositions.handle(), 0, positionBytes, 0);  // the sums start from zero
  vk::computeBarrier(cmd);
  // Runs of invocations on one face summed before the atomics where the device has the subgroup operations.
  const bool sums = ctx.info().subgroupSums && !d.noSubgroupSums;
  const auto& prog =
      ctx.program(usesFloat64(ctx, d) ? (sums ? shaders::raster_backward_fp64_sums : shaders::raster_backward_fp64)
                                      : (sums ? shaders::raster_backward_sums : shaders::raster_backward),
                  5, sizeof push);
  vk::dispatch(cmd, prog, vk::groupCount(pixels, RASTER_GROUP),
               {positions.view(), faces.view(), findices.view(), gradBary.view(), gradPositions.view()}, push);
}

}  // namespace armature
