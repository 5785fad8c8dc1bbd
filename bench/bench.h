#pragma once
// Shared pieces of armature-bench.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "armature/backend.h"
#include "armature/body/synth.h"
#include "armature/cuda/runtime.h"
#include "armature/vk/timer.h"

namespace armature::bench {

struct Row {
  std::string op, backend, variant;
  uint32_t batch = 0;
  double medianMs = 0, minMs = 0, bytes = 0, flops = 0;
  std::vector<std::pair<std::string, double>> stages;  // median ms of each stage inside the call, where timed
};

// GPUs lower their clocks when idle: a row is timed only after at least 250 ms of back-to-back calls (and at least
// 3), so the first rows of a run are not measured on a cold GPU. Use: for (WarmUp w; !w.done();) call();
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

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
inline double minOf(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

// `iters` calls of `call` on `stream` after warm-up, each timed by CUDA events around it and waited for: the
// milliseconds of each.
inline std::vector<double> timeCudaCalls(const cuda::Stream& stream,
                                         const std::function<void(const cuda::Stream&)>& call, int iters) {
  cuda::EventTimer timer;
  auto once = [&] {
    timer.start(stream);
    call(stream);
    timer.stop(stream);
    return double(timer.milliseconds());
  };
  for (WarmUp w; !w.done();) once();
  std::vector<double> ms;
  for (int k = 0; k < iters; ++k) ms.push_back(once());
  return ms;
}

// `iters` submissions of `record` after warm-up, each waited for, each timed by one timestamp zone around what
// `record` records: the milliseconds of each.
inline std::vector<double> timeVulkanSubmissions(vk::Context& ctx, const std::function<void(VkCommandBuffer)>& record,
                                                 int iters) {
  vk::GpuTimer timer(ctx, 2, 1);
  auto once = [&](uint64_t frame) {
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      timer.beginFrame(cmd, frame);
      uint32_t zone = timer.beginZone(cmd, "timed");
      record(cmd);
      timer.endZone(cmd, zone);
    });
    return timer.waitFrame(frame)[0].milliseconds;
  };
  uint64_t frame = 0;
  for (WarmUp w; !w.done();) once(frame++);
  std::vector<double> ms;
  for (int k = 0; k < iters; ++k) ms.push_back(once(frame++));
  return ms;
}

// The GPU a run measured: `ctx`'s device, else the first CUDA device, else the Vulkan device a context picks.
inline std::string deviceName(const vk::Context* ctx) {
  if (ctx) return ctx->info().name;
  if (!cuda::unavailableReason()) {
    auto runtime = cuda::queryRuntime();
    if (!runtime.devices.empty()) return runtime.devices[0].name;
  }
  try {
    return vk::Context().info().name;
  } catch (const std::exception&) {
    return "no GPU";
  }
}

// --model, else the build's default avatar (ARMATURE_DEFAULT_MODEL), else a fresh synthesis.
inline BodyModel loadDefaultModel(const std::string& path) {
  if (!path.empty()) return loadBodyModel(path);
  const char* env = std::getenv("ARMATURE_DEFAULT_MODEL");
  if (env && std::filesystem::exists(env)) return loadBodyModel(env);
  std::fprintf(stderr, "armature-bench: synthesising the default avatar (pass --model to skip)\n");
  return synthesizeBodyModel({0});
}

// Rasteriser rows for the three scenes.
// floatOnly (Vulkan): the shaders of devices without doubles (integer setup and resolve), on any device.
void runRaster(std::vector<Row>& rows, Backend backend, int iters, const std::string& scenes = "abc",
               bool floatOnly = false);

// Differentiable pipeline rows (render, fit step) for each count of views (bench/pipeline_bench.cpp).
void runPipeline(std::vector<Row>& rows, Backend backend, int iters, const std::string& modelPath,
                 const std::vector<uint32_t>& viewCounts);

// Grid hierarchy rows: reference and fast builder on generated views of each size (wall-clock, CPU).
void runHierarchy(std::vector<Row>& rows, const std::vector<uint32_t>& sizes, int iters);

// Interop rows (needs a CUDA build).
void runInterop(std::vector<Row>& rows, int iters);

}  // namespace armature::bench
