#include "armature/interop/interop.h"
#include <volk.h>  // the library's own Vulkan function table

#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>

#include "armature/error.h"

namespace armature::interop {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string("interop: ") + what + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}
// Destructors must not throw: report and go on.
void report(cudaError_t e, const char* what) {
  if (e != cudaSuccess && e != cudaErrorCudartUnloading)
    std::cerr << "interop: " << what << ": " << cudaGetErrorString(e) << "\n";
}

Support computeSupport(const vk::Context& ctx) {
  Support s;
  const auto& info = ctx.info();
  if (auto why = cuda::unavailableReason()) {
    s.reason = "CUDA: " + *why;
    return s;
  }
  auto rt = cuda::queryRuntime();
  s.cudaDevice = rt.devices.empty() ? -1 : 0;
  for (auto& d : rt.devices)
    if (std::memcmp(d.uuid, info.deviceUuid, 16) == 0) {
      s.cudaDevice = d.index;
      break;
    }
  if (!info.externalMemoryFd) {
    s.reason = "Vulkan device '" + info.name + "' lacks VK_KHR_external_memory_fd";
    return s;
  }
  if (!info.externalSemaphoreFd) {
    s.reason = "Vulkan device '" + info.name + "' lacks VK_KHR_external_semaphore_fd";
    return s;
  }
  bool uuidMatch = false;
  for (auto& d : rt.devices) uuidMatch |= std::memcmp(d.uuid, info.deviceUuid, 16) == 0;
  if (!uuidMatch) {
    s.reason = "no CUDA device has the UUID of Vulkan device '" + info.name + "'";
    return s;
  }
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkPhysicalDeviceExternalSemaphoreInfo si{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO, &type};
  si.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkExternalSemaphoreProperties sp{VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
  vkGetPhysicalDeviceExternalSemaphoreProperties(info.handle, &si, &sp);
  if (!(sp.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT)) {
    s.reason = "Vulkan device '" + info.name + "' cannot export timeline semaphores as opaque fds";
    return s;
  }
  s.zeroCopy = true;
  return s;
}

bool useZeroCopy(const vk::Context& ctx, Path path) {
  Support s = probe(ctx);
  if (path == Path::ZeroCopy && !s.zeroCopy) throw Error("interop: zero-copy requested but unavailable: " + s.reason);
  return path != Path::Staging && s.zeroCopy;
}

void selectDevice(const vk::Context& ctx) {
  Support s = probe(ctx);
  if (s.cudaDevice < 0) throw Error("interop: no CUDA device (" + s.reason + ")");
  check(cudaSetDevice(s.cudaDevice), "cudaSetDevice");
}

}  // namespace

Support probe(const vk::Context& ctx) {
  static std::mutex mutex;
  static std::map<VkDevice, Support> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(ctx.device());
  if (it == cache.end()) it = cache.emplace(ctx.device(), computeSupport(ctx)).first;
  return it->second;
}

std::string describe(const Support& s) {
  if (s.zeroCopy)
    return "zero-copy (CUDA device " + std::to_string(s.cudaDevice) + " shares the Vulkan device's memory)";
  return "staging copies through pinned host memory: " + s.reason;
}

// ---- SharedBuffer --------------------------------------------------------------------------------------------

SharedBuffer::SharedBuffer(vk::Context& ctx, size_t bytes, Path path) : m_ctx(&ctx), m_bytes(bytes) {
  ARM_CHECK(bytes > 0, "SharedBuffer: size must be > 0");
  m_zeroCopy = useZeroCopy(ctx, path);
  selectDevice(ctx);
  VkDevice dev = ctx.device();
  try {
    VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
    ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, m_zeroCopy ? &ext : nullptr};
    bi.size = (bytes + 3) / 4 * 4;  // whole words, so shaders can address the tail
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VK_CHECK(vkCreateBuffer(dev, &bi, nullptr, &m_buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, m_buffer, &req);
    VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
    dedicated.buffer = m_buffer;
    VkExportMemoryAllocateInfo exportInfo{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, &dedicated};
    exportInfo.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, m_zeroCopy ? &exportInfo : nullptr};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = m_zeroCopy ? ctx.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                                    : ctx.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    VK_CHECK(vkAllocateMemory(dev, &ai, nullptr, &m_memory));
    VK_CHECK(vkBindBufferMemory(dev, m_buffer, m_memory, 0));
    if (m_zeroCopy) {
      VkMemoryGetFdInfoKHR fi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
      fi.memory = m_memory;
      fi.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
      int fd = -1;
      VK_CHECK(vkGetMemoryFdKHR(dev, &fi, &fd));
      cudaExternalMemoryHandleDesc desc{};
      desc.type = cudaExternalMemoryHandleTypeOpaqueFd;
      desc.handle.fd = fd;
      desc.size = req.size;
      desc.flags = cudaExternalMemoryDedicated;
      cudaExternalMemory_t extMem = nullptr;
      cudaError_t e = cudaImportExternalMemory(&extMem, &desc);
      if (e != cudaSuccess) close(fd);  // on success the fd belongs to CUDA
      check(e, "cudaImportExternalMemory");
      m_extMemory = extMem;
      cudaExternalMemoryBufferDesc bd{};
      bd.offset = 0;
      bd.size = bi.size;
      check(cudaExternalMemoryGetMappedBuffer(&m_cudaPtr, extMem, &bd), "cudaExternalMemoryGetMappedBuffer");
    } else {
      VK_CHECK(vkMapMemory(dev, m_memory, 0, VK_WHOLE_SIZE, 0, &m_mapped));
      check(cudaMalloc(&m_cudaPtr, bi.size), "cudaMalloc");
      check(cudaMallocHost(&m_pinned, bi.size), "cudaMallocHost");
    }
  } catch (...) {
    release();
    throw;
  }
}

SharedBuffer::~SharedBuffer() { release(); }

SharedBuffer::SharedBuffer(SharedBuffer&& o) noexcept { *this = std::move(o); }

SharedBuffer& SharedBuffer::operator=(SharedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    m_ctx = o.m_ctx;
    m_bytes = std::exchange(o.m_bytes, 0);
    m_zeroCopy = o.m_zeroCopy;
    m_buffer = std::exchange(o.m_buffer, VK_NULL_HANDLE);
    m_memory = std::exchange(o.m_memory, VK_NULL_HANDLE);
    m_mapped = std::exchange(o.m_mapped, nullptr);
    m_cudaPtr = std::exchange(o.m_cudaPtr, nullptr);
    m_extMemory = std::exchange(o.m_extMemory, nullptr);
    m_pinned = std::exchange(o.m_pinned, nullptr);
  }
  return *this;
}

void SharedBuffer::release() noexcept {
  if (!m_ctx) return;
  // CUDA's order: no work in flight, the mapped pointer freed, the imported memory destroyed; then Vulkan's objects.
  if (m_cudaPtr || m_extMemory || m_pinned) report(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (m_cudaPtr) report(cudaFree(m_cudaPtr), "cudaFree");
  if (m_extMemory)
    report(cudaDestroyExternalMemory(static_cast<cudaExternalMemory_t>(m_extMemory)), "cudaDestroyExternalMemory");
  if (m_pinned) report(cudaFreeHost(m_pinned), "cudaFreeHost");
  if (m_buffer) vkDestroyBuffer(m_ctx->device(), m_buffer, m_ctx->allocator());
  if (m_memory) vkFreeMemory(m_ctx->device(), m_memory, m_ctx->allocator());
  m_cudaPtr = m_extMemory = m_pinned = m_mapped = nullptr;
  m_buffer = VK_NULL_HANDLE;
  m_memory = VK_NULL_HANDLE;
}

ImportedMemory::ImportedMemory(vk::Context& ctx, VkDeviceMemory memory, VkDeviceSize allocationSize, bool dedicated) {
  const Support support = probe(ctx);
  if (!support.zeroCopy) throw Error("CUDA cannot import the host's memory: " + support.reason);
  ARM_CHECK(memory && allocationSize > 0, "import: the host's memory is missing or empty");
  cuda::setDevice(support.cudaDevice);
  VkMemoryGetFdInfoKHR fi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  fi.memory = memory;
  fi.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  const VkResult got = vkGetMemoryFdKHR(ctx.device(), &fi, &fd);
  if (got != VK_SUCCESS)
    throw Error(
        "import: vkGetMemoryFdKHR failed (" + vk::resultName(got) +
        "): allocate the memory with VkExportMemoryAllocateInfo for VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT");
  cudaExternalMemoryHandleDesc desc{};
  desc.type = cudaExternalMemoryHandleTypeOpaqueFd;
  desc.handle.fd = fd;
  desc.size = allocationSize;
  desc.flags = dedicated ? cudaExternalMemoryDedicated : 0;
  cudaExternalMemory_t extMem = nullptr;
  const cudaError_t e = cudaImportExternalMemory(&extMem, &desc);
  if (e != cudaSuccess) close(fd);  // on success the fd belongs to CUDA
  check(e, "cudaImportExternalMemory");
  m_extMemory = extMem;
  cudaExternalMemoryBufferDesc bd{};
  bd.size = allocationSize;
  const cudaError_t mapped = cudaExternalMemoryGetMappedBuffer(&m_cudaPtr, extMem, &bd);
  if (mapped != cudaSuccess) cudaDestroyExternalMemory(extMem);
  check(mapped, "cudaExternalMemoryGetMappedBuffer");
}

ImportedMemory::~ImportedMemory() {
  report(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // no kernel may still use it
  report(cudaFree(m_cudaPtr), "cudaFree");
  report(cudaDestroyExternalMemory(static_cast<cudaExternalMemory_t>(m_extMemory)), "cudaDestroyExternalMemory");
}

void SharedBuffer::toVulkan(void* stream) {
  if (m_zeroCopy) return;
  auto s = static_cast<cudaStream_t>(stream);
  check(cudaMemcpyAsync(m_pinned, m_cudaPtr, m_bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync D2H");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  std::memcpy(m_mapped, m_pinned, m_bytes);
}

void SharedBuffer::toCuda(void* stream) {
  if (m_zeroCopy) return;
  auto s = static_cast<cudaStream_t>(stream);
  std::memcpy(m_pinned, m_mapped, m_bytes);
  check(cudaMemcpyAsync(m_cudaPtr, m_pinned, m_bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync H2D");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");  // the pinned buffer is reused by the next copy
}

// ---- SharedTimeline ------------------------------------------------------------------------------------------

SharedTimeline::SharedTimeline(vk::Context& ctx, Path path) : m_ctx(ctx) {
  m_zeroCopy = useZeroCopy(ctx, path);
  VkExportSemaphoreCreateInfo exportInfo{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO};
  exportInfo.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, m_zeroCopy ? &exportInfo : nullptr};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type};
  VK_CHECK(vkCreateSemaphore(ctx.device(), &ci, ctx.allocator(), &m_semaphore));
  if (!m_zeroCopy) return;
  try {
    selectDevice(ctx);
    VkSemaphoreGetFdInfoKHR fi{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR};
    fi.semaphore = m_semaphore;
    fi.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    int fd = -1;
    VK_CHECK(vkGetSemaphoreFdKHR(ctx.device(), &fi, &fd));
    cudaExternalSemaphoreHandleDesc desc{};
    desc.type = cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd;
    desc.handle.fd = fd;
    cudaExternalSemaphore_t sem = nullptr;
    cudaError_t e = cudaImportExternalSemaphore(&sem, &desc);
    if (e != cudaSuccess) close(fd);
    check(e, "cudaImportExternalSemaphore");
    m_extSemaphore = sem;
  } catch (...) {
    vkDestroySemaphore(ctx.device(), m_semaphore, ctx.allocator());
    throw;
  }
}

SharedTimeline::~SharedTimeline() {
  if (m_extSemaphore)
    report(cudaDestroyExternalSemaphore(static_cast<cudaExternalSemaphore_t>(m_extSemaphore)),
           "cudaDestroyExternalSemaphore");
  vkDestroySemaphore(m_ctx.device(), m_semaphore, m_ctx.allocator());
}

void SharedTimeline::cudaWait(uint64_t value, const cuda::Stream& stream) {
  if (!m_zeroCopy) return hostWait(value);
  cudaExternalSemaphoreWaitParams p{};
  p.params.fence.value = value;
  auto sem = static_cast<cudaExternalSemaphore_t>(m_extSemaphore);
  check(cudaWaitExternalSemaphoresAsync(&sem, &p, 1, static_cast<cudaStream_t>(stream.handle())),
        "cudaWaitExternalSemaphoresAsync");
}

void SharedTimeline::cudaSignal(uint64_t value, const cuda::Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.handle());
  if (!m_zeroCopy) {
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    si.semaphore = m_semaphore;
    si.value = value;
    VK_CHECK(vkSignalSemaphore(m_ctx.device(), &si));
    return;
  }
  cudaExternalSemaphoreSignalParams p{};
  p.params.fence.value = value;
  auto sem = static_cast<cudaExternalSemaphore_t>(m_extSemaphore);
  check(cudaSignalExternalSemaphoresAsync(&sem, &p, 1, s), "cudaSignalExternalSemaphoresAsync");
}

uint64_t SharedTimeline::value() const {
  uint64_t v = 0;
  VK_CHECK(vkGetSemaphoreCounterValue(m_ctx.device(), m_semaphore, &v));
  return v;
}

void SharedTimeline::hostWait(uint64_t value, uint64_t timeoutNs) const {
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  wi.pSemaphores = &m_semaphore;
  wi.pValues = &value;
  VkResult r = vkWaitSemaphores(m_ctx.device(), &wi, timeoutNs);
  if (r == VK_TIMEOUT)
    throw Error("interop: timeline did not reach " + std::to_string(value) + " within " +
                std::to_string(timeoutNs / 1000000) + " ms (it is at " + std::to_string(this->value()) + ")");
  VK_CHECK(r);
}

// ---- FrameRing -----------------------------------------------------------------------------------------------

FrameRing::FrameRing(vk::Context& ctx, size_t slotBytes, uint32_t slots, Path path)
    : m_ready(ctx, path), m_consumed(ctx, path) {
  ARM_CHECK(slots >= 1 && slots <= 16, "FrameRing: %u slots; use 1..16", slots);
  for (uint32_t i = 0; i < slots; ++i) m_slots.emplace_back(ctx, slotBytes, path);
}

uint32_t FrameRing::beginFrame() {
  ++m_frame;
  uint64_t K = m_slots.size();
  if (m_frame >= 2 * K) {  // backpressure only: the GPU is 2K frames behind
    auto t0 = std::chrono::steady_clock::now();
    m_consumed.hostWait(m_frame + 1 - 2 * K);
    m_blockedMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return uint32_t(m_frame % K);
}

void FrameRing::cudaAcquire(const cuda::Stream& stream) {
  uint64_t K = m_slots.size();
  if (m_frame >= K) m_consumed.cudaWait(m_frame + 1 - K, stream);
  m_slots[m_frame % K].toCuda(stream);  // staging only; zero-copy: nothing
}

void FrameRing::cudaRelease(const cuda::Stream& stream) {
  m_slots[m_frame % m_slots.size()].toVulkan(stream);  // staging only
  m_ready.cudaSignal(m_frame + 1, stream);
}

void FrameRing::drain(uint64_t timeoutNs) {
  if (m_frame != UINT64_MAX) m_consumed.hostWait(m_frame + 1, timeoutNs);
}

}  // namespace armature::interop
