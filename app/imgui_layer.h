#pragma once
// Dear ImGui for the window and for headless --ui: the context, the Vulkan backend (through volk), and the GPU
// frame-time overlay both modes show. The UI is built every frame (input stays live) and reaches the frame one of
// two ways: drawn inside the frame's render pass, or — for a compute-shaded frame that has no render pass — as a
// cached layer, rendered in its own pass only when its draws change and composited by the frame's compute pass
// (app/renderer.h, UiLayer). The overlay's numbers refresh at 4 Hz (readable, and the layer is redrawn only then).
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/profiler.h"
#include "app/renderer.h"
#include "armature/vk/buffer.h"
#include "armature/vk/image.h"

struct GLFWwindow;

namespace armature::app {

class ImGuiLayer {
 public:
  // `colorFormat`: the frames' (ImGui's pipeline works in their render passes and in the layer's, which is built
  // the same way; the layer is stored in this format's byte order). `window`: feed input from GLFW; null for
  // headless (no platform backend, no input).
  ImGuiLayer(vk::Context& ctx, VkFormat colorFormat, GLFWwindow* window = nullptr);
  ~ImGuiLayer();
  ImGuiLayer(const ImGuiLayer&) = delete;
  ImGuiLayer& operator=(const ImGuiLayer&) = delete;
  // Starts a UI frame. Headless: `display` is the image size, `deltaSeconds` the frame's step.
  void newFrame(VkExtent2D display = {}, float deltaSeconds = 1.0f / 60.0f);
  // Ends the UI frame (ImGui::Render).
  void endFrame();
  // The ended frame as a layer: when its draws differ from the layer's, or the size changed, records their rendering
  // and the copy into the layer's buffer on `cmd`; returns the layer (empty area: nothing to composite).
  UiLayer layer(VkCommandBuffer cmd, VkExtent2D extent);
  // The ended frame's draws, inside a render pass with the frames' attachments.
  void draw(VkCommandBuffer cmd);

 private:
  void ensureTarget(VkExtent2D extent);
  vk::Context& m_ctx;
  VkFormat m_format;
  VkDescriptorPool m_pool = VK_NULL_HANDLE;
  VkRenderPass m_pass = VK_NULL_HANDLE;  // colour only, cleared to transparent, left for a copy
  vk::Image m_color, m_depth;
  VkFramebuffer m_framebuffer = VK_NULL_HANDLE;
  vk::Buffer m_pixels;  // the layer: one uint per pixel of the frame
  VkExtent2D m_extent{};
  uint64_t m_hash = 0;  // of the draws the layer holds
  UiLayer m_layer;
  bool m_glfw = false;
};

// What the overlay shows besides the profile.
struct OverlayInfo {
  const vk::Context* ctx = nullptr;  // device name and memory in use
  uint64_t frame = 0;
  uint32_t avatars = 1;
  VkExtent2D extent{};
  std::string profilePath;  // where "export profile" writes (+ a .csv beside it)
};

// The overlay's numbers, refreshed at most every 250 ms.
struct OverlayState {
  std::chrono::steady_clock::time_point updated{};
  std::map<std::string, StageStats> stats;
  std::vector<float> gpu, cpu;  // the rolling graphs
  std::string memory, frame;
};

// The GPU frame-time window: rolling graphs of GPU and CPU time over the last 300 frames, last/mean/p99/max per
// stage, GPU memory, and the export button (its outcome goes to `status`).
void profilerOverlay(const Profiler& profiler, const OverlayInfo& info, OverlayState& state, std::string& status);

}  // namespace armature::app
