// armature-bench gaussian: the Gaussian field at the sizes (N Gaussians × B points), anisotropic, one
// channel, GPU-timed:
//   - dense forward and forward + backward (every gradient) on a spread field (scales 0.05 … 0.3 in [−1, 1]³);
//   - on a localised field (scales 0.3 … 0.6 of the Gaussians' spacing (8/N)^⅓, weights ±1): dense again, then the
//     culled mode at ε = 1e-4: the grid's build, and the forward and forward + backward over a built grid.
#include <random>
#include <sstream>

#include "armature/ops/gaussian_field.h"
#include "armature/vk/context.h"
#include "bench/bench.h"

namespace armature::bench {

namespace {

constexpr float kCulledEpsilon = 1e-4f;

struct HostField {
  std::vector<float> x, means, cholesky, weights, gradField;
};

// Means and points uniform in [−1, 1]³; log-scales uniform in [log lo, log hi]; off-diagonals ±0.1 of the scale.
HostField makeField(uint32_t N, uint32_t B, float lo, float hi) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1, 1), logScale(std::log(lo), std::log(hi));
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  HostField f{random(size_t(B) * 3), random(size_t(N) * 3), random(size_t(N) * 6), random(N), random(B)};
  for (size_t i = 0; i < N; ++i) {
    const float l00 = logScale(rng), l11 = logScale(rng), l22 = logScale(rng);
    f.cholesky[i * 6] = l00, f.cholesky[i * 6 + 2] = l11, f.cholesky[i * 6 + 5] = l22;
    for (int k : {1, 3, 4}) f.cholesky[i * 6 + size_t(k)] *= 0.1f * std::exp(l00);
  }
  return f;
}

}  // namespace

void runGaussian(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& sizes) {
  std::stringstream list(sizes);
  for (std::string size; std::getline(list, size, ',');) {
    uint32_t N = 0, B = 0;
    ARM_CHECK(std::sscanf(size.c_str(), "%ux%u", &N, &B) == 2 && N > 0 && B > 0,
              "gaussian: size '%s' is not GAUSSIANSxPOINTS (e.g. 1000x500)", size.c_str());
    const float spacing = std::cbrt(8.0f / float(N));
    for (const bool localised : {false, true}) {
      const HostField h = localised ? makeField(N, B, 0.3f * spacing, 0.6f * spacing) : makeField(N, B, 0.05f, 0.3f);
      DeviceBuffer x = device.upload(h.x), means = device.upload(h.means), chol = device.upload(h.cholesky);
      DeviceBuffer weights = device.upload(h.weights), gradField = device.upload(h.gradField);
      auto floats = [&](size_t n) { return device.allocate(ElementType::Float32, std::max<size_t>(n, 1)); };
      DeviceBuffer field = floats(B), gPoints = floats(size_t(B) * 3), gMeans = floats(size_t(N) * 3);
      DeviceBuffer gChol = floats(size_t(N) * 6), gWeights = floats(N);
      DeviceBuffer scratch =
          floats(std::max(gaussianFieldScratchFloats(B, N, 1, false), gaussianFieldScratchFloats(B, N, 1, true)));
      DeviceBuffer grid = device.allocate(ElementType::UInt32, localised ? gaussianGridWords(B, N) : 1);
      const GaussianFieldInputs in{GaussianShape::Anisotropic, B, N, 1, x, means, chol, weights};
      const double pairs = double(N) * B;
      const std::string field_ = localised ? "localised," : "";
      auto time = [&](const std::string& variant, double bytes, double flops,
                      const std::function<void(const Exec&)>& f) {
        Row r{"gaussian", backendName(backend), variant + "," + field_ + size, B, 0, 0, bytes, flops, {}};
        measure(r, device, backend, f, iters);
        rows.push_back(r);
      };
      // A CPU driver (lavapipe) takes minutes for a dense call past ~2^32 pairs, past the submission's time limit.
      const bool skipDense =
          backend == Backend::Vulkan && device.vulkan() && device.vulkan()->info().isCpu() && pairs > 4294967296.0;
      if (skipDense)
        std::fprintf(stderr, "armature-bench: gaussian %s%s dense rows skipped: %.2g pairs a call on a CPU device\n",
                     field_.c_str(), size.c_str(), pairs);
      for (bool backward : {false, true}) {
        if (skipDense) break;
        // Floors: arithmetic (the data is a few MB, read from L2 many times). Per pair the forward costs ~20 flops
        // (x − μ, L⁻¹·d, the square, the exponent, the weighted sum, an FMA counted as 2); the backward's two sides
        // ~80 more (each the forward's distance again, then the chain rule: 3 + 6 + 1 gradient terms).
        time(backward ? "fwd+bwd" : "forward", double(B) * 16 + double(N) * 40, pairs * (backward ? 100 : 20),
             [&](const Exec& exec) {
               gaussianField(exec, {.in = in, .field = field, .scratch = scratch});
               if (backward)
                 gaussianFieldBackward(exec, {.in = in,
                                              .gradField = gradField,
                                              .gradPoints = gPoints,
                                              .gradMeans = gMeans,
                                              .gradCholesky = gChol,
                                              .gradWeights = gWeights,
                                              .scratch = scratch});
             });
      }
      if (!localised) continue;
      // The culled rows' floors are the bytes: the grid's build moves each Gaussian's inputs and its ≤ 27 entries a
      // few times; the culled passes read each point's list and its Gaussians (48 bytes each, mostly from L2) — the
      // pairs they evaluate depend on the field, so no flop floor is stated.
      time("culled build", double(N) * (40 + 27 * 4 * 4 + 48), 0,
           [&](const Exec& exec) { buildGaussianGrid(exec, {.in = in, .epsilon = kCulledEpsilon, .grid = grid}); });
      for (bool backward : {false, true})
        time(backward ? "culled fwd+bwd" : "culled forward", double(B) * (backward ? 32 : 16) + double(N) * 48, 0,
             [&](const Exec& exec) {
               gaussianField(exec, {.in = in, .field = field, .grid = grid});
               if (backward)
                 gaussianFieldBackward(exec, {.in = in,
                                              .gradField = gradField,
                                              .gradPoints = gPoints,
                                              .gradMeans = gMeans,
                                              .gradCholesky = gChol,
                                              .gradWeights = gWeights,
                                              .scratch = scratch,
                                              .grid = grid});
             });
    }
  }
}

}  // namespace armature::bench
