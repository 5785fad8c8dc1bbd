// The Gaussian field's CPU reference in double: L is built from its parameters and each distance solved by forward
// substitution (L·z = x − μ), independently of the GPU's explicit inverse; the backward is the chain rule through
// the same steps.
#include <algorithm>
#include <cmath>
#include <utility>

#include "armature/error.h"
#include "armature/ops/gaussian_field.h"

namespace armature {

namespace {

constexpr double kLogScaleLimit = 30.0;  // as GAUSSIAN_LOG_SCALE_LIMIT

// L (row-major 3×3, lower triangular) from a Gaussian's parameters; `inside` marks the diagonal entries whose
// log was not clamped (their gradient flows).
struct Cholesky {
  double L[9] = {};
  bool inside[3] = {true, true, true};
};

Cholesky choleskyOf(GaussianShape shape, const double* raw) {
  Cholesky c;
  auto diagonal = [&](int k, double r) {
    c.inside[k] = r > -kLogScaleLimit && r < kLogScaleLimit;
    return std::exp(std::clamp(r, -kLogScaleLimit, kLogScaleLimit));
  };
  if (shape == GaussianShape::Isotropic) {
    const double s = diagonal(0, raw[0]);
    c.inside[1] = c.inside[2] = c.inside[0];
    c.L[0] = c.L[4] = c.L[8] = s;
    return c;
  }
  c.L[0] = diagonal(0, raw[0]);
  c.L[3] = raw[1], c.L[4] = diagonal(1, raw[2]);
  c.L[6] = raw[3], c.L[7] = raw[4], c.L[8] = diagonal(2, raw[5]);
  return c;
}

// z with L·z = d.
void solveLower(const double* L, const double* d, double* z) {
  z[0] = d[0] / L[0];
  z[1] = (d[1] - L[3] * z[0]) / L[4];
  z[2] = (d[2] - L[6] * z[0] - L[7] * z[1]) / L[8];
}

// u with Lᵀ·u = z.
void solveUpper(const double* L, const double* z, double* u) {
  u[2] = z[2] / L[8];
  u[1] = (z[1] - L[7] * u[2]) / L[4];
  u[0] = (z[0] - L[3] * u[1] - L[6] * u[2]) / L[0];
}

// The largest squared distance at which Gaussian i's terms count: infinite (dense), or in culled mode where
// max|w|·e^{−m/2} ≥ ε; negative when they count nowhere.
double cutOf(const GaussianFieldRef& f, size_t i) {
  if (f.epsilon <= 0) return INFINITY;
  double weightMax = 0;
  for (size_t c = 0; c < f.channels; ++c) weightMax = std::max(weightMax, std::abs(f.weights[i * f.channels + c]));
  return weightMax > f.epsilon ? 2 * std::log(weightMax / f.epsilon) : -1.0;
}

}  // namespace

void validateGaussianField(const GaussianFieldRef& f) {
  ARM_CHECK(f.channels >= 1 && f.channels <= kGaussianMaxChannels, "gaussianField: %u channels, not 1 to %u",
            f.channels, kGaussianMaxChannels);
  ARM_CHECK(f.points.size() % 3 == 0, "gaussianField: points has %zu values, not (B,3)", f.points.size());
  ARM_CHECK(f.means.size() % 3 == 0, "gaussianField: means has %zu values, not (N,3)", f.means.size());
  const size_t N = f.gaussianCount(), P = gaussianParameterCount(f.shape);
  ARM_CHECK(f.cholesky.size() == N * P, "gaussianField: cholesky has %zu values, not (%zu,%zu)", f.cholesky.size(), N,
            P);
  ARM_CHECK(f.weights.size() == N * f.channels, "gaussianField: weights has %zu values, not (%zu,%u)", f.weights.size(),
            N, f.channels);
  ARM_CHECK(f.epsilon >= 0 && std::isfinite(f.epsilon), "gaussianField: epsilon is %g, not finite and ≥ 0", f.epsilon);
  for (const auto& [name, v] :
       {std::pair{"points", &f.points}, {"means", &f.means}, {"cholesky", &f.cholesky}, {"weights", &f.weights}})
    for (size_t i = 0; i < v->size(); ++i)
      ARM_CHECK(std::isfinite((*v)[i]), "gaussianField: %s[%zu] is %g", name, i, (*v)[i]);
}

GaussianFieldValuesRef gaussianFieldRef(const GaussianFieldRef& f, bool mahalanobis) {
  validateGaussianField(f);
  const size_t B = f.pointCount(), N = f.gaussianCount(), C = f.channels, P = gaussianParameterCount(f.shape);
  GaussianFieldValuesRef out;
  out.field.assign(B * C, 0.0);
  if (mahalanobis) out.mahalanobis.assign(B * N, 0.0);
  for (size_t i = 0; i < N; ++i) {
    const Cholesky c = choleskyOf(f.shape, &f.cholesky[i * P]);
    const double cut = cutOf(f, i);
    for (size_t b = 0; b < B; ++b) {
      double d[3], z[3];
      for (int k = 0; k < 3; ++k) d[k] = f.points[b * 3 + k] - f.means[i * 3 + k];
      solveLower(c.L, d, z);
      const double m = z[0] * z[0] + z[1] * z[1] + z[2] * z[2], g = std::exp(-0.5 * m);
      if (mahalanobis) out.mahalanobis[b * N + i] = m;
      if (!(m <= cut)) continue;
      for (size_t ch = 0; ch < C; ++ch) out.field[b * C + ch] += f.weights[i * C + ch] * g;
    }
  }
  return out;
}

// With z = L⁻¹d and m = ‖z‖²: dm/dd = 2·L⁻ᵀz = 2u, and dm/dL = −2·u·zᵀ (from dz = −L⁻¹·dL·z), lower triangle.
GaussianFieldGradsRef gaussianFieldBackwardRef(const GaussianFieldRef& f, const std::vector<double>& gradField) {
  validateGaussianField(f);
  const size_t B = f.pointCount(), N = f.gaussianCount(), C = f.channels, P = gaussianParameterCount(f.shape);
  ARM_CHECK(gradField.size() == B * C, "gaussianFieldBackward: gradField has %zu values, not (%zu,%zu)",
            gradField.size(), B, C);
  GaussianFieldGradsRef g;
  g.points.assign(B * 3, 0.0), g.means.assign(N * 3, 0.0), g.cholesky.assign(N * P, 0.0);
  g.weights.assign(N * C, 0.0);
  for (size_t i = 0; i < N; ++i) {
    const Cholesky c = choleskyOf(f.shape, &f.cholesky[i * P]);
    double gL[9] = {};
    const double cut = cutOf(f, i);
    for (size_t b = 0; b < B; ++b) {
      double d[3], z[3], u[3];
      for (int k = 0; k < 3; ++k) d[k] = f.points[b * 3 + k] - f.means[i * 3 + k];
      solveLower(c.L, d, z);
      const double m = z[0] * z[0] + z[1] * z[1] + z[2] * z[2];
      if (!(m <= cut)) continue;
      const double value = std::exp(-0.5 * m);
      double s = 0;
      for (size_t ch = 0; ch < C; ++ch) {
        s += gradField[b * C + ch] * f.weights[i * C + ch];
        g.weights[i * C + ch] += gradField[b * C + ch] * value;
      }
      const double q = -0.5 * value * s;  // dLoss/dm
      solveUpper(c.L, z, u);
      for (int k = 0; k < 3; ++k) {
        g.points[b * 3 + k] += 2 * q * u[k];
        g.means[i * 3 + k] -= 2 * q * u[k];
      }
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col <= r; ++col) gL[r * 3 + col] += -2 * q * u[r] * z[col];
    }
    double* out = &g.cholesky[i * P];
    if (f.shape == GaussianShape::Isotropic) {
      out[0] = c.inside[0] ? c.L[0] * (gL[0] + gL[4] + gL[8]) : 0.0;
    } else {
      out[0] = c.inside[0] ? c.L[0] * gL[0] : 0.0;
      out[1] = gL[3];
      out[2] = c.inside[1] ? c.L[4] * gL[4] : 0.0;
      out[3] = gL[6];
      out[4] = gL[7];
      out[5] = c.inside[2] ? c.L[8] * gL[8] : 0.0;
    }
  }
  return g;
}

}  // namespace armature
