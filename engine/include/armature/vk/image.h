#pragma once
// Move-only owner of a 2-D image, its memory and one view.
#include "armature/vk/context.h"

namespace armature::vk {

class Image {
 public:
  Image() = default;
  Image(Context& ctx, VkExtent2D extent, VkFormat format, VkImageUsageFlags usage, VkImageAspectFlags aspect);
  ~Image() { reset(); }
  Image(Image&& o) noexcept { *this = std::move(o); }
  Image& operator=(Image&& o) noexcept;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;

  VkImage handle() const { return m_image; }
  VkImageView view() const { return m_view; }
  VkExtent2D extent() const { return m_extent; }
  VkFormat format() const { return m_format; }

 private:
  void reset();
  Context* m_ctx = nullptr;
  VkImage m_image = VK_NULL_HANDLE;
  VkDeviceMemory m_memory = VK_NULL_HANDLE;
  VkImageView m_view = VK_NULL_HANDLE;
  VkExtent2D m_extent{};
  VkFormat m_format = VK_FORMAT_UNDEFINED;
};

}  // namespace armature::vk
