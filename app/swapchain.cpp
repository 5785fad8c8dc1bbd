#include "app/swapchain.h"
#include <volk.h>  // the library's own Vulkan function table

#include <algorithm>

#include "app/renderer.h"

namespace armature::app {

VkFormat Swapchain::chooseFormat() const {
  uint32_t n = 0;
  vkGetPhysicalDeviceSurfaceFormatsKHR(m_ctx.physicalDevice(), m_surface, &n, nullptr);
  std::vector<VkSurfaceFormatKHR> formats(n);
  vkGetPhysicalDeviceSurfaceFormatsKHR(m_ctx.physicalDevice(), m_surface, &n, formats.data());
  if (formats.empty()) throw Error("the window's surface offers no formats");
  for (const auto& f : formats)
    if (f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) return f.format;
  return formats[0].format;
}

void Swapchain::create(VkExtent2D framebufferSize, bool vsync, VkRenderPass renderPass) {
  VkDevice dev = m_ctx.device();
  VkSurfaceCapabilitiesKHR caps;
  VK_CHECK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(m_ctx.physicalDevice(), m_surface, &caps));
  m_extent = caps.currentExtent.width != UINT32_MAX ? caps.currentExtent : framebufferSize;
  if (m_extent.width == 0 || m_extent.height == 0) {  // minimised: no swapchain until restored
    destroy();
    return;
  }
  m_format = chooseFormat();
  uint32_t fn = 0;
  vkGetPhysicalDeviceSurfaceFormatsKHR(m_ctx.physicalDevice(), m_surface, &fn, nullptr);
  std::vector<VkSurfaceFormatKHR> formats(fn);
  vkGetPhysicalDeviceSurfaceFormatsKHR(m_ctx.physicalDevice(), m_surface, &fn, formats.data());
  VkColorSpaceKHR space = formats[0].colorSpace;
  for (const auto& f : formats)
    if (f.format == m_format) space = f.colorSpace;
  uint32_t pn = 0;
  vkGetPhysicalDeviceSurfacePresentModesKHR(m_ctx.physicalDevice(), m_surface, &pn, nullptr);
  std::vector<VkPresentModeKHR> modes(pn);
  vkGetPhysicalDeviceSurfacePresentModesKHR(m_ctx.physicalDevice(), m_surface, &pn, modes.data());
  VkPresentModeKHR mode = VK_PRESENT_MODE_FIFO_KHR;  // vsync; always available
  if (!vsync)
    for (auto want : {VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_IMMEDIATE_KHR})
      if (std::find(modes.begin(), modes.end(), want) != modes.end()) {
        mode = want;
        break;
      }
  VkSwapchainCreateInfoKHR ci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
  ci.surface = m_surface;
  ci.minImageCount = std::max(caps.minImageCount, 2u);
  if (caps.maxImageCount) ci.minImageCount = std::min(ci.minImageCount + 1, caps.maxImageCount);
  ci.imageFormat = m_format;
  ci.imageColorSpace = space;
  ci.imageExtent = m_extent;
  ci.imageArrayLayers = 1;
  ci.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;  // screenshots copy from it
  // The compute-raster mode copies its compute-shaded frame in, where the surface allows.
  m_transferDst = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT) != 0;
  if (m_transferDst) ci.imageUsage |= VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  ci.preTransform = caps.currentTransform;
  ci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  ci.presentMode = mode;
  ci.clipped = VK_TRUE;
  ci.oldSwapchain = m_handle;
  VkSwapchainKHR created;
  VK_CHECK(vkCreateSwapchainKHR(dev, &ci, nullptr, &created));
  destroy();
  m_handle = created;
  uint32_t count = 0;
  vkGetSwapchainImagesKHR(dev, m_handle, &count, nullptr);
  m_images.resize(count);
  vkGetSwapchainImagesKHR(dev, m_handle, &count, m_images.data());
  m_depth = vk::Image(m_ctx, m_extent, Renderer::kDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                      VK_IMAGE_ASPECT_DEPTH_BIT);
  for (VkImage image : m_images) {
    VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = image;
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vi.format = m_format;
    vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VkImageView view;
    VK_CHECK(vkCreateImageView(dev, &vi, nullptr, &view));
    m_views.push_back(view);
    m_framebuffers.push_back(Renderer::createFramebuffer(m_ctx, renderPass, view, m_depth.view(), m_extent));
  }
}

void Swapchain::destroy() {
  VkDevice dev = m_ctx.device();
  for (auto fb : m_framebuffers) vkDestroyFramebuffer(dev, fb, nullptr);
  for (auto v : m_views) vkDestroyImageView(dev, v, nullptr);
  m_framebuffers.clear();
  m_views.clear();
  m_images.clear();
  m_depth = vk::Image();
  if (m_handle) vkDestroySwapchainKHR(dev, m_handle, nullptr);
  m_handle = VK_NULL_HANDLE;
}

void Swapchain::recordReadback(VkCommandBuffer cmd, uint32_t index, VkBuffer buffer) const {
  VkImage image = m_images[index];
  auto barrier = [&](VkImageLayout from, VkImageLayout to, VkAccessFlags src, VkAccessFlags dst) {
    VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    b.srcAccessMask = src;
    b.dstAccessMask = dst;
    b.oldLayout = from;
    b.newLayout = to;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, nullptr, 0,
                         nullptr, 1, &b);
  };
  barrier(VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {m_extent.width, m_extent.height, 1};
  vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer, 1, &region);
  barrier(VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, VK_ACCESS_TRANSFER_READ_BIT, 0);
}

}  // namespace armature::app
