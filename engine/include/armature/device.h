#pragma once
// The seam every GPU op is called through, on either backend:
//   DeviceView   a typed window onto device memory (what ops take);
//   Exec         where the work goes: a Vulkan command buffer being recorded, or a CUDA stream (the caller's own);
//   DeviceBuffer an owning allocation, shared by Vulkan and CUDA where both drive the same GPU;
//   Device       a GPU and the backends that can drive it: allocates, and runs one-off work to completion.
// An op is one function per direction, `op(const Exec&, const OpArgs&)`: it checks every argument (shapes, element
// types, sizes, which backend can address each buffer) once, then hands them to the Exec's backend.
// No CUDA types appear here: code built without nvcc includes it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "armature/backend.h"
#include "armature/vk/buffer.h"

namespace armature {
namespace vk {
class GpuTimer;
}

enum class ElementType : uint8_t { Float32, Int32, UInt32, Byte };
size_t elementBytes(ElementType type);
const char* elementName(ElementType type);
template <typename T>
constexpr ElementType elementTypeOf();
template <>
constexpr ElementType elementTypeOf<float>() {
  return ElementType::Float32;
}
template <>
constexpr ElementType elementTypeOf<int32_t>() {
  return ElementType::Int32;
}
template <>
constexpr ElementType elementTypeOf<uint32_t>() {
  return ElementType::UInt32;
}
template <>
constexpr ElementType elementTypeOf<uint8_t>() {
  return ElementType::Byte;
}

// `count` elements of `type` at `offset` bytes into a buffer that Vulkan binds as `vkBuffer`, CUDA addresses as
// `cudaBase`, or both when the memory is shared. Non-owning: the memory must outlive the work that uses it. An empty
// view (no memory) stands for an absent optional input.
struct DeviceView {
  VkBuffer vkBuffer = VK_NULL_HANDLE;
  void* cudaBase = nullptr;  // the buffer's start (the view begins `offset` bytes later)
  size_t offset = 0;
  size_t count = 0;
  ElementType type = ElementType::Float32;
  size_t guardBytes = 0;  // bytes past the view bound with it: the buffer's rest and guard band (guardBuffers)

  size_t bytes() const { return count * elementBytes(type); }
  bool empty() const { return !vkBuffer && !cudaBase; }
  // Elements [first, first + n) of this view (checked).
  DeviceView slice(size_t first, size_t n) const;
  // The same bytes seen as another element type (a byte count that divides evenly).
  DeviceView as(ElementType other) const;
  // What each backend binds: the Vulkan range (at least 4 bytes, so an empty view still binds; with a guard band,
  // through it), the CUDA pointer.
  vk::BufferView vulkan() const;
  template <typename T>
  T* cuda() const {
    return cudaBase ? reinterpret_cast<T*>(static_cast<char*>(cudaBase) + offset) : nullptr;
  }
  // A Vulkan buffer's bytes as `type` (count: the whole buffer); a CUDA device pointer to `count` elements.
  static DeviceView of(const vk::Buffer& buffer, ElementType type, size_t count = SIZE_MAX);
  static DeviceView ofCuda(void* pointer, ElementType type, size_t count);
};

// Where an op's work is recorded or enqueued. Vulkan: the op records dispatches and barriers into `cmd`; the
// caller submits. CUDA: the op launches on `stream` (a cudaStream_t; the caller's) and never synchronises the host.
class Exec {
 public:
  static Exec vulkan(vk::Context& ctx, VkCommandBuffer cmd, vk::GpuTimer* stages = nullptr);
  static Exec cuda(void* stream);
  Backend backend() const { return m_backend; }
  vk::Context& context() const;  // Vulkan only
  VkCommandBuffer commandBuffer() const { return m_cmd; }
  vk::GpuTimer* stages() const { return m_stages; }  // Vulkan: zones for an op's stages, when the caller times them
  void* stream() const { return m_stream; }          // CUDA only
  // Orders the work recorded so far before what follows, for ops that read earlier ops' outputs: a full compute and
  // transfer barrier on Vulkan; nothing on CUDA, whose stream already runs in order.
  void barrier() const;

 private:
  Backend m_backend = Backend::Vulkan;
  vk::Context* m_ctx = nullptr;
  VkCommandBuffer m_cmd = VK_NULL_HANDLE;
  vk::GpuTimer* m_stages = nullptr;
  void* m_stream = nullptr;
};

// Owner of device memory, made by Device::allocate. Moves; no copies.
class DeviceBuffer {
 public:
  DeviceBuffer();
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&&) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept;

  DeviceView view() const { return m_view; }
  operator DeviceView() const { return m_view; }  // pass a buffer wherever a view is taken
  size_t count() const { return m_view.count; }
  ElementType type() const { return m_view.type; }
  bool shared() const { return m_view.vkBuffer && m_view.cudaBase; }
  bool compressed() const;  // granted compressible memory (Device::allocateCompressible)
  VkBuffer vulkanBuffer() const { return m_view.vkBuffer; }

  // Synchronous copies and fills (set-up, tests, read-back): they return when done and order against all work
  // already submitted or enqueued on this device. (Not of an adopted buffer: that memory is the host's to fill.)
  void upload(const void* data, size_t bytes, size_t offset = 0);
  void download(void* data, size_t bytes, size_t offset = 0) const;
  void fill(uint32_t pattern);  // every 32-bit word (NaN poisoning)
  template <typename T>
  void upload(std::span<const T> data) {
    upload(data.data(), data.size_bytes());
  }
  // A copy ordered with `exec`'s work, for per-frame parameters: recorded into the command buffer (Vulkan; bytes and
  // offset multiples of 4, barriers before and after) or enqueued on the stream (CUDA). `data` may be reused when it
  // returns.
  void upload(const Exec& exec, const void* data, size_t bytes, size_t offset = 0);
  template <typename T>
  void upload(const Exec& exec, std::span<const T> data) {
    upload(exec, data.data(), data.size_bytes());
  }
  // On a Sharing::CudaToVulkan device whose CUDA and Vulkan drive different GPUs: copies what CUDA wrote (ordered on
  // `exec`'s stream) to the Vulkan buffer, waiting on the host. Elsewhere nothing: the memory is one.
  void toVulkan(const Exec& exec) const;
  template <typename T>
  std::vector<T> download(size_t count = SIZE_MAX) const {
    std::vector<T> out(count == SIZE_MAX ? m_view.bytes() / sizeof(T) : count);
    download(out.data(), out.size() * sizeof(T));
    return out;
  }

 private:
  friend class Device;
  struct Memory;
  std::unique_ptr<Memory> m_memory;
  DeviceView m_view;
};

enum class Sharing {
  Auto,        // shared by Vulkan and CUDA where they drive the same GPU (zero-copy interop), else one backend's
  VulkanOnly,  // plain Vulkan memory (never CUDA's)
  // CUDA runs the ops and a Vulkan renderer reads their outputs: zero-copy where both drive one GPU, else (a renderer
  // on another GPU) each buffer has a CUDA side and a Vulkan side that DeviceBuffer::toVulkan copies.
  CudaToVulkan,
};

// A GPU and the backends that can drive it. With a Vulkan context, CUDA joins where it drives the same GPU (its
// device UUID matches and both export and import memory), and allocations are then shared by default. Without one,
// the device is CUDA's alone.
class Device {
 public:
  explicit Device(vk::Context* vulkan, Sharing sharing = Sharing::Auto);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Whether `backend` can run ops on this device's memory; else why not (for a skip or an error message).
  bool has(Backend backend) const { return !unavailable(backend); }
  std::optional<std::string> unavailable(Backend backend) const;
  // Throws armature::Error with the reason unless the backend can run here.
  void require(Backend backend) const;
  vk::Context* vulkan() const { return m_vulkan; }

  // `count` elements (at least one word is allocated, so an empty buffer still binds), contents undefined.
  // Vulkan usage: storage, vertex, index and transfer, so the renderer can draw from op outputs.
  DeviceBuffer allocate(ElementType type, size_t count);
  // For CUDA scratch and outputs that hold runs of equal values (a cleared z-buffer, background pixels): memory with
  // the GPU's compute data compression where it grants it, else plain. Where the device has CUDA the memory is
  // CUDA's alone (Vulkan cannot bind it); without CUDA this is allocate().
  DeviceBuffer allocateCompressible(ElementType type, size_t count);
  // A host's Vulkan buffer as `count` elements of `type` for this device's ops: Vulkan binds the host's buffer and,
  // where CUDA shares this device's GPU, CUDA writes the same memory, imported zero-copy (the host's memory must
  // then be exportable: VkExportMemoryAllocateInfo for VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT). The result owns
  // only the import; the host's buffer and memory must outlive it. Without CUDA it is a Vulkan view.
  struct HostAllocation {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize allocationSize = 0;  // the whole VkDeviceMemory's
    VkDeviceSize offset = 0;          // where the buffer is bound in it
    bool dedicated = false;           // allocated with VkMemoryDedicatedAllocateInfo for `buffer`
  };
  DeviceBuffer adopt(const HostAllocation& host, ElementType type, size_t count);
  template <typename T>
  DeviceBuffer upload(std::span<const T> data) {
    DeviceBuffer b = allocate(elementTypeOf<T>(), data.size());
    if (!data.empty()) b.upload(data);
    return b;
  }
  template <typename T>
  DeviceBuffer upload(const std::vector<T>& data) {
    return upload(std::span<const T>(data));
  }

  // Records `work` for `backend` (a fresh command buffer, or this device's own stream), submits it and waits, with a
  // finite timeout on Vulkan. For set-up, tests and one-off jobs; frames record into their own command buffers.
  void run(Backend backend, const std::function<void(const Exec&)>& work);

  // GPU times of `iters` calls of `work` after a warm-up (at least 3 calls and 250 ms of back-to-back calls: GPUs
  // clock down when idle). Vulkan: timestamp queries around each call; BackToBack records the calls into one
  // submission with a full barrier between them (each call's latency on a busy GPU: one submit-and-wait per call lets
  // some drivers keep the GPU in a low-power state, in which memory-bound calls run far below their bandwidth), and
  // zones the work opens on exec.stages() come back as stages; Submitted submits and waits for each call (a frame's
  // cost, e.g. the rasteriser's). CUDA: events around each call, each waited for, either way; each call is enqueued
  // behind a cuda::LaunchGate, so that its time is the GPU's, as Vulkan's timestamps are, and not the host's launches
  // (a call that waits on its own stream cannot be held, and is then timed as launched).
  enum class Timing { BackToBack, Submitted };
  struct Timings {
    std::vector<double> ms;                                           // per call
    std::vector<std::pair<std::string, std::vector<double>>> stages;  // per stage zone name, per call
  };
  Timings time(Backend backend, const std::function<void(const Exec&)>& work, int iters,
               Timing timing = Timing::BackToBack);

 private:
  struct CudaSide;
  DeviceBuffer allocate(ElementType type, size_t count, bool compressible);
  vk::Context* m_vulkan = nullptr;
  std::unique_ptr<CudaSide> m_cuda;
  std::string m_cudaMissing;  // why CUDA cannot run here (empty when it can)
  bool m_staged = false;      // CudaToVulkan across two GPUs: allocations are copied to Vulkan
};

// The most elements a CUDA view may hold: kernels index in 32 bits and step grid-strides of up to 2^26 past the end.
constexpr uint64_t kMaxCudaViewElements = uint64_t(1) << 31;

// Checks an op's arguments against its contract before any work is recorded; every message names the op and the
// argument. Ops make one at the top of each entry point.
class OpChecks {
 public:
  OpChecks(const char* op, const Exec& exec) : m_op(op), m_exec(exec) {}
  // `view` holds at least `count` elements of `type` that the exec's backend can address (alignment included).
  void view(const char* name, const DeviceView& view, ElementType type, size_t count) const;
  // As view(), or empty when the argument is optional and absent.
  void optionalView(const char* name, const DeviceView& view, ElementType type, size_t count) const;
  const Exec& exec() const { return m_exec; }

 private:
  const char* m_op;
  const Exec& m_exec;
};

// `floats` rounded up to a multiple of 64 (256 bytes): where a view that follows them in one buffer may start on any
// device (minStorageBufferOffsetAlignment is at most 256).
constexpr size_t bindableFloats(size_t floats) { return (floats + 63) / 64 * 64; }

// The one error for an op that the exec's backend does not have (or that this build does not contain).
[[noreturn]] void throwMissingBackend(const char* op, Backend backend);
// Why CUDA cannot run on this machine (not built, no driver, no device), or nothing when it can.
std::optional<std::string> cudaUnavailable();
// A backend by name: "auto" is CUDA where it runs, else Vulkan; any other name as parseBackend reads it.
Backend chooseBackend(std::string_view name);
// The first CUDA device's name, or empty where CUDA cannot run.
std::string cudaDeviceName();

}  // namespace armature
