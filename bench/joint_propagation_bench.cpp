// armature-bench joint_propagation: joint propagation on the workloads (a crowd of SMPL-X skeletons, one random tree of
// 100k and of 1M joints, 1000 chains of 1000): the set-up per topology (the forest's analysis on the host plus the
// tables' upload, and the analysis on the GPU; wall-clock), the forward and the forward + backward (GPU-timed), rigid
// locals to globals.
#include <chrono>
#include <random>
#include <sstream>

#include "armature/body/body_model.h"
#include "armature/ops/joint_propagation.h"
#include "bench/bench.h"

namespace armature::bench {

namespace {

struct Workload {
  std::string name;
  std::vector<int32_t> parents;
  uint32_t batch;
};

Workload workload(const std::string& name) {
  if (name == "smplx") return {"65536 x SMPL-X tree (55)", smplxParents(), 65536};
  if (name == "chains") {
    std::vector<int32_t> parents(1000000);
    for (size_t i = 0; i < parents.size(); ++i) parents[i] = i % 1000 ? int32_t(i) - 1 : -1;
    return {"1000 chains x 1000", parents, 1};
  }
  const uint32_t n = name == "random100k" ? 100000 : name == "random1m" ? 1000000 : 0;
  ARM_CHECK(n, "joint_propagation: unknown workload '%s' (smplx, random100k, random1m, chains)", name.c_str());
  std::mt19937_64 rng(7);
  std::vector<int32_t> parents(n, -1);
  for (uint32_t i = 1; i < n; ++i) parents[i] = int32_t(i - 1 - rng() % std::min<uint32_t>(i, 64));
  return {"random tree of " + std::to_string(n) + " (parent in [i-64, i-1])", parents, 1};
}

}  // namespace

void runJointPropagation(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& workloads) {
  std::stringstream list(workloads);
  for (std::string name; std::getline(list, name, ',');) {
    const Workload w = workload(name);
    const double N = double(w.parents.size()), BN = N * w.batch;
    // Set-up, as a new topology costs (wall-clock, median of a few): the host's analysis plus the tables' upload,
    // and the analysis on the GPU (its buffers, the upload of the parents, the passes and the read-back).
    auto timeSetup = [&](const char* where, auto make) {
      std::vector<double> ms;
      std::unique_ptr<DeviceJointForest> forest;
      for (int k = 0; k < 5; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        forest = make();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      // No floor: the analysis is latency- and pass-bound more than its bytes.
      rows.push_back({"joint_propagation", where, "setup," + name, w.batch, median(ms), minOf(ms), 0, 0, {}});
      return forest;
    };
    timeSetup("host+upload", [&] { return std::make_unique<DeviceJointForest>(device, JointForest(w.parents)); });
    std::unique_ptr<DeviceJointForest> forest = timeSetup(backend == Backend::Cuda ? "cuda" : "vulkan", [&] {
      return std::make_unique<DeviceJointForest>(device, backend, w.parents);
    });
    std::fprintf(stderr, "joint_propagation %s: %u paths in %u generations, widest fan-out %u\n", w.name.c_str(), forest->paths(),
                 forest->generations(), forest->widestFanOut());

    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> q(size_t(BN) * 4), t(size_t(BN) * 3);
    for (size_t i = 0; i < size_t(BN); ++i) {
      float* r = &q[i * 4];
      float norm = 0;
      for (int c = 0; c < 4; ++c) r[c] = u(rng), norm += r[c] * r[c];
      for (int c = 0; c < 4; ++c) r[c] /= std::sqrt(norm);
    }
    for (float& x : t) x = 0.1f * u(rng);
    DeviceBuffer rotations = device.upload(q), translations = device.upload(t);
    auto floats = [&](double n) { return device.allocate(ElementType::Float32, size_t(n)); };
    DeviceBuffer globals = floats(BN * 12), gradGlobals = device.upload(std::vector<float>(size_t(BN) * 12, 0.01f));
    DeviceBuffer adjoint = floats(BN * 12), gradRotations = floats(BN * 4), gradTranslations = floats(BN * 3);
    DeviceBuffer scratch = floats(double(forest->scratchFloats(w.batch)));
    JointPropagationArgs fwd{forest.get(), w.batch, LocalTransform::Rigid, rotations, translations, {}, {}, globals};
    fwd.scratch = scratch;
    JointPropagationBackwardArgs bwd{forest.get(), w.batch, LocalTransform::Rigid, rotations, translations, {},
                                     {},           globals};
    bwd.gradGlobals = gradGlobals, bwd.adjoint = adjoint, bwd.scratch = scratch;
    bwd.gradRotations = gradRotations, bwd.gradTranslations = gradTranslations;
    for (bool backward : {false, true}) {
      // Floors: the forward reads the locals (7 floats) and writes the globals (12); the backward reads the
      // locals, the parent's global and the globals' gradient and writes the locals' gradient (38 a joint), and
      // in a large forest each path's top sends its parent a message (12 written, 12 read). Arithmetic: a quaternion's
      // matrix and a 3×4 product forward (~100 flops), three products and the quaternion's backward after it (~300).
      Row r{"joint_propagation",
            backendName(backend),
            std::string(backward ? "forward+backward," : "forward,") + name,
            w.batch,
            0,
            0,
            BN * 19 * 4 + (backward ? BN * 38 * 4 + (forest->small() ? 0.0 : w.batch * 24.0 * 4 * forest->paths()) : 0),
            BN * (backward ? 400 : 100),
            {}};
      measure(
          r, device, backend,
          [&](const Exec& exec) {
            propagateJoints(exec, fwd);
            if (backward) propagateJointsBackward(exec, bwd);
          },
          iters);
      rows.push_back(r);
    }
  }
}

}  // namespace armature::bench
