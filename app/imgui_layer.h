#pragma once
// Dear ImGui on the renderer's pass, for the window and for headless --ui: the context, the Vulkan backend (through
// volk) and the font upload, torn down in reverse; and the GPU frame-time overlay both modes draw.
#include <cstdint>
#include <string>

#include "app/profiler.h"
#include "armature/vk/context.h"

struct GLFWwindow;

namespace armature::app {

class ImGuiLayer {
 public:
  // `window`: feed input from GLFW; null for headless (no platform backend, no input).
  ImGuiLayer(vk::Context& ctx, VkRenderPass pass, uint32_t imageCount, GLFWwindow* window = nullptr);
  ~ImGuiLayer();
  ImGuiLayer(const ImGuiLayer&) = delete;
  ImGuiLayer& operator=(const ImGuiLayer&) = delete;
  // Starts a UI frame. Headless: `display` is the image size, `deltaSeconds` the frame's step.
  void newFrame(VkExtent2D display = {}, float deltaSeconds = 1.0f / 60.0f);
  // Ends the UI frame (ImGui::Render); returns the pixels its draws touch (empty when it draws nothing).
  VkRect2D render();
  // Records the rendered frame's draws, inside a render pass compatible with `pass`.
  void record(VkCommandBuffer cmd);

 private:
  vk::Context& m_ctx;
  VkDescriptorPool m_pool = VK_NULL_HANDLE;
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

// The GPU frame-time window: rolling graphs of GPU and CPU time over the last 300 frames, last/mean/p99/max per
// stage, GPU memory, and the export button (its outcome goes to `status`).
void profilerOverlay(const Profiler& profiler, const OverlayInfo& info, std::string& status);

}  // namespace armature::app
