#pragma once
// The GPU's own rasteriser writing the same visibility buffer as rasterize() through a Vulkan graphics pipeline:
// the physical reference that `armature-bench raster` reports beside the compute paths. Same clip-space input,
// viewport mapping (NDC ±1 at pixel centres 0 and size-1) and face ids (face + 1, 0 = background); but the fill
// rule's precision, float depth and the order at equal depth are the hardware's, so it agrees with rasterize()
// except along edges and at ties — a speed reference, not a second implementation of the contract. Output in
// images: face ids R32_SINT, barycentrics (b0, b1) RG32_SFLOAT (b2 = 1 - b0 - b1). Single image, no depth prior.
#include "armature/vk/buffer.h"
#include "armature/vk/image.h"

namespace armature {

class HardwareRasterVk {
 public:
  HardwareRasterVk(vk::Context& ctx, uint32_t width, uint32_t height);  // width, height >= 2
  ~HardwareRasterVk();
  HardwareRasterVk(const HardwareRasterVk&) = delete;
  HardwareRasterVk& operator=(const HardwareRasterVk&) = delete;

  // Records the render pass: clears, then draws faceCount triangles of positions (N,4) / faces (M,3) int32.
  // Out-of-range vertex ids draw nothing. Afterwards the images are in TRANSFER_SRC_OPTIMAL.
  void record(VkCommandBuffer cmd, const vk::Buffer& positions, uint32_t vertexCount, const vk::Buffer& faces,
              uint32_t faceCount);
  // Records copies of both images into buffers: findices (H·W int32), barycentrics (H·W·2 floats).
  void recordReadback(VkCommandBuffer cmd, vk::Buffer& findices, vk::Buffer& barycentrics);

 private:
  vk::Context& m_ctx;
  VkExtent2D m_extent;
  vk::Image m_faceIds, m_barycentrics, m_depth;
  VkRenderPass m_renderPass = VK_NULL_HANDLE;
  VkFramebuffer m_framebuffer = VK_NULL_HANDLE;
  VkDescriptorSetLayout m_setLayout = VK_NULL_HANDLE;
  VkPipelineLayout m_layout = VK_NULL_HANDLE;
  VkPipeline m_pipeline = VK_NULL_HANDLE;
};

}  // namespace armature
