#include "armature/vk/image.h"
#include <volk.h>  // the library's own Vulkan function table

#include <utility>

namespace armature::vk {

Image::Image(Context& ctx, VkExtent2D extent, VkFormat format, VkImageUsageFlags usage, VkImageAspectFlags aspect)
    : m_ctx(&ctx), m_extent(extent), m_format(format) {
  ARM_CHECK(extent.width > 0 && extent.height > 0, "image extent must be positive, got %ux%u", extent.width,
            extent.height);
  VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ci.imageType = VK_IMAGE_TYPE_2D;
  ci.format = format;
  ci.extent = {extent.width, extent.height, 1};
  ci.mipLevels = 1;
  ci.arrayLayers = 1;
  ci.samples = VK_SAMPLE_COUNT_1_BIT;
  ci.tiling = VK_IMAGE_TILING_OPTIMAL;
  ci.usage = usage;
  ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VK_CHECK(vkCreateImage(ctx.device(), &ci, ctx.allocator(), &m_image));
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(ctx.device(), m_image, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = ctx.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  VkResult r = vkAllocateMemory(ctx.device(), &ai, ctx.allocator(), &m_memory);
  if (r != VK_SUCCESS) {
    reset();
    throw Error("cannot allocate a " + std::to_string(extent.width) + "x" + std::to_string(extent.height) +
                " image: " + resultName(r));
  }
  VK_CHECK(vkBindImageMemory(ctx.device(), m_image, m_memory, 0));
  VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vi.image = m_image;
  vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vi.format = format;
  vi.subresourceRange = {aspect, 0, 1, 0, 1};
  VK_CHECK(vkCreateImageView(ctx.device(), &vi, ctx.allocator(), &m_view));
}

Image& Image::operator=(Image&& o) noexcept {
  if (this != &o) {
    reset();
    m_ctx = o.m_ctx;
    m_image = std::exchange(o.m_image, VK_NULL_HANDLE);
    m_memory = std::exchange(o.m_memory, VK_NULL_HANDLE);
    m_view = std::exchange(o.m_view, VK_NULL_HANDLE);
    m_extent = o.m_extent;
    m_format = o.m_format;
  }
  return *this;
}

void Image::reset() {
  if (!m_ctx) return;
  if (m_view) vkDestroyImageView(m_ctx->device(), m_view, m_ctx->allocator());
  if (m_image) vkDestroyImage(m_ctx->device(), m_image, m_ctx->allocator());
  if (m_memory) vkFreeMemory(m_ctx->device(), m_memory, m_ctx->allocator());
  m_view = VK_NULL_HANDLE;
  m_image = VK_NULL_HANDLE;
  m_memory = VK_NULL_HANDLE;
}

}  // namespace armature::vk
