#include "armature/cuda/runtime.h"
#include "check.h"

#include <cstring>
#include <iostream>

namespace armature::cuda {

bool compiled() { return true; }

std::optional<std::string> unavailableReason() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later queries start clean
    return std::string("no usable CUDA driver/device: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  }
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
    cudaGetLastError();
    info.error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
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

DeviceMemory::DeviceMemory(size_t bytes) : m_bytes(bytes) {
  ARM_CHECK(bytes > 0, "a CUDA allocation needs a size > 0");
  cudaError_t e = cudaMalloc(&m_ptr, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    m_ptr = nullptr;
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes on the CUDA device: " + cudaGetErrorString(e));
  }
}
void DeviceMemory::reset() {
  if (m_ptr) {
    cudaError_t e = cudaFree(m_ptr);
    if (e != cudaSuccess && e != cudaErrorCudartUnloading) std::cerr << "cudaFree: " << cudaGetErrorString(e) << "\n";
  }
  m_ptr = nullptr;
  m_bytes = 0;
}
void DeviceMemory::upload(const void* src, size_t bytes, size_t offset) {
  ARM_CHECK(offset + bytes <= m_bytes, "upload of %zu bytes at %zu overflows a %zu-byte allocation", bytes, offset, m_bytes);
  if (!bytes) return;
  CUDA_CHECK(cudaMemcpy(static_cast<char*>(m_ptr) + offset, src, bytes, cudaMemcpyHostToDevice));
  // A pageable H2D cudaMemcpy may return before its DMA lands, and our streams are non-blocking (they do not
  // order against the legacy stream): wait, so the data is there for work on any stream.
  CUDA_CHECK(cudaDeviceSynchronize());
}
void DeviceMemory::uploadAsync(const void* src, size_t bytes, const Stream& stream, size_t offset) {
  ARM_CHECK(offset + bytes <= m_bytes, "upload of %zu bytes at %zu overflows a %zu-byte allocation", bytes, offset, m_bytes);
  if (bytes)
    CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(m_ptr) + offset, src, bytes, cudaMemcpyHostToDevice,
                               static_cast<cudaStream_t>(stream.handle())));
}

void DeviceMemory::download(void* dst, size_t bytes, size_t offset) const {
  ARM_CHECK(offset + bytes <= m_bytes, "download of %zu bytes at %zu overflows a %zu-byte allocation", bytes, offset, m_bytes);
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, static_cast<const char*>(m_ptr) + offset, bytes, cudaMemcpyDeviceToHost));
}

namespace {
__global__ void fill32Kernel(uint32_t* p, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = v;
}
__global__ void axpyKernel(float a, const float* __restrict__ x, float* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = a * x[i] + y[i];
}
unsigned gridFor(size_t n, unsigned block) { return unsigned(std::min<size_t>((n + block - 1) / block, 65535 * 8)); }
}  // namespace

void DeviceMemory::fill32(uint32_t pattern) {
  size_t n = m_bytes / 4;
  if (!n) return;
  fill32Kernel<<<gridFor(n, 256), 256>>>(static_cast<uint32_t*>(m_ptr), n, pattern);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

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

void Graph::launch(const Stream& stream) { CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(m_exec), raw(stream))); }

EventTimer::EventTimer() {
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
void EventTimer::start(const Stream& s) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_start), static_cast<cudaStream_t>(s.handle())));
}
void EventTimer::stop(const Stream& s) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_stop), static_cast<cudaStream_t>(s.handle())));
}
float EventTimer::milliseconds() {
  CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(m_stop)));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(m_start), static_cast<cudaEvent_t>(m_stop)));
  return ms;
}

void axpy(float a, const float* x, float* y, size_t n, const Stream& stream) {
  if (n == 0) return;
  ARM_CHECK(x && y, "axpy: null device pointer");
  axpyKernel<<<gridFor(n, 256), 256, 0, static_cast<cudaStream_t>(stream.handle())>>>(a, x, y, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
