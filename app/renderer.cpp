#include "app/renderer.h"
#include <volk.h>  // the library's own Vulkan function table

#include <algorithm>
#include <cmath>

#include <glm/gtc/type_ptr.hpp>
#include <glm/mat4x4.hpp>

#include "armature/camera.h"
#include "app/visibility.h"
#include "armature/vk/graphics.h"
#include "shared/render_io.h"

namespace armature::app {

namespace {
// `r` cut to the image.
VkRect2D clampRect(VkRect2D r, VkExtent2D extent) {
  int32_t x0 = std::clamp(r.offset.x, 0, int32_t(extent.width)), y0 = std::clamp(r.offset.y, 0, int32_t(extent.height));
  int32_t x1 = std::clamp(r.offset.x + int32_t(r.extent.width), x0, int32_t(extent.width));
  int32_t y1 = std::clamp(r.offset.y + int32_t(r.extent.height), y0, int32_t(extent.height));
  return {{x0, y0}, {uint32_t(x1 - x0), uint32_t(y1 - y0)}};
}

using Mat4 = std::array<float, 16>;
// The inverse of a 4×4 matrix (column-major), in double.
Mat4 invert(const Mat4& m) {
  glm::dmat4 inverse = glm::inverse(glm::dmat4(glm::make_mat4(m.data())));
  Mat4 out{};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) out[size_t(c * 4 + r)] = float(inverse[c][r]);
  return out;
}
}  // namespace

std::array<float, 3> Camera::eye() const {
  return {target[0] + distance * std::cos(pitch) * std::sin(yaw), target[1] + distance * std::sin(pitch),
          target[2] + distance * std::cos(pitch) * std::cos(yaw)};
}

std::array<float, 16> Camera::viewProj(float aspect) const {
  // The depth range follows the distance: a model in large units (glTF's Fox is 165 units tall) is framed from
  // hundreds of units away, past a fixed far plane.
  return lookAtPerspective(eye(), {target[0], target[1], target[2]}, fovY, aspect, std::max(0.05f, distance / 4000),
                           std::max(200.f, distance * 8));
}

void Camera::frame(const float lo[3], const float hi[3]) {
  float size = 0;
  for (int k = 0; k < 3; ++k) {
    target[k] = (lo[k] + hi[k]) / 2;
    size = std::max(size, hi[k] - lo[k]);
  }
  distance = 0.62f * size / std::tan(fovY / 2) + 0.3f;
}

Renderer::Renderer(vk::Context& ctx, VkFormat colorFormat, VkImageLayout finalLayout, const std::vector<int32_t>& faces,
                   const std::vector<int32_t>& parents)
    : m_ctx(ctx), m_colorFormat(colorFormat), m_finalLayout(finalLayout) {
  ARM_CHECK(!faces.empty() && faces.size() % 3 == 0, "Renderer: faces must be a non-empty (F,3) array");
  m_indexCount = uint32_t(faces.size());
  std::vector<uint32_t> idx(faces.begin(), faces.end());
  m_indices = vk::makeStorageBuffer<uint32_t>(ctx, idx, VK_BUFFER_USAGE_INDEX_BUFFER_BIT);
  std::vector<uint32_t> bones;
  for (size_t j = 0; j < parents.size(); ++j)
    if (parents[j] >= 0) bones.insert(bones.end(), {uint32_t(j), uint32_t(parents[j])});
  m_boneIndexCount = uint32_t(bones.size());
  if (!bones.empty()) m_boneIndices = vk::makeStorageBuffer<uint32_t>(ctx, bones, VK_BUFFER_USAGE_INDEX_BUFFER_BIT);
  m_renderPass = createFramePass(ctx, colorFormat, finalLayout, PassStart::DrawnOver);
  // The pass after a compute-shaded frame or background: the colour is loaded (it arrives in
  // COLOR_ATTACHMENT_OPTIMAL).
  m_loadColorPass = createFramePass(ctx, colorFormat, finalLayout, PassStart::LoadColor);
  m_bounds = vk::Buffer(ctx, 4 * sizeof(uint32_t), vk::kStorageUsage);

  const VkShaderStageFlags both = VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT;
  auto layouts = vk::createDrawLayouts(ctx, MESH_BINDINGS, both, sizeof(RenderPush), both);
  m_setLayout = layouts.set, m_layout = layouts.pipeline;
  layouts = vk::createDrawLayouts(ctx, VISIBILITY_BINDINGS, both, sizeof(RenderPush), both);
  m_visibilitySetLayout = layouts.set, m_visibilityLayout = layouts.pipeline;
  m_visibility = createPipeline(shaders::visibility_vert, shaders::visibility_frag, VK_POLYGON_MODE_FILL,
                                VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, true, m_visibilityLayout);
  m_visibilityTextured =
      createPipeline(shaders::visibility_vert, shaders::visibility_textured_frag, VK_POLYGON_MODE_FILL,
                     VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, true, m_visibilityLayout);
  const auto& vert = shaders::mesh_vert;
  const auto& frag = shaders::mesh_frag;
  m_fill = createPipeline(vert, frag, VK_POLYGON_MODE_FILL, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
  {
    vk::GraphicsPipelineDesc d;
    d.vertex = &shaders::background_vert, d.fragment = &shaders::background_frag;
    d.layout = m_layout, d.renderPass = m_renderPass;
    d.depthCompare = VK_COMPARE_OP_ALWAYS;  // it writes the depth every later draw tests against
    m_background = vk::createGraphicsPipeline(ctx, d);
    d.vertex = &shaders::background_bounds_vert;
    d.layout = m_visibilityLayout;  // it has the bounds' binding
    d.colorWrite = false;
    m_depthInit = vk::createGraphicsPipeline(ctx, d);
  }
  VkPhysicalDeviceFeatures f;
  vkGetPhysicalDeviceFeatures(ctx.physicalDevice(), &f);
  // Textured, indexed where fragments have gl_PrimitiveID (the geometryShader feature, which the context enables).
  m_texturedCorners = createPipeline(shaders::mesh_corners_vert, shaders::mesh_corners_frag, VK_POLYGON_MODE_FILL,
                                     VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
  if (f.geometryShader)
    m_texturedPrimitives = createPipeline(shaders::mesh_textured_vert, shaders::mesh_textured_frag,
                                          VK_POLYGON_MODE_FILL, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
  m_texturedIndexed = f.geometryShader;
  if (f.fillModeNonSolid)
    m_lines = createPipeline(vert, frag, VK_POLYGON_MODE_LINE, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
  // The skeleton is drawn on top of the surface (no depth test), so it shows through the body.
  m_bones = createPipeline(vert, frag, VK_POLYGON_MODE_FILL, VK_PRIMITIVE_TOPOLOGY_LINE_LIST, false);
  m_points = createPipeline(vert, frag, VK_POLYGON_MODE_FILL, VK_PRIMITIVE_TOPOLOGY_POINT_LIST, false);
  // The field: a translucent layer, hidden by what is in front of its box but not hiding anything itself.
  layouts =
      vk::createDrawLayouts(ctx, FIELD_MARCH_BINDINGS, VK_SHADER_STAGE_FRAGMENT_BIT, sizeof(FieldCompositePush), both);
  m_fieldSetLayout = layouts.set, m_fieldLayout = layouts.pipeline;
  vk::GraphicsPipelineDesc d;
  d.vertex = &shaders::field_composite_vert, d.fragment = &shaders::field_composite_frag;
  d.layout = m_fieldLayout, d.renderPass = m_renderPass;
  d.depthWrite = false, d.blendPremultiplied = true;
  m_fieldComposite = vk::createGraphicsPipeline(ctx, d);
}

VkRenderPass Renderer::createFramePass(vk::Context& ctx, VkFormat colorFormat, VkImageLayout finalLayout,
                                       PassStart start) {
  VkAttachmentDescription att[2] = {};
  att[0].format = colorFormat;
  att[0].samples = VK_SAMPLE_COUNT_1_BIT;
  att[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  att[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  att[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  att[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  att[0].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  att[0].finalLayout = finalLayout;
  att[1] = att[0];
  att[1].format = kDepthFormat;
  att[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  att[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
  VkAttachmentReference colorRef{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
  VkAttachmentReference depthRef{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
  VkSubpassDescription sub{};
  sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  sub.colorAttachmentCount = 1;
  sub.pColorAttachments = &colorRef;
  sub.pDepthStencilAttachment = &depthRef;
  // Positions come from compute (skinning) or transfers; the image may still be read by the previous frame's copy.
  VkSubpassDependency dep{};
  dep.srcSubpass = VK_SUBPASS_EXTERNAL;
  dep.dstSubpass = 0;
  dep.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                     VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                     VK_PIPELINE_STAGE_TRANSFER_BIT;
  dep.dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                     VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT |
                     VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT;  // the visibility pass reads compute output there
  dep.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT |
                      VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  dep.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT |
                      VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_SHADER_READ_BIT;
  if (start == PassStart::LoadColor) {
    att[0].loadOp = VK_ATTACHMENT_LOAD_OP_LOAD;
    att[0].initialLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    att[1].loadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  } else if (start == PassStart::DrawnOver) {
    att[0].loadOp = att[1].loadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  }
  return vk::createRenderPass(ctx, 2, att, sub, dep);
}

VkFramebuffer Renderer::createFramebuffer(vk::Context& ctx, VkRenderPass pass, VkImageView color, VkImageView depth,
                                          VkExtent2D extent) {
  VkImageView views[2] = {color, depth};
  VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
  fi.renderPass = pass;
  fi.attachmentCount = 2;
  fi.pAttachments = views;
  fi.width = extent.width;
  fi.height = extent.height;
  fi.layers = 1;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VK_CHECK(vkCreateFramebuffer(ctx.device(), &fi, nullptr, &framebuffer));
  return framebuffer;
}

VkPipeline Renderer::createPipeline(const shaders::SpirvBlob& vert, const shaders::SpirvBlob& frag, VkPolygonMode mode,
                                    VkPrimitiveTopology topology, bool depthTest, VkPipelineLayout layout) {
  vk::GraphicsPipelineDesc d;
  d.vertex = &vert;
  d.fragment = &frag;
  d.layout = layout ? layout : m_layout;
  d.renderPass = m_renderPass;
  d.topology = topology;
  d.polygonMode = mode;
  d.depthTest = depthTest;
  d.depthBias = mode == VK_POLYGON_MODE_LINE ? -1.0f : 0.0f;  // lines win against the surface they lie on
  return vk::createGraphicsPipeline(m_ctx, d);
}

Renderer::~Renderer() {
  VkDevice dev = m_ctx.device();
  vkDestroyPipeline(dev, m_fill, nullptr);
  vkDestroyPipeline(dev, m_background, nullptr);
  vkDestroyPipeline(dev, m_depthInit, nullptr);
  vkDestroyPipeline(dev, m_texturedCorners, nullptr);
  if (m_texturedPrimitives) vkDestroyPipeline(dev, m_texturedPrimitives, nullptr);
  if (m_lines) vkDestroyPipeline(dev, m_lines, nullptr);
  vkDestroyPipeline(dev, m_bones, nullptr);
  vkDestroyPipeline(dev, m_points, nullptr);
  vkDestroyPipeline(dev, m_visibility, nullptr);
  vkDestroyPipeline(dev, m_visibilityTextured, nullptr);
  vkDestroyPipeline(dev, m_fieldComposite, nullptr);
  vkDestroyPipelineLayout(dev, m_fieldLayout, nullptr);
  vkDestroyDescriptorSetLayout(dev, m_fieldSetLayout, nullptr);
  vkDestroyPipelineLayout(dev, m_visibilityLayout, nullptr);
  vkDestroyDescriptorSetLayout(dev, m_visibilitySetLayout, nullptr);
  vkDestroyPipelineLayout(dev, m_layout, nullptr);
  vkDestroyDescriptorSetLayout(dev, m_setLayout, nullptr);
  vkDestroyRenderPass(dev, m_renderPass, nullptr);
  vkDestroyRenderPass(dev, m_loadColorPass, nullptr);
}

void Renderer::setTexturedIndexed(bool indexed) {
  ARM_CHECK(!indexed || m_texturedPrimitives, "textured indexed draws need the GPU's geometryShader feature");
  m_texturedIndexed = indexed;
}

bool Renderer::copiesInto(const FrameTarget& target) const {
  return target.image && (m_colorFormat == VK_FORMAT_R8G8B8A8_UNORM || m_colorFormat == VK_FORMAT_B8G8R8A8_UNORM);
}

bool Renderer::computeShaded(const FrameTarget& target, const DrawSettings& s) const {
  return s.avatars && s.visibility.faceIds && !s.wireframe && !s.texture && !s.field && copiesInto(target);
}

VkBuffer Renderer::recordBounds(VkCommandBuffer cmd, const Camera& camera, VkBuffer positions, VkExtent2D extent,
                                const DrawSettings& s) {
  if (s.visibility.bounds && !s.field) return s.visibility.bounds;  // clip_transform's, of the same vertices
  // The previous frame's depth rectangle may still read the bounds; the skinning's positions must be visible.
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, nullptr, 0,
                       nullptr);
  // A field's box may reach beyond the avatars: it is tested against the depth everywhere.
  const uint32_t whole[4] = {0, 0, extent.width - 1, extent.height - 1}, none[4] = {~0u, ~0u, 0, 0};
  vkCmdUpdateBuffer(cmd, m_bounds.handle(), 0, sizeof whole, s.field ? whole : none);
  // The render pass's dependency makes the update visible to its vertex stage.
  if (s.field || !s.avatars) return m_bounds.handle();
  vk::computeBarrier(cmd);
  ClipPush push{};
  auto m = VisibilityRaster::clipMatrix(camera.viewProj(float(extent.width) / float(extent.height)), extent);
  std::copy(m.begin(), m.end(), push.viewProj);
  push.count = s.avatars * s.vertexCount;
  push.width = extent.width, push.height = extent.height;
  const auto& bounds = m_ctx.program(shaders::screen_bounds, CLIP_TRANSFORM_BINDINGS, sizeof push);
  vk::dispatch(cmd, bounds, vk::groupCount(push.count, CLIP_BOUNDS_GROUP, CLIP_BOUNDS_GROUPS),
               {{positions, 0, VK_WHOLE_SIZE}, m_bounds.view(), m_bounds.view()}, push);  // binding 1 unread
  return m_bounds.handle();
}

bool Renderer::hasRenderPass(const FrameTarget& target, const DrawSettings& s) const {
  return !computeShaded(target, s) || (s.skeleton && s.joints && s.jointCount);
}

void Renderer::record(VkCommandBuffer cmd, const FrameTarget& target, const Camera& camera, VkBuffer positions,
                      const DrawSettings& s, const std::function<void(VkCommandBuffer)>& inPass,
                      const std::function<void(VkCommandBuffer, const char*)>& nextZone) {
  const VkExtent2D extent = target.extent;
  // The compute-raster mode shades the whole frame in a compute pass when the target allows it and no overlay
  // needs the mesh drawn (the wireframe); a render pass follows only for the skeleton.
  const bool computeFrame = computeShaded(target, s);
  // Else the background is shaded in compute too where the image takes copies (see the header).
  const bool computeBackground = !computeFrame && copiesInto(target);
  const bool skeleton = s.skeleton && s.joints && s.jointCount;
  if (s.field) {
    marchField(cmd, camera, extent, s.field);
    if (nextZone) nextZone(cmd, "draw");
  }
  if (computeFrame) {
    const bool ui = !skeleton && s.ui.pixels && s.ui.area.extent.width && s.ui.area.extent.height;
    recordComputeFrame(cmd, target, camera, positions, s, ui ? ComputeShade::FrameWithUi : ComputeShade::Frame);
    if (!skeleton) {
      imageBarrier(cmd, target.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, m_finalLayout);
      return;
    }
    imageBarrier(cmd, target.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
  }
  VkBuffer bounds = VK_NULL_HANDLE;  // the compute background's: where the render pass draws its depth
  if (computeBackground) {
    bounds = recordBounds(cmd, camera, positions, extent, s);
    recordComputeFrame(cmd, target, camera, positions, s, ComputeShade::Background);
    imageBarrier(cmd, target.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
  }
  VkRenderPassBeginInfo bi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  bi.renderPass = computeFrame || computeBackground ? m_loadColorPass : m_renderPass;
  bi.framebuffer = target.framebuffer;
  bi.renderArea = {{0, 0}, extent};
  vkCmdBeginRenderPass(cmd, &bi, VK_SUBPASS_CONTENTS_INLINE);
  VkViewport viewport{0, 0, float(extent.width), float(extent.height), 0, 1};
  VkRect2D scissor{{0, 0}, extent};
  vkCmdSetViewport(cmd, 0, 1, &viewport);
  vkCmdSetScissor(cmd, 0, 1, &scissor);
  RenderPush push{};
  auto vp = camera.viewProj(float(extent.width) / float(extent.height));
  std::copy(vp.begin(), vp.end(), push.viewProj);
  auto e = camera.eye();
  push.camera[0] = e[0], push.camera[1] = e[1], push.camera[2] = e[2];
  std::copy(s.clear, s.clear + 3, push.clear);
  push.ground = s.ground ? 1u : 0u;
  push.vertexCount = s.vertexCount;
  push.floorY = s.floorY;
  push.textureSize = s.texture.size;
  push.faceCount = m_indexCount / 3;
  VkDescriptorBufferInfo info{positions, 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstBinding = 0;
  w.descriptorCount = 1;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = &info;
  // Buffers 0 … count − 1 of a layout's set.
  auto pushBuffers = [&](VkPipelineLayout layout, const VkDescriptorBufferInfo* infos, uint32_t count) {
    static_assert(VISIBILITY_BINDINGS >= MESH_BINDINGS);
    VkWriteDescriptorSet writes[VISIBILITY_BINDINGS];
    for (uint32_t i = 0; i < count; ++i) {
      writes[i] = w;
      writes[i].dstBinding = i;
      writes[i].pBufferInfo = &infos[i];
    }
    vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout, 0, count, writes);
  };
  auto draw = [&](VkPipeline pipeline, uint32_t mode) {
    push.mode = mode;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
    vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_layout, 0, 1, &w);
    vkCmdPushConstants(cmd, m_layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, &push);
    if (mode == RENDER_MODE_BACKGROUND) {
      vkCmdDraw(cmd, 3, 1, 0, 0);
    } else {
      vkCmdBindIndexBuffer(cmd, m_indices.handle(), 0, VK_INDEX_TYPE_UINT32);
      vkCmdDrawIndexed(cmd, m_indexCount, s.avatars, 0, 0, 0);
    }
  };
  if (computeBackground) {  // the depth where anything is drawn: the floor's, else the far plane
    const VkDescriptorBufferInfo boundsInfo{bounds, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet write = w;
    write.dstBinding = VISIBILITY_BINDING_BOUNDS;
    write.pBufferInfo = &boundsInfo;
    push.mode = RENDER_MODE_BACKGROUND;
    push.width = extent.width, push.height = extent.height;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_depthInit);
    vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_visibilityLayout, 0, 1, &write);
    vkCmdPushConstants(cmd, m_visibilityLayout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof push, &push);
    vkCmdDraw(cmd, 6, 1, 0, 0);  // a rectangle over the bounds
  } else if (!computeFrame) {
    draw(m_background, RENDER_MODE_BACKGROUND);  // the pass neither clears nor loads
  }
  if (computeFrame) {
    // shaded already
  } else if (s.avatars && s.visibility.faceIds) {  // the compute rasteriser's visibility buffer, shaded in one pass
    const VkDescriptorBufferInfo infos[VISIBILITY_BINDINGS] = {{positions, 0, VK_WHOLE_SIZE},
                                                               {s.visibility.faces, 0, VK_WHOLE_SIZE},
                                                               {s.visibility.faceIds, 0, VK_WHOLE_SIZE},
                                                               {s.visibility.barycentrics, 0, VK_WHOLE_SIZE},
                                                               {s.visibility.bounds, 0, VK_WHOLE_SIZE},
                                                               {s.texture.uvs, 0, VK_WHOLE_SIZE},
                                                               {s.texture.texels, 0, VK_WHOLE_SIZE}};
    push.mode = RENDER_MODE_VISIBILITY;
    push.width = extent.width, push.height = extent.height;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, s.texture ? m_visibilityTextured : m_visibility);
    pushBuffers(m_visibilityLayout, infos, s.texture ? VISIBILITY_BINDINGS : VISIBILITY_PLAIN_BINDINGS);
    vkCmdPushConstants(cmd, m_visibilityLayout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof push, &push);
    vkCmdDraw(cmd, 6, 1, 0, 0);  // a rectangle over the bounds
  } else if (s.avatars && s.texture) {
    const VkDescriptorBufferInfo infos[MESH_BINDINGS] = {{positions, 0, VK_WHOLE_SIZE},
                                                         {m_indices.handle(), 0, VK_WHOLE_SIZE},
                                                         {s.texture.uvs, 0, VK_WHOLE_SIZE},
                                                         {s.texture.texels, 0, VK_WHOLE_SIZE}};
    push.mode = RENDER_MODE_MESH;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS,
                      m_texturedIndexed ? m_texturedPrimitives : m_texturedCorners);
    pushBuffers(m_layout, infos, MESH_BINDINGS);
    vkCmdPushConstants(cmd, m_layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, &push);
    if (m_texturedIndexed) {
      vkCmdBindIndexBuffer(cmd, m_indices.handle(), 0, VK_INDEX_TYPE_UINT32);
      vkCmdDrawIndexed(cmd, m_indexCount, s.avatars, 0, 0, 0);
    } else {
      vkCmdDraw(cmd, m_indexCount, s.avatars, 0, 0);  // every face's corners, with their (u, v)
    }
  } else if (s.avatars) {
    draw(m_fill, RENDER_MODE_MESH);
  }
  if (s.avatars && s.wireframe && m_lines) draw(m_lines, RENDER_MODE_LINES);
  if (skeleton) {
    info.buffer = s.joints;  // the same shader reads joints instead of vertices
    push.vertexCount = s.jointCount;
    push.mode = RENDER_MODE_BONES;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_bones);
    vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_layout, 0, 1, &w);
    vkCmdPushConstants(cmd, m_layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, &push);
    if (m_boneIndexCount) {
      vkCmdBindIndexBuffer(cmd, m_boneIndices.handle(), 0, VK_INDEX_TYPE_UINT32);
      vkCmdDrawIndexed(cmd, m_boneIndexCount, s.avatars, 0, 0, 0);
    }
    push.mode = RENDER_MODE_JOINTS;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_points);
    vkCmdPushConstants(cmd, m_layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, &push);
    vkCmdDraw(cmd, s.jointCount, s.avatars, 0, 0);
  }
  if (s.field) compositeField(cmd, camera, extent, s.field);
  if (inPass) inPass(cmd);
  vkCmdEndRenderPass(cmd);
}

void Renderer::marchField(VkCommandBuffer cmd, const Camera& camera, VkExtent2D extent, const FieldVolume& field) {
  const uint32_t W = (extent.width + 1) / 2, H = (extent.height + 1) / 2;  // the half-resolution colours
  if (m_fieldColours.size() < size_t(W) * H * 8) {
    vkDeviceWaitIdle(m_ctx.device());  // a frame in flight may still read the old colours
    m_fieldColours = vk::Buffer(m_ctx, size_t(W) * H * 8, vk::kStorageUsage, vk::MemoryKind::DeviceLocal);
  }
  FieldMarchPush push{};
  const auto vp = camera.viewProj(float(extent.width) / float(extent.height));
  const auto inverse = invert(vp);
  std::copy(inverse.begin(), inverse.end(), push.inverseViewProj);
  const auto eye = camera.eye();
  std::copy(eye.begin(), eye.end(), push.camera);
  push.camera[3] = field.density;
  std::copy_n(field.lo, 3, push.lo), std::copy_n(field.hi, 3, push.hi);
  push.size = field.size;
  push.frame = extent.width | extent.height << 16;
  // The half-resolution pixels the box's corners project to, widened by the composite's bilinear reach; the whole
  // frame when a corner is behind the eye.
  float x0 = 0, y0 = 0, x1 = float(W), y1 = float(H);
  bool inFront = true;
  float lo[2] = {1e30f, 1e30f}, hi[2] = {-1e30f, -1e30f};
  for (int c = 0; c < 8; ++c) {
    const float p[3] = {c & 1 ? field.hi[0] : field.lo[0], c & 2 ? field.hi[1] : field.lo[1],
                        c & 4 ? field.hi[2] : field.lo[2]};
    float clip[4];
    for (size_t r = 0; r < 4; ++r) clip[r] = vp[r] * p[0] + vp[4 + r] * p[1] + vp[8 + r] * p[2] + vp[12 + r];
    inFront &= clip[3] > 1e-4f;
    for (int k = 0; k < 2; ++k) {
      const float pixel = (clip[k] / clip[3] * 0.5f + 0.5f) * float(k ? H : W);
      lo[k] = std::min(lo[k], pixel), hi[k] = std::max(hi[k], pixel);
    }
  }
  if (inFront) {
    x0 = std::clamp(lo[0] - 2, 0.0f, float(W)), y0 = std::clamp(lo[1] - 2, 0.0f, float(H));
    x1 = std::clamp(hi[0] + 3, x0, float(W)), y1 = std::clamp(hi[1] + 3, y0, float(H));
  }
  push.rect[0] = uint32_t(x0), push.rect[1] = uint32_t(y0), push.rect[2] = uint32_t(x1), push.rect[3] = uint32_t(y1);
  // The previous frame's composite has read the colours (a frame in flight on the same queue).
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr,
                       0, nullptr, 0, nullptr);
  const auto& march = m_ctx.program(shaders::field_march, FIELD_MARCH_BINDINGS, sizeof push);
  vk::dispatch(cmd, march, std::max(1u, (push.rect[2] - push.rect[0] + FIELD_MARCH_GROUP - 1) / FIELD_MARCH_GROUP),
               {{field.values, 0, VK_WHOLE_SIZE}, m_fieldColours.view()}, push,
               std::max(1u, (push.rect[3] - push.rect[1] + FIELD_MARCH_GROUP - 1) / FIELD_MARCH_GROUP));
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT, b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, 0, 1, &b, 0,
                       nullptr, 0, nullptr);
}

void Renderer::compositeField(VkCommandBuffer cmd, const Camera& camera, VkExtent2D extent, const FieldVolume& field) {
  FieldCompositePush push{};
  const auto vp = camera.viewProj(float(extent.width) / float(extent.height));
  std::copy(vp.begin(), vp.end(), push.viewProj);
  const auto eye = camera.eye();
  std::copy(eye.begin(), eye.end(), push.camera);
  std::copy_n(field.lo, 3, push.lo), std::copy_n(field.hi, 3, push.hi);
  push.width = (extent.width + 1) / 2, push.height = (extent.height + 1) / 2;
  const VkDescriptorBufferInfo info{m_fieldColours.handle(), 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstBinding = FIELD_MARCH_BINDING_COLOURS;
  w.descriptorCount = 1;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = &info;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_fieldComposite);
  vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m_fieldLayout, 0, 1, &w);
  vkCmdPushConstants(cmd, m_fieldLayout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push,
                     &push);
  vkCmdDraw(cmd, 36, 1, 0, 0);
}

void recordFrame(Renderer& renderer, vk::GpuTimer& timer, VkCommandBuffer cmd, const FrameTarget& target,
                 const Camera& camera, VkBuffer positions, DrawSettings& settings,
                 const std::function<UiLayer(VkCommandBuffer)>& layer,
                 const std::function<void(VkCommandBuffer)>& drawUi) {
  settings.ui = {};
  std::function<void(VkCommandBuffer)> inPass;
  uint32_t zone = 0;
  const auto nextZone = [&](VkCommandBuffer c, const char* name) {
    timer.endZone(c, zone);
    zone = timer.beginZone(c, name);
  };
  if (layer && !renderer.hasRenderPass(target, settings)) {
    zone = timer.beginZone(cmd, "ui");
    settings.ui = layer(cmd);
    timer.endZone(cmd, zone);
  } else if (drawUi) {
    inPass = [&](VkCommandBuffer c) {
      nextZone(c, "ui");
      drawUi(c);
    };
  }
  zone = timer.beginZone(cmd, settings.field ? "field march" : "draw");
  renderer.record(cmd, target, camera, positions, settings, inPass, nextZone);
  timer.endZone(cmd, zone);
}

void Renderer::recordComputeFrame(VkCommandBuffer cmd, const FrameTarget& target, const Camera& camera,
                                  VkBuffer positions, const DrawSettings& s, ComputeShade shade) {
  const bool compositeUi = shade == ComputeShade::FrameWithUi;
  // The background alone leaves the avatars to the graphics pipeline, even where a visibility buffer exists.
  const bool avatars = shade != ComputeShade::Background;
  const VkExtent2D extent = target.extent;
  const size_t bytes = size_t(extent.width) * extent.height * 4;
  if (m_pixels.size() < bytes) {
    vkDeviceWaitIdle(m_ctx.device());  // earlier frames may still copy from the old buffer
    m_pixels = vk::Buffer(m_ctx, bytes, vk::kStorageUsage);
  }
  ShadePush push{};
  auto inverse = invert(camera.viewProj(float(extent.width) / float(extent.height)));
  std::copy(inverse.begin(), inverse.end(), push.inverseViewProj);
  auto e = camera.eye();
  std::copy(e.begin(), e.end(), push.camera);
  std::copy(s.clear, s.clear + 3, push.clear);
  push.width = extent.width, push.height = extent.height, push.floorY = s.floorY;
  push.flags = (s.ground ? SHADE_GROUND : 0u) | (m_colorFormat == VK_FORMAT_B8G8R8A8_UNORM ? SHADE_BGRA : 0u) |
               (compositeUi ? SHADE_UI : 0u) | (avatars ? SHADE_AVATARS : 0u);
  if (compositeUi) {
    VkRect2D r = clampRect(s.ui.area, extent);
    push.uiRect[0] = uint32_t(r.offset.x), push.uiRect[1] = uint32_t(r.offset.y);
    push.uiRect[2] = uint32_t(r.offset.x) + r.extent.width, push.uiRect[3] = uint32_t(r.offset.y) + r.extent.height;
  }
  // The previous frame's copy out of m_pixels comes first.
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr, 0,
                       nullptr, 0, nullptr);
  const auto& program = m_ctx.program(shaders::shade_frame, SHADE_FRAME_BINDINGS, sizeof push);
  // Bindings a flag leaves unread hold the positions.
  const VisibilityBuffers& v = s.visibility;
  vk::dispatch(cmd, program, (extent.width + 7) / 8,
               {{positions, 0, VK_WHOLE_SIZE},
                {avatars ? v.faces : positions, 0, VK_WHOLE_SIZE},
                {avatars ? v.faceIds : positions, 0, VK_WHOLE_SIZE},
                {avatars ? v.barycentrics : positions, 0, VK_WHOLE_SIZE},
                m_pixels.view(),
                {compositeUi ? s.ui.pixels : positions, 0, VK_WHOLE_SIZE}},
               push, (extent.height + 7) / 8);
  vk::computeBarrier(cmd);
  imageBarrier(cmd, target.image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {extent.width, extent.height, 1};
  vkCmdCopyBufferToImage(cmd, m_pixels.handle(), target.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
}

// A full barrier on the colour image between the transfer, colour-output and present uses this renderer makes
// of it, with a layout change.
void Renderer::imageBarrier(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_READ_BIT |
                    VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  b.oldLayout = from;
  b.newLayout = to;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  vkCmdPipelineBarrier(cmd, stages, stages, 0, 0, nullptr, 0, nullptr, 1, &b);
}

OffscreenTarget::OffscreenTarget(vk::Context& ctx, const Renderer& renderer, VkExtent2D extent)
    : m_ctx(ctx),
      m_color(ctx, extent, kColorFormat,
              VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
              VK_IMAGE_ASPECT_COLOR_BIT),
      m_depth(ctx, extent, Renderer::kDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
              VK_IMAGE_ASPECT_DEPTH_BIT),
      m_readback(ctx, size_t(extent.width) * extent.height * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                 vk::MemoryKind::HostVisible) {
  m_framebuffer = Renderer::createFramebuffer(ctx, renderer.renderPass(), m_color.view(), m_depth.view(), extent);
}

OffscreenTarget::~OffscreenTarget() { vkDestroyFramebuffer(m_ctx.device(), m_framebuffer, nullptr); }

void OffscreenTarget::recordReadback(VkCommandBuffer cmd) {
  // The render pass left the image in TRANSFER_SRC_OPTIMAL (the renderer's final layout for offscreen use).
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {extent().width, extent().height, 1};
  vkCmdCopyImageToBuffer(cmd, m_color.handle(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, m_readback.handle(), 1, &region);
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0, nullptr, 0,
                       nullptr);
}

std::vector<uint8_t> OffscreenTarget::pixels() const {
  return m_readback.download<uint8_t>(size_t(extent().width) * extent().height * 4);
}

}  // namespace armature::app
