#pragma once
// Move-only owner of a VkBuffer and its memory.
#include <cstring>
#include <span>
#include <vector>

#include "armature/vk/context.h"

namespace armature::vk {

enum class MemoryKind {
  DeviceLocal,  // fastest for the GPU; filled and read through staging (or directly when also host-visible)
  HostVisible,  // mapped for the CPU (coherent); for staging and read-back
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(Context& ctx, VkDeviceSize size, VkBufferUsageFlags usage, MemoryKind kind = MemoryKind::DeviceLocal);
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return m_buffer; }
  VkDeviceSize size() const { return m_size; }
  void* mapped() const { return m_mapped; }  // null unless host-visible
  BufferView view(VkDeviceSize offset = 0, VkDeviceSize range = VK_WHOLE_SIZE) const {
    return {m_buffer, offset, range};
  }
  explicit operator bool() const { return m_buffer != VK_NULL_HANDLE; }

  // Copies bytes in/out, through the mapping when there is one, else through a staging buffer (waits).
  void upload(const void* data, VkDeviceSize bytes, VkDeviceSize offset = 0);
  void download(void* data, VkDeviceSize bytes, VkDeviceSize offset = 0) const;
  // Fills bytes [offset, offset + size) (a multiple of 4, or to the end) with a 32-bit pattern (e.g. the bits of NaN
  // to poison outputs before a test run).
  void fill(uint32_t pattern, VkDeviceSize offset = 0, VkDeviceSize size = VK_WHOLE_SIZE);

  template <typename T>
  void upload(std::span<const T> data) {
    upload(data.data(), data.size_bytes());
  }
  template <typename T>
  std::vector<T> download(size_t count) const {
    std::vector<T> out(count);
    download(out.data(), count * sizeof(T));
    return out;
  }

 private:
  void reset();
  Context* m_ctx = nullptr;
  VkBuffer m_buffer = VK_NULL_HANDLE;
  VkDeviceMemory m_memory = VK_NULL_HANDLE;
  VkDeviceSize m_size = 0;
  void* m_mapped = nullptr;
};

// The usage every compute-op buffer gets: storage plus transfer both ways.
// Records a copy of `bytes` host bytes (a multiple of 4, as is `offset`) into `buffer`, ordered after the command
// buffer's earlier compute and transfer work and before its later work (barriers on both sides): the bytes are kept
// in the command buffer, so the host's may be reused at once. For per-frame parameters; the buffer needs
// VK_BUFFER_USAGE_TRANSFER_DST_BIT.
void recordUpload(VkCommandBuffer cmd, VkBuffer buffer, VkDeviceSize offset, const void* data, VkDeviceSize bytes);

constexpr VkBufferUsageFlags kStorageUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// A device-local storage buffer holding `data`.
template <typename T>
Buffer makeStorageBuffer(Context& ctx, std::span<const T> data, VkBufferUsageFlags extraUsage = 0) {
  Buffer b(ctx, std::max<VkDeviceSize>(data.size_bytes(), 4), kStorageUsage | extraUsage);
  if (!data.empty()) b.upload(data);
  return b;
}

}  // namespace armature::vk
