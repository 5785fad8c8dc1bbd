// armature-bench: medians of GPU-timed calls after warm-up, with the bytes that must move and the arithmetic that
// must be done, so each number reads against the device's limits. JSON out with --json.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <utility>

#include "app/cli.h"
#include "armature/backend.h"
#include "armature/body/synth.h"
#include "armature/cuda/runtime.h"
#include "armature/ops/axpy.h"
#include "armature/ops/ik.h"
#include "armature/ops/skinning.h"
#include "armature/vk/timer.h"
#include "bench/bench.h"

using namespace armature;

namespace {

using bench::measure;
using bench::median;
using bench::Row;

}  // namespace

int main(int argc, char** argv) {
  namespace cli = armature::cli;
  CLI::App app{"armature-bench: GPU-timed medians against bandwidth and arithmetic floors"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.require_subcommand(1);
  std::string backendName = "cuda", batches = "1,32,512,4096", jsonPath, modelPath, pipelineViews = "1,8";
  bool backward = false, noResidency = false, noTensorCores = false;
  int iters = 50, objects = 1;
  double peakBandwidth = 3.0e12, peakFlops = 51e12;
  const auto gpuBackends = CLI::IsMember({"cuda", "vulkan"});
  auto* skin = app.add_subcommand("skinning", "body skinning forward (and --backward)");
  skin->add_option("--backend", backendName, "cuda | vulkan | cpu")->check(CLI::IsMember({"cuda", "vulkan", "cpu"}));
  skin->add_option("--batch", batches, "comma-separated batch sizes")->check(cli::uintList(1, 65536));
  skin->add_flag("--backward", backward, "time forward + backward");
  skin->add_flag("--no-l2-residency", noResidency, "CUDA: stream the whole blend matrix from DRAM on every call");
  skin->add_flag(
      "--no-tensor-cores", noTensorCores,
      "CUDA: the blend products on fp32 FMAs, not tensor cores (3xTF32: forward > 64 items, backward >= 1024)");
  skin->add_option(
          "--objects", objects,
          "CUDA: this many skinning objects (each its own tables' allocation) per batch size, one row each, each also "
          "timed with L2 residency off and on again (stages noL2, again): the spread between allocations")
      ->check(CLI::Range(1, 64));
  skin->add_option("--model", modelPath, "model .npz (default: the generated default avatar)")
      ->check(cli::regularFile());
  auto* axpyCmd = app.add_subcommand("axpy", "y = a x + y over 2^26 floats: the measured bandwidth");
  axpyCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  auto* interopCmd = app.add_subcommand("interop", "Vulkan<->CUDA hops, buffer delivery, frames in flight");
  auto* rasterCmd = app.add_subcommand("raster", "visibility-buffer rasteriser on three scenes");
  rasterCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  std::string rasterScenes = "abc";
  rasterCmd->add_option("--scenes", rasterScenes, "which of the scenes (a) (b) (c) to run, e.g. c")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.find_first_not_of("abc") != std::string::npos)
              return "scenes are letters of abc, e.g. ac";
            return {};
          },
          "SCENES"));
  bool rasterFloatOnly = false;
  rasterCmd->add_flag("--float-only", rasterFloatOnly, "Vulkan: the shaders of devices without doubles, on any device");
  auto* pipelineCmd = app.add_subcommand(
      "pipeline", "a fitting step: skinning, project, rasterize, interpolate and the backward chain");
  pipelineCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  pipelineCmd->add_option("--views", pipelineViews, "comma-separated counts of views")->check(cli::uintList(1, 64));
  pipelineCmd->add_option("--model", modelPath, "model .npz (default: the generated default avatar)")
      ->check(cli::regularFile());
  auto* hierarchyCmd =
      app.add_subcommand("hierarchy", "grid hierarchy builder: reference (the original's hash maps) vs fast");
  std::string hierarchySizes = "128,512";
  hierarchyCmd->add_option("--sizes", hierarchySizes, "view sizes (pixels per side; 4 layers, resolution = size)")
      ->check(cli::uintList(16, 4096));
  auto* jointPropagationCmd =
      app.add_subcommand("joint_propagation", "joint propagation: set-up, forward, forward + backward");
  std::string jointPropagationWorkloads = "smplx,random100k,random1m,chains";
  jointPropagationCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  jointPropagationCmd->add_option("--workloads", jointPropagationWorkloads,
                                  "comma-separated: smplx (65536 x 55), random100k, random1m, chains (1000 x 1000)");
  auto* gaussianCmd =
      app.add_subcommand("gaussian", "Gaussian field: dense and culled, forward, forward + backward, grid build");
  std::string gaussianSizes = "1000x500,10000x100000,100000x1000000";
  gaussianCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  gaussianCmd->add_option("--sizes", gaussianSizes, "comma-separated GAUSSIANSxPOINTS");
  auto* deformableAggregationCmd = app.add_subcommand(
      "deformable_aggregation",
      "deformable aggregation at SparseDrive's detection and map heads: forward, forward + backward");
  deformableAggregationCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  auto* bakeCmd = app.add_subcommand(
      "bake", "texture baking of the default avatar, 1024² from 8 views of 1024²: by stage and whole");
  bakeCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  bakeCmd->add_option("--model", modelPath, "body model (default: the build's generated avatar)")
      ->check(cli::regularFile());
  auto* ikCmd = app.add_subcommand(
      "ik", "one inverse-kinematics iteration of the default avatar (skinning forward and backward, the solve)");
  std::string ikTargets = "1,3,8";
  ikCmd->add_option("--backend", backendName, "cuda | vulkan")->check(gpuBackends);
  ikCmd->add_option("--targets", ikTargets, "comma-separated target counts (a dragged joint and pins)")
      ->check(cli::uintList(1, ikMaxTargets));
  ikCmd->add_option("--model", modelPath, "model .npz (default: the generated default avatar)")
      ->check(cli::regularFile());
  for (auto* c : {skin, ikCmd, axpyCmd, interopCmd, rasterCmd, pipelineCmd, hierarchyCmd, jointPropagationCmd,
                  gaussianCmd, deformableAggregationCmd, bakeCmd}) {
    c->add_option("--json", jsonPath, "write the results as JSON")->check(cli::writableFile());
    c->add_option("--iters", iters, "timed calls per row (after warm-up)")->check(CLI::Range(1, 100000));
    c->fallthrough();  // the peaks below may follow the subcommand
  }
  app.add_option("--peak-bandwidth", peakBandwidth, "bytes/s used for the floor (default: H100 device copy, 3.0e12)")
      ->check(cli::finiteRange(1, 1e18));
  app.add_option("--peak-flops", peakFlops, "FLOP/s used for the floor (default: H100 fp32, 51e12)")
      ->check(cli::finiteRange(1, 1e18));
  if (auto code = cli::parse(app, argc, argv)) return *code;
  const auto parseList = [](const std::string& s) { return cli::parseList(s, 0, UINT32_MAX); };  // checked above
  std::vector<Row> rows;
  std::string gpuName;  // the GPU the rows were measured on, for the JSON
  try {
    if (*hierarchyCmd) backendName = "cpu";
    Backend backend = parseBackend(backendName);
    if (backend == Backend::Cuda && !*interopCmd)
      if (auto why = cudaUnavailable()) throw Error("CUDA unavailable: " + *why);
    std::unique_ptr<vk::Context> ctx;
    if (backend == Backend::Vulkan && !*interopCmd && !*rasterCmd && !*pipelineCmd)
      ctx = std::make_unique<vk::Context>();
    // The GPU the rows run on: the Vulkan context's, or CUDA's own (plain device memory, as a CUDA user allocates).
    std::unique_ptr<Device> device;
    if (backend != Backend::Cpu && !*interopCmd && !*rasterCmd && !*pipelineCmd)
      device = std::make_unique<Device>(ctx.get(), Sharing::VulkanOnly);

    if (*interopCmd) {
#ifdef ARMATURE_HAS_INTEROP
      if (auto why = cudaUnavailable()) throw Error("CUDA unavailable: " + *why);
      bench::runInterop(rows, iters);
#else
      throw Error("this build has no interop (configure with ARMATURE_CUDA=ON)");
#endif
    }

    if (*rasterCmd) bench::runRaster(rows, backend, iters, rasterScenes, rasterFloatOnly);
    if (*pipelineCmd) bench::runPipeline(rows, backend, iters, modelPath, parseList(pipelineViews));
    if (*hierarchyCmd) bench::runHierarchy(rows, parseList(hierarchySizes), iters);
    if (*jointPropagationCmd) bench::runJointPropagation(rows, *device, backend, iters, jointPropagationWorkloads);
    if (*gaussianCmd) bench::runGaussian(rows, *device, backend, iters, gaussianSizes);
    if (*deformableAggregationCmd) bench::runDeformableAggregation(rows, *device, backend, iters);
    if (*bakeCmd) bench::runBake(rows, *device, backend, iters, modelPath);

    if (*axpyCmd) {
      size_t n = size_t(1) << 26;  // 256 MB per vector: far beyond any cache
      if (ctx) n = std::min<size_t>(n, ctx->info().maxStorageBufferRange / sizeof(float));  // lavapipe: 128 MiB
      Row r{"axpy", backendName, "fp32", 0, 0, 0, double(n) * 12, double(n) * 2};
      auto x = device->upload(std::vector<float>(n, 1.0f)), y = device->upload(std::vector<float>(n, 2.0f));
      measure(
          r, *device, backend, [&](const Exec& exec) { axpy(exec, {.a = 0.5f, .x = x, .y = y}); }, iters);
      rows.push_back(r);
    }

    if (*ikCmd) {
      const BodyModel model = bench::loadDefaultModel(modelPath);
      const uint32_t S = 10, E = 10;
      const auto tables = buildSkinningTables(model, S, E);
      const double V3 = model.vertexCount * 3.0, F = tables.featureCount + tables.coefCount();
      const double nnz = double(tables.weightValue.size()), J = model.jointCount;
      IkSolver solver(*device, backend, model, S, E);
      const BodyParams body = BodyParams::zeros(model, 1, S, E);
      const std::vector<double> joints = bodyForwardRef(model, body).joints;
      for (uint32_t n : parseList(ikTargets)) {
        IkProblem problem;
        for (uint32_t t = 0; t < n; ++t) {  // joints spread over the body, each target 10 cm off
          const uint32_t j = 1 + t * (model.jointCount - 1) / ikMaxTargets;
          problem.targets.push_back({j, {joints[3 * j] + 0.1, joints[3 * j + 1], joints[3 * j + 2]}, 1.0});
        }
        const double m = 3.0 * n;
        // One skinning forward and backward of m rows (the blend matrix read twice), and the m×m solve's products.
        Row r{"ik", backendName, "1 iteration", n, 0, 0, 0, 0};
        r.bytes = 2 * F * V3 * 4 + m * (2 * V3 + 4 * J * 3) * 4;
        r.flops = 4.0 * m * F * V3 + m * (nnz * 72 + model.vertexCount * 36.0) + 2.0 * m * m * (3 * J + 3);
        device->run(backend, [&](const Exec& exec) { solver.start(exec, body, problem); });
        measure(
            r, *device, backend, [&](const Exec& exec) { solver.iterate(exec, 1); }, iters);
        rows.push_back(r);
      }
    }

    if (*skin) {
      BodyModel model = bench::loadDefaultModel(modelPath);
      const uint32_t S = 10, E = 10;
      std::mt19937_64 rng(42);
      std::uniform_real_distribution<float> u(-0.5f, 0.5f);
      auto tables = buildSkinningTables(model, S, E);
      double V3 = model.vertexCount * 3.0, F = tables.featureCount + tables.coefCount();
      double nnz = double(tables.weightValue.size()), J = model.jointCount;
      bool residencyReported = false;
      for (uint32_t B : parseList(batches))
        for (int object = 0; object < (backend == Backend::Cuda ? objects : 1); ++object) {
          std::vector<float> pose(size_t(B) * model.jointCount * 3), betas(size_t(B) * S), expr(size_t(B) * E),
              transl(size_t(B) * 3);
          for (auto* v : {&pose, &betas, &expr, &transl})
            for (auto& x : *v) x = u(rng);
          Row r{"skinning",
                backendName,
                std::string(backward ? "forward+backward" : "forward") + (noResidency ? ",noL2" : "") +
                    (noTensorCores ? ",noTC" : "") + (objects > 1 ? ",object " + std::to_string(object) : ""),
                B,
                0,
                0,
                0,
                0};
          // What must move: the blend matrix once, the parameters, the outputs (and for backward the incoming
          // gradients and the outgoing parameter gradients). What must be done: the blend GEMM, the skinning.
          r.bytes = F * V3 * 4 + B * (V3 + J * 3) * 4 + B * (J * 3 + S + E + 3) * 4;
          r.flops = 2.0 * B * F * V3 + B * (nnz * 24 + model.vertexCount * 18.0);
          if (backward) {
            r.bytes += F * V3 * 4 + B * (V3 + J * 3) * 4 + B * (J * 3 + S + E + 3) * 4;
            r.flops += 2.0 * B * F * V3 + B * (nnz * 48 + model.vertexCount * 18.0);
          }
          if (backend != Backend::Cpu) {
            Skinning gpu(*device, backend, model, S, E, B,
                         {.l2Residency = !noResidency, .tensorCores = !noTensorCores});
            if (!std::exchange(residencyReported, true))
              std::fprintf(stderr, "armature-bench: blend matrix %.1f MB, L2-resident %.1f MB\n", F * V3 * 4 / 1e6,
                           gpu.l2ResidentBytes() / 1e6);
            DeviceBuffer dp = device->upload(pose), db = device->upload(betas), de = device->upload(expr),
                         dt = device->upload(transl);
            auto floats = [&](size_t n) { return device->allocate(ElementType::Float32, n); };
            DeviceBuffer verts = floats(size_t(B) * size_t(V3)), joints = floats(size_t(B) * model.jointCount * 3);
            DeviceBuffer dgv = device->upload(std::vector<float>(size_t(B) * size_t(V3), 0.01f));
            DeviceBuffer gp = floats(pose.size()), gb = floats(betas.size()), ge = floats(expr.size()),
                         gt = floats(transl.size());
            auto call = [&](const Exec& exec) {
              gpu.forward(exec, {.batch = B,
                                 .pose = dp,
                                 .betas = db,
                                 .expression = de,
                                 .transl = dt,
                                 .vertices = verts,
                                 .joints = joints});
              if (backward)
                gpu.backward(exec, {.batch = B,
                                    .pose = dp,
                                    .gradVertices = dgv,
                                    .gradPose = gp,
                                    .gradBetas = gb,
                                    .gradExpression = ge,
                                    .gradTransl = gt});
            };
            measure(r, *device, backend, call, iters);
            if (objects > 1 && !noResidency) {
              auto medianMs = [&] {
                Row t;
                measure(t, *device, backend, call, iters);
                return t.medianMs;
              };
              gpu.setTuning({.l2Residency = false, .tensorCores = !noTensorCores});
              r.stages.push_back({"noL2", medianMs()});
              gpu.setTuning({.l2Residency = true, .tensorCores = !noTensorCores});
              r.stages.push_back({"again", medianMs()});
            }
          } else {
            BodyParams p = BodyParams::zeros(model, B, S, E);
            std::copy(pose.begin(), pose.end(), p.pose.begin());
            std::copy(betas.begin(), betas.end(), p.betas.begin());
            std::copy(expr.begin(), expr.end(), p.expression.begin());
            std::copy(transl.begin(), transl.end(), p.transl.begin());
            std::vector<double> ms;
            for (int i = 0; i < std::max(1, std::min(iters, 3)); ++i) {
              auto t0 = std::chrono::steady_clock::now();
              auto o = bodyForwardRef(model, p);
              if (backward) bodyBackwardRef(model, p, std::vector<double>(o.vertices.size(), 0.01), {});
              ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
            r.medianMs = median(ms);
            r.minMs = *std::min_element(ms.begin(), ms.end());
          }
          rows.push_back(r);
        }
    }
    gpuName = bench::deviceName(ctx.get());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "armature-bench: %s\n", e.what());
    return cli::kFailure;
  }

  std::printf("%-9s %-7s %-22s %6s %10s %10s %9s %9s %10s %7s\n", "op", "backend", "variant", "batch", "median_ms",
              "min_ms", "GB/s", "GFLOP/s", "floor_ms", "x_floor");
  nlohmann::json results = nlohmann::json::array();
  for (auto& r : rows) {
    if (!r.skipped.empty()) {
      std::printf("%-9s %-7s %-22s %6u skipped: %s\n", r.op.c_str(), r.backend.c_str(), r.variant.c_str(), r.batch,
                  r.skipped.c_str());
      results.push_back(
          {{"op", r.op}, {"backend", r.backend}, {"variant", r.variant}, {"batch", r.batch}, {"skipped", r.skipped}});
      continue;
    }
    double floorMs = std::max(r.bytes / peakBandwidth, r.flops / peakFlops) * 1e3;
    double gbs = r.bytes / (r.medianMs * 1e-3) / 1e9, gfs = r.flops / (r.medianMs * 1e-3) / 1e9;
    std::printf("%-9s %-7s %-22s %6u %10.4f %10.4f %9.1f %9.1f %10.4f %7.2f\n", r.op.c_str(), r.backend.c_str(),
                r.variant.c_str(), r.batch, r.medianMs, r.minMs, gbs, gfs, floorMs, r.medianMs / floorMs);
    for (auto& [name, ms] : r.stages) std::printf("%-9s   %-22s %10.4f\n", "", name.c_str(), ms);
    nlohmann::json row = {{"op", r.op},         {"backend", r.backend},    {"variant", r.variant},
                          {"batch", r.batch},   {"median_ms", r.medianMs}, {"min_ms", r.minMs},
                          {"bytes", r.bytes},   {"flops", r.flops},        {"gb_per_s", gbs},
                          {"gflop_per_s", gfs}, {"floor_ms", floorMs}};
    if (!r.stages.empty()) {
      nlohmann::json stages = nlohmann::json::object();
      for (auto& [name, ms] : r.stages) stages[name] = ms;
      row["stages_ms"] = stages;
    }
    results.push_back(row);
  }
  if (!jsonPath.empty()) {
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(i ? argv[i] : "armature-bench");
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    nlohmann::json doc = {{"device", gpuName},       {"date", date},
                          {"command", command},      {"peak_bandwidth_bytes_per_s", peakBandwidth},
                          {"peak_flops", peakFlops}, {"results", results}};
    std::ofstream f(jsonPath);
    f << doc.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "armature-bench: --json %s: write failed\n", jsonPath.c_str());
      return cli::kFailure;
    }
  }
  return 0;
}
