// `armature fit-field`: fits N anisotropic Gaussians to a target with Adam, all on the GPU. Targets:
// - the avatar's occupancy (winding number > ½ with respect to the rest mesh), computed on the GPU;
// - the avatar's signed distance s (negative inside; the distance from the same GPU pass), as the band-limited
//   0.5 − 0.5·clamp(s/τ, −1, 1), τ = 1% of the box's diagonal: 1 deep inside, 0 far outside, ½ on the surface, so
//   a field f gives back s ≈ τ·(1 − 2f) within the band;
// - a volume from a file (`volume` (X,Y,Z) of values at cell centres, `bounds` (2,3): the box it spans), trilinear.
// For the avatar, half the samples are uniform in its padded box and half near its surface (a point of the surface,
// area-weighted, moved by a normal offset of 2% of the box's diagonal), where the target changes; for a volume, half
// in the cells whose corners straddle ½. Each iteration is the field's forward into the residual, the residual minus
// the target, the field's backward and an Adam step over all parameters (one buffer): the loss is the mean squared
// residual. A held-out set of samples gives the fit's IoU (field > ½ against target > ½).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "app/box.h"
#include "app/commands.h"
#include "app/poses.h"
#include "armature/body/body_model.h"
#include "armature/body/field_files.h"
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

// A volume file (armature/body/field_files.h), sampled trilinearly at the cells' centres (clamped at the box's faces).
struct Volume : VolumeFile {
  std::vector<uint64_t> straddling;  // the cells between centres whose corners straddle ½, as (i·n1 + j)·n2 + k

  explicit Volume(const std::string& path) : VolumeFile(loadVolumeFile(path)) {
    for (size_t i = 0; i + 1 < n[0]; ++i)
      for (size_t j = 0; j + 1 < n[1]; ++j)
        for (size_t k = 0; k + 1 < n[2]; ++k) {
          bool below = false, above = false;
          for (int c = 0; c < 8; ++c) {
            const double x = at(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
            below |= x <= 0.5, above |= x > 0.5;
          }
          if (below && above) straddling.push_back((i * n[1] + j) * n[2] + k);
        }
  }
  double sample(const float* p) const {
    size_t i0[3], i1[3];
    double t[3];
    for (int k = 0; k < 3; ++k) {
      const double u = std::clamp((double(p[k]) - lo[k]) / (hi[k] - lo[k]) * double(n[k]) - 0.5, 0.0, double(n[k] - 1));
      i0[k] = std::min(size_t(u), n[k] - 2), t[k] = u - double(i0[k]), i1[k] = i0[k] + 1;
    }
    double sum = 0;
    for (int corner = 0; corner < 8; ++corner) {
      const bool x = corner & 1, y = corner & 2, z = corner & 4;
      const double w = (x ? t[0] : 1 - t[0]) * (y ? t[1] : 1 - t[1]) * (z ? t[2] : 1 - t[2]);
      sum += w * at(x ? i1[0] : i0[0], y ? i1[1] : i0[1], z ? i1[2] : i0[2]);
    }
    return sum;
  }
  // `count` samples: half uniform in the box, half in the cells between centres whose corners straddle ½.
  std::vector<float> samplePoints(std::mt19937_64& rng, uint32_t count) const {
    std::vector<float> p(size_t(count) * 3);
    std::uniform_real_distribution<float> unit(0, 1);
    for (size_t s = 0; s < count; ++s) {
      const bool nearLevel = s >= count / 2 && !straddling.empty();
      const uint64_t index = nearLevel ? straddling[rng() % straddling.size()] : 0;
      const std::array<size_t, 3> cell = {index / (n[1] * n[2]), index / n[2] % n[1], index % n[2]};
      for (int k = 0; k < 3; ++k) {
        const float size = (hi[k] - lo[k]) / float(n[k]);
        p[s * 3 + size_t(k)] = nearLevel ? lo[k] + (float(cell[size_t(k)]) + 0.5f + unit(rng)) * size
                                         : lo[k] + unit(rng) * (hi[k] - lo[k]);
      }
    }
    return p;
  }
};

}  // namespace

int runFitField(const FitFieldOptions& o) {
  const Backend backend = chooseBackend(o.backend);
  ARM_CHECK(backend != Backend::Cpu, "fit-field runs on the GPU: --backend cuda or vulkan");
  std::unique_ptr<vk::Context> ctx;
  if (backend == Backend::Vulkan) ctx = std::make_unique<vk::Context>();
  Device device(ctx.get(), Sharing::VulkanOnly);
  device.require(backend);

  // The target at training and held-out samples.
  ARM_CHECK(o.target == "occupancy" || o.target == "distance", "--target must be occupancy or distance, got '%s'",
            o.target.c_str());
  ARM_CHECK(o.volume.empty() || (o.model.empty() && o.target == "occupancy"),
            "--volume is the target itself: it takes no --model or --target");
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(o.seed);
  const uint32_t B = o.samples, E = o.samples;  // training and held-out samples
  float lo[3], hi[3];
  std::vector<float> trainPoints, heldPoints, target, heldTarget;
  DeviceBuffer train, held;  // the points, on the device
  std::string what;
  if (!o.volume.empty()) {
    const Volume volume(o.volume);
    std::copy_n(volume.lo.begin(), 3, lo), std::copy_n(volume.hi.begin(), 3, hi);
    trainPoints = volume.samplePoints(rng, B), heldPoints = volume.samplePoints(rng, E);
    train = device.upload(trainPoints), held = device.upload(heldPoints);
    auto targetAt = [&](const std::vector<float>& points) {
      std::vector<float> values;
      for (size_t i = 0; i < points.size(); i += 3) values.push_back(float(volume.sample(&points[i])));
      return values;
    };
    target = targetAt(trainPoints), heldTarget = targetAt(heldPoints);
    what = "the volume of " + o.volume;
  } else {  // the avatar's rest mesh, in its box padded by 5%
    const BodyModel model = loadModelOrDefault(o.model);
    boxOf(model.vTemplate, lo, hi);
    for (int k = 0; k < 3; ++k) {
      const float pad = 0.05f * (hi[k] - lo[k]);
      lo[k] -= pad, hi[k] += pad;
    }
    const DeviceTriangleMesh mesh(device, std::vector<float>(model.vTemplate.begin(), model.vTemplate.end()),
                                  model.faces);
    trainPoints = samplePoints(rng, B, model, lo, hi), heldPoints = samplePoints(rng, E, model, lo, hi);
    train = device.upload(trainPoints), held = device.upload(heldPoints);
    const bool distance = o.target == "distance";
    const double band = 0.01 * std::hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
    DeviceBuffer windings = device.allocate(ElementType::Float32, std::max(B, E));
    DeviceBuffer distances = device.allocate(ElementType::Float32, distance ? std::max(B, E) : 1);
    auto targetAt = [&](const DeviceBuffer& x, uint32_t count) {
      device.run(backend, [&](const Exec& exec) {
        windingNumbers(exec, {.mesh = &mesh,
                              .points = count,
                              .x = x,
                              .windings = windings,
                              .distances = distance ? distances.view() : DeviceView{}});
      });
      std::vector<float> w = windings.download<float>(count);
      const std::vector<float> d = distance ? distances.download<float>(count) : std::vector<float>{};
      for (size_t i = 0; i < count; ++i) {
        const bool inside = w[i] > 0.5f;
        w[i] = distance ? float(0.5 - 0.5 * std::clamp((inside ? -d[i] : d[i]) / band, -1.0, 1.0))
                        : (inside ? 1.0f : 0.0f);
      }
      return w;
    };
    target = targetAt(train, B), heldTarget = targetAt(held, E);
    const std::string avatar = o.model.empty() ? "the default avatar" : o.model;
    what = distance ? "the signed distance (band " + std::to_string(band) + ") of " + avatar
                    : "the occupancy of " + avatar;
  }
  std::vector<size_t> insideSamples;  // target > ½
  for (size_t i = 0; i < B; ++i)
    if (target[i] > 0.5f) insideSamples.push_back(i);
  const size_t inside = insideSamples.size();
  ARM_CHECK(inside > 0, "fit-field: none of the %u samples is inside (target > 1/2)", B);
  DeviceBuffer targetBuffer = device.upload(target);

  // Initial field: means at inside samples, round Gaussians of the size that fills the inside volume N times over
  // at half overlap, weights 1.
  const uint32_t N = o.gaussians;
  const Layout layout(N);
  std::vector<float> params(layout.total, 0.0f);
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
  std::printf("fit-field: %u Gaussians to %s (%zu of %u samples inside) on %s, %u iterations\n", N, what.c_str(),
              inside, B, backendName(backend), o.iterations);
  double loss = 0;
  for (uint32_t done = 0; done < o.iterations;) {
    const uint32_t block = std::min(o.logEvery, o.iterations - done);
    device.run(backend, [&](const Exec& exec) {  // a block of iterations in one submission
      for (uint32_t it = done + 1; it <= done + block; ++it) {
        gaussianField(exec, {.in = in, .field = residual, .scratch = scratch});
        exec.barrier();
        axpy(exec, {.a = -1.0f, .x = targetBuffer, .y = residual});
        exec.barrier();
        gaussianFieldBackward(exec, {.in = in,
                                     .gradField = residual,
                                     .gradMeans = grads.view().slice(layout.means, size_t(N) * 3),
                                     .gradCholesky = grads.view().slice(layout.cholesky, size_t(N) * 6),
                                     .gradWeights = grads.view().slice(layout.weights, N),
                                     .scratch = scratch});
        exec.barrier();
        adamStep(exec, {.params = theta, .grads = grads, .m = m, .v = v, .settings = adam, .step = it});
        exec.barrier();
      }
    });
    done += block;
    loss = meanSquare(B);  // the residual of the block's last iteration, before its step
    std::printf("iteration %u/%u: loss %.6f\n", done, o.iterations, loss);
    std::fflush(stdout);
  }
  // The fit on held-out samples.
  device.run(backend, [&](const Exec& exec) {
    gaussianField(exec, {.in = inputs(held, E), .field = residual, .scratch = scratch});
  });
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
