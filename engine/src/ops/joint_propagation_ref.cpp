// The CPU reference of joint propagation: a sequential walk in parent-first order, and its reverse for the backward.
#include <algorithm>
#include <array>
#include <cmath>

#include "armature/error.h"
#include "armature/ops/joint_propagation.h"
#include "math/transform34.h"

namespace armature {

namespace {

Mat34 local(const JointLocalsRef& in, size_t index) {  // index = b·N + j
  Mat34 m;
  if (in.kind == LocalTransform::Affine) {
    for (size_t k = 0; k < 12; ++k) m[k] = in.affine[index * 12 + k];
    return m;
  }
  return trsMatrix(&in.translations[index * 3], &in.rotations[index * 4]);
}

// d<gradR, R(q)>/dq for trsMatrix's rotation (math/transform34.h).
std::array<double, 4> quaternionBackward(const double* q, const Mat34& g) {
  const double x = q[0], y = q[1], z = q[2], w = q[3];
  auto G = [&](int r, int c) { return g[size_t(r * 4 + c)]; };
  return {2 * (y * G(0, 1) + z * G(0, 2) + y * G(1, 0) - 2 * x * G(1, 1) - w * G(1, 2) + z * G(2, 0) + w * G(2, 1) -
               2 * x * G(2, 2)),
          2 * (-2 * y * G(0, 0) + x * G(0, 1) + w * G(0, 2) + x * G(1, 0) + z * G(1, 2) - w * G(2, 0) + z * G(2, 1) -
               2 * y * G(2, 2)),
          2 * (-2 * z * G(0, 0) - w * G(0, 1) + x * G(0, 2) + w * G(1, 0) - 2 * z * G(1, 1) + y * G(1, 2) +
               x * G(2, 0) + y * G(2, 1)),
          2 * (-z * G(0, 1) + y * G(0, 2) + z * G(1, 0) - x * G(1, 2) - y * G(2, 0) + x * G(2, 1))};
}

void checkSize(const char* name, size_t got, size_t want) {
  ARM_CHECK(got == want, "joint propagation: %s has %zu values, expected %zu", name, got, want);
}

void checkFinite(const char* name, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    ARM_CHECK(std::isfinite(values[i]), "joint propagation: %s[%zu] is %g, expected a finite value", name, i,
              values[i]);
}

}  // namespace

void validateJointLocals(const JointForest& forest, const JointLocalsRef& in) {
  const size_t N = forest.size(), B = in.batch, P = in.pointJoints.size();
  ARM_CHECK(B >= 1, "joint propagation: the batch must be at least 1");
  if (in.kind == LocalTransform::Rigid) {
    checkSize("rotations", in.rotations.size(), B * N * 4);
    checkSize("translations", in.translations.size(), B * N * 3);
    checkFinite("rotations", in.rotations);
    checkFinite("translations", in.translations);
  } else {
    checkSize("affine", in.affine.size(), B * N * 12);
    checkFinite("affine", in.affine);
  }
  if (!in.inverseBind.empty()) checkSize("inverseBind", in.inverseBind.size(), N * 12);
  checkFinite("inverseBind", in.inverseBind);
  checkSize("points", in.points.size(), P * 3);
  checkFinite("points", in.points);
  for (size_t i = 0; i < P; ++i)
    ARM_CHECK(in.pointJoints[i] >= 0 && size_t(in.pointJoints[i]) < N,
              "joint propagation: point %zu is attached to joint %d, expected a joint in [0, %zu)", i,
              in.pointJoints[i], N);
}

JointGlobalsRef propagateJointsRef(const JointForest& forest, const JointLocalsRef& in) {
  validateJointLocals(forest, in);
  const size_t N = forest.size(), B = in.batch, P = in.pointJoints.size();
  JointGlobalsRef out;
  out.globals.resize(B * N * 12);
  out.positions.resize(B * N * 3);
  out.points.resize(B * P * 3);
  if (!in.inverseBind.empty()) out.skinning.resize(B * N * 12);
  std::vector<Mat34> global(N);
  for (size_t b = 0; b < B; ++b) {
    for (uint32_t j : forest.order()) {
      const int32_t p = forest.parents()[j];
      global[j] = p < 0 ? local(in, b * N + j) : compose(global[size_t(p)], local(in, b * N + j));
    }
    for (size_t j = 0; j < N; ++j) {
      const size_t i = b * N + j;
      std::copy(global[j].begin(), global[j].end(), &out.globals[i * 12]);
      for (size_t r = 0; r < 3; ++r) out.positions[i * 3 + r] = global[j][r * 4 + 3];
      if (!in.inverseBind.empty()) {
        Mat34 inverseBind;
        std::copy_n(&in.inverseBind[j * 12], 12, inverseBind.begin());
        const Mat34 s = compose(global[j], inverseBind);
        std::copy(s.begin(), s.end(), &out.skinning[i * 12]);
      }
    }
    for (size_t k = 0; k < P; ++k) {
      const Mat34& g = global[size_t(in.pointJoints[k])];
      const double* x = &in.points[k * 3];
      for (size_t r = 0; r < 3; ++r)
        out.points[(b * P + k) * 3 + r] = g[r * 4] * x[0] + g[r * 4 + 1] * x[1] + g[r * 4 + 2] * x[2] + g[r * 4 + 3];
    }
  }
  return out;
}

JointLocalGradsRef propagateJointsBackwardRef(const JointForest& forest, const JointLocalsRef& in,
                                              const JointGlobalsRef& grads) {
  validateJointLocals(forest, in);
  const size_t N = forest.size(), B = in.batch, P = in.pointJoints.size();
  if (!grads.globals.empty()) checkSize("the globals' gradient", grads.globals.size(), B * N * 12);
  if (!grads.skinning.empty()) {
    ARM_CHECK(!in.inverseBind.empty(), "joint propagation: a skinning-matrix gradient without inverse binds");
    checkSize("the skinning matrices' gradient", grads.skinning.size(), B * N * 12);
  }
  if (!grads.positions.empty()) checkSize("the positions' gradient", grads.positions.size(), B * N * 3);
  if (!grads.points.empty()) checkSize("the points' gradient", grads.points.size(), B * P * 3);
  const JointGlobalsRef fwd = propagateJointsRef(forest, in);
  JointLocalGradsRef out;
  (in.kind == LocalTransform::Rigid ? out.rotations : out.affine)
      .assign(B * N * (in.kind == LocalTransform::Rigid ? 4 : 12), 0.0);
  if (in.kind == LocalTransform::Rigid) out.translations.assign(B * N * 3, 0.0);
  out.points.assign(P * 3, 0.0);
  std::vector<Mat34> adj(N);
  auto global = [&](size_t i) {
    Mat34 g;
    std::copy_n(&fwd.globals[i * 12], 12, g.begin());
    return g;
  };
  for (size_t b = 0; b < B; ++b) {
    // The adjoint of each global from the outputs that read it.
    for (size_t j = 0; j < N; ++j) {
      const size_t i = b * N + j;
      adj[j].fill(0.0);
      if (!grads.globals.empty()) std::copy_n(&grads.globals[i * 12], 12, adj[j].begin());
      if (!grads.skinning.empty())  // S = G · IB: dG = dS · IBᵀ (4×4, IB's last row 0 0 0 1)
        for (size_t r = 0; r < 3; ++r)
          for (size_t c = 0; c < 4; ++c) {
            double x = c == 3 ? grads.skinning[i * 12 + r * 4 + 3] : 0.0;
            for (size_t k = 0; k < 4 && c < 3; ++k)
              x += grads.skinning[i * 12 + r * 4 + k] * in.inverseBind[j * 12 + c * 4 + k];
            adj[j][r * 4 + c] += x;
          }
      if (!grads.positions.empty())
        for (size_t r = 0; r < 3; ++r) adj[j][r * 4 + 3] += grads.positions[i * 3 + r];
    }
    for (size_t k = 0; k < P && !grads.points.empty(); ++k) {
      const size_t j = size_t(in.pointJoints[k]);
      const double* gx = &grads.points[(b * P + k) * 3];
      const double* x = &in.points[k * 3];
      const Mat34 g = global(b * N + j);
      for (size_t r = 0; r < 3; ++r) {
        for (size_t c = 0; c < 3; ++c) {
          adj[j][r * 4 + c] += gx[r] * x[c];
          out.points[k * 3 + c] += g[r * 4 + c] * gx[r];
        }
        adj[j][r * 4 + 3] += gx[r];
      }
    }
    // Children before parents: G_j = G_p · L_j gives dL_j = G_pᵀ · dG_j and dG_p += dG_j · L_jᵀ.
    const std::vector<uint32_t>& order = forest.order();
    for (size_t n = order.size(); n-- > 0;) {
      const size_t j = order[n], i = b * N + j;
      const int32_t p = forest.parents()[j];
      Mat34 dL = adj[j];
      if (p >= 0) {
        const Mat34 gp = global(b * N + size_t(p)), l = local(in, i);
        for (size_t r = 0; r < 3; ++r)
          for (size_t c = 0; c < 4; ++c) {
            double x = 0, y = c == 3 ? adj[j][r * 4 + 3] : 0.0;
            for (size_t k = 0; k < 3; ++k) x += gp[k * 4 + r] * adj[j][k * 4 + c];
            for (size_t k = 0; k < 4 && c < 3; ++k) y += adj[j][r * 4 + k] * l[c * 4 + k];
            dL[r * 4 + c] = x;
            adj[size_t(p)][r * 4 + c] += y;
          }
      }
      if (in.kind == LocalTransform::Affine) {
        std::copy(dL.begin(), dL.end(), &out.affine[i * 12]);
      } else {
        const std::array<double, 4> dq = quaternionBackward(&in.rotations[i * 4], dL);
        std::copy(dq.begin(), dq.end(), &out.rotations[i * 4]);
        for (size_t r = 0; r < 3; ++r) out.translations[i * 3 + r] = dL[r * 4 + 3];
      }
    }
  }
  return out;
}

}  // namespace armature
