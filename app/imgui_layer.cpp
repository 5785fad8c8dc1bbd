#include "app/imgui_layer.h"

#include <volk.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_vulkan.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <set>

#include "app/viewer.h"
#include "armature/error.h"

namespace armature::app {

namespace {
// FNV-1a over everything that decides the layer's pixels: the display, and every draw list's vertices, indices
// and commands.
uint64_t hashDrawData(const ImDrawData* data) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(&data->DisplaySize, sizeof data->DisplaySize);
  mix(&data->FramebufferScale, sizeof data->FramebufferScale);
  for (int l = 0; l < data->CmdListsCount; ++l) {
    const ImDrawList* list = data->CmdLists[l];
    mix(list->VtxBuffer.Data, size_t(list->VtxBuffer.Size) * sizeof(ImDrawVert));
    mix(list->IdxBuffer.Data, size_t(list->IdxBuffer.Size) * sizeof(ImDrawIdx));
    for (const ImDrawCmd& c : list->CmdBuffer) {
      mix(&c.ClipRect, sizeof c.ClipRect);
      mix(&c.TextureId, sizeof c.TextureId);
      mix(&c.VtxOffset, sizeof c.VtxOffset);
      mix(&c.IdxOffset, sizeof c.IdxOffset);
      mix(&c.ElemCount, sizeof c.ElemCount);
    }
  }
  return h;
}

// The framebuffer pixels the draws touch (their clip rectangles), cut to `extent`.
VkRect2D drawnArea(const ImDrawData* data, VkExtent2D extent) {
  float x0 = FLT_MAX, y0 = FLT_MAX, x1 = -FLT_MAX, y1 = -FLT_MAX;
  const ImVec2 o = data->DisplayPos, k = data->FramebufferScale;  // clip rectangles are in display units
  for (int l = 0; l < data->CmdListsCount; ++l)
    for (const ImDrawCmd& c : data->CmdLists[l]->CmdBuffer) {
      if (c.ElemCount == 0) continue;
      x0 = std::min(x0, (c.ClipRect.x - o.x) * k.x), y0 = std::min(y0, (c.ClipRect.y - o.y) * k.y);
      x1 = std::max(x1, (c.ClipRect.z - o.x) * k.x), y1 = std::max(y1, (c.ClipRect.w - o.y) * k.y);
    }
  int32_t ix0 = int32_t(std::clamp(std::floor(x0), 0.0f, float(extent.width)));
  int32_t iy0 = int32_t(std::clamp(std::floor(y0), 0.0f, float(extent.height)));
  int32_t ix1 = int32_t(std::clamp(std::ceil(x1), float(ix0), float(extent.width)));
  int32_t iy1 = int32_t(std::clamp(std::ceil(y1), float(iy0), float(extent.height)));
  if (x1 <= x0 || y1 <= y0) return {};
  return {{ix0, iy0}, {uint32_t(ix1 - ix0), uint32_t(iy1 - iy0)}};
}
}  // namespace

ImGuiLayer::ImGuiLayer(vk::Context& ctx, VkFormat colorFormat, GLFWwindow* window) : m_ctx(ctx), m_format(colorFormat) {
  // The layer's pass is the frame's (one ImGui pipeline serves both), left ready for the copy into the buffer.
  m_pass =
      Renderer::createFramePass(ctx, colorFormat, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, Renderer::PassStart::Clear);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::StyleColorsDark();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  auto fail = [&](const std::string& why) {
    if (m_glfw) ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    if (m_pool) vkDestroyDescriptorPool(ctx.device(), m_pool, nullptr);
    vkDestroyRenderPass(ctx.device(), m_pass, nullptr);
    throw Error(why);
  };
  VkInstance instance = ctx.instance();
  // Debian's prebuilt backend objects call Vulkan through prototypes; ours are rebuilt without them, so they
  // load their entry points here, before any other ImGui Vulkan call (../shared/TOOLCHAIN.md). Its table includes
  // the surface functions, so the instance needs VK_KHR_surface even offscreen.
  bool loaded = ImGui_ImplVulkan_LoadFunctions(
      [](const char* name, void* user) { return vkGetInstanceProcAddr(*static_cast<VkInstance*>(user), name); },
      &instance);
  if (!loaded)
    fail("Dear ImGui's Vulkan backend cannot load its functions (is VK_KHR_surface enabled on the instance?)");
  if (window) {
    ImGui_ImplGlfw_InitForVulkan(window, true);
    m_glfw = true;
  }
  VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 16}};
  VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  pi.maxSets = 16;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = sizes;
  if (vkCreateDescriptorPool(ctx.device(), &pi, nullptr, &m_pool) != VK_SUCCESS)
    fail("cannot create ImGui's descriptor pool");
  ImGui_ImplVulkan_InitInfo info{};
  info.Instance = ctx.instance();
  info.PhysicalDevice = ctx.physicalDevice();
  info.Device = ctx.device();
  info.QueueFamily = ctx.queueFamily();
  info.Queue = ctx.queue();
  info.DescriptorPool = m_pool;
  info.MinImageCount = 2;
  info.ImageCount = 2;  // its vertex buffers: one per frame in flight (the viewer has two)
  info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  ImGui_ImplVulkan_Init(&info, m_pass);
  ctx.submitAndWait([](VkCommandBuffer cmd) { ImGui_ImplVulkan_CreateFontsTexture(cmd); });
  ImGui_ImplVulkan_DestroyFontUploadObjects();
}

ImGuiLayer::~ImGuiLayer() {
  vkDeviceWaitIdle(m_ctx.device());
  ImGui_ImplVulkan_Shutdown();
  if (m_glfw) ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  vkDestroyDescriptorPool(m_ctx.device(), m_pool, nullptr);
  if (m_framebuffer) vkDestroyFramebuffer(m_ctx.device(), m_framebuffer, nullptr);
  vkDestroyRenderPass(m_ctx.device(), m_pass, nullptr);
}

void ImGuiLayer::newFrame(VkExtent2D display, float deltaSeconds) {
  ImGui_ImplVulkan_NewFrame();
  if (m_glfw) {
    ImGui_ImplGlfw_NewFrame();
  } else {
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = {float(display.width), float(display.height)};
    io.DeltaTime = std::max(deltaSeconds, 1e-4f);
  }
  ImGui::NewFrame();
}

void ImGuiLayer::ensureTarget(VkExtent2D extent) {
  if (m_framebuffer && extent.width == m_extent.width && extent.height == m_extent.height) return;
  vkDeviceWaitIdle(m_ctx.device());  // earlier frames may still read the old layer
  if (m_framebuffer) vkDestroyFramebuffer(m_ctx.device(), m_framebuffer, nullptr);
  m_color = vk::Image(m_ctx, extent, m_format, VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                      VK_IMAGE_ASPECT_COLOR_BIT);
  m_depth = vk::Image(m_ctx, extent, Renderer::kDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                      VK_IMAGE_ASPECT_DEPTH_BIT);
  m_framebuffer = Renderer::createFramebuffer(m_ctx, m_pass, m_color.view(), m_depth.view(), extent);
  m_pixels = vk::Buffer(m_ctx, size_t(extent.width) * extent.height * 4, vk::kStorageUsage);
  m_extent = extent;
  m_hash = 0;
}

void ImGuiLayer::endFrame() { ImGui::Render(); }

void ImGuiLayer::draw(VkCommandBuffer cmd) { ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd); }

UiLayer ImGuiLayer::layer(VkCommandBuffer cmd, VkExtent2D extent) {
  ImDrawData* data = ImGui::GetDrawData();
  ensureTarget(extent);
  const uint64_t hash = hashDrawData(data);
  if (hash == m_hash) return m_layer;  // unchanged: composite what the layer holds
  m_hash = hash;
  m_layer = {m_pixels.handle(), drawnArea(data, extent)};
  if (!m_layer.area.extent.width || !m_layer.area.extent.height) return m_layer;
  // Earlier frames' composites (fragment or compute shaders) read the buffer before this copy overwrites it.
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 0, nullptr);
  VkClearValue clear[2]{};  // transparent black: ImGui's blending then leaves premultiplied colour
  VkRenderPassBeginInfo bi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  bi.renderPass = m_pass;
  bi.framebuffer = m_framebuffer;
  bi.renderArea = m_layer.area;
  bi.clearValueCount = 2;
  bi.pClearValues = clear;
  vkCmdBeginRenderPass(cmd, &bi, VK_SUBPASS_CONTENTS_INLINE);
  ImGui_ImplVulkan_RenderDrawData(data, cmd);
  vkCmdEndRenderPass(cmd);
  VkBufferImageCopy region{};
  region.bufferOffset = (VkDeviceSize(m_layer.area.offset.y) * extent.width + VkDeviceSize(m_layer.area.offset.x)) * 4;
  region.bufferRowLength = extent.width;
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageOffset = {m_layer.area.offset.x, m_layer.area.offset.y, 0};
  region.imageExtent = {m_layer.area.extent.width, m_layer.area.extent.height, 1};
  vkCmdCopyImageToBuffer(cmd, m_color.handle(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, m_pixels.handle(), 1, &region);
  VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.buffer = m_pixels.handle();
  b.size = VK_WHOLE_SIZE;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr, 1,
                       &b, 0, nullptr);
  return m_layer;
}

void profilerOverlay(const Profiler& profiler, const OverlayInfo& info, OverlayState& state, std::string& status) {
  auto now = std::chrono::steady_clock::now();
  if (now - state.updated >=
      std::chrono::milliseconds(250)) {  // 4 Hz: readable numbers; the layer is redrawn only then
    state.updated = now;
    state.stats = profiler.stats(300);
    const auto& frames = profiler.frames();
    // Only stages the recent frames ran (GPU zones arrive a couple of frames late): after a switch of model or
    // backend the old stages leave the table at once instead of lingering for 300 frames.
    std::set<std::string> recent = {"cpu frame", "gpu total"};
    for (size_t i = frames.size() - std::min<size_t>(frames.size(), 8); i < frames.size(); ++i)
      for (const auto* spans : {&frames[i].gpu, &frames[i].cpu})
        for (const Span& span : *spans) recent.insert(span.name);
    std::erase_if(state.stats, [&](const auto& entry) { return !recent.count(entry.first); });
    size_t n = std::min<size_t>(frames.size(), 300);
    state.gpu.assign(n, 0.0f);
    state.cpu.assign(n, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      const auto& f = frames[frames.size() - n + i];
      for (const Span& span : f.gpu) state.gpu[i] += float(span.ms);
      state.cpu[i] = float(f.cpuMs);
    }
    auto [used, budget] = info.ctx->deviceLocalUsage();
    char line[256];
    if (budget)
      std::snprintf(line, sizeof line, "GPU memory: %.0f MiB used of %.0f MiB budget", used / 1048576.0,
                    budget / 1048576.0);
    else
      std::snprintf(line, sizeof line, "GPU memory: n/a (no VK_EXT_memory_budget)");
    state.memory = line;
    std::snprintf(line, sizeof line, "%s\nframe %llu, %u avatar(s), %ux%u", info.ctx->info().name.c_str(),
                  (unsigned long long)info.frame, info.avatars, info.extent.width, info.extent.height);
    state.frame = line;
  }
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({io.DisplaySize.x - 10, 10}, ImGuiCond_FirstUseEver, {1, 0});  // its right edge
  // Sized to its contents: more stages grow the window rather than push the export button out of it.
  ImGui::Begin("GPU frame time", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
  const ImVec2 at = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  if (at.x + size.x > io.DisplaySize.x)  // grown past the screen's edge: back inside it (the user may move it)
    ImGui::SetWindowPos({std::max(0.0f, io.DisplaySize.x - size.x), at.y});
  if (!state.gpu.empty()) {
    ImGui::PlotLines("GPU ms", state.gpu.data(), int(state.gpu.size()), 0, nullptr, 0.0f, FLT_MAX, {300, 60});
    ImGui::PlotLines("CPU ms", state.cpu.data(), int(state.cpu.size()), 0, nullptr, 0.0f, FLT_MAX, {300, 40});
  }
  float nameWidth = ImGui::CalcTextSize("stage").x;
  for (const auto& entry : state.stats) nameWidth = std::max(nameWidth, ImGui::CalcTextSize(entry.first.c_str()).x);
  if (ImGui::BeginTable("stages", 5,
                        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("stage", ImGuiTableColumnFlags_WidthFixed, nameWidth);  // names whole
    for (const char* h : {"last", "mean", "p99", "max"})
      ImGui::TableSetupColumn(h, ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("0000.000").x);
    ImGui::TableHeadersRow();
    for (auto& [name, s] : state.stats) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name.c_str());
      for (double v : {s.last, s.mean, s.p99, s.max}) {
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", v);
      }
    }
    ImGui::EndTable();
  }
  ImGui::TextUnformatted(state.memory.c_str());
  ImGui::TextUnformatted(state.frame.c_str());
  if (ImGui::Button("export profile")) {
    std::string path = info.profilePath.empty() ? "armature-profile.json" : info.profilePath;
    try {
      profiler.writeChromeTrace(path);
      profiler.writeCsv(path.substr(0, path.rfind('.')) + ".csv");
      status = "wrote " + path;
    } catch (const std::exception& e) {
      status = e.what();
    }
  }
  ImGui::End();
}

namespace {
class ImGuiHeadlessUi final : public HeadlessUi {
 public:
  ImGuiHeadlessUi(vk::Context& ctx, VkFormat colorFormat) : m_ctx(ctx), m_layer(ctx, colorFormat) {}
  void build(const Profiler& profiler, uint64_t frame, uint32_t avatars, VkExtent2D extent) override {
    m_layer.newFrame(extent);
    profilerOverlay(profiler, {&m_ctx, frame, avatars, extent, {}}, m_state, m_status);
    m_layer.endFrame();
  }
  UiLayer layer(VkCommandBuffer cmd, VkExtent2D extent) override { return m_layer.layer(cmd, extent); }
  void draw(VkCommandBuffer cmd) override { m_layer.draw(cmd); }

 private:
  vk::Context& m_ctx;
  ImGuiLayer m_layer;
  OverlayState m_state;
  std::string m_status;
};
}  // namespace

HeadlessUiFactory headlessUiFactory() {
  return [](vk::Context& ctx, VkFormat colorFormat) -> std::unique_ptr<HeadlessUi> {
    return std::make_unique<ImGuiHeadlessUi>(ctx, colorFormat);
  };
}

}  // namespace armature::app
