// `armature fit-field`: fits N anisotropic Gaussians to the default avatar's occupancy with Adam, all on the GPU.
// Half the samples are uniform in the avatar's padded box, half near its surface (a point of the surface, area-
// weighted, moved by a normal offset of 2% of the box's diagonal), where the occupancy changes; their occupancy
// (winding number > ½ with respect to the rest mesh) is computed on the GPU; each iteration is the field's forward into
// the residual, the residual minus the target, the field's backward and an Adam step over all parameters (one buffer):
// the loss is the mean squared residual. A held-out set of samples gives the fit's IoU (field > ½ against inside).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "app/box.h"
#include "app/commands.h"
#include "app/poses.h"
#include "armature/body/body_model.h"
#include "armature/body/npz.h"
#include "armature/body/synth.h"
#include "armature/device.h"
#include "armature/ops/adam.h"
#include "armature/ops/axpy.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/winding_numbers.h"
#include "armature/vk/context.h"

namespace armature::app {

namespace {

// Parameters laid out in one buffer for one Adam step: means (N,3), L's parameters (N,6), weights (N,1), each part
// starting where any device binds a view.
struct Layout {
  size_t means = 0, cholesky = 0, weights = 0, total = 0;
  explicit Layout(uint32_t N) {
    cholesky = bindableFloats(size_t(N) * 3), weights = cholesky + bindableFloats(size_t(N) * 6);
    total = weights + bindableFloats(N);
  }
};

// `count` samples: the first half uniform in the box, the rest near the surface of the rest mesh.
std::vector<float> samplePoints(std::mt19937_64& rng, uint32_t count, const BodyModel& model, const float lo[3],
                                const float hi[3]) {
  std::vector<float> p(size_t(count) * 3);
  const size_t uniform = count / 2;
  for (size_t i = 0; i < uniform * 3; ++i) p[i] = std::uniform_real_distribution<float>(lo[i % 3], hi[i % 3])(rng);
  std::vector<double> area(model.faceCount);
  const double* v = model.vTemplate.data();
  for (size_t f = 0; f < model.faceCount; ++f) {
    const double* a = v + size_t(model.faces[f * 3]) * 3;
    const double* b = v + size_t(model.faces[f * 3 + 1]) * 3;
    const double* c = v + size_t(model.faces[f * 3 + 2]) * 3;
    const double e[2][3] = {{b[0] - a[0], b[1] - a[1], b[2] - a[2]}, {c[0] - a[0], c[1] - a[1], c[2] - a[2]}};
    area[f] = std::hypot(e[0][1] * e[1][2] - e[0][2] * e[1][1], e[0][2] * e[1][0] - e[0][0] * e[1][2],
                         e[0][0] * e[1][1] - e[0][1] * e[1][0]);
  }
  std::discrete_distribution<size_t> face(area.begin(), area.end());
  std::uniform_real_distribution<double> unit(0, 1);
  const double diagonal = std::hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
  std::normal_distribution<double> offset(0, 0.02 * diagonal);
  for (size_t i = uniform; i < count; ++i) {
    const size_t f = face(rng);
    double r1 = unit(rng), r2 = unit(rng);
    if (r1 + r2 > 1) r1 = 1 - r1, r2 = 1 - r2;
    for (int k = 0; k < 3; ++k) {
      const double a = v[size_t(model.faces[f * 3]) * 3 + size_t(k)],
                   b = v[size_t(model.faces[f * 3 + 1]) * 3 + size_t(k)],
                   c = v[size_t(model.faces[f * 3 + 2]) * 3 + size_t(k)];
      p[i * 3 + size_t(k)] = float(a + r1 * (b - a) + r2 * (c - a) + offset(rng));
    }
  }
  return p;
}

}  // namespace

int runFitField(const FitFieldOptions& o) {
  const Backend backend = chooseBackend(o.backend);
  ARM_CHECK(backend != Backend::Cpu, "fit-field runs on the GPU: --backend cuda or vulkan");
  const BodyModel model = loadModelOrDefault(o.model);
  std::unique_ptr<vk::Context> ctx;
  if (backend == Backend::Vulkan) ctx = std::make_unique<vk::Context>();
  Device device(ctx.get(), Sharing::VulkanOnly);
  device.require(backend);

  // The target: the rest mesh's occupancy at samples in its box, padded by 5%.
  float lo[3], hi[3];
  boxOf(model.vTemplate, lo, hi);
  for (int k = 0; k < 3; ++k) {
    const float pad = 0.05f * (hi[k] - lo[k]);
    lo[k] -= pad, hi[k] += pad;
  }
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(o.seed);
  const uint32_t B = o.samples, E = o.samples;  // training and held-out samples
  const DeviceTriangleMesh mesh(device, std::vector<float>(model.vTemplate.begin(), model.vTemplate.end()),
                                model.faces);
  const std::vector<float> trainPoints = samplePoints(rng, B, model, lo, hi);
  DeviceBuffer train = device.upload(trainPoints), held = device.upload(samplePoints(rng, E, model, lo, hi));
  DeviceBuffer windings = device.allocate(ElementType::Float32, std::max(B, E));
  auto occupancy = [&](const DeviceBuffer& points, uint32_t count) {
    device.run(backend, [&](const Exec& exec) { windingNumbers(exec, {&mesh, count, points, windings}); });
    std::vector<float> w = windings.download<float>(count);
    for (float& x : w) x = x > 0.5f ? 1.0f : 0.0f;
    return w;
  };
  const std::vector<float> target = occupancy(train, B), heldTarget = occupancy(held, E);
  const size_t inside = size_t(std::count(target.begin(), target.end(), 1.0f));
  ARM_CHECK(inside > 0, "fit-field: none of the %u samples is inside the avatar", B);
  DeviceBuffer targetBuffer = device.upload(target);

  // Initial field: means at inside samples, round Gaussians of the size that fills the inside volume N times over
  // at half overlap, weights 1.
  const uint32_t N = o.gaussians;
  const Layout layout(N);
  std::vector<float> params(layout.total, 0.0f);
  std::vector<size_t> insideSamples;
  for (size_t i = 0; i < B; ++i)
    if (target[i] > 0.5f) insideSamples.push_back(i);
  const double boxVolume = double(hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
  const float scale = float(0.5 * std::cbrt(boxVolume * double(inside) / B / N));
  for (uint32_t i = 0; i < N; ++i) {
    const size_t s = insideSamples[rng() % insideSamples.size()];
    for (int k = 0; k < 3; ++k) params[layout.means + i * 3 + size_t(k)] = trainPoints[s * 3 + size_t(k)];
    for (int k : {0, 2, 5}) params[layout.cholesky + i * 6 + size_t(k)] = std::log(scale);
    params[layout.weights + i] = 1.0f;
  }
  DeviceBuffer theta = device.upload(params);
  auto floats = [&](size_t n) { return device.upload(std::vector<float>(std::max<size_t>(n, 1), 0.0f)); };
  DeviceBuffer grads = floats(layout.total), m = floats(layout.total), v = floats(layout.total);
  DeviceBuffer residual = floats(std::max(B, E));
  DeviceBuffer scratch =
      floats(std::max({gaussianFieldScratchFloats(B, N, 1, true), gaussianFieldScratchFloats(B, N, 1, false),
                       gaussianFieldScratchFloats(E, N, 1, false)}));
  auto inputs = [&](const DeviceBuffer& points, uint32_t count) {
    return GaussianFieldInputs{GaussianShape::Anisotropic,
                               count,
                               N,
                               1,
                               points,
                               theta.view().slice(layout.means, size_t(N) * 3),
                               theta.view().slice(layout.cholesky, size_t(N) * 6),
                               theta.view().slice(layout.weights, N)};
  };
  const GaussianFieldInputs in = inputs(train, B);
  const AdamSettings adam{o.lr, 0.9, 0.999, 1e-8};
  auto meanSquare = [&](uint32_t count) {
    double s = 0;
    for (float r : residual.download<float>(count)) s += double(r) * r;
    return s / count;
  };
  std::printf("fit-field: %u Gaussians to the occupancy of %s (%zu of %u samples inside) on %s, %u iterations\n", N,
              o.model.empty() ? "the default avatar" : o.model.c_str(), inside, B, backendName(backend), o.iterations);
  double loss = 0;
  for (uint32_t done = 0; done < o.iterations;) {
    const uint32_t block = std::min(o.logEvery, o.iterations - done);
    device.run(backend, [&](const Exec& exec) {  // a block of iterations in one submission
      for (uint32_t it = done + 1; it <= done + block; ++it) {
        gaussianField(exec, {in, residual, {}, scratch});
        exec.barrier();
        axpy(exec, {-1.0f, targetBuffer, residual});
        exec.barrier();
        gaussianFieldBackward(exec, {in,
                                     residual,
                                     {},
                                     grads.view().slice(layout.means, size_t(N) * 3),
                                     grads.view().slice(layout.cholesky, size_t(N) * 6),
                                     grads.view().slice(layout.weights, N),
                                     scratch});
        exec.barrier();
        adamStep(exec, {theta, grads, m, v, adam, it});
        exec.barrier();
      }
    });
    done += block;
    loss = meanSquare(B);  // the residual of the block's last iteration, before its step
    std::printf("iteration %u/%u: loss %.6f\n", done, o.iterations, loss);
    std::fflush(stdout);
  }
  // The fit on held-out samples.
  device.run(backend, [&](const Exec& exec) { gaussianField(exec, {inputs(held, E), residual, {}, scratch}); });
  const std::vector<float> predicted = residual.download<float>(E);
  size_t both = 0, either = 0;
  for (size_t i = 0; i < E; ++i) {
    const bool a = predicted[i] > 0.5f, b = heldTarget[i] > 0.5f;
    both += a && b, either += a || b;
  }
  const double iou = either ? double(both) / double(either) : 1.0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "fitted in %.3f s (targets, %u iterations and evaluation; wall clock); IoU on %u held-out samples: %.4f\n",
      seconds, o.iterations, E, iou);
  if (o.output.empty()) return 0;
  params = theta.download<float>(layout.total);
  auto part = [&](size_t first, size_t count) {
    return std::vector<double>(params.begin() + long(first), params.begin() + long(first + count));
  };
  writeNpz(o.output, {{"means", {{N, 3}, NpyType::F32, part(layout.means, size_t(N) * 3)}},
                      {"cholesky", {{N, 6}, NpyType::F32, part(layout.cholesky, size_t(N) * 6)}},
                      {"weights", {{N, 1}, NpyType::F32, part(layout.weights, N)}},
                      {"bounds", {{2, 3}, NpyType::F32, {lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]}}}});
  std::printf(
      "wrote %s: means (N,3), cholesky (N,6: log l00, l10, log l11, l20, l21, log l22), weights (N,1), "
      "bounds (2,3)\n",
      o.output.c_str());
  return 0;
}

}  // namespace armature::app
