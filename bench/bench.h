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
#include "armature/device.h"

namespace armature::bench {

struct Row {
  std::string op, backend, variant;
  uint32_t batch = 0;
  double medianMs = 0, minMs = 0, bytes = 0, flops = 0;
  std::vector<std::pair<std::string, double>> stages;  // median ms of each stage inside the call, where timed
  std::string skipped;  // why the row has no time: the op refused its sizes on this device
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
inline double minOf(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

// Times `call` on `backend` (Device::time) into `row`: the median and min in ms, and each stage zone's median.
inline void measure(Row& row, Device& device, Backend backend, const std::function<void(const Exec&)>& call,
                    int iters) {
  Device::Timings t;
  try {
    t = device.time(backend, call, iters);
  } catch (const Error& e) {  // a size this device cannot take: the other rows still run
    row.skipped = e.what();
    std::fprintf(stderr, "armature-bench: %s %s skipped: %s\n", row.op.c_str(), row.variant.c_str(), e.what());
    return;
  }
  row.medianMs = median(t.ms), row.minMs = minOf(t.ms);
  for (const auto& [name, ms] : t.stages) row.stages.push_back({name, median(ms)});
}

// The GPU a run measured: `ctx`'s device, else the first CUDA device, else the Vulkan device a context picks.
inline std::string deviceName(const vk::Context* ctx) {
  if (ctx) return ctx->info().name;
  if (std::string cuda = cudaDeviceName(); !cuda.empty()) return cuda;
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

// Joint propagation rows (armature-bench joint_propagation): set-up, forward, forward + backward on each named workload.
void runJointPropagation(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& workloads);

// Gaussian field rows (armature-bench gaussian): forward and forward + backward, dense, at each NxB size.
void runGaussian(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& sizes);

// Deformable aggregation rows (armature-bench aggregate): SparseDrive's detection and map heads.
void runDeformableAggregation(std::vector<Row>& rows, Device& device, Backend backend, int iters);
// Texture baking rows (armature-bench bake): 1024² from 8 views of 1024², by stage and whole.
void runBake(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& modelPath);

// Interop rows (needs a CUDA build).
void runInterop(std::vector<Row>& rows, int iters);

}  // namespace armature::bench
