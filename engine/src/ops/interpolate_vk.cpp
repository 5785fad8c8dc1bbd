#include "armature/ops/raster.h"
#include "armature/shaders.h"
#include "shared/interpolate_io.h"

namespace armature {

namespace {
InterpolatePush checked(uint32_t pixels, uint32_t C, uint32_t vertexCount, uint32_t faceCount, const vk::Buffer& attr,
                        const vk::Buffer& ids, const vk::Buffer& bary, const vk::Buffer& faces, uint32_t imagePixels) {
  ARM_CHECK(C >= 1, "interpolate: channels must be >= 1");
  ARM_CHECK(attr.size() >= interpolateAttrCount(pixels, C, vertexCount, imagePixels) * 4 &&
                ids.size() >= size_t(pixels) * 4 && bary.size() >= size_t(pixels) * 12 &&
                faces.size() >= size_t(faceCount) * 12,
            "interpolate: a buffer is smaller than its count");
  return {pixels, C, vertexCount, faceCount, imagePixels};
}
}  // namespace

void interpolateVk(vk::Context& ctx, VkCommandBuffer cmd, uint32_t pixels, uint32_t C, uint32_t vertexCount,
                   const vk::Buffer& attr, const vk::Buffer& ids, const vk::Buffer& bary, const vk::Buffer& faces,
                   uint32_t faceCount, vk::Buffer& out, uint32_t imagePixels) {
  InterpolatePush push = checked(pixels, C, vertexCount, faceCount, attr, ids, bary, faces, imagePixels);
  ARM_CHECK(out.size() >= size_t(pixels) * C * 4, "interpolate: out must hold H*W*C floats");
  const auto& prog = ctx.program(shaders::interpolate_forward, 5, sizeof push);
  vk::dispatch(cmd, prog, vk::groupCount(pixels, INTERP_GROUP),
               {attr.view(), ids.view(), bary.view(), faces.view(), out.view()}, push);
}

void interpolateBackwardVk(vk::Context& ctx, VkCommandBuffer cmd, uint32_t pixels, uint32_t C, uint32_t vertexCount,
                           const vk::Buffer& attr, const vk::Buffer& ids, const vk::Buffer& bary,
                           const vk::Buffer& faces, uint32_t faceCount, const vk::Buffer& gradOut, vk::Buffer& gradAttr,
                           vk::Buffer& gradBary, uint32_t imagePixels) {
  ARM_CHECK(ctx.info().float32AtomicAdd,
            "interpolate backward: '%s' lacks float32 buffer atomic add "
            "(VK_EXT_shader_atomic_float)",
            ctx.info().name.c_str());
  InterpolatePush push = checked(pixels, C, vertexCount, faceCount, attr, ids, bary, faces, imagePixels);
  ARM_CHECK(gradOut.size() >= size_t(pixels) * C * 4 &&
                gradAttr.size() >= interpolateAttrCount(pixels, C, vertexCount, imagePixels) * 4 &&
                gradBary.size() >= size_t(pixels) * 12,
            "interpolate backward: a gradient buffer is smaller than its shape");
  const auto& prog = ctx.program(shaders::interpolate_backward, 7, sizeof push);
  vk::dispatch(cmd, prog, vk::groupCount(pixels, INTERP_GROUP),
               {attr.view(), ids.view(), bary.view(), faces.view(), gradOut.view(), gradAttr.view(), gradBary.view()},
               push);
}

}  // namespace armature
