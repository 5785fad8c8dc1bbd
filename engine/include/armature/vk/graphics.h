#pragma once
// A graphics pipeline from the few choices this project makes: two SPIR-V stages, no vertex attributes (vertices
// are pulled from storage buffers), no culling, one sample, opaque colour targets. Used by the viewer's renderer
// and the hardware-rasteriser reference.
#include "armature/shaders.h"
#include "armature/vk/context.h"

namespace armature::vk {

struct GraphicsPipelineDesc {
  const shaders::SpirvBlob* vertex = nullptr;
  const shaders::SpirvBlob* fragment = nullptr;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkRenderPass renderPass = VK_NULL_HANDLE;
  VkPrimitiveTopology topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
  VkPolygonMode polygonMode = VK_POLYGON_MODE_FILL;
  bool depthTest = true;
  bool depthWrite = true;           // with depthTest
  bool blendPremultiplied = false;  // colour = src + (1 − src.a)·dst (a translucent layer over the frame)
  VkCompareOp depthCompare = VK_COMPARE_OP_LESS_OR_EQUAL;
  float depthBias = 0;  // constant and slope factor (lines over the surface they lie on: negative)
  uint32_t colorAttachments = 1;
  bool colorWrite = true;      // false: depth only, the colour attachments keep what they hold
  bool fixedViewport = false;  // false: viewport and scissor are dynamic state; true: these
  VkViewport viewport{};
  VkRect2D scissor{};
};

VkPipeline createGraphicsPipeline(Context& ctx, const GraphicsPipelineDesc& desc);

// A render pass of one subpass over `attachmentCount` attachments with one external dependency.
VkRenderPass createRenderPass(Context& ctx, uint32_t attachmentCount, const VkAttachmentDescription* attachments,
                              const VkSubpassDescription& subpass, const VkSubpassDependency& dependency);

// A push-descriptor set layout of `buffers` storage buffers (bindings 0 … buffers-1) seen by `bufferStages`, and a
// pipeline layout with it plus `pushSize` bytes of push constants seen by `pushStages`. The caller destroys both.
struct DrawLayouts {
  VkDescriptorSetLayout set = VK_NULL_HANDLE;
  VkPipelineLayout pipeline = VK_NULL_HANDLE;
};
DrawLayouts createDrawLayouts(Context& ctx, uint32_t buffers, VkShaderStageFlags bufferStages, uint32_t pushSize,
                              VkShaderStageFlags pushStages);

}  // namespace armature::vk
