#pragma once
// Per-stage frame times (GPU zones from timestamp queries, CUDA event times, CPU frame time): rolling statistics
// for the overlay and exports for tools — the Chrome trace-event format (opens in Perfetto) and a CSV summary.
#include <map>
#include <string>
#include <vector>

namespace armature::app {

struct FrameRecord {
  double startMs = 0;                         // host time since the first frame
  double cpuMs = 0;                           // host time spent on the frame
  std::vector<std::pair<std::string, double>> gpu;  // stage -> ms, in execution order
  std::vector<std::pair<std::string, double>> cpu;  // host stages inside the frame (e.g. "ui (cpu)"), not in the GPU total
};

struct StageStats {
  double last = 0, mean = 0, p99 = 0, max = 0;
  size_t count = 0;
};

class Profiler {
 public:
  void add(FrameRecord frame) { m_frames.push_back(std::move(frame)); }
  // GPU zones that arrive later than their frame (timer ring): appended to frame `index`.
  template <typename Zones>
  void attachGpu(size_t index, const Zones& zones) {
    if (index >= m_frames.size()) return;
    for (const auto& z : zones) m_frames[index].gpu.push_back({z.name, z.milliseconds});
  }
  const std::vector<FrameRecord>& frames() const { return m_frames; }
  // Statistics over the last `window` frames for each stage ("cpu frame" and every GPU stage, plus "gpu total").
  std::map<std::string, StageStats> stats(size_t window = 300) const;
  void writeChromeTrace(const std::string& path) const;  // throws armature::Error when the file cannot be written
  void writeCsv(const std::string& path) const;

 private:
  std::vector<FrameRecord> m_frames;
};

}  // namespace armature::app
