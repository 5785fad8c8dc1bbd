#pragma once
// CUDA↔Vulkan interop: buffers that both APIs use without copies, and one timeline semaphore that orders their
// work on the GPU. No CUDA types here. When zero-copy interop is unavailable (no CUDA device matching the Vulkan
// device's UUID, missing external-memory/semaphore extensions — lavapipe has no semaphore export —), the same
// classes fall back to staging copies through pinned host memory and host-side waits, so callers never branch.
//
// Frame protocol (FrameRing below): K slots, two shared timelines whose values only increase —
// `ready` (signalled by CUDA: slot written) and `consumed` (signalled by Vulkan: slot read).
//   frame f, slot f % K:
//     CUDA:   wait consumed >= f + 1 - K   — the slot's previous reader (frame f-K) is done  [GPU-side wait]
//             kernels write the slot; signal ready = f + 1
//     Vulkan: submit(wait ready >= f + 1; read/draw the slot; signal consumed = f + 1)      [GPU-side wait]
//     host:   waits only when it runs more than 2K frames ahead of the GPU (backpressure), never per hop.
// Two timelines instead of one: with one, frame f+1's signals could not precede frame f's (values must
// increase), so every frame's two slow cross-API hops would serialise; with two, frame f+1's CUDA work
// overlaps frame f's hop back to Vulkan.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "armature/cuda/runtime.h"
#include "armature/vk/context.h"

namespace armature::interop {

struct Support {
  bool zeroCopy = false;  // exportable memory + semaphores, and a CUDA device with the same UUID
  int cudaDevice = -1;    // the matching CUDA device (or the first CUDA device, for the fallback); -1 = none
  std::string reason;     // why zero-copy is unavailable (empty when it is available)
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
  // Staging path: makes CUDA's writes (ordered on `stream`, a cudaStream_t) visible to Vulkan, and the reverse.
  // Blocks the host.
  void toVulkan(void* stream);
  void toCuda(void* stream);
  void toVulkan(const cuda::Stream& stream) { toVulkan(stream.handle()); }
  void toCuda(const cuda::Stream& stream) { toCuda(stream.handle()); }

 private:
  void release() noexcept;
  vk::Context* m_ctx = nullptr;
  size_t m_bytes = 0;
  bool m_zeroCopy = false;
  VkBuffer m_buffer = VK_NULL_HANDLE;
  VkDeviceMemory m_memory = VK_NULL_HANDLE;
  void* m_mapped = nullptr;  // staging: the Vulkan buffer's host mapping
  void* m_cudaPtr = nullptr;
  void* m_extMemory = nullptr;  // cudaExternalMemory_t
  void* m_pinned = nullptr;     // staging: pinned host memory
};

// Memory a host allocated exportable (VkExportMemoryAllocateInfo, opaque fd), imported into CUDA once: the host
// keeps owning the VkDeviceMemory, which must outlive this. Zero-copy only (it throws where probe() says no).
class ImportedMemory {
 public:
  ImportedMemory(vk::Context& ctx, VkDeviceMemory memory, VkDeviceSize allocationSize, bool dedicated);
  ~ImportedMemory();
  ImportedMemory(const ImportedMemory&) = delete;
  ImportedMemory& operator=(const ImportedMemory&) = delete;
  void* cudaPointer() const { return m_cudaPtr; }  // the allocation's first byte

 private:
  void* m_cudaPtr = nullptr;
  void* m_extMemory = nullptr;  // cudaExternalMemory_t
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
  uint64_t value() const;                                                       // the current value (host query)
  void hostWait(uint64_t value, uint64_t timeoutNs = 10'000'000'000ull) const;  // throws on timeout

 private:
  vk::Context& m_ctx;
  bool m_zeroCopy = false;
  VkSemaphore m_semaphore = VK_NULL_HANDLE;
  void* m_extSemaphore = nullptr;  // cudaExternalSemaphore_t
};

// K slots of a shared buffer plus the two timelines of the frame protocol above.
class FrameRing {
 public:
  FrameRing(vk::Context& ctx, size_t slotBytes, uint32_t slots = 3, Path path = Path::Auto);
  uint32_t slotCount() const { return uint32_t(m_slots.size()); }
  bool zeroCopy() const { return m_ready.zeroCopy(); }

  // Starts the next frame and returns its slot. Blocks the host only beyond 2K frames of run-ahead.
  uint32_t beginFrame();
  SharedBuffer& slot(uint32_t i) { return m_slots[i]; }
  // CUDA side of the frame, on `stream`: acquire before writing the slot, release after.
  void cudaAcquire(const cuda::Stream& stream);
  void cudaRelease(const cuda::Stream& stream);
  // For the Vulkan submission that reads the slot: wait for this, signal that.
  vk::TimelineValue vulkanWait() const { return {m_ready.semaphore(), m_frame + 1}; }
  vk::TimelineValue vulkanSignal() const { return {m_consumed.semaphore(), m_frame + 1}; }
  // Waits until every submitted frame has been consumed (teardown, tests).
  void drain(uint64_t timeoutNs = 10'000'000'000ull);
  uint64_t frame() const { return m_frame; }
  double hostBlockedMs() const { return m_blockedMs; }  // total time beginFrame() waited

 private:
  std::vector<SharedBuffer> m_slots;
  SharedTimeline m_ready, m_consumed;
  uint64_t m_frame = UINT64_MAX;  // the current frame (none before the first beginFrame)
  double m_blockedMs = 0;
};

}  // namespace armature::interop
