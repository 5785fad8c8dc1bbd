#include "armature/ops/raster_hardware.h"
#include <volk.h>  // the library's own Vulkan function table

#include "armature/vk/graphics.h"
#include "shared/raster_io.h"

namespace armature {

HardwareRasterVk::HardwareRasterVk(vk::Context& ctx, uint32_t width, uint32_t height)
    : m_ctx(ctx), m_extent{width, height} {
  ARM_CHECK(width >= 2 && height >= 2 && width <= 8192 && height <= 8192,
            "HardwareRasterVk: size %ux%u outside 2..8192", width, height);
  const VkImageUsageFlags color = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  m_faceIds = vk::Image(ctx, m_extent, VK_FORMAT_R32_SINT, color, VK_IMAGE_ASPECT_COLOR_BIT);
  m_barycentrics = vk::Image(ctx, m_extent, VK_FORMAT_R32G32_SFLOAT, color, VK_IMAGE_ASPECT_COLOR_BIT);
  m_depth = vk::Image(ctx, m_extent, VK_FORMAT_D32_SFLOAT, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                      VK_IMAGE_ASPECT_DEPTH_BIT);
  VkDevice dev = ctx.device();

  VkAttachmentDescription att[3] = {};
  for (int i = 0; i < 3; ++i) {
    att[i].samples = VK_SAMPLE_COUNT_1_BIT;
    att[i].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    att[i].storeOp = i < 2 ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att[i].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    att[i].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att[i].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    att[i].finalLayout =
        i < 2 ? VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL : VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
  }
  att[0].format = VK_FORMAT_R32_SINT;
  att[1].format = VK_FORMAT_R32G32_SFLOAT;
  att[2].format = VK_FORMAT_D32_SFLOAT;
  VkAttachmentReference colorRefs[2] = {{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL},
                                        {1, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL}};
  VkAttachmentReference depthRef{2, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
  VkSubpassDescription sub{};
  sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  sub.colorAttachmentCount = 2;
  sub.pColorAttachments = colorRefs;
  sub.pDepthStencilAttachment = &depthRef;
  // Inputs come from transfers or compute; the previous call's read-back copies must finish before the clear.
  VkSubpassDependency dep{};
  dep.srcSubpass = VK_SUBPASS_EXTERNAL;
  dep.srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                     VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  dep.dstStageMask = VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
                     VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT;
  dep.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                      VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  dep.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT |
                      VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT;
  m_renderPass = vk::createRenderPass(ctx, 3, att, sub, dep);
  VkImageView views[3] = {m_faceIds.view(), m_barycentrics.view(), m_depth.view()};
  VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
  fi.renderPass = m_renderPass;
  fi.attachmentCount = 3;
  fi.pAttachments = views;
  fi.width = width;
  fi.height = height;
  fi.layers = 1;
  VK_CHECK(vkCreateFramebuffer(dev, &fi, nullptr, &m_framebuffer));

  auto layouts =
      vk::createDrawLayouts(ctx, 2, VK_SHADER_STAGE_VERTEX_BIT, sizeof(RasterPush), VK_SHADER_STAGE_VERTEX_BIT);
  m_setLayout = layouts.set, m_layout = layouts.pipeline;

  vk::GraphicsPipelineDesc desc;
  desc.vertex = &shaders::raster_hw_vert;
  desc.fragment = &shaders::raster_hw_frag;
  desc.layout = m_layout;
  desc.renderPass = m_renderPass;
  desc.depthCompare = VK_COMPARE_OP_LESS;
  desc.colorAttachments = 2;
  // The original's viewport: NDC -1 at the centre of pixel 0 and +1 at the centre of pixel size-1; no y flip.
  desc.fixedViewport = true;
  desc.viewport = {0.5f, 0.5f, float(width - 1), float(height - 1), 0.0f, 1.0f};
  desc.scissor = {{0, 0}, m_extent};
  m_pipeline = vk::createGraphicsPipeline(ctx, desc);
}

HardwareRasterVk::~HardwareRasterVk() {
  VkDevice dev = m_ctx.device();
  vkDestroyPipeline(dev, m_pipeline, nullptr);
  vkDestroyPipelineLayout(dev, m_layout, nullptr);
  vkDestroyDescriptorSetLayout(dev, m_setLayout, nullptr);
  vkDestroyFramebuffer(dev, m_framebuffer, nullptr);
  vkDestroyRenderPass(dev, m_renderPass, nullptr);
}

void HardwareRasterVk::record(VkCommandBuffer cmd, const vk::Buffer& positions, uint32_t vertexCount,
                              const vk::Buffer& faces, uint32_t faceCount) {
  ARM_CHECK(positions.size() >= size_t(vertexCount) * 16 && faces.size() >= size_t(faceCount) * 12,
            "HardwareRasterVk: position or face buffer smaller than its count");
  VkClearValue clear[3] = {};
  clear[2].depthStencil = {1.0f, 0};
  VkRenderPassBeginInfo bi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  bi.renderPass = m_renderPass;
  bi.framebuffer = m_framebuffer;
  bi.renderArea = {{0, 0}, m_extent};
  bi.clearValueCount = 3;
  bi.pClearValues = clear;
  vkCmdBeginRenderPass(cmd, &bi, VK_SUBPASS_CONTENTS_INLINE);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_pipeline);
  VkDescriptorBufferInfo infos[2] = {{positions.handle(), 0, VK_WHOLE_SIZE}, {faces.handle(), 0, VK_WHOLE_SIZE}};
  VkWriteDescriptorSet w[2] = {{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}, {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}};
  for (uint32_t i = 0; i < 2; ++i) {
    w[i].dstBinding = i;
    w[i].descriptorCount = 1;
    w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[i].pBufferInfo = &infos[i];
  }
  vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_layout, 0, 2, w);
  RasterPush push{};
  push.width = m_extent.width, push.height = m_extent.height, push.vertexCount = vertexCount,
  push.triangleCount = faceCount;
  vkCmdPushConstants(cmd, m_layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, &push);
  if (faceCount) vkCmdDraw(cmd, faceCount * 3, 1, 0, 0);
  vkCmdEndRenderPass(cmd);
}

void HardwareRasterVk::recordReadback(VkCommandBuffer cmd, vk::Buffer& findices, vk::Buffer& barycentrics) {
  const size_t pixels = size_t(m_extent.width) * m_extent.height;
  ARM_CHECK(findices.size() >= pixels * 4 && barycentrics.size() >= pixels * 8,
            "HardwareRasterVk: read-back buffers too small");
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {m_extent.width, m_extent.height, 1};
  vkCmdCopyImageToBuffer(cmd, m_faceIds.handle(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, findices.handle(), 1, &region);
  vkCmdCopyImageToBuffer(cmd, m_barycentrics.handle(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, barycentrics.handle(), 1,
                         &region);
  vk::computeBarrier(cmd);
}

}  // namespace armature
