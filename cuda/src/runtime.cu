#include "armature/cuda/runtime.h"
#include "check.h"

#include <cuda.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <iostream>

namespace armature::cuda {

bool compiled() { return true; }

namespace {
// Why cudaGetDeviceCount failed, in words a user can act on. Without any NVIDIA driver the runtime says "CUDA
// driver version is insufficient", which reads as "upgrade the driver"; the driver version is then 0.
std::string deviceCountFailure(cudaError_t e) {
  cudaGetLastError();  // clear the sticky-free error so later queries start clean
  int driver = -1;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
    return "no NVIDIA driver is installed (CUDA needs an NVIDIA GPU and its driver; the Vulkan backend runs on any "
           "GPU: --backend vulkan, or auto)";
  return std::string("no usable CUDA driver/device: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
}
}  // namespace

std::optional<std::string> unavailableReason() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return deviceCountFailure(e);
  if (count == 0) return std::string("no CUDA device present");
  return std::nullopt;
}

RuntimeInfo queryRuntime() {
  RuntimeInfo info;
  cudaDriverGetVersion(&info.driverVersion);
  cudaRuntimeGetVersion(&info.runtimeVersion);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.error = deviceCountFailure(e);
    return info;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.computeMajor = p.major;
    d.computeMinor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    d.totalBytes = p.totalGlobalMem;
    std::memcpy(d.uuid, p.uuid.bytes, 16);
    info.devices.push_back(d);
  }
  return info;
}

void setDevice(int index) { CUDA_CHECK(cudaSetDevice(index)); }

std::pair<size_t, size_t> memoryInfo() {
  size_t freeBytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&freeBytes, &total));
  return {freeBytes, total};
}

Stream::Stream() {
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  m_handle = s;
}
Stream::~Stream() {
  if (m_handle) cudaStreamDestroy(static_cast<cudaStream_t>(m_handle));
}
void Stream::synchronize() { CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(m_handle))); }

namespace {
// The driver's virtual-memory calls, which the runtime does not wrap, through the runtime's entry-point query (no
// link against libcuda). Null members where the driver lacks them.
struct VirtualMemoryApi {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemGetAllocationPropertiesFromHandle) properties = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) addressFree = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) setAccess = nullptr;
  bool complete() const {
    return granularity && create && properties && release && reserve && addressFree && map && unmap && setAccess;
  }
};
const VirtualMemoryApi& virtualMemoryApi() {
  static const VirtualMemoryApi api = [] {
    VirtualMemoryApi a;
    auto get = [](const char* name, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult status{};
      if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status) == cudaSuccess &&
          status == cudaDriverEntryPointSuccess)
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      else
        cudaGetLastError();
    };
    get("cuMemGetAllocationGranularity", a.granularity);
    get("cuMemCreate", a.create);
    get("cuMemGetAllocationPropertiesFromHandle", a.properties);
    get("cuMemRelease", a.release);
    get("cuMemAddressReserve", a.reserve);
    get("cuMemAddressFree", a.addressFree);
    get("cuMemMap", a.map);
    get("cuMemUnmap", a.unmap);
    get("cuMemSetAccess", a.setAccess);
    return a;
  }();
  return api;
}
}  // namespace

DeviceMemory::DeviceMemory(size_t bytes, MemoryKind kind) : m_bytes(bytes) {
  ARM_CHECK(bytes > 0, "a CUDA allocation needs a size > 0");
  if (kind == MemoryKind::Compressible && allocateCompressible(bytes)) return;
  cudaError_t e = cudaMalloc(&m_ptr, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    m_ptr = nullptr;
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes on the CUDA device: " + cudaGetErrorString(e));
  }
}

// Compressible device memory mapped at a fresh address, or false (nothing held) where the device has no compression
// or does not grant it: the caller then allocates plain memory.
bool DeviceMemory::allocateCompressible(size_t bytes) {
  int device = 0, supported = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(
      cudaDeviceGetAttribute(&supported, cudaDeviceAttr(CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED), device));
  const VirtualMemoryApi& api = virtualMemoryApi();
  if (!supported || !api.complete()) return false;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  size_t granularity = 0;
  if (api.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS || !granularity)
    return false;
  const size_t size = (bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle{};
  if (api.create(&handle, size, &prop, 0) != CUDA_SUCCESS) return false;
  CUmemAllocationProp granted{};
  CUdeviceptr address = 0;
  bool ok = api.properties(&granted, handle) == CUDA_SUCCESS &&
            granted.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC &&
            api.reserve(&address, size, granularity, 0, 0) == CUDA_SUCCESS;
  if (ok && api.map(address, size, 0, handle, 0) != CUDA_SUCCESS) {
    api.addressFree(address, size);
    ok = false;
  }
  api.release(handle);  // a mapping keeps the memory until it is unmapped
  if (!ok) return false;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (api.setAccess(address, size, &access, 1) != CUDA_SUCCESS) {
    api.unmap(address, size);
    api.addressFree(address, size);
    return false;
  }
  m_ptr = reinterpret_cast<void*>(address);
  m_mappedBytes = size;
  return true;
}

void DeviceMemory::reset() {
  if (m_ptr && m_mappedBytes) {
    // As cudaFree, wait for work that may still use the memory: unmapping does not.
    cudaError_t e = cudaDeviceSynchronize();
    const VirtualMemoryApi& api = virtualMemoryApi();
    const auto address = reinterpret_cast<CUdeviceptr>(m_ptr);
    if (e == cudaErrorCudartUnloading) {
      // process exit: the driver releases the mapping with the context
    } else if (e != cudaSuccess || api.unmap(address, m_mappedBytes) != CUDA_SUCCESS ||
               api.addressFree(address, m_mappedBytes) != CUDA_SUCCESS) {
      std::cerr << "freeing compressible CUDA memory failed"
                << (e != cudaSuccess ? std::string(": ") + cudaGetErrorString(e) : "") << "\n";
    }
  } else if (m_ptr) {
    cudaError_t e = cudaFree(m_ptr);
    if (e != cudaSuccess && e != cudaErrorCudartUnloading) std::cerr << "cudaFree: " << cudaGetErrorString(e) << "\n";
  }
  m_ptr = nullptr;
  m_bytes = 0;
  m_mappedBytes = 0;
}
void DeviceMemory::upload(const void* src, size_t bytes, size_t offset) {
  ARM_CHECK(offset + bytes <= m_bytes, "upload of %zu bytes at %zu overflows a %zu-byte allocation", bytes, offset,
            m_bytes);
  if (!bytes) return;
  CUDA_CHECK(cudaMemcpy(static_cast<char*>(m_ptr) + offset, src, bytes, cudaMemcpyHostToDevice));
  // A pageable H2D cudaMemcpy may return before its DMA lands, and our streams are non-blocking (they do not
  // order against the legacy stream): wait, so the data is there for work on any stream.
  CUDA_CHECK(cudaDeviceSynchronize());
}
void DeviceMemory::uploadAsync(const void* src, size_t bytes, const Stream& stream, size_t offset) {
  ARM_CHECK(offset + bytes <= m_bytes, "upload of %zu bytes at %zu overflows a %zu-byte allocation", bytes, offset,
            m_bytes);
  copyToDeviceAsync(static_cast<char*>(m_ptr) + offset, src, bytes, stream.handle());
}

void DeviceMemory::download(void* dst, size_t bytes, size_t offset) const {
  ARM_CHECK(offset + bytes <= m_bytes, "download of %zu bytes at %zu overflows a %zu-byte allocation", bytes, offset,
            m_bytes);
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, static_cast<const char*>(m_ptr) + offset, bytes, cudaMemcpyDeviceToHost));
}

namespace {
__global__ void fill32Kernel(uint32_t* p, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = v;
}
unsigned gridFor(size_t n, unsigned block) { return unsigned(std::min<size_t>((n + block - 1) / block, 65535 * 8)); }
}  // namespace

void DeviceMemory::fill32(uint32_t pattern) { cuda::fill32(m_ptr, m_bytes / 4, pattern); }

Graph::Graph(const Stream& stream, const std::function<void(const Stream&)>& record) {
  cudaStream_t s = raw(stream);
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    record(stream);
  } catch (...) {
    cudaStreamEndCapture(s, &graph);  // leave the stream usable
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  if (cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess) {
    cudaGraphDestroy(graph);
    CUDA_CHECK(e);
  }
  m_graph = graph;
  m_exec = exec;
}

Graph::~Graph() {
  if (m_exec) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(m_exec));
  if (m_graph) cudaGraphDestroy(static_cast<cudaGraph_t>(m_graph));
}

void Graph::launch(const Stream& stream) {
  CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(m_exec), raw(stream)));
}

namespace {
int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// One per process and device: an event recorded on an idle stream of its own runs between the host's record call
// and the moment a spinning query first sees it done. Of a few such events the one with the tightest interval is
// the anchor, its host time the interval's midpoint: placed to within half that interval (a few µs).
struct HostClockAnchor {
  static constexpr int kTries = 5;
  int device = -1;
  cudaStream_t stream = nullptr;
  cudaEvent_t events[kTries] = {};
  cudaEvent_t event = nullptr;  // the anchor: one of events
  int64_t hostNs = 0;
  void renew() {
    int current = 0;
    CUDA_CHECK(cudaGetDevice(&current));
    if (current != device) {  // events of another device cannot be compared with this one's
      for (auto& e : events)
        if (e) cudaEventDestroy(e), e = nullptr;
      if (stream) cudaStreamDestroy(stream);
      CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      for (auto& e : events) CUDA_CHECK(cudaEventCreate(&e));
      device = current;
    }
    int64_t tightest = INT64_MAX;
    for (cudaEvent_t e : events) {
      const int64_t before = steadyNowNs();
      CUDA_CHECK(cudaEventRecord(e, stream));
      cudaError_t status;
      while ((status = cudaEventQuery(e)) == cudaErrorNotReady) {
      }
      CUDA_CHECK(status);
      const int64_t after = steadyNowNs();
      if (after - before < tightest) tightest = after - before, event = e, hostNs = before + (after - before) / 2;
    }
  }
};
std::mutex g_anchorMutex;
HostClockAnchor g_anchor;  // never destroyed explicitly: the driver releases it at exit
// Every timer's events come after an anchor of their device, so elapsed times from it are positive.
void ensureAnchor() {
  int current = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  if (g_anchor.device != current) g_anchor.renew();
}
}  // namespace

EventTimer::EventTimer() {
  {
    std::lock_guard<std::mutex> lock(g_anchorMutex);
    ensureAnchor();
  }
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  m_start = a;
  m_stop = b;
}
EventTimer::~EventTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(m_start));
  cudaEventDestroy(static_cast<cudaEvent_t>(m_stop));
}
void EventTimer::start(void* stream) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_start), static_cast<cudaStream_t>(stream)));
}
void EventTimer::stop(void* stream) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_stop), static_cast<cudaStream_t>(stream)));
}
float EventTimer::milliseconds() {
  CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(m_stop)));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(m_start), static_cast<cudaEvent_t>(m_stop)));
  return ms;
}

int64_t EventTimer::startHostNs() {
  std::lock_guard<std::mutex> lock(g_anchorMutex);
  ensureAnchor();
  CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(m_start)));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, g_anchor.event, static_cast<cudaEvent_t>(m_start)));
  int64_t ns = g_anchor.hostNs + int64_t(double(ms) * 1e6);
  if (ms > 1000.0f) g_anchor.renew();  // later events: measured from a fresh anchor
  return ns;
}

namespace {
__global__ void launchGateKernel(volatile uint32_t* words, uint32_t generation, uint64_t timeoutNs) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (words[0] != generation) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeoutNs) {
      words[1] = generation;
      return;
    }
    __nanosleep(1000);
  }
}
}  // namespace

LaunchGate::LaunchGate(std::chrono::milliseconds timeout) : m_timeoutNs(uint64_t(timeout.count()) * 1000000u) {
  CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&m_words), 2 * sizeof(uint32_t), cudaHostAllocMapped));
  m_words[0] = m_words[1] = 0;
}
LaunchGate::~LaunchGate() {
  if (m_held) open();
  cudaFreeHost(m_words);
}
void LaunchGate::hold(const Stream& s) {
  ARM_CHECK(!m_held, "LaunchGate::hold: the gate is already held");
  uint32_t* device = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), m_words, 0));
  launchGateKernel<<<1, 1, 0, static_cast<cudaStream_t>(s.handle())>>>(device, ++m_generation, m_timeoutNs);
  CUDA_CHECK_LAUNCH();
  m_held = true;
}
bool LaunchGate::open() {
  if (!m_held) return true;
  m_held = false;
  reinterpret_cast<volatile uint32_t*>(m_words)[0] = m_generation;
  return reinterpret_cast<volatile uint32_t*>(m_words)[1] != m_generation;
}

void copyToDevice(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());  // as DeviceMemory::upload: pageable copies may return before landing
}

void copyToDeviceAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
}

void copyToHost(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  CUDA_CHECK(cudaDeviceSynchronize());  // after work on every stream, not only the legacy one
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void fill32(void* dst, size_t words, uint32_t pattern) {
  if (!words) return;
  fill32Kernel<<<gridFor(words, 256), 256>>>(static_cast<uint32_t*>(dst), words, pattern);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace armature::cuda
