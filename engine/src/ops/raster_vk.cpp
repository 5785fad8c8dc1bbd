#include "armature/ops/raster.h"
#include "armature/shaders.h"
#include "shared/raster_io.h"

namespace armature {

size_t rasterScratchBytes(const RasterDesc& d) { return size_t(d.width) * d.height * 8; }

void rasterizeVk(vk::Context& ctx, VkCommandBuffer cmd, const RasterDesc& d, const vk::Buffer& positions,
                 uint32_t vertexCount, const vk::Buffer& faces, uint32_t faceCount, const vk::Buffer* depthPrior,
                 vk::Buffer& zbuffer, vk::Buffer& findices, vk::Buffer& barycentrics) {
  ARM_CHECK(ctx.info().int64, "rasterizeVk: '%s' has no shaderInt64 (the exact edge functions need it)", ctx.info().name.c_str());
  ARM_CHECK(d.width >= 1 && d.height >= 1 && d.width <= 8192 && d.height <= 8192, "rasterize: image size %ux%u outside 1..8192",
            d.width, d.height);
  size_t pixels = size_t(d.width) * d.height;
  ARM_CHECK(positions.size() >= size_t(vertexCount) * 16 && faces.size() >= size_t(faceCount) * 12,
            "rasterizeVk: position or face buffer smaller than its count");
  ARM_CHECK(zbuffer.size() >= pixels * 8 && findices.size() >= pixels * 4 && barycentrics.size() >= pixels * 12,
            "rasterizeVk: output buffers smaller than %ux%u", d.width, d.height);
  ARM_CHECK(!d.useDepthPrior || (depthPrior && depthPrior->size() >= pixels * 4), "rasterizeVk: depth prior must hold H*W floats");
  RasterPush push{d.width, d.height, vertexCount, faceCount, d.useDepthPrior ? 1u : 0u, d.occlusionTruncation, 1, 0};
  vkCmdFillBuffer(cmd, zbuffer.handle(), 0, pixels * 8, 0xffffffffu);  // the empty token: above every fragment
  vk::computeBarrier(cmd);
  bool fp64 = ctx.info().float64;  // exact divide and double barycentrics where the device has doubles
  bool atomic64 = ctx.info().int64Atomics && !d.noInt64Atomics;
  const auto& tri = ctx.program(fp64 ? (atomic64 ? shaders::raster_triangles_fp64 : shaders::raster_triangles_fp64_atomic32)
                                     : (atomic64 ? shaders::raster_triangles : shaders::raster_triangles_atomic32),
                                4, sizeof push);
  // Without a prior the binding is never read; bind the z-buffer so the descriptor is valid.
  vk::BufferView prior = d.useDepthPrior ? depthPrior->view() : zbuffer.view();
  if (faceCount) {
    vk::dispatch(cmd, tri, vk::groupCount(faceCount, RASTER_GROUP), {positions.view(), faces.view(), prior, zbuffer.view()}, push);
    if (!atomic64) {  // second pass: the lowest face among the fragments at each pixel's nearest level
      vk::computeBarrier(cmd);
      push.pass = 2;
      vk::dispatch(cmd, tri, vk::groupCount(faceCount, RASTER_GROUP), {positions.view(), faces.view(), prior, zbuffer.view()}, push);
    }
  }
  vk::computeBarrier(cmd);
  const auto& resolve = ctx.program(fp64 ? shaders::raster_resolve_fp64 : shaders::raster_resolve, 5, sizeof push);
  vk::dispatch(cmd, resolve, vk::groupCount(pixels, RASTER_GROUP),
               {positions.view(), faces.view(), zbuffer.view(), findices.view(), barycentrics.view()}, push);
}

}  // namespace armature
