#include "app/body_field.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "armature/body/field_files.h"
#include "armature/error.h"
#include "armature/ops/joint_propagation.h"

namespace armature::app {

BodyField loadBodyField(const std::string& path, const BodyModel& model) {
  FieldFile file = loadFieldFile(path);
  return attachField(std::move(file.means), std::move(file.cholesky), std::move(file.weights), model, path);
}

BodyField attachField(std::vector<float> means, std::vector<float> cholesky, std::vector<float> weights,
                      const BodyModel& model, std::string source) {
  BodyField f{std::move(source), std::move(means), std::move(cholesky), std::move(weights), {}};
  const size_t N = f.means.size() / 3, V = model.vertexCount, J = model.jointCount;
  f.joints.resize(N);
  for (size_t i = 0; i < N; ++i) {
    size_t nearest = 0;
    double best = std::numeric_limits<double>::infinity();
    for (size_t v = 0; v < V; ++v) {
      double d = 0;
      for (size_t k = 0; k < 3; ++k) d += std::pow(model.vTemplate[v * 3 + k] - f.means[i * 3 + k], 2);
      if (d < best) best = d, nearest = v;
    }
    const double* w = &model.weights[nearest * J];
    f.joints[i] = int32_t(std::max_element(w, w + J) - w);
  }
  return f;
}

FieldJoints fieldJoints(const BodyModel& model, const JointForest& skeleton, const double* pose,
                        const std::vector<double>& rest, const double transl[3]) {
  const size_t J = model.jointCount;
  JointLocalsRef locals;
  locals.kind = LocalTransform::Affine;
  locals.affine.resize(J * 12);
  FieldJoints out;
  out.inverseBinds.assign(J * 12, 0.0f);
  for (size_t j = 0; j < J; ++j) {
    const int32_t parent = model.parents[j];
    const std::array<double, 9> R = rodrigues(pose + j * 3);
    double* local = &locals.affine[j * 12];
    for (size_t r = 0; r < 3; ++r) {
      for (size_t c = 0; c < 3; ++c) local[r * 4 + c] = R[r * 3 + c];
      local[r * 4 + 3] = rest[j * 3 + r] - (parent < 0 ? -transl[r] : rest[size_t(parent) * 3 + r]);
      out.inverseBinds[j * 12 + r * 5] = 1.0f;  // the diagonal of the 3×4
      out.inverseBinds[j * 12 + r * 4 + 3] = float(-rest[j * 3 + r]);
    }
  }
  out.locals.assign(locals.affine.begin(), locals.affine.end());
  out.posed = propagateJointsRef(skeleton, locals).positions;
  return out;
}

FieldReach fieldReach(const BodyField& field, const std::vector<double>& rest, float epsilon) {
  FieldReach reach;
  reach.radius.assign(rest.size() / 3, 0.0);
  for (size_t i = 0; i < field.size(); ++i) {
    const double w = std::abs(double(field.weights[i]));
    if (w <= epsilon) continue;  // counts nowhere (gaussian_field.h's culled mode)
    // A term falls below ε beyond the Mahalanobis radius √(2 ln(|w|/ε)); L's Frobenius norm bounds its stretch.
    const float* p = &field.cholesky[i * 6];
    const double l00 = std::exp(p[0]), l11 = std::exp(p[2]), l22 = std::exp(p[5]);
    const double stretch = std::sqrt(l00 * l00 + p[1] * p[1] + l11 * l11 + p[3] * p[3] + p[4] * p[4] + l22 * l22);
    const size_t j = size_t(field.joints[i]);
    double fromJoint = 0;
    for (size_t k = 0; k < 3; ++k) fromJoint += std::pow(double(field.means[i * 3 + k]) - rest[j * 3 + k], 2);
    reach.radius[j] = std::max(reach.radius[j], std::sqrt(fromJoint) + std::sqrt(2 * std::log(w / epsilon)) * stretch);
  }
  return reach;
}

void fieldBox(const FieldReach& reach, const std::vector<double>& posed, float lo[3], float hi[3]) {
  for (int k = 0; k < 3; ++k) lo[k] = std::numeric_limits<float>::max(), hi[k] = -lo[k];
  for (size_t j = 0; j < reach.radius.size(); ++j) {
    if (reach.radius[j] <= 0) continue;
    for (size_t k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], float(posed[j * 3 + k] - reach.radius[j]));
      hi[k] = std::max(hi[k], float(posed[j * 3 + k] + reach.radius[j]));
    }
  }
  if (lo[0] > hi[0])  // no Gaussian counts anywhere: a unit box at the root
    for (size_t k = 0; k < 3; ++k) lo[k] = float(posed[k] - 0.5), hi[k] = float(posed[k] + 0.5);
}

}  // namespace armature::app
