#include "armature/device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "armature/vk/timer.h"

#include "armature/error.h"

#if ARMATURE_HAS_CUDA
#include "armature/cuda/runtime.h"
#include "armature/interop/interop.h"
#endif

namespace armature {

namespace {
constexpr const char* kNoCudaBuild = "this build has no CUDA backend (configured with ARMATURE_CUDA=OFF)";
// CUDA kernels load float4 from any view: every CUDA view starts 16-byte aligned.
constexpr size_t kCudaAlignment = 16;
}  // namespace

size_t elementBytes(ElementType type) { return type == ElementType::Byte ? 1 : 4; }

const char* elementName(ElementType type) {
  switch (type) {
    case ElementType::Float32:
      return "float32";
    case ElementType::Int32:
      return "int32";
    case ElementType::UInt32:
      return "uint32";
    case ElementType::Byte:
      return "bytes";
  }
  return "?";
}

DeviceView DeviceView::slice(size_t first, size_t n) const {
  ARM_CHECK(first <= count && n <= count - first, "view slice [%zu, %zu) of %zu elements", first, first + n, count);
  DeviceView v = *this;
  v.offset += first * elementBytes(type);
  v.count = n;
  if (guardBytes) v.guardBytes += (count - first - n) * elementBytes(type);  // a guarded slice binds to the band
  return v;
}

DeviceView DeviceView::as(ElementType other) const {
  ARM_CHECK(bytes() % elementBytes(other) == 0, "a view of %zu bytes is not a whole number of %s", bytes(),
            elementName(other));
  DeviceView v = *this;
  v.type = other;
  v.count = bytes() / elementBytes(other);
  return v;
}

vk::BufferView DeviceView::vulkan() const { return {vkBuffer, offset, std::max<size_t>(bytes() + guardBytes, 4)}; }

DeviceView DeviceView::of(const vk::Buffer& buffer, ElementType type, size_t count) {
  const size_t whole = buffer.size() / elementBytes(type);
  ARM_CHECK(count == SIZE_MAX || count <= whole, "a view of %zu %s on a %zu-byte buffer", count, elementName(type),
            size_t(buffer.size()));
  return {buffer.handle(), nullptr, 0, count == SIZE_MAX ? whole : count, type};
}

DeviceView DeviceView::ofCuda(void* pointer, ElementType type, size_t count) {
  return {VK_NULL_HANDLE, pointer, 0, count, type};
}

Exec Exec::vulkan(vk::Context& ctx, VkCommandBuffer cmd, vk::GpuTimer* stages) {
  Exec e;
  e.m_backend = Backend::Vulkan;
  e.m_ctx = &ctx;
  e.m_cmd = cmd;
  e.m_stages = stages;
  return e;
}

Exec Exec::cuda(void* stream) {
  Exec e;
  e.m_backend = Backend::Cuda;
  e.m_stream = stream;
  return e;
}

void Exec::barrier() const {
  if (m_backend == Backend::Vulkan) vk::computeBarrier(m_cmd);
}

vk::Context& Exec::context() const {
  ARM_CHECK(m_ctx, "a %s exec has no Vulkan context", backendName(m_backend));
  return *m_ctx;
}

std::optional<std::string> cudaUnavailable() {
#if ARMATURE_HAS_CUDA
  return cuda::unavailableReason();
#else
  return std::string(kNoCudaBuild);
#endif
}

Backend chooseBackend(std::string_view name) {
  if (name != "auto") return parseBackend(name);
  return cudaUnavailable() ? Backend::Vulkan : Backend::Cuda;
}

std::string cudaDeviceName() {
#if ARMATURE_HAS_CUDA
  if (!cuda::unavailableReason()) {
    const cuda::RuntimeInfo runtime = cuda::queryRuntime();
    if (!runtime.devices.empty()) return runtime.devices[0].name;
  }
#endif
  return {};
}

void throwMissingBackend(const char* op, Backend backend) {
#if !ARMATURE_HAS_CUDA
  if (backend == Backend::Cuda) throw Error(std::string(op) + ": " + kNoCudaBuild);
#endif
  throw Error(std::string(op) + " has no " + backendName(backend) + " backend" +
              (backend == Backend::Cpu ? " (its CPU reference is the ...Ref function)" : ""));
}

void OpChecks::view(const char* name, const DeviceView& v, ElementType type, size_t count) const {
  ARM_CHECK(!v.empty(), "%s: %s is missing", m_op, name);
  ARM_CHECK(v.type == type, "%s: %s holds %s, expected %s", m_op, name, elementName(v.type), elementName(type));
  ARM_CHECK(v.count >= count, "%s: %s holds %zu elements, its shape needs %zu", m_op, name, v.count, count);
  switch (m_exec.backend()) {
    case Backend::Vulkan: {
      const auto& info = m_exec.context().info();
      ARM_CHECK(v.vkBuffer, "%s: %s is CUDA memory that Vulkan cannot bind (allocate it shared)", m_op, name);
      ARM_CHECK(v.offset % info.minStorageBufferOffsetAlignment == 0,
                "%s: %s starts %zu bytes into its buffer, not a multiple of the device's %llu", m_op, name, v.offset,
                (unsigned long long)info.minStorageBufferOffsetAlignment);
      // The whole view is bound (DeviceView::vulkan), and it holds at least what the op reads.
      ARM_CHECK(v.bytes() <= info.maxStorageBufferRange,
                "%s: %s spans %zu bytes, beyond the device's storage buffer range (maxStorageBufferRange %llu)%s", m_op,
                name, v.bytes(), (unsigned long long)info.maxStorageBufferRange,
                count * elementBytes(type) <= info.maxStorageBufferRange ? "; pass a slice of the elements the op reads"
                                                                         : "");
      break;
    }
    case Backend::Cuda:
      ARM_CHECK(v.cudaBase, "%s: %s is Vulkan memory that CUDA cannot address (allocate it shared)", m_op, name);
      ARM_CHECK(reinterpret_cast<uintptr_t>(v.cuda<char>()) % kCudaAlignment == 0,
                "%s: %s is not %zu-byte aligned for CUDA", m_op, name, kCudaAlignment);
      ARM_CHECK(count <= kMaxCudaViewElements,
                "%s: %s holds %zu elements, past the %llu that CUDA kernels index in 32 bits (split the call)", m_op,
                name, count, (unsigned long long)kMaxCudaViewElements);
      break;
    case Backend::Cpu:
      break;
  }
}

void OpChecks::optionalView(const char* name, const DeviceView& v, ElementType type, size_t count) const {
  if (!v.empty()) view(name, v, type, count);
}

// ---- memory -------------------------------------------------------------------------------------------------------

namespace {
constexpr uint32_t kGuardWord = 0x7fbadbadu;  // a NaN as a float, an index past any buffer as an integer
constexpr size_t kGuardBytes = 4096;
}  // namespace

struct DeviceBuffer::Memory {
  vk::Buffer vulkan;  // Vulkan only
#if ARMATURE_HAS_CUDA
  std::optional<interop::SharedBuffer> shared;
  cuda::DeviceMemory cuda;                          // CUDA only
  std::optional<interop::ImportedMemory> imported;  // a host's memory (Device::adopt)
#endif
  bool adopted = false;            // the memory is the host's (Device::adopt)
  vk::Context* guarded = nullptr;  // with a guard band (ContextOptions::guardBuffers): vulkan's context
  size_t guardOffset = 0, guardBytes = 0;

  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
    if (guardBytes) checkGuard();
  }
  // Reports a guard band that is no longer all canaries: a shader wrote past the buffer's end.
  void checkGuard() const noexcept {
    vk::Context& ctx = *guarded;
    try {
      std::vector<uint32_t> words(guardBytes / 4);
      vulkan.download(words.data(), guardBytes, guardOffset);
      size_t changed = 0, first = words.size();
      for (size_t i = 0; i < words.size(); ++i)
        if (words[i] != kGuardWord) changed++, first = std::min(first, i);
      if (changed)
        ctx.report(vk::MessageSeverity::Error,
                   detail::format("guard band: %zu words past the end of a %zu-byte buffer were written, the first "
                                  "%zu bytes past it (0x%08x): a shader wrote out of bounds",
                                  changed, guardOffset, first * 4, words[first]));
    } catch (const std::exception& e) {
      ctx.report(vk::MessageSeverity::Error, std::string("guard band: could not be read back: ") + e.what());
    }
  }
};

DeviceBuffer::DeviceBuffer() = default;
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;

bool DeviceBuffer::compressed() const {
#if ARMATURE_HAS_CUDA
  return m_memory && m_memory->cuda.compressed();
#else
  return false;
#endif
}

void DeviceBuffer::upload(const void* data, size_t bytes, size_t offset) {
  ARM_CHECK(m_memory && !m_memory->adopted,
            "upload into an empty buffer or one the host owns (Device::adopt: fill it there)");
  ARM_CHECK(offset + bytes <= m_view.bytes(), "upload of %zu bytes at %zu into a %zu-byte buffer", bytes, offset,
            m_view.bytes());
  if (!bytes) return;
  if (m_memory->vulkan) return m_memory->vulkan.upload(data, bytes, offset);
#if ARMATURE_HAS_CUDA
  cuda::copyToDevice(m_view.cuda<char>() + offset, data, bytes);
#endif
}

void DeviceBuffer::upload(const Exec& exec, const void* data, size_t bytes, size_t offset) {
  ARM_CHECK(m_memory && !m_memory->adopted,
            "upload into an empty buffer or one the host owns (Device::adopt: fill it there)");
  ARM_CHECK(offset <= m_view.bytes() && bytes <= m_view.bytes() - offset,
            "upload of %zu bytes at %zu into a %zu-byte buffer", bytes, offset, m_view.bytes());
  if (exec.backend() == Backend::Vulkan) {
    ARM_CHECK(m_view.vkBuffer, "a Vulkan upload into a buffer Vulkan cannot bind");
    return vk::recordUpload(exec.commandBuffer(), m_view.vkBuffer, offset, data, bytes);
  }
  ARM_CHECK(exec.backend() == Backend::Cuda && m_view.cudaBase, "a %s upload into a buffer it cannot address",
            backendName(exec.backend()));
#if ARMATURE_HAS_CUDA
  cuda::copyToDeviceAsync(m_view.cuda<char>() + offset, data, bytes, exec.stream());
#endif
}

void DeviceBuffer::toVulkan(const Exec& exec) const {
#if ARMATURE_HAS_CUDA
  if (m_memory && m_memory->shared && !m_memory->shared->zeroCopy()) m_memory->shared->toVulkan(exec.stream());
#else
  (void)exec;
#endif
}

void DeviceBuffer::download(void* data, size_t bytes, size_t offset) const {
  ARM_CHECK(m_memory && !m_memory->adopted,
            "download from an empty buffer or one the host owns (Device::adopt: read it there)");
  ARM_CHECK(offset + bytes <= m_view.bytes(), "download of %zu bytes at %zu from a %zu-byte buffer", bytes, offset,
            m_view.bytes());
  if (!bytes) return;
  if (m_memory->vulkan) return m_memory->vulkan.download(data, bytes, offset);
#if ARMATURE_HAS_CUDA
  cuda::copyToHost(data, m_view.cuda<char>() + offset, bytes);
#endif
}

void DeviceBuffer::fill(uint32_t pattern) {
  ARM_CHECK(m_memory && !m_memory->adopted, "fill of an empty buffer or one the host owns (Device::adopt)");
  if (m_memory->vulkan)  // not the guard band
    return m_memory->vulkan.fill(pattern, 0, m_memory->guardBytes ? m_memory->guardOffset : VK_WHOLE_SIZE);
#if ARMATURE_HAS_CUDA
  cuda::fill32(m_view.cudaBase, (m_view.bytes() + 3) / 4, pattern);
#endif
}

// ---- the device ---------------------------------------------------------------------------------------------------

// CUDA joins a device only where it can run: with a Vulkan context, only where their memory is shared.
struct Device::CudaSide {
#if ARMATURE_HAS_CUDA
  std::optional<cuda::Stream> stream;  // run()'s, made on first use
#endif
};

Device::Device(vk::Context* vulkan, Sharing sharing) : m_vulkan(vulkan) {
#if ARMATURE_HAS_CUDA
  if (vulkan && sharing == Sharing::VulkanOnly) {
    m_cudaMissing = "the device was opened for Vulkan only";
  } else if (auto why = cuda::unavailableReason()) {
    m_cudaMissing = *why;
  } else if (vulkan) {
    const interop::Support support = interop::probe(*vulkan);
    if (support.zeroCopy) {
      cuda::setDevice(support.cudaDevice);
      m_cuda = std::make_unique<CudaSide>();
    } else if (sharing == Sharing::CudaToVulkan) {
      m_cuda = std::make_unique<CudaSide>();
      m_staged = true;
    } else {
      m_cudaMissing = "CUDA cannot share Vulkan device '" + vulkan->info().name + "': " + support.reason;
    }
  } else {
    m_cuda = std::make_unique<CudaSide>();
  }
#else
  (void)sharing;
  m_cudaMissing = kNoCudaBuild;
#endif
}

Device::~Device() = default;

std::optional<std::string> Device::unavailable(Backend backend) const {
  switch (backend) {
    case Backend::Vulkan:
      if (!m_vulkan) return std::string("the device has no Vulkan context");
      if (m_staged) return "its memory is CUDA's, copied to Vulkan ('" + m_vulkan->info().name + "' is another GPU)";
      return std::nullopt;
    case Backend::Cuda:
      if (!m_cuda) return m_cudaMissing;
      return std::nullopt;
    case Backend::Cpu:
      return std::string("device ops run on Vulkan or CUDA; the CPU runs their ...Ref references");
  }
  return std::string("unknown backend");
}

void Device::require(Backend backend) const {
  if (auto why = unavailable(backend)) throw Error(std::string(backendName(backend)) + ": " + *why);
}

DeviceBuffer Device::allocate(ElementType type, size_t count) { return allocate(type, count, false); }

DeviceBuffer Device::allocateCompressible(ElementType type, size_t count) { return allocate(type, count, true); }

DeviceBuffer Device::allocate(ElementType type, size_t count, bool compressible) {
  ARM_CHECK(m_vulkan || m_cuda, "a device without Vulkan or CUDA cannot allocate (%s)", m_cudaMissing.c_str());
  (void)compressible;  // a build without CUDA has no compressible memory
  DeviceBuffer b;
  b.m_memory = std::make_unique<DeviceBuffer::Memory>();
  const size_t bytes = std::max<size_t>(count * elementBytes(type), 4);
  b.m_view = {VK_NULL_HANDLE, nullptr, 0, count, type};
#if ARMATURE_HAS_CUDA
  if (m_cuda && (compressible || !m_vulkan)) {  // CUDA's alone
    b.m_memory->cuda =
        cuda::DeviceMemory(bytes, compressible ? cuda::MemoryKind::Compressible : cuda::MemoryKind::Plain);
    b.m_view.cudaBase = b.m_memory->cuda.data();
    return b;
  }
  if (m_cuda) {  // shared: exported by Vulkan, imported by CUDA
    b.m_memory->shared.emplace(*m_vulkan, bytes, m_staged ? interop::Path::Staging : interop::Path::ZeroCopy);
    b.m_view.vkBuffer = b.m_memory->shared->buffer();
    b.m_view.cudaBase = b.m_memory->shared->cudaPointer();
    return b;
  }
#endif
  // A guard band fits within the storage buffer range, so that every view of the buffer binds through it.
  const size_t padded = (bytes + 3) / 4 * 4, range = m_vulkan->info().maxStorageBufferRange;
  const size_t guard =
      m_vulkan->guardsBuffers() && padded < range ? std::min(kGuardBytes, (range - padded) / 4 * 4) : 0;
  b.m_memory->vulkan =
      vk::Buffer(*m_vulkan, padded + guard,
                 vk::kStorageUsage | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_INDEX_BUFFER_BIT);
  b.m_view.vkBuffer = b.m_memory->vulkan.handle();
  if (guard) {
    b.m_memory->vulkan.fill(kGuardWord, padded, guard);
    b.m_memory->guarded = m_vulkan, b.m_memory->guardOffset = padded, b.m_memory->guardBytes = guard;
    b.m_view.guardBytes = padded + guard - count * elementBytes(type);
  }
  return b;
}

DeviceBuffer Device::adopt(const HostAllocation& host, ElementType type, size_t count) {
  ARM_CHECK(m_vulkan, "adopt: the device has no Vulkan context");
  ARM_CHECK(host.buffer && host.memory, "adopt: the host's buffer and memory are both required");
  size_t bytes = 0;
  ARM_CHECK(!__builtin_mul_overflow(count, elementBytes(type), &bytes) && host.offset <= host.allocationSize &&
                bytes <= host.allocationSize - host.offset,
            "adopt: %zu %s at byte %llu do not fit the host's %llu-byte allocation", count, elementName(type),
            (unsigned long long)host.offset, (unsigned long long)host.allocationSize);
  DeviceBuffer b;
  b.m_memory = std::make_unique<DeviceBuffer::Memory>();
  b.m_memory->adopted = true;
  b.m_view = {host.buffer, nullptr, 0, count, type};
#if ARMATURE_HAS_CUDA
  if (m_cuda) {
    b.m_memory->imported.emplace(*m_vulkan, host.memory, host.allocationSize, host.dedicated);
    b.m_view.cudaBase = static_cast<char*>(b.m_memory->imported->cudaPointer()) + host.offset;
  }
#endif
  return b;
}

void Device::run(Backend backend, const std::function<void(const Exec&)>& work) {
  require(backend);
  if (backend == Backend::Vulkan) {
    m_vulkan->submitAndWait([&](VkCommandBuffer cmd) { work(Exec::vulkan(*m_vulkan, cmd)); });
    return;
  }
#if ARMATURE_HAS_CUDA
  if (!m_cuda->stream) m_cuda->stream.emplace();
  work(Exec::cuda(m_cuda->stream->handle()));
  m_cuda->stream->synchronize();
#endif
}

namespace {
// At least 3 calls and 250 ms of them.
class WarmUp {
 public:
  bool done() {
    if (m_calls++ < 3) return false;
    return std::chrono::steady_clock::now() - m_start >= std::chrono::milliseconds(250);
  }

 private:
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  int m_calls = 0;
};
}  // namespace

Device::Timings Device::time(Backend backend, const std::function<void(const Exec&)>& work, int iters, Timing timing) {
  require(backend);
  ARM_CHECK(iters >= 1, "time: %d calls", iters);
  Timings t;
  if (backend == Backend::Vulkan && timing == Timing::Submitted) {
    vk::GpuTimer timer(*m_vulkan, 2, 1);
    auto once = [&](uint64_t frame) {
      m_vulkan->submitAndWait([&](VkCommandBuffer cmd) {
        timer.beginFrame(cmd, frame);
        const uint32_t zone = timer.beginZone(cmd, "call");
        work(Exec::vulkan(*m_vulkan, cmd));
        timer.endZone(cmd, zone);
      });
      return timer.waitFrame(frame)[0].milliseconds;
    };
    uint64_t frame = 0;
    for (WarmUp w; !w.done();) once(frame++);
    for (int k = 0; k < iters; ++k) t.ms.push_back(once(frame++));
    return t;
  }
  if (backend == Backend::Vulkan) {
    vk::Context& ctx = *m_vulkan;
    constexpr uint32_t kZonesPerCall = 8;
    vk::GpuTimer timer(ctx, 1, uint32_t(iters) * kZonesPerCall);
    auto calls = [&](int n, vk::GpuTimer* zones, VkCommandBuffer cmd) {
      for (int i = 0; i < n; ++i) {
        const uint32_t z = zones ? zones->beginZone(cmd, "call") : 0;
        work(Exec::vulkan(ctx, cmd, zones));
        if (zones) zones->endZone(cmd, z);
        vk::computeBarrier(cmd);
      }
    };
    // Warm-up submissions of max(iters, 10) calls, or of about the warm-up's 250 ms where one call is slow (lavapipe
    // under sanitizers): ten slow calls in one submission would near its timeout.
    const auto first = std::chrono::steady_clock::now();
    ctx.submitAndWait([&](VkCommandBuffer cmd) { calls(1, nullptr, cmd); });
    const double oneMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first).count();
    const int batch = std::clamp(int(250.0 / std::max(oneMs, 1e-3)), 1, std::max(iters, 10));
    for (WarmUp w; !w.done();) ctx.submitAndWait([&](VkCommandBuffer cmd) { calls(batch, nullptr, cmd); });
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      timer.beginFrame(cmd, 0);
      calls(iters, &timer, cmd);
    });
    for (const auto& z : timer.waitFrame(0)) {
      if (z.name == "call") {
        t.ms.push_back(z.milliseconds);
        continue;
      }
      auto it = std::find_if(t.stages.begin(), t.stages.end(), [&](const auto& e) { return e.first == z.name; });
      if (it == t.stages.end()) it = t.stages.insert(t.stages.end(), {z.name, {}});
      it->second.push_back(z.milliseconds);
    }
    return t;
  }
#if ARMATURE_HAS_CUDA
  cuda::Stream stream;
  cuda::EventTimer timer;
  cuda::LaunchGate gate;
  // The first call is not held: CUDA loads a kernel's module at its first launch, and that load waits for the
  // kernels running, the gate's among them.
  bool gated = false;
  const Exec exec = Exec::cuda(stream.handle());
  auto once = [&] {
    if (gated) gate.hold(stream);
    timer.start(stream);
    work(exec);
    timer.stop(stream);
    if (gated && !gate.open()) {
      gated = false;  // the call waits on its own stream: time its later calls as the host launches them
      std::fprintf(stderr, "Device::time: the timed call waits on its stream; its times include the host's launches\n");
    }
    return double(timer.milliseconds());
  };
  once();
  gated = true;
  for (WarmUp w; !w.done();) once();
  for (int k = 0; k < iters; ++k) t.ms.push_back(once());
#endif
  return t;
}

}  // namespace armature
