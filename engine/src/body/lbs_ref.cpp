// CPU reference of smplx's lbs() in double precision, and its exact analytic backward.
// Plain loops, no tricks: this is what every GPU path is compared with.
#include <cmath>

#include "armature/body/body_model.h"
#include "armature/error.h"

namespace armature {

namespace {

using Mat3 = std::array<double, 9>;  // row-major

Mat3 mul(const Mat3& a, const Mat3& b) {
  Mat3 c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) c[i * 3 + j] += a[i * 3 + k] * b[k * 3 + j];
  return c;
}

// Everything the forward computes for one batch item; the backward reuses it.
struct Posed {
  std::vector<double> vShaped, jRest, vPosed;  // (V,3) (J,3) (V,3)
  std::vector<Mat3> local, globalRot;          // R_j and G_j
  std::vector<double> rel, globalT;            // (J,3): rel_j = J_j - J_parent, t_j (posed joint)
  std::vector<double> a;                       // (J,12): A_j = [G_j | t_j - G_j J_j], row-major 3x4
};

Posed pose(const BodyModel& m, const BodyParams& p, uint32_t b, const std::vector<int32_t>& order) {
  size_t V = m.vertexCount, J = m.jointCount;
  Posed s;
  s.vShaped = shapedVertices(m, p.betas.data() + size_t(b) * p.shapeComponents, p.shapeComponents,
                             p.expression.data() + size_t(b) * p.exprComponents, p.exprComponents);
  s.jRest = regressJoints(m, s.vShaped);
  s.local.resize(J);
  for (size_t j = 0; j < J; ++j) s.local[j] = rodrigues(p.pose.data() + (size_t(b) * J + j) * 3);

  // Pose correctives from (R_j - I), j >= 1, in smplx's order.
  size_t P = m.poseFeatureCount();
  std::vector<double> feat(P);
  for (size_t j = 1; j < J; ++j)
    for (int e = 0; e < 9; ++e) feat[(j - 1) * 9 + e] = s.local[j][e] - (e % 4 == 0 ? 1.0 : 0.0);
  s.vPosed = s.vShaped;
  for (size_t vk = 0; vk < V * 3; ++vk) {
    const double* pd = m.poseDirs.data() + vk * P;
    double d = 0;
    for (size_t q = 0; q < P; ++q) d += feat[q] * pd[q];
    s.vPosed[vk] += d;
  }

  s.rel.resize(J * 3);
  s.globalRot.resize(J);
  s.globalT.resize(J * 3);
  s.a.resize(J * 12);
  for (int32_t j : order) {
    int32_t par = m.parents[size_t(j)];
    for (int k = 0; k < 3; ++k) s.rel[j * 3 + k] = s.jRest[j * 3 + k] - (par >= 0 ? s.jRest[par * 3 + k] : 0.0);
    if (par < 0) {
      s.globalRot[j] = s.local[j];
      for (int k = 0; k < 3; ++k) s.globalT[j * 3 + k] = s.rel[j * 3 + k];
    } else {
      const Mat3& gp = s.globalRot[par];
      s.globalRot[j] = mul(gp, s.local[j]);
      for (int r = 0; r < 3; ++r) {
        double t = s.globalT[par * 3 + r];
        for (int c = 0; c < 3; ++c) t += gp[r * 3 + c] * s.rel[j * 3 + c];
        s.globalT[j * 3 + r] = t;
      }
    }
    const Mat3& g = s.globalRot[j];
    for (int r = 0; r < 3; ++r) {
      double gj = 0;
      for (int c = 0; c < 3; ++c) {
        s.a[j * 12 + r * 4 + c] = g[r * 3 + c];
        gj += g[r * 3 + c] * s.jRest[j * 3 + c];
      }
      s.a[j * 12 + r * 4 + 3] = s.globalT[j * 3 + r] - gj;
    }
  }
  return s;
}

// T_v = Σ_j w_vj A_j: the vertex's skinning transform (row-major 3x4).
std::array<double, 12> blendedTransform(const BodyModel& m, const Posed& s, size_t v) {
  std::array<double, 12> T{};
  for (size_t j = 0; j < m.jointCount; ++j) {
    double w = m.weights[v * m.jointCount + j];
    if (w == 0) continue;
    for (int e = 0; e < 12; ++e) T[size_t(e)] += w * s.a[j * 12 + size_t(e)];
  }
  return T;
}

}  // namespace

std::vector<double> shapedVertices(const BodyModel& m, const double* betas, uint32_t S, const double* expr,
                                   uint32_t E) {
  std::vector<double> shaped = m.vTemplate;
  for (size_t vk = 0; vk < shaped.size(); ++vk) {
    double d = 0;
    for (size_t k = 0; k < S; ++k) d += betas[k] * m.shapeDirs[vk * m.shapeCount + k];
    for (size_t k = 0; k < E; ++k) d += expr[k] * m.exprDirs[vk * m.exprCount + k];
    shaped[vk] += d;
  }
  return shaped;
}

std::vector<double> regressJoints(const BodyModel& m, const std::vector<double>& vertices) {
  const size_t V = m.vertexCount, J = m.jointCount;
  std::vector<double> joints(J * 3, 0.0);
  for (size_t j = 0; j < J; ++j)
    for (size_t v = 0; v < V; ++v) {
      const double w = m.jRegressor[j * V + v];
      if (w == 0) continue;
      for (size_t k = 0; k < 3; ++k) joints[j * 3 + k] += w * vertices[v * 3 + k];
    }
  return joints;
}

std::array<double, 9> rodrigues(const double r[3]) {
  double e[3] = {r[0] + 1e-8, r[1] + 1e-8, r[2] + 1e-8};
  double angle = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  double u[3] = {r[0] / angle, r[1] / angle, r[2] / angle};
  double s = std::sin(angle), c = 1 - std::cos(angle);
  Mat3 K = {0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0};
  Mat3 K2 = mul(K, K);
  Mat3 R{};
  for (int i = 0; i < 9; ++i) R[i] = (i % 4 == 0 ? 1.0 : 0.0) + s * K[i] + c * K2[i];
  return R;
}

std::array<double, 3> rodriguesBackward(const double r[3], const double gradR[9]) {
  double e[3] = {r[0] + 1e-8, r[1] + 1e-8, r[2] + 1e-8};
  double angle = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  double u[3] = {r[0] / angle, r[1] / angle, r[2] / angle};
  double s = std::sin(angle), c = 1 - std::cos(angle), cosA = std::cos(angle);
  Mat3 K = {0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0};
  Mat3 K2 = mul(K, K);
  std::array<double, 3> g{};
  for (int i = 0; i < 3; ++i) {
    double dAngle = e[i] / angle;
    // du/dr_i = e_i / angle - r * dAngle / angle²
    double du[3];
    for (int k = 0; k < 3; ++k) du[k] = ((k == i) ? 1.0 / angle : 0.0) - r[k] * dAngle / (angle * angle);
    Mat3 dK = {0, -du[2], du[1], du[2], 0, -du[0], -du[1], du[0], 0};
    Mat3 dKK = mul(dK, K), KdK = mul(K, dK);
    double acc = 0;
    for (int q = 0; q < 9; ++q) {
      double dR = cosA * dAngle * K[q] + s * dK[q] + s * dAngle * K2[q] + c * (dKK[q] + KdK[q]);
      acc += gradR[q] * dR;
    }
    g[size_t(i)] = acc;
  }
  return g;
}

BodyParams BodyParams::zeros(const BodyModel& m, uint32_t batch, uint32_t shape, uint32_t expr) {
  BodyParams p;
  p.batch = batch;
  p.shapeComponents = std::min(shape, m.shapeCount);
  p.exprComponents = std::min(expr, m.exprCount);
  p.pose.assign(size_t(batch) * m.jointCount * 3, 0);
  p.betas.assign(size_t(batch) * p.shapeComponents, 0);
  p.expression.assign(size_t(batch) * p.exprComponents, 0);
  p.transl.assign(size_t(batch) * 3, 0);
  return p;
}

void validateBodyParams(const BodyModel& m, const BodyParams& p) {
  ARM_CHECK(p.batch > 0, "body params: batch must be > 0");
  ARM_CHECK(p.shapeComponents <= m.shapeCount, "body params: %u shape components requested, the model has %u",
            p.shapeComponents, m.shapeCount);
  ARM_CHECK(p.exprComponents <= m.exprCount, "body params: %u expression components requested, the model has %u",
            p.exprComponents, m.exprCount);
  auto check = [&](const std::vector<double>& v, size_t want, const char* name) {
    ARM_CHECK(v.size() == want, "body params: %s has %zu values, expected %zu for batch %u", name, v.size(), want,
              p.batch);
    for (size_t i = 0; i < v.size(); ++i)
      ARM_CHECK(std::isfinite(v[i]), "body params: %s[%zu] is %g; parameters must be finite", name, i, v[i]);
  };
  check(p.pose, size_t(p.batch) * m.jointCount * 3, "pose (B,J,3)");
  check(p.betas, size_t(p.batch) * p.shapeComponents, "betas (B,S)");
  check(p.expression, size_t(p.batch) * p.exprComponents, "expression (B,E)");
  check(p.transl, size_t(p.batch) * 3, "transl (B,3)");
}

BodyOutput bodyForwardRef(const BodyModel& m, const BodyParams& p) {
  validateBodyParams(m, p);
  size_t V = m.vertexCount, J = m.jointCount;
  auto order = m.topologicalOrder();
  BodyOutput out;
  out.vertices.resize(p.batch * V * 3);
  out.joints.resize(p.batch * J * 3);
  for (uint32_t b = 0; b < p.batch; ++b) {
    Posed s = pose(m, p, b, order);
    const double* tr = p.transl.data() + b * 3;
    for (size_t j = 0; j < J; ++j)
      for (int k = 0; k < 3; ++k) out.joints[(b * J + j) * 3 + k] = s.globalT[j * 3 + k] + tr[k];
    for (size_t v = 0; v < V; ++v) {
      auto T = blendedTransform(m, s, v);
      const double* x = &s.vPosed[v * 3];
      for (int r = 0; r < 3; ++r)
        out.vertices[(b * V + v) * 3 + r] =
            T[r * 4] * x[0] + T[r * 4 + 1] * x[1] + T[r * 4 + 2] * x[2] + T[r * 4 + 3] + tr[r];
    }
  }
  return out;
}

BodyGrads bodyBackwardRef(const BodyModel& m, const BodyParams& p, const std::vector<double>& gradVertices,
                          const std::vector<double>& gradJoints) {
  validateBodyParams(m, p);
  size_t V = m.vertexCount, J = m.jointCount, P = m.poseFeatureCount();
  ARM_CHECK(gradVertices.empty() || gradVertices.size() == p.batch * V * 3,
            "body backward: gradVertices has %zu values, expected (B,V,3) = %zu", gradVertices.size(), p.batch * V * 3);
  ARM_CHECK(gradJoints.empty() || gradJoints.size() == p.batch * J * 3,
            "body backward: gradJoints has %zu values, expected (B,J,3) = %zu", gradJoints.size(), p.batch * J * 3);
  auto order = m.topologicalOrder();
  BodyGrads g;
  g.pose.assign(p.pose.size(), 0);
  g.betas.assign(p.betas.size(), 0);
  g.expression.assign(p.expression.size(), 0);
  g.transl.assign(p.transl.size(), 0);

  for (uint32_t b = 0; b < p.batch; ++b) {
    Posed s = pose(m, p, b, order);
    std::vector<double> gA(J * 12, 0), gVPosed(V * 3, 0), gT(J * 3, 0), gJRest(J * 3, 0);
    std::vector<Mat3> gG(J, Mat3{}), gR(J, Mat3{});
    // Skinning: v = T_v [p_v; 1] + transl, T_v = Σ_j w_vj A_j.
    if (!gradVertices.empty()) {
      for (size_t v = 0; v < V; ++v) {
        const double* gv = &gradVertices[(b * V + v) * 3];
        for (int k = 0; k < 3; ++k) g.transl[b * 3 + k] += gv[k];
        auto T = blendedTransform(m, s, v);
        const double* x = &s.vPosed[v * 3];
        for (int c = 0; c < 3; ++c) gVPosed[v * 3 + c] = T[c] * gv[0] + T[4 + c] * gv[1] + T[8 + c] * gv[2];
        double xh[4] = {x[0], x[1], x[2], 1};
        for (size_t j = 0; j < J; ++j) {
          double w = m.weights[v * J + j];
          if (w == 0) continue;
          for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) gA[j * 12 + r * 4 + c] += w * gv[r] * xh[c];
        }
      }
    }
    if (!gradJoints.empty())
      for (size_t j = 0; j < J; ++j)
        for (int k = 0; k < 3; ++k) {
          gT[j * 3 + k] += gradJoints[(b * J + j) * 3 + k];
          g.transl[b * 3 + k] += gradJoints[(b * J + j) * 3 + k];
        }
    // A_j = [G_j | t_j - G_j J_j]
    for (size_t j = 0; j < J; ++j) {
      const Mat3& G = s.globalRot[j];
      for (int r = 0; r < 3; ++r) {
        double gt = gA[j * 12 + r * 4 + 3];
        gT[j * 3 + r] += gt;
        for (int c = 0; c < 3; ++c) {
          gG[j][r * 3 + c] += gA[j * 12 + r * 4 + c] - gt * s.jRest[j * 3 + c];
          gJRest[j * 3 + c] -= G[r * 3 + c] * gt;
        }
      }
    }
    // Kinematic chain, children before parents: G_j = G_p R_j, t_j = G_p rel_j + t_p.
    std::vector<double> gRel(J * 3, 0);
    for (size_t i = order.size(); i-- > 0;) {
      int32_t j = order[i], par = m.parents[size_t(j)];
      if (par < 0) {
        gR[j] = gG[j];
        for (int k = 0; k < 3; ++k) gRel[j * 3 + k] += gT[j * 3 + k];
        continue;
      }
      const Mat3 &Gp = s.globalRot[par], &R = s.local[j];
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
          double accR = 0, accGp = 0;
          for (int k = 0; k < 3; ++k) {
            accR += Gp[k * 3 + r] * gG[j][k * 3 + c];  // (Gp^T gG)_{rc}
            accGp += gG[j][r * 3 + k] * R[c * 3 + k];  // (gG R^T)_{rc}
          }
          gR[j][r * 3 + c] += accR;
          gG[par][r * 3 + c] += accGp + gT[j * 3 + r] * s.rel[j * 3 + c];
        }
      for (int c = 0; c < 3; ++c) {
        double acc = 0;
        for (int k = 0; k < 3; ++k) acc += Gp[k * 3 + c] * gT[j * 3 + k];
        gRel[j * 3 + c] += acc;
      }
      for (int k = 0; k < 3; ++k) gT[par * 3 + k] += gT[j * 3 + k];
    }
    for (size_t j = 0; j < J; ++j) {
      int32_t par = m.parents[j];
      for (int k = 0; k < 3; ++k) {
        gJRest[j * 3 + k] += gRel[j * 3 + k];
        if (par >= 0) gJRest[par * 3 + k] -= gRel[j * 3 + k];
      }
    }
    // Pose correctives: v_posed = v_shaped + Σ_q feat_q posedirs[:, :, q].
    std::vector<double> gFeat(P, 0);
    for (size_t vk = 0; vk < V * 3; ++vk) {
      double gv = gVPosed[vk];
      if (gv == 0) continue;
      const double* pd = m.poseDirs.data() + vk * P;
      for (size_t q = 0; q < P; ++q) gFeat[q] += gv * pd[q];
    }
    for (size_t j = 1; j < J; ++j)
      for (int e = 0; e < 9; ++e) gR[j][e] += gFeat[(j - 1) * 9 + e];
    for (size_t j = 0; j < J; ++j) {
      auto gr = rodriguesBackward(p.pose.data() + (b * J + j) * 3, gR[j].data());
      for (int k = 0; k < 3; ++k) g.pose[(b * J + j) * 3 + k] += gr[size_t(k)];
    }
    // Joint regression: J = J_regressor v_shaped.
    std::vector<double> gVShaped = gVPosed;
    for (size_t j = 0; j < J; ++j)
      for (size_t v = 0; v < V; ++v) {
        double w = m.jRegressor[j * V + v];
        if (w == 0) continue;
        for (int k = 0; k < 3; ++k) gVShaped[v * 3 + k] += w * gJRest[j * 3 + k];
      }
    // Shape and expression blend.
    for (size_t vk = 0; vk < V * 3; ++vk) {
      double gv = gVShaped[vk];
      if (gv == 0) continue;
      for (size_t k = 0; k < p.shapeComponents; ++k)
        g.betas[b * p.shapeComponents + k] += gv * m.shapeDirs[vk * m.shapeCount + k];
      for (size_t k = 0; k < p.exprComponents; ++k)
        g.expression[b * p.exprComponents + k] += gv * m.exprDirs[vk * m.exprCount + k];
    }
  }
  return g;
}

// ---- SMPL-X parameterisation ----------------------------------------------------------------------------

namespace {
constexpr uint32_t kSmplxJoints = 55;
void checkSmplx(const BodyModel& m, const SmplxPoseOptions& o) {
  ARM_CHECK(m.jointCount == kSmplxJoints, "SMPL-X pose parts need a 55-joint model, this one has %u", m.jointCount);
  ARM_CHECK(!o.usePca || m.hasHandPca(), "usePca needs the model's hand PCA (hands_componentsl/r), which %s lacks",
            m.source.c_str());
  ARM_CHECK(!o.usePca || (o.numPcaComps >= 1 && o.numPcaComps <= 45), "numPcaComps must be in [1,45], got %u",
            o.numPcaComps);
  ARM_CHECK(o.flatHandMean || m.hasHandPca(), "flatHandMean=false needs the model's hands_meanl/r, which %s lacks",
            m.source.c_str());
}
}  // namespace

std::vector<double> smplxFullPose(const BodyModel& m, const SmplxPose& p, const SmplxPoseOptions& o, uint32_t B) {
  checkSmplx(m, o);
  uint32_t handDims = o.usePca ? o.numPcaComps : 45;
  auto need = [&](const std::vector<double>& v, size_t per, const char* name) {
    ARM_CHECK(v.size() == size_t(B) * per, "SMPL-X pose: %s has %zu values, expected %zu", name, v.size(),
              size_t(B) * per);
  };
  need(p.globalOrient, 3, "global_orient");
  need(p.bodyPose, 63, "body_pose");
  need(p.jaw, 3, "jaw_pose");
  need(p.leye, 3, "leye_pose");
  need(p.reye, 3, "reye_pose");
  need(p.leftHand, handDims, "left_hand_pose");
  need(p.rightHand, handDims, "right_hand_pose");
  std::vector<double> full(size_t(B) * kSmplxJoints * 3, 0);
  for (uint32_t b = 0; b < B; ++b) {
    double* f = &full[size_t(b) * kSmplxJoints * 3];
    for (int k = 0; k < 3; ++k) f[k] = p.globalOrient[b * 3 + k];
    for (int k = 0; k < 63; ++k) f[3 + k] = p.bodyPose[b * 63 + k];
    for (int k = 0; k < 3; ++k)
      f[66 + k] = p.jaw[b * 3 + k], f[69 + k] = p.leye[b * 3 + k], f[72 + k] = p.reye[b * 3 + k];
    for (int side = 0; side < 2; ++side) {
      const auto& hand = side ? p.rightHand : p.leftHand;
      const auto& comps = side ? m.handsComponentsR : m.handsComponentsL;
      const auto& mean = side ? m.handsMeanR : m.handsMeanL;
      double* h = f + 75 + side * 45;
      for (int k = 0; k < 45; ++k) {
        double v = 0;
        if (o.usePca)
          for (uint32_t c = 0; c < handDims; ++c) v += hand[b * handDims + c] * comps[c * 45 + size_t(k)];
        else
          v = hand[b * 45 + size_t(k)];
        h[k] = v + (o.flatHandMean ? 0.0 : mean[size_t(k)]);
      }
    }
  }
  return full;
}

SmplxPose smplxFullPoseBackward(const BodyModel& m, const std::vector<double>& g, const SmplxPoseOptions& o,
                                uint32_t B) {
  checkSmplx(m, o);
  ARM_CHECK(g.size() == size_t(B) * kSmplxJoints * 3, "SMPL-X pose backward: gradient has %zu values, expected %zu",
            g.size(), size_t(B) * kSmplxJoints * 3);
  uint32_t handDims = o.usePca ? o.numPcaComps : 45;
  SmplxPose out;
  out.globalOrient.resize(B * 3);
  out.bodyPose.resize(B * 63);
  out.jaw.resize(B * 3);
  out.leye.resize(B * 3);
  out.reye.resize(B * 3);
  out.leftHand.assign(B * handDims, 0);
  out.rightHand.assign(B * handDims, 0);
  for (uint32_t b = 0; b < B; ++b) {
    const double* f = &g[size_t(b) * kSmplxJoints * 3];
    for (int k = 0; k < 3; ++k) out.globalOrient[b * 3 + k] = f[k];
    for (int k = 0; k < 63; ++k) out.bodyPose[b * 63 + k] = f[3 + k];
    for (int k = 0; k < 3; ++k)
      out.jaw[b * 3 + k] = f[66 + k], out.leye[b * 3 + k] = f[69 + k], out.reye[b * 3 + k] = f[72 + k];
    for (int side = 0; side < 2; ++side) {
      auto& hand = side ? out.rightHand : out.leftHand;
      const auto& comps = side ? m.handsComponentsR : m.handsComponentsL;
      const double* h = f + 75 + side * 45;
      for (uint32_t c = 0; c < handDims; ++c) {
        double v = 0;
        for (int k = 0; k < 45; ++k) v += o.usePca ? h[k] * comps[c * 45 + size_t(k)] : (size_t(k) == c ? h[k] : 0.0);
        hand[b * handDims + c] = v;
      }
    }
  }
  return out;
}

}  // namespace armature
