#include "app/profiler.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "armature/error.h"

namespace armature::app {

std::vector<Span> vulkanSpans(const std::vector<vk::ZoneTime>& zones) {
  std::vector<Span> out;
  out.reserve(zones.size());
  for (const auto& z : zones) out.push_back({z.name, z.milliseconds, z.beginHostNs, Track::VulkanQueue});
  return out;
}

namespace {
// Frames are streamed this many frames after they were added: their GPU zones arrive up to a few frames late.
constexpr uint64_t kSettleFrames = 8;

const char* trackName(Track t) {
  static constexpr const char* kNames[] = {"CPU", "Vulkan queue", "CUDA stream"};  // in Track's order
  return kNames[int(t)];
}
int trackId(Track t) { return int(t) + 1; }
}  // namespace

// A Chrome trace written event by event: the file is opened at once and stays valid JSON once finish() ran.
class Profiler::TraceWriter {
 public:
  TraceWriter(const std::string& path, int64_t originNs) : m_path(path), m_file(path), m_originNs(originNs) {
    if (!m_file) throw Error(path + ": cannot write the profile");
    m_file << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    put({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "armature-viewer"}}}});
    for (Track t : {Track::Cpu, Track::VulkanQueue, Track::CudaStream}) {
      put({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", trackId(t)}, {"args", {{"name", trackName(t)}}}});
      put({{"name", "thread_sort_index"},
           {"ph", "M"},
           {"pid", 1},
           {"tid", trackId(t)},
           {"args", {{"sort_index", trackId(t)}}}});
    }
  }
  void frame(const FrameRecord& f) {
    const double frameUs = us(f.startHostNs);
    put({{"name", "frame"},
         {"ph", "X"},
         {"pid", 1},
         {"tid", trackId(Track::Cpu)},
         {"ts", frameUs},
         {"dur", f.cpuMs * 1e3},
         {"args", {{"frame", f.index}}}});
    double cursorUs = frameUs;  // spans without a device time: laid end to end from the frame's start
    for (const auto* list : {&f.cpu, &f.gpu})
      for (const Span& s : *list) {
        nlohmann::json e = {{"name", s.name}, {"ph", "X"}, {"pid", 1}, {"tid", trackId(s.track)}, {"dur", s.ms * 1e3}};
        if (s.startHostNs) {
          e["ts"] = us(s.startHostNs);
        } else {
          e["ts"] = cursorUs;
          e["args"] = {{"placement", "approximate"}};
          cursorUs += s.ms * 1e3;
        }
        put(e);
      }
  }
  void finish() {
    m_file << "\n]}\n";
    m_file.close();
    if (!m_file) throw Error(m_path + ": writing the profile failed");
  }

 private:
  double us(int64_t hostNs) const { return double(hostNs - m_originNs) * 1e-3; }
  void put(const nlohmann::json& event) {
    m_file << (m_first ? "  " : ",\n  ") << event.dump();
    m_first = false;
  }
  std::string m_path;
  std::ofstream m_file;
  int64_t m_originNs;
  bool m_first = true;
};

Profiler::Profiler(size_t window) : m_window(std::max<size_t>(window, kSettleFrames + 1)) {}

Profiler::~Profiler() {
  try {
    finishTrace();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "profiler: %s\n", e.what());
  }
}

void Profiler::streamTrace(const std::string& path) {
  int64_t origin = m_frames.empty() ? steadyNowNs() : m_frames.front().startHostNs;
  m_stream = std::make_unique<TraceWriter>(path, origin);
  m_streamed = m_nextIndex;
}

void Profiler::finishTrace() {
  if (!m_stream) return;
  streamSettled(true);
  auto stream = std::move(m_stream);
  stream->finish();
}

void Profiler::add(FrameRecord frame) {
  frame.index = m_nextIndex++;
  m_frames.push_back(std::move(frame));
  if (m_stream) streamSettled(false);
  while (m_frames.size() > m_window) m_frames.pop_front();
}

void Profiler::streamSettled(bool all) {
  // Frames are streamed before the window drops them (add), so the first one not yet streamed is in the window.
  const uint64_t first = m_frames.empty() ? 0 : m_frames.front().index;
  for (size_t i = size_t(std::max(m_streamed, first) - first); i < m_frames.size(); ++i) {
    const FrameRecord& f = m_frames[i];
    if (!all && f.index + kSettleFrames >= m_nextIndex) break;
    m_stream->frame(f);
    m_streamed = f.index + 1;
  }
}

void Profiler::attachGpu(uint64_t index, std::vector<Span> zones) {
  if (m_frames.empty() || index < m_frames.front().index || index > m_frames.back().index) return;
  auto& gpu = m_frames[size_t(index - m_frames.front().index)].gpu;
  gpu.insert(gpu.end(), std::make_move_iterator(zones.begin()), std::make_move_iterator(zones.end()));
}

std::map<std::string, StageStats> Profiler::stats(size_t last) const {
  std::map<std::string, std::vector<double>> samples;
  size_t first = m_frames.size() > last ? m_frames.size() - last : 0;
  for (size_t i = first; i < m_frames.size(); ++i) {
    const auto& f = m_frames[i];
    samples["cpu frame"].push_back(f.cpuMs);
    for (auto& s : f.cpu) samples[s.name].push_back(s.ms);
    if (f.gpu.empty()) continue;  // its GPU times have not arrived yet (timer ring)
    double total = 0;
    for (auto& s : f.gpu) samples[s.name].push_back(s.ms), total += s.ms;
    samples["gpu total"].push_back(total);
  }
  std::map<std::string, StageStats> out;
  for (auto& [name, v] : samples) {
    StageStats s;
    s.count = v.size();
    s.last = v.back();
    for (double x : v) s.mean += x / double(v.size()), s.max = std::max(s.max, x);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    s.p99 = sorted[std::min(sorted.size() - 1, size_t(double(sorted.size()) * 0.99))];
    out[name] = s;
  }
  return out;
}

void Profiler::writeChromeTrace(const std::string& path) const {
  TraceWriter w(path, m_frames.empty() ? steadyNowNs() : m_frames.front().startHostNs);
  for (const auto& f : m_frames) w.frame(f);
  w.finish();
}

void Profiler::writeCsv(const std::string& path) const {
  std::ofstream f(path);
  if (!f) throw Error(path + ": cannot write the CSV summary");
  f << "stage,frames,last_ms,mean_ms,p99_ms,max_ms\n";
  for (auto& [name, s] : stats(m_frames.size()))
    f << name << "," << s.count << "," << s.last << "," << s.mean << "," << s.p99 << "," << s.max << "\n";
  f.close();
  if (!f) throw Error(path + ": writing the CSV summary failed");
}

}  // namespace armature::app
