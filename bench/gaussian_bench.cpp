// armature-bench gaussian: the dense Gaussian field at the sizes (N Gaussians × B points), anisotropic, one
// channel: the forward and the forward + backward (every gradient), GPU-timed.
#include <random>
#include <sstream>

#include "armature/ops/gaussian_field.h"
#include "bench/bench.h"

namespace armature::bench {

void runGaussian(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& sizes) {
  std::stringstream list(sizes);
  for (std::string size; std::getline(list, size, ',');) {
    uint32_t N = 0, B = 0;
    ARM_CHECK(std::sscanf(size.c_str(), "%ux%u", &N, &B) == 2 && N > 0 && B > 0,
              "gaussian: size '%s' is not GAUSSIANSxPOINTS (e.g. 1000x500)", size.c_str());
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(-1, 1), logScale(std::log(0.05f), std::log(0.3f));
    auto random = [&](size_t n, auto& dist) {
      std::vector<float> v(n);
      for (float& x : v) x = dist(rng);
      return v;
    };
    std::vector<float> cholesky = random(size_t(N) * 6, u);
    for (size_t i = 0; i < N; ++i)
      for (int k : {0, 2, 5}) cholesky[i * 6 + size_t(k)] = logScale(rng);
    for (size_t i = 0; i < N; ++i)
      for (int k : {1, 3, 4}) cholesky[i * 6 + size_t(k)] *= 0.1f;
    DeviceBuffer x = device.upload(random(size_t(B) * 3, u)), means = device.upload(random(size_t(N) * 3, u));
    DeviceBuffer chol = device.upload(cholesky), weights = device.upload(random(N, u));
    DeviceBuffer gradField = device.upload(random(B, u));
    auto floats = [&](size_t n) { return device.allocate(ElementType::Float32, std::max<size_t>(n, 1)); };
    DeviceBuffer field = floats(B), gPoints = floats(size_t(B) * 3), gMeans = floats(size_t(N) * 3);
    DeviceBuffer gChol = floats(size_t(N) * 6), gWeights = floats(N);
    DeviceBuffer scratch =
        floats(std::max(gaussianFieldScratchFloats(B, N, 1, false), gaussianFieldScratchFloats(B, N, 1, true)));
    const GaussianFieldInputs in{GaussianShape::Anisotropic, B, N, 1, x, means, chol, weights};
    const double pairs = double(N) * B;
    for (bool backward : {false, true}) {
      // Floors: arithmetic (the data is a few MB, read from L2 many times). Per pair the forward costs ~20 flops
      // (x − μ, L⁻¹·d, the square, the exponent, the weighted sum, an FMA counted as 2); the backward's two sides
      // ~80 more (each the forward's distance again, then the chain rule: 3 + 6 + 1 gradient terms).
      Row r{"gaussian",
            backendName(backend),
            std::string(backward ? "fwd+bwd," : "forward,") + size,
            B,
            0,
            0,
            double(B) * 16 + double(N) * 40,
            pairs * (backward ? 100 : 20),
            {}};
      const Device::Timings t = device.time(
          backend,
          [&](const Exec& exec) {
            gaussianField(exec, {in, field, {}, scratch});
            if (backward) gaussianFieldBackward(exec, {in, gradField, gPoints, gMeans, gChol, gWeights, scratch});
          },
          iters);
      r.medianMs = median(t.ms), r.minMs = minOf(t.ms);
      rows.push_back(r);
    }
  }
}

}  // namespace armature::bench
