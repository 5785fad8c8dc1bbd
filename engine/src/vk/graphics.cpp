#include "armature/vk/graphics.h"
#include <volk.h>  // the library's own Vulkan function table

#include <vector>

namespace armature::vk {

namespace {
VkShaderModule shaderModule(VkDevice device, const shaders::SpirvBlob& blob) {
  VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  ci.codeSize = blob.wordCount * 4;
  ci.pCode = blob.words;
  VkShaderModule m;
  VK_CHECK(vkCreateShaderModule(device, &ci, nullptr, &m));
  return m;
}
}  // namespace

VkPipeline createGraphicsPipeline(Context& ctx, const GraphicsPipelineDesc& d) {
  ARM_CHECK(d.vertex && d.fragment && d.layout && d.renderPass,
            "createGraphicsPipeline: shaders, layout and render pass are required");
  VkDevice dev = ctx.device();
  VkPipelineShaderStageCreateInfo stages[2] = {{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO},
                                               {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO}};
  stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
  stages[0].module = shaderModule(dev, *d.vertex);
  stages[0].pName = "main";
  stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
  stages[1].module = shaderModule(dev, *d.fragment);
  stages[1].pName = "main";
  VkPipelineVertexInputStateCreateInfo vi{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
  VkPipelineInputAssemblyStateCreateInfo ia{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
  ia.topology = d.topology;
  VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
  vp.viewportCount = 1;
  vp.pViewports = d.fixedViewport ? &d.viewport : nullptr;
  vp.scissorCount = 1;
  vp.pScissors = d.fixedViewport ? &d.scissor : nullptr;
  VkPipelineRasterizationStateCreateInfo rs{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
  rs.polygonMode = d.polygonMode;
  rs.cullMode = VK_CULL_MODE_NONE;  // thin parts and the ground are seen from both sides
  rs.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
  rs.lineWidth = 1.0f;
  rs.depthBiasEnable = d.depthBias != 0;
  rs.depthBiasConstantFactor = rs.depthBiasSlopeFactor = d.depthBias;
  VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
  ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineDepthStencilStateCreateInfo ds{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
  ds.depthTestEnable = d.depthTest;
  ds.depthWriteEnable = d.depthTest && d.depthWrite;
  ds.depthCompareOp = d.depthCompare;
  VkPipelineColorBlendAttachmentState blend{};
  blend.colorWriteMask = d.colorWrite ? 0xf : 0;  // every target alike: no independentBlend needed
  if (d.blendPremultiplied) {
    blend.blendEnable = VK_TRUE;
    blend.srcColorBlendFactor = blend.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
    blend.dstColorBlendFactor = blend.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
    blend.colorBlendOp = blend.alphaBlendOp = VK_BLEND_OP_ADD;
  }
  std::vector<VkPipelineColorBlendAttachmentState> blends(d.colorAttachments, blend);
  VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
  cb.attachmentCount = d.colorAttachments;
  cb.pAttachments = blends.data();
  VkDynamicState dyn[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
  VkPipelineDynamicStateCreateInfo dy{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
  dy.dynamicStateCount = 2;
  dy.pDynamicStates = dyn;
  VkGraphicsPipelineCreateInfo ci{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
  ci.stageCount = 2;
  ci.pStages = stages;
  ci.pVertexInputState = &vi;
  ci.pInputAssemblyState = &ia;
  ci.pViewportState = &vp;
  ci.pRasterizationState = &rs;
  ci.pMultisampleState = &ms;
  ci.pDepthStencilState = &ds;
  ci.pColorBlendState = &cb;
  ci.pDynamicState = d.fixedViewport ? nullptr : &dy;
  ci.layout = d.layout;
  ci.renderPass = d.renderPass;
  VkPipeline p = VK_NULL_HANDLE;
  VkResult r = vkCreateGraphicsPipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &p);
  vkDestroyShaderModule(dev, stages[0].module, nullptr);
  vkDestroyShaderModule(dev, stages[1].module, nullptr);
  VK_CHECK(r);
  return p;
}

VkRenderPass createRenderPass(Context& ctx, uint32_t attachmentCount, const VkAttachmentDescription* attachments,
                              const VkSubpassDescription& subpass, const VkSubpassDependency& dependency) {
  VkRenderPassCreateInfo rp{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
  rp.attachmentCount = attachmentCount;
  rp.pAttachments = attachments;
  rp.subpassCount = 1;
  rp.pSubpasses = &subpass;
  rp.dependencyCount = 1;
  rp.pDependencies = &dependency;
  VkRenderPass pass = VK_NULL_HANDLE;
  VK_CHECK(vkCreateRenderPass(ctx.device(), &rp, nullptr, &pass));
  return pass;
}

DrawLayouts createDrawLayouts(Context& ctx, uint32_t buffers, VkShaderStageFlags bufferStages, uint32_t pushSize,
                              VkShaderStageFlags pushStages) {
  std::vector<VkDescriptorSetLayoutBinding> bindings(buffers);
  for (uint32_t i = 0; i < buffers; ++i) bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, bufferStages, nullptr};
  VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  sl.bindingCount = buffers;
  sl.pBindings = bindings.data();
  DrawLayouts out;
  VK_CHECK(vkCreateDescriptorSetLayout(ctx.device(), &sl, nullptr, &out.set));
  VkPushConstantRange range{pushStages, 0, pushSize};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &out.set;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  VK_CHECK(vkCreatePipelineLayout(ctx.device(), &pl, nullptr, &out.pipeline));
  return out;
}

}  // namespace armature::vk
