#include "app/imgui_layer.h"

#include <volk.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_vulkan.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "app/viewer.h"
#include "armature/error.h"

namespace armature::app {

ImGuiLayer::ImGuiLayer(vk::Context& ctx, VkRenderPass pass, uint32_t imageCount, GLFWwindow* window) : m_ctx(ctx) {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::StyleColorsDark();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  VkInstance instance = ctx.instance();
  // Debian's prebuilt backend objects call Vulkan through prototypes; ours are rebuilt without them, so they
  // load their entry points here, before any other ImGui Vulkan call (../shared/TOOLCHAIN.md).
  // Its table includes the surface functions, so the instance needs VK_KHR_surface even offscreen.
  bool loaded = ImGui_ImplVulkan_LoadFunctions([](const char* name, void* user) {
    return vkGetInstanceProcAddr(*static_cast<VkInstance*>(user), name);
  }, &instance);
  if (!loaded) {
    ImGui::DestroyContext();
    throw Error("Dear ImGui's Vulkan backend cannot load its functions (is VK_KHR_surface enabled on the instance?)");
  }
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
  VkResult r = vkCreateDescriptorPool(ctx.device(), &pi, nullptr, &m_pool);
  if (r != VK_SUCCESS) {
    if (m_glfw) ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    VK_CHECK(r);
  }
  ImGui_ImplVulkan_InitInfo info{};
  info.Instance = ctx.instance();
  info.PhysicalDevice = ctx.physicalDevice();
  info.Device = ctx.device();
  info.QueueFamily = ctx.queueFamily();
  info.Queue = ctx.queue();
  info.DescriptorPool = m_pool;
  info.MinImageCount = 2;
  info.ImageCount = std::max<uint32_t>(imageCount, 2);
  info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  ImGui_ImplVulkan_Init(&info, pass);
  ctx.submitAndWait([](VkCommandBuffer cmd) { ImGui_ImplVulkan_CreateFontsTexture(cmd); });
  ImGui_ImplVulkan_DestroyFontUploadObjects();
}

ImGuiLayer::~ImGuiLayer() {
  vkDeviceWaitIdle(m_ctx.device());
  ImGui_ImplVulkan_Shutdown();
  if (m_glfw) ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  vkDestroyDescriptorPool(m_ctx.device(), m_pool, nullptr);
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

VkRect2D ImGuiLayer::render() {
  ImGui::Render();
  const ImDrawData* data = ImGui::GetDrawData();
  float x0 = FLT_MAX, y0 = FLT_MAX, x1 = -FLT_MAX, y1 = -FLT_MAX;
  for (int l = 0; data && l < data->CmdListsCount; ++l)
    for (const ImDrawCmd& c : data->CmdLists[l]->CmdBuffer) {
      if (c.ElemCount == 0) continue;  // clip rectangles are in display units: to framebuffer pixels
      const ImVec2 o = data->DisplayPos, k = data->FramebufferScale;
      x0 = std::min(x0, (c.ClipRect.x - o.x) * k.x), y0 = std::min(y0, (c.ClipRect.y - o.y) * k.y);
      x1 = std::max(x1, (c.ClipRect.z - o.x) * k.x), y1 = std::max(y1, (c.ClipRect.w - o.y) * k.y);
    }
  if (x1 <= x0 || y1 <= y0) return {};
  int32_t ix = int32_t(std::floor(std::max(x0, 0.0f))), iy = int32_t(std::floor(std::max(y0, 0.0f)));
  return {{ix, iy}, {uint32_t(std::max(0, int32_t(std::ceil(x1)) - ix)), uint32_t(std::max(0, int32_t(std::ceil(y1)) - iy))}};
}

void ImGuiLayer::record(VkCommandBuffer cmd) { ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd); }

void profilerOverlay(const Profiler& profiler, const OverlayInfo& info, std::string& status) {
  auto stats = profiler.stats(300);
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({io.DisplaySize.x - 430, 10}, ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize({420, 330}, ImGuiCond_FirstUseEver);
  ImGui::Begin("GPU frame time");
  // Rolling graph of the last frames' GPU total.
  const auto& frames = profiler.frames();
  size_t n = std::min<size_t>(frames.size(), 300);
  std::vector<float> total(n), cpu(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& f = frames[frames.size() - n + i];
    for (auto& [name, ms] : f.gpu) total[i] += float(ms);
    cpu[i] = float(f.cpuMs);
  }
  if (n) {
    ImGui::PlotLines("GPU ms", total.data(), int(n), 0, nullptr, 0.0f, FLT_MAX, {0, 60});
    ImGui::PlotLines("CPU ms", cpu.data(), int(n), 0, nullptr, 0.0f, FLT_MAX, {0, 40});
  }
  if (ImGui::BeginTable("stages", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) {
    for (const char* h : {"stage", "last", "mean", "p99", "max"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (auto& [name, s] : stats) {
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
  auto [used, budget] = info.ctx->deviceLocalUsage();
  if (budget) ImGui::Text("GPU memory: %.0f MiB used of %.0f MiB budget", used / 1048576.0, budget / 1048576.0);
  else ImGui::TextUnformatted("GPU memory: n/a (no VK_EXT_memory_budget)");
  ImGui::Text("%s: frame %llu, %u avatar(s), %ux%u", info.ctx->info().name.c_str(), (unsigned long long)info.frame,
              info.avatars, info.extent.width, info.extent.height);
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
  ImGuiHeadlessUi(vk::Context& ctx, VkRenderPass pass) : m_ctx(ctx), m_layer(ctx, pass, 2) {}
  VkRect2D build(const Profiler& profiler, uint64_t frame, uint32_t avatars, VkExtent2D extent) override {
    m_layer.newFrame(extent);
    profilerOverlay(profiler, {&m_ctx, frame, avatars, extent, {}}, m_status);
    return m_layer.render();
  }
  void record(VkCommandBuffer cmd) override { m_layer.record(cmd); }

 private:
  vk::Context& m_ctx;
  ImGuiLayer m_layer;
  std::string m_status;
};
}  // namespace

HeadlessUiFactory headlessUiFactory() {
  return [](vk::Context& ctx, VkRenderPass pass) -> std::unique_ptr<HeadlessUi> { return std::make_unique<ImGuiHeadlessUi>(ctx, pass); };
}

}  // namespace armature::app
