// Inverse kinematics: the step's algebra against a dense solve on a finite-difference Jacobian, the scripted drag
// (right wrist 20 cm, feet pinned) on the reference and on each GPU backend, joint limits, the GPU step against the
// reference, and bad problems refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "armature/error.h"
#include "armature/ops/ik.h"
#include "support/body_fixtures.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

uint32_t jointNamed(const BodyModel& m, const char* name) {
  const auto it = std::find(m.jointNames.begin(), m.jointNames.end(), name);
  if (it == m.jointNames.end()) throw Error(std::string("no joint ") + name);
  return uint32_t(it - m.jointNames.begin());
}

std::array<double, 3> jointAt(const std::vector<double>& joints, uint32_t j) {
  return {joints[3 * j], joints[3 * j + 1], joints[3 * j + 2]};
}

double distance(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

// The drag the viewer's test scripts: the right wrist's target 20 cm forward and up from where it is, both ankles
// pinned where they are (weight 1 each), every joint but the root free, limits ±π.
struct Drag {
  uint32_t wrist, leftAnkle, rightAnkle;
  IkProblem problem;
};

Drag scriptedDrag(const BodyModel& model, const BodyParams& body) {
  const std::vector<double> joints = bodyForwardRef(model, body).joints;
  Drag d{jointNamed(model, "right_wrist"), jointNamed(model, "left_ankle"), jointNamed(model, "right_ankle"), {}};
  std::array<double, 3> goal = jointAt(joints, d.wrist);
  goal[1] += 0.12, goal[2] += 0.16;  // 20 cm
  d.problem.targets = {{d.wrist, goal, 1.0},
                       {d.leftAnkle, jointAt(joints, d.leftAnkle), 1.0},
                       {d.rightAnkle, jointAt(joints, d.rightAnkle), 1.0}};
  return d;
}

// Where the drag stands: the wrist's and the ankles' distances to their targets, in metres.
std::array<double, 3> dragErrors(const BodyModel& model, const BodyParams& body, const Drag& d) {
  const std::vector<double> joints = bodyForwardRef(model, body).joints;
  std::array<double, 3> e{};
  for (size_t i = 0; i < 3; ++i)
    e[i] = distance(jointAt(joints, d.problem.targets[i].joint), d.problem.targets[i].position);
  return e;
}

// Every pose component inside [lower, upper] (float rounding allowed where the pose came from the GPU).
::testing::AssertionResult withinLimits(const std::vector<double>& pose, const IkProblem& p, double slack) {
  for (size_t i = 0; i < pose.size(); ++i)
    if (pose[i] < p.lower[i] - slack || pose[i] > p.upper[i] + slack)
      return ::testing::AssertionFailure()
             << "pose[" << i << "] = " << pose[i] << " outside [" << p.lower[i] << ", " << p.upper[i] << "]";
  return ::testing::AssertionSuccess();
}

// Elbows limited to a quarter turn about each axis, everything else ±π.
void limitElbows(const BodyModel& model, IkProblem& p) {
  p.lower.assign(3 * model.jointCount, -M_PI), p.upper.assign(3 * model.jointCount, M_PI);
  for (const char* name : {"left_elbow", "right_elbow"})
    for (int a = 0; a < 3; ++a) {
      p.lower[3 * jointNamed(model, name) + a] = -0.4;
      p.upper[3 * jointNamed(model, name) + a] = 0.4;
    }
}

constexpr int kDragIterations = 12;  // damped Gauss-Newton: a handful of steps reach a reachable target

}  // namespace

// One step minimises ½‖r + JΔ‖² + ½μ‖θ + Δ − θ₀‖² + ½λ‖Δ‖² over the free parameters: checked against the dense
// normal equations on a Jacobian by central differences of the forward (h = 1e-6: its error ~h² ≈ 1e-12 against
// entries of order 1, far below the 1e-6 tolerance), on a random model with the translation free and a prior pose
// away from the start.
TEST(IkRef, StepSolvesTheDampedNormalEquations) {
  const BodyModel model = randomBodyModel(60, 7, 3, 2, rng());
  BodyParams body = randomBodyParams(model, 1, 3, 2, rng(), 0.5);
  const uint32_t J = model.jointCount;
  IkProblem p;
  p.targets = {{4, {0.3, -0.2, 0.1}, 1.0}, {6, {-0.1, 0.4, 0.2}, 2.0}};
  p.prior = uniform(3 * J, -0.3, 0.3);
  p.translation = true;
  p.priorWeight = 0.05, p.damping = 0.02;  // large enough that the prior's and the damping's terms matter
  const size_t P = 3 * J + 3, m = 6;
  auto residuals = [&](const BodyParams& b) {
    const std::vector<double> joints = bodyForwardRef(model, b).joints;
    std::vector<double> r(m);
    for (size_t k = 0; k < m; ++k)
      r[k] = p.targets[k / 3].weight * (joints[3 * p.targets[k / 3].joint + k % 3] - p.targets[k / 3].position[k % 3]);
    return r;
  };
  auto param = [&](BodyParams& b, size_t q) -> double& { return q < 3 * J ? b.pose[q] : b.transl[q - 3 * J]; };
  const std::vector<double> r = residuals(body);
  std::vector<double> jac(m * P, 0.0);  // root orientation not free: its column stays zero
  for (size_t q = 3; q < P; ++q) {
    BodyParams plus = body, minus = body;
    param(plus, q) += 1e-6, param(minus, q) -= 1e-6;
    const std::vector<double> rp = residuals(plus), rm = residuals(minus);
    for (size_t k = 0; k < m; ++k) jac[k * P + q] = (rp[k] - rm[k]) / 2e-6;
  }
  // (JᵀJ + cI)Δ = −(Jᵀr + μ(θ − θ₀)) over the free parameters, by Gaussian elimination.
  const double c = p.priorWeight + p.damping;
  const size_t n = P - 3;
  std::vector<double> a(n * (n + 1), 0.0);
  for (size_t i = 0; i < n; ++i) {
    const size_t qi = i + 3;
    for (size_t j = 0; j < n; ++j) {
      double s = i == j ? c : 0.0;
      for (size_t k = 0; k < m; ++k) s += jac[k * P + qi] * jac[k * P + j + 3];
      a[i * (n + 1) + j] = s;
    }
    double g = qi < 3 * J ? p.priorWeight * (body.pose[qi] - p.prior[qi]) : 0.0;
    for (size_t k = 0; k < m; ++k) g += jac[k * P + qi] * r[k];
    a[i * (n + 1) + n] = -g;
  }
  for (size_t col = 0; col < n; ++col)
    for (size_t row = col + 1; row < n; ++row) {
      const double f = a[row * (n + 1) + col] / a[col * (n + 1) + col];
      for (size_t k = col; k <= n; ++k) a[row * (n + 1) + k] -= f * a[col * (n + 1) + k];
    }
  std::vector<double> delta(n);
  for (size_t i = n; i-- > 0;) {
    double s = a[i * (n + 1) + n];
    for (size_t k = i + 1; k < n; ++k) s -= a[i * (n + 1) + k] * delta[k];
    delta[i] = s / a[i * (n + 1) + i];
  }
  BodyParams stepped = body;
  ikStepRef(model, stepped, p);
  for (size_t i = 0; i < n; ++i) {
    BodyParams copy = stepped;
    EXPECT_NEAR(param(copy, i + 3) - param(body, i + 3), delta[i], 1e-6) << "parameter " << i + 3;
  }
  EXPECT_EQ(std::vector<double>(stepped.pose.begin(), stepped.pose.begin() + 3),
            std::vector<double>(body.pose.begin(), body.pose.begin() + 3));  // the root stays put
}

// The scripted drag on the default avatar: the wrist arrives within 1 mm in kDragIterations steps while the pinned
// ankles stay within 1 mm, and the elbows' limits hold at every step.
TEST(IkRef, DragsTheWristWithTheFeetPinned) {
  const BodyModel& model = defaultAvatar();
  BodyParams body = BodyParams::zeros(model, 1);
  Drag d = scriptedDrag(model, body);
  limitElbows(model, d.problem);
  for (int i = 0; i < kDragIterations; ++i) {
    ikStepRef(model, body, d.problem);
    ASSERT_TRUE(withinLimits(body.pose, d.problem, 0.0)) << "after step " << i + 1;
  }
  const std::array<double, 3> e = dragErrors(model, body, d);
  EXPECT_LT(e[0], 1e-3) << "wrist";
  EXPECT_LT(e[1], 1e-3) << "left ankle";
  EXPECT_LT(e[2], 1e-3) << "right ankle";
}

TEST(IkRef, RefusesBadProblems) {
  const BodyModel& model = defaultAvatar();
  BodyParams body = BodyParams::zeros(model, 1);
  auto refused = [&](IkProblem p, const char* message) {
    try {
      ikStepRef(model, body, p);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  IkProblem ok;
  ok.targets = {{21, {0, 0, 0}, 1}};
  refused({}, "0 targets");
  IkProblem p = ok;
  p.targets[0].joint = 55;
  refused(p, "target joint 55");
  p = ok;
  p.targets[0].position[1] = NAN;
  refused(p, "not finite");
  p = ok;
  p.lower = {0.0};
  p.upper = {0.0};
  refused(p, "lower and upper have 1 and 1 values");
  p = ok;
  p.priorWeight = 0, p.damping = 0;
  refused(p, "not both zero");
  p = ok;
  p.targets.assign(9, ok.targets[0]);
  refused(p, "9 targets");
}

class Ik : public OnBackend {};

// One GPU step from a random pose of a random model against the reference's: the same damped step in float (the
// Jacobian from the float backward, the m×m solve in float), within 2e-4 rad of a step that moves parameters by up
// to ~0.5.
TEST_P(Ik, StepMatchesTheReference) {
  const BodyModel model = randomBodyModel(97, 9, 4, 3, rng());
  BodyParams body = randomBodyParams(model, 1, 4, 3, rng(), 0.5);
  for (double& x : body.pose) x = double(float(x));
  IkProblem p;
  p.targets = {{5, {0.2, -0.1, 0.3}, 1.0}, {8, {-0.2, 0.3, 0.1}, 1.5}};
  p.translation = true;
  p.priorWeight = 0.01, p.damping = 0.01;
  IkSolver solver(device(), backend(), model, 4, 3);
  run([&](const Exec& e) {
    solver.start(e, body, p);
    solver.iterate(e, 1);
  });
  BodyParams got = body;
  solver.download(got);
  ikStepRef(model, body, p);
  EXPECT_TRUE(allClose(got.pose, body.pose, Tol{2e-4, 0}));
  EXPECT_TRUE(allClose(got.transl, body.transl, Tol{2e-4, 0}));
}

// The scripted drag on the GPU: the same arrival within 1 mm in the same number of iterations (recorded in one
// submission, as a frame does), the ankles held, the elbows' limits kept (to float rounding).
TEST_P(Ik, DragsTheWristWithTheFeetPinned) {
  const BodyModel& model = defaultAvatar();
  BodyParams body = BodyParams::zeros(model, 1);
  Drag d = scriptedDrag(model, body);
  limitElbows(model, d.problem);
  IkSolver solver(device(), backend(), model, 10, 10);
  run([&](const Exec& e) {
    solver.start(e, body, d.problem);
    solver.iterate(e, kDragIterations);
  });
  solver.download(body);
  EXPECT_TRUE(withinLimits(body.pose, d.problem, 1e-6));
  const std::array<double, 3> errors = dragErrors(model, body, d);
  EXPECT_LT(errors[0], 1e-3) << "wrist";
  EXPECT_LT(errors[1], 1e-3) << "left ankle";
  EXPECT_LT(errors[2], 1e-3) << "right ankle";
  // Moving the target on: the solve follows from where it is.
  std::vector<IkTarget> moved = d.problem.targets;
  moved[0].position[0] -= 0.05;
  run([&](const Exec& e) {
    solver.moveTargets(e, moved);
    solver.iterate(e, kDragIterations);
  });
  solver.download(body);
  d.problem.targets = moved;
  EXPECT_LT(dragErrors(model, body, d)[0], 1e-3) << "wrist, moved on";
  expectRejected([&](const Exec& e) { solver.moveTargets(e, std::vector<IkTarget>(moved.begin(), moved.begin() + 2)); },
                 "2 targets; start() had 3");
  expectRejected(
      [&](const Exec& e) {
        ikStep(e, {.targetCount = 3,
                   .jointCount = model.jointCount,
                   .joints = solver.pose(),
                   .gradPose = solver.pose(),
                   .gradTransl = solver.transl(),
                   .targets = solver.pose(),
                   .pose = solver.pose(),
                   .transl = solver.transl(),
                   .bounds = solver.pose(),
                   .priorWeight = 1e-4,
                   .damping = 1e-3});
      },
      "ikStep: joints");
}

ARM_ON_GPU_BACKENDS(Ik);

// The drag's first steps one submission each, on the default avatar, against the reference from the same pose:
// each GPU step within 2e-3 rad of the double step taken from the pose the GPU reached (the 20 cm first step moves
// joints by up to ~1 rad; float rounding of a 9×9 solve damped by 1.1e-3 stays well below that).
TEST_P(Ik, DragStepsMatchTheReferenceOneByOne) {
  const BodyModel& model = defaultAvatar();
  BodyParams body = BodyParams::zeros(model, 1);
  const Drag d = scriptedDrag(model, body);
  IkSolver solver(device(), backend(), model, 10, 10);
  for (int step = 0; step < 3; ++step) {
    run([&](const Exec& e) {
      if (step == 0) solver.start(e, body, d.problem);
      solver.iterate(e, 1);
    });
    IkProblem fromHere = d.problem;
    fromHere.prior.assign(3 * model.jointCount, 0.0);  // the start pose's prior, whatever pose this step left
    BodyParams want = body;                            // the pose this step started from
    ikStepRef(model, want, fromHere);
    solver.download(body);
    EXPECT_TRUE(allClose(body.pose, want.pose, Tol{2e-3, 0})) << "step " << step + 1;
  }
  EXPECT_LT(dragErrors(model, body, d)[0], 0.05) << "three steps bring the wrist within 5 cm";
}
