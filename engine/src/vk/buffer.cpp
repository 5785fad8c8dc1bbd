#include "armature/vk/buffer.h"
#include <volk.h>  // the library's own Vulkan function table

#include <algorithm>

namespace armature::vk {

Buffer::Buffer(Context& ctx, VkDeviceSize size, VkBufferUsageFlags usage, MemoryKind kind) : m_ctx(&ctx), m_size(size) {
  ARM_CHECK(size > 0, "a Vulkan buffer needs a size > 0");
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VK_CHECK(vkCreateBuffer(ctx.device(), &bi, ctx.allocator(), &m_buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device(), m_buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = kind == MemoryKind::HostVisible
                           ? ctx.memoryType(req.memoryTypeBits,
                                            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                            VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                           : ctx.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  VkResult r = vkAllocateMemory(ctx.device(), &ai, ctx.allocator(), &m_memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(ctx.device(), m_buffer, ctx.allocator());
    m_buffer = VK_NULL_HANDLE;
    throw Error("cannot allocate a " + std::to_string(size) + "-byte Vulkan buffer: " + resultName(r));
  }
  VK_CHECK(vkBindBufferMemory(ctx.device(), m_buffer, m_memory, 0));
  if (kind == MemoryKind::HostVisible) VK_CHECK(vkMapMemory(ctx.device(), m_memory, 0, VK_WHOLE_SIZE, 0, &m_mapped));
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    m_ctx = o.m_ctx;
    m_buffer = std::exchange(o.m_buffer, VK_NULL_HANDLE);
    m_memory = std::exchange(o.m_memory, VK_NULL_HANDLE);
    m_size = std::exchange(o.m_size, 0);
    m_mapped = std::exchange(o.m_mapped, nullptr);
  }
  return *this;
}

void Buffer::reset() {
  if (!m_ctx) return;
  if (m_buffer) vkDestroyBuffer(m_ctx->device(), m_buffer, m_ctx->allocator());
  if (m_memory) vkFreeMemory(m_ctx->device(), m_memory, m_ctx->allocator());  // unmaps implicitly
  m_buffer = VK_NULL_HANDLE;
  m_memory = VK_NULL_HANDLE;
  m_mapped = nullptr;
}

void Buffer::upload(const void* data, VkDeviceSize bytes, VkDeviceSize offset) {
  ARM_CHECK(offset + bytes <= m_size, "upload of %llu bytes at %llu overflows a %llu-byte buffer",
            (unsigned long long)bytes, (unsigned long long)offset, (unsigned long long)m_size);
  if (!bytes) return;
  if (m_mapped) {
    std::memcpy(static_cast<char*>(m_mapped) + offset, data, bytes);
    return;
  }
  Buffer staging(*m_ctx, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, MemoryKind::HostVisible);
  std::memcpy(staging.mapped(), data, bytes);
  m_ctx->submitAndWait([&](VkCommandBuffer cmd) {
    VkBufferCopy c{0, offset, bytes};
    vkCmdCopyBuffer(cmd, staging.handle(), m_buffer, 1, &c);
    computeBarrier(cmd);
  });
}

void Buffer::download(void* data, VkDeviceSize bytes, VkDeviceSize offset) const {
  ARM_CHECK(offset + bytes <= m_size, "download of %llu bytes at %llu overflows a %llu-byte buffer",
            (unsigned long long)bytes, (unsigned long long)offset, (unsigned long long)m_size);
  if (!bytes) return;
  if (m_mapped) {
    std::memcpy(data, static_cast<const char*>(m_mapped) + offset, bytes);
    return;
  }
  Buffer staging(*m_ctx, bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, MemoryKind::HostVisible);
  m_ctx->submitAndWait([&](VkCommandBuffer cmd) {
    VkBufferCopy c{offset, 0, bytes};
    vkCmdCopyBuffer(cmd, m_buffer, staging.handle(), 1, &c);
    computeBarrier(cmd);
  });
  std::memcpy(data, staging.mapped(), bytes);
}

void recordUpload(VkCommandBuffer cmd, VkBuffer buffer, VkDeviceSize offset, const void* data, VkDeviceSize bytes) {
  ARM_CHECK(offset % 4 == 0 && bytes % 4 == 0, "a recorded upload of %llu bytes at %llu: both must be multiples of 4",
            (unsigned long long)bytes, (unsigned long long)offset);
  if (!bytes) return;
  // Earlier work may still read or write these bytes (last frame's dispatches).
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  before.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
  constexpr VkDeviceSize kMaxUpdate = 65536;  // vkCmdUpdateBuffer's limit per call
  for (VkDeviceSize done = 0; done < bytes; done += kMaxUpdate)
    vkCmdUpdateBuffer(cmd, buffer, offset + done, std::min(kMaxUpdate, bytes - done),
                      static_cast<const char*>(data) + done);
  computeBarrier(cmd);
}

void Buffer::fill(uint32_t pattern, VkDeviceSize offset, VkDeviceSize size) {
  m_ctx->submitAndWait([&](VkCommandBuffer cmd) {
    vkCmdFillBuffer(cmd, m_buffer, offset, size, pattern);
    computeBarrier(cmd);
  });
}

}  // namespace armature::vk
