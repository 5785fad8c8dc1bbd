#pragma once
// The window's swapchain: images in a colour format the renderer can draw into, their views and framebuffers over
// one depth image, recreated on resize or when vsync changes. Owns its Vulkan objects (destroyed with it).
#include <volk.h>

#include <vector>

#include "armature/vk/context.h"
#include "armature/vk/image.h"

namespace armature::app {

class Swapchain {
 public:
  Swapchain(vk::Context& ctx, VkSurfaceKHR surface) : m_ctx(ctx), m_surface(surface) {}
  ~Swapchain() { destroy(); }
  Swapchain(const Swapchain&) = delete;
  Swapchain& operator=(const Swapchain&) = delete;

  // The surface's preferred 8-bit UNORM format (the renderer's pass is built for it before the first create).
  VkFormat chooseFormat() const;
  // (Re)creates for a framebuffer of `framebufferSize` (used where the surface leaves the extent to the
  // application) with vsync (FIFO) or without (mailbox, else immediate, where offered). Framebuffers are made for
  // `renderPass` (colour + Renderer::kDepthFormat). A zero extent (minimised window) leaves no swapchain.
  void create(VkExtent2D framebufferSize, bool vsync, VkRenderPass renderPass);
  void destroy();

  // Records a copy of image `index` into `buffer` (tightly packed, 4 bytes per pixel), back in present layout after.
  void recordReadback(VkCommandBuffer cmd, uint32_t index, VkBuffer buffer) const;

  VkSwapchainKHR handle() const { return m_handle; }
  const VkSwapchainKHR* handlePtr() const { return &m_handle; }
  VkFormat format() const { return m_format; }
  VkExtent2D extent() const { return m_extent; }
  VkImage image(uint32_t index) const { return m_images[index]; }
  VkFramebuffer framebuffer(uint32_t index) const { return m_framebuffers[index]; }
  // Whether the images accept transfer writes (the compute-shaded frame is copied in).
  bool transferDst() const { return m_transferDst; }

 private:
  vk::Context& m_ctx;
  VkSurfaceKHR m_surface;
  VkSwapchainKHR m_handle = VK_NULL_HANDLE;
  VkFormat m_format = VK_FORMAT_B8G8R8A8_UNORM;
  VkExtent2D m_extent{};
  bool m_transferDst = false;
  std::vector<VkImage> m_images;
  std::vector<VkImageView> m_views;
  std::vector<VkFramebuffer> m_framebuffers;
  vk::Image m_depth;
};

}  // namespace armature::app
