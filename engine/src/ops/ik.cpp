// The IK step's entry point, its CPU reference and IkSolver; the backends are ik_vk.cpp and cuda/src/ik.cu.
#include "armature/ops/ik.h"

#include <cmath>
#include <numbers>

#include "dispatch.h"
#include "ik_backend.h"

namespace armature {

namespace {
// The problem with its defaults filled in: per parameter (3J pose components, then 3 translation), the prior,
// lower and upper bounds and whether it is free.
struct Bounds {
  std::vector<double> prior, lower, upper, free;
};

Bounds boundsOf(uint32_t J, const IkProblem& p, const std::vector<double>& startPose) {
  const size_t P = 3 * size_t(J) + 3;
  Bounds b{std::vector<double>(P, 0.0), std::vector<double>(P, -1e30), std::vector<double>(P, 1e30),
           std::vector<double>(P, 0.0)};
  for (size_t q = 0; q < 3 * size_t(J); ++q) {
    b.prior[q] = p.prior.empty() ? startPose[q] : p.prior[q];
    b.lower[q] = p.lower.empty() ? -std::numbers::pi : p.lower[q];
    b.upper[q] = p.upper.empty() ? std::numbers::pi : p.upper[q];
    b.free[q] = p.freeJoints.empty() ? (q >= 3) : p.freeJoints[q / 3] != 0;
  }
  for (size_t q = 3 * size_t(J); q < P; ++q) b.free[q] = p.translation;
  return b;
}

std::vector<double> unitRows(uint32_t J, const std::vector<IkTarget>& targets) {
  const size_t m = 3 * targets.size();
  std::vector<double> rows(m * J * 3, 0.0);
  for (size_t k = 0; k < m; ++k) rows[k * J * 3 + targets[k / 3].joint * 3 + k % 3] = 1.0;
  return rows;
}

void checkWeights(const char* op, double priorWeight, double damping) {
  ARM_CHECK(std::isfinite(priorWeight) && std::isfinite(damping) && priorWeight >= 0 && damping >= 0 &&
                priorWeight + damping > 0,
            "%s: priorWeight %g and damping %g must be finite, non-negative, and not both zero", op, priorWeight,
            damping);
}

// m copies of v one after another, as T: the rows of the batch a step skins.
template <typename T>
std::vector<T> repeated(const std::vector<double>& v, size_t m) {
  std::vector<T> out;
  out.reserve(v.size() * m);
  for (size_t k = 0; k < m; ++k) out.insert(out.end(), v.begin(), v.end());
  return out;
}

void checkTargets(uint32_t J, std::span<const IkTarget> targets) {
  ARM_CHECK(!targets.empty() && targets.size() <= ikMaxTargets, "ik: %zu targets; 1 to %u", targets.size(),
            ikMaxTargets);
  for (const IkTarget& t : targets) {
    ARM_CHECK(t.joint < J, "ik: target joint %u; the model has %u joints", t.joint, J);
    ARM_CHECK(std::isfinite(t.position[0]) && std::isfinite(t.position[1]) && std::isfinite(t.position[2]) &&
                  std::isfinite(t.weight) && t.weight >= 0,
              "ik: target of joint %u has a position or weight that is not finite (or a negative weight)", t.joint);
  }
}
}  // namespace

void validateIkProblem(uint32_t J, const IkProblem& p) {
  ARM_CHECK(J <= 64, "ik: %u joints; the skinning kernels take at most 64", J);
  checkTargets(J, p.targets);
  const size_t n = 3 * size_t(J);
  ARM_CHECK(p.prior.empty() || p.prior.size() == n, "ik: prior has %zu values, expected %zu (J,3)", p.prior.size(), n);
  ARM_CHECK(p.lower.size() == p.upper.size() && (p.lower.empty() || p.lower.size() == n),
            "ik: lower and upper have %zu and %zu values, expected %zu (J,3) each", p.lower.size(), p.upper.size(), n);
  for (size_t i = 0; i < p.lower.size(); ++i)
    ARM_CHECK(p.lower[i] <= p.upper[i], "ik: limits of component %zu: lower %g above upper %g", i, p.lower[i],
              p.upper[i]);
  ARM_CHECK(p.freeJoints.empty() || p.freeJoints.size() == J, "ik: freeJoints has %zu values, expected %u",
            p.freeJoints.size(), J);
  checkWeights("ik", p.priorWeight, p.damping);
}

void ikStepRef(const BodyModel& model, BodyParams& body, const IkProblem& problem) {
  validateIkProblem(model.jointCount, problem);
  ARM_CHECK(body.batch == 1, "ikStepRef: batch %u; IK solves one body", body.batch);
  const uint32_t J = model.jointCount;
  const size_t m = 3 * problem.targets.size(), P = 3 * size_t(J) + 3, poseParams = 3 * size_t(J);
  const Bounds b = boundsOf(J, problem, body.pose);
  const std::vector<double> joints = bodyForwardRef(model, body).joints;
  // The Jacobian rows: the backward of m copies of the body, row k's joint gradient a unit vector.
  BodyParams rows = body;
  rows.batch = uint32_t(m);
  rows.pose = repeated<double>(body.pose, m), rows.betas = repeated<double>(body.betas, m);
  rows.expression = repeated<double>(body.expression, m), rows.transl = repeated<double>(body.transl, m);
  const BodyGrads g = bodyBackwardRef(model, rows, {}, unitRows(J, problem.targets));
  auto param = [&](size_t q) { return q < poseParams ? body.pose[q] : body.transl[q - poseParams]; };
  auto jacobian = [&](size_t k, size_t q) {
    const double d = q < poseParams ? g.pose[k * poseParams + q] : g.transl[k * 3 + (q - poseParams)];
    return problem.targets[k / 3].weight * b.free[q] * d;
  };
  std::vector<double> r(m), grad(P, 0.0), a(m * m), y(m, 0.0);
  for (size_t k = 0; k < m; ++k) {
    const IkTarget& t = problem.targets[k / 3];
    r[k] = t.weight * (joints[t.joint * 3 + k % 3] - t.position[k % 3]);
  }
  for (size_t q = 0; q < P; ++q) {
    for (size_t k = 0; k < m; ++k) grad[q] += jacobian(k, q) * r[k];
    if (q < poseParams) grad[q] += problem.priorWeight * b.free[q] * (param(q) - b.prior[q]);
  }
  const double c = problem.priorWeight + problem.damping;
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < m; ++j) {
      double s = i == j ? c : 0.0;
      for (size_t q = 0; q < P; ++q) s += jacobian(i, q) * jacobian(j, q);
      a[i * m + j] = s;
    }
    for (size_t q = 0; q < P; ++q) y[i] += jacobian(i, q) * grad[q];
  }
  for (size_t j = 0; j < m; ++j) {  // Cholesky, as ikCholeskySolve
    double d = a[j * m + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * m + k] * a[j * m + k];
    a[j * m + j] = d = std::sqrt(d);
    for (size_t i = j + 1; i < m; ++i) {
      double s = a[i * m + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * m + k] * a[j * m + k];
      a[i * m + j] = s / d;
    }
  }
  for (size_t i = 0; i < m; ++i) {
    for (size_t k = 0; k < i; ++k) y[i] -= a[i * m + k] * y[k];
    y[i] /= a[i * m + i];
  }
  for (size_t i = m; i-- > 0;) {
    for (size_t k = i + 1; k < m; ++k) y[i] -= a[k * m + i] * y[k];
    y[i] /= a[i * m + i];
  }
  for (size_t q = 0; q < P; ++q) {
    if (!b.free[q]) continue;
    double s = grad[q];
    for (size_t k = 0; k < m; ++k) s -= jacobian(k, q) * y[k];
    const double value = std::clamp(param(q) - s / c, b.lower[q], b.upper[q]);
    (q < poseParams ? body.pose[q] : body.transl[q - poseParams]) = value;
  }
}

IkPush ikPush(const IkStepArgs& a) {
  return {3 * a.targetCount, a.jointCount, 3 * a.jointCount + 3, 0, float(a.priorWeight), float(a.damping), 0, 0};
}

void ikStep(const Exec& exec, const IkStepArgs& a) {
  const char* op = "ikStep";
  OpChecks check(op, exec);
  ARM_CHECK(a.targetCount >= 1 && a.targetCount <= ikMaxTargets, "%s: %u targets; 1 to %u", op, a.targetCount,
            ikMaxTargets);
  ARM_CHECK(a.jointCount >= 1 && a.jointCount <= 64, "%s: %u joints; 1 to 64", op, a.jointCount);
  checkWeights(op, a.priorWeight, a.damping);
  const size_t m = 3 * size_t(a.targetCount), P = 3 * size_t(a.jointCount) + 3;
  check.view("joints", a.joints, ElementType::Float32, m * a.jointCount * 3);
  check.view("gradPose", a.gradPose, ElementType::Float32, m * a.jointCount * 3);
  check.view("gradTransl", a.gradTransl, ElementType::Float32, m * 3);
  check.view("targets", a.targets, ElementType::UInt32, a.targetCount * sizeof(IkTargetIO) / 4);
  check.view("pose", a.pose, ElementType::Float32, m * a.jointCount * 3);
  check.view("transl", a.transl, ElementType::Float32, m * 3);
  check.view("bounds", a.bounds, ElementType::Float32, 4 * P);
  dispatch(op, exec, a, &vk::ikStep, ARM_CUDA_BACKEND(ikStep));
}

namespace {
std::vector<IkTargetIO> targetData(std::span<const IkTarget> targets) {
  std::vector<IkTargetIO> out;
  for (const IkTarget& t : targets)
    out.push_back(
        {float(t.position[0]), float(t.position[1]), float(t.position[2]), float(t.weight), t.joint, 0, 0, 0});
  return out;
}

void upload(const Exec& exec, DeviceBuffer& buffer, const std::vector<float>& data) {
  if (!data.empty()) buffer.upload(exec, data.data(), data.size() * sizeof(float));
}
}  // namespace

IkSolver::IkSolver(Device& device, Backend backend, const BodyModel& model, uint32_t shapeComponents,
                   uint32_t exprComponents)
    : m_skinning(device, backend, model, shapeComponents, exprComponents, 3 * ikMaxTargets),
      m_S(shapeComponents),
      m_E(exprComponents),
      m_J(model.jointCount),
      m_V(model.vertexCount) {
  const size_t m = 3 * ikMaxTargets, V = model.vertexCount, J = m_J;
  auto allocate = [&](size_t n) { return device.allocate(ElementType::Float32, std::max<size_t>(n, 1)); };
  m_pose = allocate(m * J * 3), m_betas = allocate(m * m_S), m_expression = allocate(m * m_E),
  m_transl = allocate(m * 3);
  m_vertices = allocate(m * V * 3), m_joints = allocate(m * J * 3);
  m_gradVertices = allocate(m * V * 3), m_gradJoints = allocate(m * J * 3), m_gradPose = allocate(m * J * 3);
  m_gradBetas = allocate(m * m_S), m_gradExpression = allocate(m * m_E), m_gradTransl = allocate(m * 3);
  m_targets = device.allocate(ElementType::UInt32, ikMaxTargets * sizeof(IkTargetIO) / 4);
  m_bounds = allocate(4 * (3 * J + 3));
  m_gradVertices.fill(0);  // the residuals are the joints': the vertices' gradient stays zero
}

void IkSolver::start(const Exec& exec, const BodyParams& body, const IkProblem& problem) {
  ARM_CHECK(body.batch == 1 && body.pose.size() == 3 * size_t(m_J) && body.transl.size() == 3 &&
                body.betas.size() >= m_S && body.expression.size() >= m_E,
            "IkSolver::start: the body must be one (batch 1) of this model with %u shape and %u expression "
            "components",
            m_S, m_E);
  validateIkProblem(m_J, problem);
  m_problem = problem;
  m_rows = uint32_t(3 * problem.targets.size());
  const Bounds b = boundsOf(m_J, problem, body.pose);
  std::vector<double> bounds;
  for (const auto* part : {&b.prior, &b.lower, &b.upper, &b.free})
    bounds.insert(bounds.end(), part->begin(), part->end());
  const std::vector<double> betas(body.betas.begin(), body.betas.begin() + m_S),
      expression(body.expression.begin(), body.expression.begin() + m_E);
  upload(exec, m_pose, repeated<float>(body.pose, m_rows));
  upload(exec, m_betas, repeated<float>(betas, m_rows));
  upload(exec, m_expression, repeated<float>(expression, m_rows));
  upload(exec, m_transl, repeated<float>(body.transl, m_rows));
  upload(exec, m_gradJoints, repeated<float>(unitRows(m_J, problem.targets), 1));
  upload(exec, m_bounds, repeated<float>(bounds, 1));
  moveTargets(exec, problem.targets);
}

void IkSolver::moveTargets(const Exec& exec, std::span<const IkTarget> targets) {
  ARM_CHECK(m_rows != 0, "IkSolver::moveTargets: no start() before it");
  ARM_CHECK(targets.size() * 3 == m_rows, "IkSolver::moveTargets: %zu targets; start() had %u", targets.size(),
            m_rows / 3);
  checkTargets(m_J, targets);
  for (size_t i = 0; i < targets.size(); ++i)
    ARM_CHECK(targets[i].joint == m_problem.targets[i].joint && targets[i].weight == m_problem.targets[i].weight,
              "IkSolver::moveTargets: target %zu changed its joint or weight (start() again for that)", i);
  const std::vector<IkTargetIO> data = targetData(targets);
  m_targets.upload(exec, data.data(), data.size() * sizeof(IkTargetIO));
}

void IkSolver::iterate(const Exec& exec, uint32_t iterations) {
  ARM_CHECK(m_rows != 0, "IkSolver::iterate: no start() before it");
  const size_t m = m_rows;
  auto rows = [m](const DeviceBuffer& b, size_t perRow) { return b.view().slice(0, m * perRow); };
  const size_t J = m_J, V = m_V;
  for (uint32_t i = 0; i < iterations; ++i) {
    m_skinning.forward(exec, {.batch = m_rows,
                              .pose = rows(m_pose, J * 3),
                              .betas = m_S ? rows(m_betas, m_S) : DeviceView{},
                              .expression = m_E ? rows(m_expression, m_E) : DeviceView{},
                              .transl = rows(m_transl, 3),
                              .vertices = rows(m_vertices, V * 3),
                              .joints = rows(m_joints, J * 3)});
    m_skinning.backward(exec, {.batch = m_rows,
                               .pose = rows(m_pose, J * 3),
                               .gradVertices = rows(m_gradVertices, V * 3),
                               .gradJoints = rows(m_gradJoints, J * 3),
                               .gradPose = rows(m_gradPose, J * 3),
                               .gradBetas = m_S ? rows(m_gradBetas, m_S) : DeviceView{},
                               .gradExpression = m_E ? rows(m_gradExpression, m_E) : DeviceView{},
                               .gradTransl = rows(m_gradTransl, 3)});
    exec.barrier();
    ikStep(exec, {.targetCount = m_rows / 3,
                  .jointCount = m_J,
                  .joints = m_joints,
                  .gradPose = m_gradPose,
                  .gradTransl = m_gradTransl,
                  .targets = m_targets,
                  .pose = m_pose,
                  .transl = m_transl,
                  .bounds = m_bounds,
                  .priorWeight = m_problem.priorWeight,
                  .damping = m_problem.damping});
    exec.barrier();
  }
}

DeviceView IkSolver::pose() const { return m_pose.view().slice(0, 3 * size_t(m_J)); }
DeviceView IkSolver::transl() const { return m_transl.view().slice(0, 3); }

void IkSolver::download(BodyParams& body) const {
  ARM_CHECK(body.batch == 1 && body.pose.size() == 3 * size_t(m_J) && body.transl.size() == 3,
            "IkSolver::download: the body must be one (batch 1) of this model");
  const std::vector<float> pose = m_pose.download<float>(3 * size_t(m_J)), transl = m_transl.download<float>(3);
  body.pose.assign(pose.begin(), pose.end());
  body.transl.assign(transl.begin(), transl.end());
}

}  // namespace armature
