#pragma once
// Per-stage frame times (GPU zones from timestamp queries, CUDA event times, host stages): rolling statistics for
// the overlay over a fixed window of recent frames, and exports for tools — the Chrome trace-event format (opens
// in Perfetto), streamed to its file while the viewer runs, and a CSV summary of the window. Memory stays bounded
// however long the viewer runs.
//
// Every span sits on the host's steady clock: GPU zones at their device timestamps mapped onto it (vk::GpuTimer,
// cuda::EventTimer::startHostNs), one trace track per queue or stream, so overlap between CUDA and Vulkan work and
// the gaps between frames show where they happened.
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "armature/clock.h"
#include "armature/vk/timer.h"

namespace armature::app {

// Where a span ran: one trace track each.
enum class Track { Cpu, VulkanQueue, CudaStream };

struct Span {
  std::string name;
  double ms = 0;
  int64_t startHostNs = 0;  // on the host's steady clock (ns since its epoch); 0 = unknown
  Track track = Track::VulkanQueue;
};

struct FrameRecord {
  uint64_t index = 0;       // set by Profiler::add
  int64_t startHostNs = 0;  // the host's frame start (steady clock)
  double cpuMs = 0;         // host time spent on the frame
  std::vector<Span> gpu;    // device stages, in execution order; their sum is "gpu total"
  std::vector<Span> cpu;    // host stages inside the frame (e.g. "ui (cpu)", CPU skinning), not in the GPU total
  void add(Span s) { (s.track == Track::Cpu ? cpu : gpu).push_back(std::move(s)); }
};

// A Vulkan timer's zones as spans on the Vulkan queue's track.
std::vector<Span> vulkanSpans(const std::vector<vk::ZoneTime>& zones);

struct StageStats {
  double last = 0, mean = 0, p99 = 0, max = 0;
  size_t count = 0;
};

class Profiler {
 public:
  static constexpr size_t kDefaultWindow = 1024;
  explicit Profiler(size_t window = kDefaultWindow);
  ~Profiler();  // finishes a streamed trace (errors are reported on stderr, never thrown here)

  // Streams the trace of every frame from now on to `path` (written a few frames after each frame, once its GPU
  // times have arrived). Opens the file now: throws armature::Error when it cannot be written.
  void streamTrace(const std::string& path);
  // Writes the rest of a streamed trace and closes it; throws armature::Error when the file could not be written.
  void finishTrace();

  // Adds frame `frames added so far`; the oldest frame beyond the window is dropped.
  void add(FrameRecord frame);
  // GPU zones that arrive later than their frame (timer ring): appended to frame `index` if still in the window.
  void attachGpu(uint64_t index, std::vector<Span> zones);
  const std::deque<FrameRecord>& frames() const { return m_frames; }  // the window, oldest first
  // Statistics over the last `last` frames of the window for each stage ("cpu frame" and every GPU stage, plus
  // "gpu total").
  std::map<std::string, StageStats> stats(size_t last = 300) const;
  // The window as a trace and as a CSV summary (the overlay's export button, tests); throw armature::Error.
  void writeChromeTrace(const std::string& path) const;
  void writeCsv(const std::string& path) const;

 private:
  class TraceWriter;
  void streamSettled(bool all);
  size_t m_window;
  std::deque<FrameRecord> m_frames;
  uint64_t m_nextIndex = 0;
  std::unique_ptr<TraceWriter> m_stream;
  uint64_t m_streamed = 0;  // frames before this index are in the streamed trace
};

}  // namespace armature::app
