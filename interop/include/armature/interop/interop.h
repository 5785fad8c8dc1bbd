#pragma once
// CUDA↔Vulkan interop: buffers that both APIs use without copies, and one timeline semaphore that orders their
// work on the GPU. No CUDA types here. When zero-copy interop is unavailable (no CUDA device matching the Vulkan
// device's UUID, missing external-memory/semaphore extensions — lavapipe has no semaphore export —), the same
// classes fall back to staging copies through pinned host memory and host-side waits, so callers never branch.
//
// Frame protocol (one timeline T, values only increase; K frames in flight, buffers indexed by frame % K):
//   frame f, with base = 2f:
//     Vulkan:  submit(signal T = base + 1)            — "the buffer of slot f%K is free for CUDA"
//              (its wait on T = base - 2K + 2 — frame f-K's CUDA work done — is implied: see below)
//     CUDA:    cudaWait(T = base + 1); kernels write slot f%K; cudaSignal(T = base + 2)
//     Vulkan:  submit(wait T = base + 2; draw from slot f%K; signal the frame fence)
//     host:    before recording frame f, wait for frame f-K's fence only (the slot it reuses): no wait inside a
//              frame, K-1 frames of slack for the ~160 µs cross-API hops to overlap with other work.
// Every wait is there for one reason: CUDA must not write a slot Vulkan still reads (base + 1), Vulkan must not
// read a slot before CUDA wrote it (base + 2), the host must not re-record a slot in flight (fence f-K).
#include <cstddef>
#include <cstdint>
#include <string>

#include "armature/cuda/runtime.h"
#include "armature/vk/context.h"

namespace armature::interop {

struct Support {
  bool zeroCopy = false;   // exportable memory + semaphores, and a CUDA device with the same UUID
  int cudaDevice = -1;     // the matching CUDA device (or the first CUDA device, for the fallback); -1 = none
  std::string reason;      // why zero-copy is unavailable (empty when it is available)
};
// What this context and machine allow; cached per context.
Support probe(const vk::Context& ctx);
std::string describe(const Support& s);

enum class Path { Auto, ZeroCopy, Staging };

// One buffer, visible to Vulkan as a VkBuffer (storage + vertex + transfer) and to CUDA as a device pointer.
// Zero-copy: dedicated, exportable Vulkan memory imported into CUDA once and mapped once.
// Staging: a Vulkan host-visible buffer plus a CUDA allocation and a pinned host buffer; toVulkan()/toCuda()
// copy (and wait on the host). With zero-copy both calls do nothing, so callers always call them.
class SharedBuffer {
 public:
  SharedBuffer(vk::Context& ctx, size_t bytes, Path path = Path::Auto);
  ~SharedBuffer();
  SharedBuffer(SharedBuffer&& o) noexcept;
  SharedBuffer& operator=(SharedBuffer&& o) noexcept;
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  VkBuffer buffer() const { return m_buffer; }
  vk::BufferView view() const { return {m_buffer, 0, VK_WHOLE_SIZE}; }
  size_t size() const { return m_bytes; }
  void* cudaPointer() const { return m_cudaPtr; }
  bool zeroCopy() const { return m_zeroCopy; }
  // Staging path: makes CUDA's writes (ordered on `stream`) visible to Vulkan, and the reverse. Blocks the host.
  void toVulkan(const cuda::Stream& stream);
  void toCuda(const cuda::Stream& stream);

 private:
  void release() noexcept;
  vk::Context* m_ctx = nullptr;
  size_t m_bytes = 0;
  bool m_zeroCopy = false;
  VkBuffer m_buffer = VK_NULL_HANDLE;
  VkDeviceMemory m_memory = VK_NULL_HANDLE;
  void* m_mapped = nullptr;       // staging: the Vulkan buffer's host mapping
  void* m_cudaPtr = nullptr;
  void* m_extMemory = nullptr;    // cudaExternalMemory_t
  void* m_pinned = nullptr;       // staging: pinned host memory
};

// A timeline semaphore shared by a VkQueue and CUDA streams. Zero-copy: exported and imported, waits and
// signals happen on the GPU. Staging: CUDA-side waits become host waits and signals become host signals after
// the stream drains (correct, but the host blocks).
class SharedTimeline {
 public:
  explicit SharedTimeline(vk::Context& ctx, Path path = Path::Auto);
  ~SharedTimeline();
  SharedTimeline(const SharedTimeline&) = delete;
  SharedTimeline& operator=(const SharedTimeline&) = delete;

  VkSemaphore semaphore() const { return m_semaphore; }
  bool zeroCopy() const { return m_zeroCopy; }
  void cudaWait(uint64_t value, const cuda::Stream& stream);
  void cudaSignal(uint64_t value, const cuda::Stream& stream);
  uint64_t value() const;                                     // the current value (host query)
  void hostWait(uint64_t value, uint64_t timeoutNs = 10'000'000'000ull) const;  // throws on timeout

 private:
  vk::Context& m_ctx;
  bool m_zeroCopy = false;
  VkSemaphore m_semaphore = VK_NULL_HANDLE;
  void* m_extSemaphore = nullptr;  // cudaExternalSemaphore_t
};

}  // namespace armature::interop
