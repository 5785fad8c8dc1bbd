#include "app/profiler.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "armature/error.h"

namespace armature::app {

std::map<std::string, StageStats> Profiler::stats(size_t window) const {
  std::map<std::string, std::vector<double>> samples;
  size_t first = m_frames.size() > window ? m_frames.size() - window : 0;
  for (size_t i = first; i < m_frames.size(); ++i) {
    const auto& f = m_frames[i];
    samples["cpu frame"].push_back(f.cpuMs);
    for (auto& [name, ms] : f.cpu) samples[name].push_back(ms);
    if (f.gpu.empty()) continue;  // its GPU times have not arrived yet (timer ring)
    double total = 0;
    for (auto& [name, ms] : f.gpu) samples[name].push_back(ms), total += ms;
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
  std::ofstream f(path);
  if (!f) throw Error(path + ": cannot write the profile");
  f << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  f << "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"armature-viewer\"}},\n";
  f << "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"CPU\"}},\n";
  f << "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": \"GPU\"}}";
  for (size_t i = 0; i < m_frames.size(); ++i) {
    const auto& fr = m_frames[i];
    char buf[256];
    std::snprintf(buf, sizeof buf, ",\n  {\"name\": \"frame\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"frame\": %zu}}",
                  fr.startMs * 1e3, fr.cpuMs * 1e3, i);
    f << buf;
    for (auto& [name, ms] : fr.cpu) {  // host stages: drawn inside the frame, from its start
      std::snprintf(buf, sizeof buf, ",\n  {\"name\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f}",
                    name.c_str(), fr.startMs * 1e3, ms * 1e3);
      f << buf;
    }
    // GPU stages are laid end to end from the frame's start: durations are exact, offsets approximate.
    double t = fr.startMs * 1e3;
    for (auto& [name, ms] : fr.gpu) {
      std::snprintf(buf, sizeof buf, ",\n  {\"name\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": 2, \"ts\": %.3f, \"dur\": %.3f}",
                    name.c_str(), t, ms * 1e3);
      f << buf;
      t += ms * 1e3;
    }
  }
  f << "\n]}\n";
  if (!f) throw Error(path + ": write failed");
}

void Profiler::writeCsv(const std::string& path) const {
  std::ofstream f(path);
  if (!f) throw Error(path + ": cannot write the CSV summary");
  f << "stage,frames,last_ms,mean_ms,p99_ms,max_ms\n";
  for (auto& [name, s] : stats(m_frames.size()))
    f << name << "," << s.count << "," << s.last << "," << s.mean << "," << s.p99 << "," << s.max << "\n";
}

}  // namespace armature::app
