#pragma once
// The CUDA backend's runtime helpers. No CUDA types appear here, so code built without nvcc includes it;
// in a build with ARMATURE_CUDA=OFF every call reports that CUDA was not built.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace armature::cuda {

// True when this build contains the CUDA backend.
bool compiled();

// Why CUDA cannot run here (not built, no driver, no device), or nothing when a device is usable.
std::optional<std::string> unavailableReason();

struct DeviceInfo {
  int index = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  size_t totalBytes = 0;
  uint8_t uuid[16] = {};
};

struct RuntimeInfo {
  int driverVersion = 0;  // e.g. 13000 for 13.0; 0 when there is no driver
  int runtimeVersion = 0;
  std::vector<DeviceInfo> devices;
  std::string error;  // set when the devices could not be listed
};
RuntimeInfo queryRuntime();

// Free and total bytes of the current device.
std::pair<size_t, size_t> memoryInfo();

// Makes `index` the current device of the calling thread.
void setDevice(int index);

// A non-blocking stream owned by this object.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& o) noexcept : m_handle(std::exchange(o.m_handle, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  void* handle() const { return m_handle; }  // a cudaStream_t
  void synchronize();

 private:
  void* m_handle = nullptr;
};

// Where a DeviceMemory's bytes live. Compressible asks for the device's compute data compression (cuMemCreate with
// CU_MEM_ALLOCATION_COMP_GENERIC: compute capability 8.0 and later): L2 then moves runs of equal values, such as a
// cleared z-buffer or background pixels, to and from DRAM compressed, which the rasteriser's scratch and outputs gain
// from. Where the device has no compression, or does not grant it for this allocation, the memory is plain
// (DeviceMemory::compressed says which).
enum class MemoryKind { Plain, Compressible };

// Owner of a device allocation (move-only).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes, MemoryKind kind = MemoryKind::Plain);
  ~DeviceMemory() { reset(); }
  DeviceMemory(DeviceMemory&& o) noexcept { *this = std::move(o); }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    if (this != &o) {
      reset();
      m_ptr = std::exchange(o.m_ptr, nullptr);
      m_bytes = std::exchange(o.m_bytes, 0);
      m_mappedBytes = std::exchange(o.m_mappedBytes, 0);
    }
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* data() const { return m_ptr; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(m_ptr);
  }
  size_t bytes() const { return m_bytes; }
  bool compressed() const { return m_mappedBytes != 0; }  // granted compressible memory
  // Synchronous copies (set-up and tests, not hot paths): they return when the bytes have landed and order
  // against work on every stream.
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  // A stream-ordered host-to-device copy for hot paths: work later on `stream` sees the bytes; `src` must stay
  // unchanged until the stream has passed the copy.
  void uploadAsync(const void* src, size_t bytes, const Stream& stream, size_t offset = 0);
  void fill32(uint32_t pattern);  // every 32-bit word (NaN poisoning)

  template <typename T>
  static DeviceMemory from(const std::vector<T>& v) {
    DeviceMemory m(std::max<size_t>(v.size() * sizeof(T), 4));
    m.upload(v.data(), v.size() * sizeof(T));
    return m;
  }
  template <typename T>
  std::vector<T> download(size_t count) const {
    std::vector<T> out(count);
    download(out.data(), count * sizeof(T));
    return out;
  }

 private:
  void reset();
  bool allocateCompressible(size_t bytes);
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
  size_t m_mappedBytes = 0;  // the mapping's size (a multiple of the granularity) of compressible memory, else 0
};

// The work `record` enqueues on `stream`, captured once as a CUDA graph and replayed with launch() (one launch for
// many kernels, e.g. a frame's). Replays read the same device pointers: update inputs in place between them.
class Graph {
 public:
  Graph(const Stream& stream, const std::function<void(const Stream&)>& record);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void launch(const Stream& stream);

 private:
  void* m_graph = nullptr;  // cudaGraph_t
  void* m_exec = nullptr;   // cudaGraphExec_t
};

// Times device work on a stream with a pair of CUDA events.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(const Stream& s) { start(s.handle()); }
  void stop(const Stream& s) { stop(s.handle()); }
  void start(void* stream);  // a cudaStream_t (an Exec's)
  void stop(void* stream);
  float milliseconds();  // waits for the stop event
  // When the start event ran, on the host's steady clock (ns since its epoch; CLOCK_MONOTONIC on Linux), after
  // milliseconds(). Measured against an anchor event recorded on an idle stream, whose host time is known to within
  // a few µs (the tightest of a few record-to-completion intervals), renewed every second so the float milliseconds
  // between the two events keep sub-µs precision.
  int64_t startHostNs();

 private:
  void* m_start = nullptr;
  void* m_stop = nullptr;
};

// Holds a stream's work until opened, so that events around work enqueued behind it time the GPU alone: a call's
// kernels then start back to back, as on a busy GPU, not each when the host gets round to launching it (nvbench's
// blocking kernel). hold() enqueues a one-thread kernel that spins on a word of mapped host memory; open() sets the
// word. The kernel gives up after `timeout` so that a caller waiting on the stream while it is held stalls for that
// long, never for ever; open() returns false when it had given up (the held work was then not back to back). Launch
// each kernel once before holding: its first launch loads its module, which waits for running kernels, the gate's.
class LaunchGate {
 public:
  explicit LaunchGate(std::chrono::milliseconds timeout = std::chrono::milliseconds(500));
  ~LaunchGate();
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;
  void hold(const Stream& s);
  bool open();

 private:
  uint32_t* m_words = nullptr;  // mapped host memory: [0] the generation to release, [1] the last one given up on
  uint64_t m_timeoutNs = 0;
  uint32_t m_generation = 0;
  bool m_held = false;
};

// Synchronous copies and a 32-bit fill on raw device memory; they order against work on every stream.
void copyToDevice(void* dst, const void* src, size_t bytes);
void copyToHost(void* dst, const void* src, size_t bytes);
void fill32(void* dst, size_t words, uint32_t pattern);
// A host-to-device copy ordered on `stream` (a cudaStream_t); `src` may be reused when it returns (pageable memory is
// staged before the call returns, pinned memory is copied before it does).
void copyToDeviceAsync(void* dst, const void* src, size_t bytes, void* stream);

}  // namespace armature::cuda
