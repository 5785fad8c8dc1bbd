// The ops fitting on the GPU rests on: generalised winding numbers and distances to a mesh (known answers on a cube,
// the GPU against the reference on a closed star-shaped mesh, bad faces refused) and an Adam step (the first step's
// known size, the GPU against the reference over steps, bad settings refused).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "armature/error.h"
#include "armature/ops/adam.h"
#include "armature/ops/winding_numbers.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// The unit cube [0,1]³, 12 outward-wound triangles.
void unitCube(std::vector<double>& vertices, std::vector<int32_t>& faces) {
  vertices.clear();
  for (int i = 0; i < 8; ++i) vertices.insert(vertices.end(), {double(i & 1), double((i >> 1) & 1), double(i >> 2)});
  faces = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4, 2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
}

// A closed star-shaped mesh: a latitude-longitude sphere (poles included) with a random radius per vertex.
void bumpySphere(uint32_t rings, uint32_t segments, std::vector<double>& vertices, std::vector<int32_t>& faces) {
  vertices = {0, 0, 1.0};
  const std::vector<double> radius = uniform(size_t(rings) * segments, 0.8, 1.2);
  for (uint32_t r = 1; r <= rings; ++r)
    for (uint32_t s = 0; s < segments; ++s) {
      const double theta = M_PI * r / (rings + 1), phi = 2 * M_PI * s / segments, k = radius[(r - 1) * segments + s];
      vertices.insert(vertices.end(),
                      {k * std::sin(theta) * std::cos(phi), k * std::sin(theta) * std::sin(phi), k * std::cos(theta)});
    }
  vertices.insert(vertices.end(), {0, 0, -1.0});
  const int32_t south = int32_t(1 + rings * segments);
  auto at = [&](uint32_t r, uint32_t s) { return int32_t(1 + (r - 1) * segments + s % segments); };
  faces.clear();
  for (uint32_t s = 0; s < segments; ++s) {
    faces.insert(faces.end(), {0, at(1, s), at(1, s + 1)});
    faces.insert(faces.end(), {south, at(rings, s + 1), at(rings, s)});
    for (uint32_t r = 1; r < rings; ++r) {
      faces.insert(faces.end(), {at(r, s), at(r + 1, s), at(r + 1, s + 1)});
      faces.insert(faces.end(), {at(r, s), at(r + 1, s + 1), at(r, s + 1)});
    }
  }
}

}  // namespace

TEST(WindingNumbersRef, CubeKnownAnswers) {
  std::vector<double> vertices;
  std::vector<int32_t> faces;
  unitCube(vertices, faces);
  const std::vector<double> w =
      windingNumbersRef({0.5, 0.5, 0.5, 0.1, 0.9, 0.2, 1.5, 0.5, 0.5, -3, 7, 2}, vertices, faces);
  EXPECT_NEAR(w[0], 1.0, 1e-12);
  EXPECT_NEAR(w[1], 1.0, 1e-12);
  EXPECT_NEAR(w[2], 0.0, 1e-12);
  EXPECT_NEAR(w[3], 0.0, 1e-12);
  // Distances: to a face's inside, an edge, a corner; on the surface.
  const std::vector<double> d = meshDistancesRef(
      {0.5, 0.5, 0.5, 0.1, 0.9, 0.2, 1.5, 0.5, 0.5, -3, 7, 2, 2, 2, 0.5, 1, 0.3, 0.7}, vertices, faces);
  EXPECT_NEAR(d[0], 0.5, 1e-12);
  EXPECT_NEAR(d[1], 0.1, 1e-12);
  EXPECT_NEAR(d[2], 0.5, 1e-12);
  EXPECT_NEAR(d[3], std::sqrt(9.0 + 36.0 + 1.0), 1e-12);
  EXPECT_NEAR(d[4], std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(d[5], 0.0, 1e-12);
  for (size_t f = 0; f < faces.size(); f += 3) std::swap(faces[f + 1], faces[f + 2]);  // inward: −1 inside
  EXPECT_NEAR(windingNumbersRef({0.5, 0.5, 0.5}, vertices, faces)[0], -1.0, 1e-12);
  EXPECT_THAT(errorOf([&] {
                windingNumbersRef({0, 0, 0}, vertices, {0, 1, 8});
              }),
              testing::HasSubstr("face 0's corner 2 is vertex 8, not in [0, 8)"));
}

class FittingOps : public OnBackend {};
ARM_ON_GPU_BACKENDS(FittingOps);

// 1001 points in and around a bumpy sphere of 1,280 faces. Each winding number sums 1,280 float solid angles, and
// GLSL's atan is not correctly rounded (lavapipe's is off by ~2e-7 per term, in one direction), so it is held to 1e-4
// of 1: far finer than the ½ an inside test needs. Points among the bumps (radii 0.79 to 1.21) are left out: a term's
// error grows as the point nears its triangle.
TEST_P(FittingOps, WindingNumbersMatchReference) {
  std::vector<double> vertices;
  std::vector<int32_t> faces;
  bumpySphere(20, 32, vertices, faces);
  for (double& x : vertices) x = double(float(x));
  std::vector<double> points = uniform(1001 * 3, -1.4, 1.4);
  for (double& x : points) x = double(float(x));
  const std::vector<double> want = windingNumbersRef(points, vertices, faces);
  const DeviceTriangleMesh mesh(device(), cast<float>(vertices), faces);
  DeviceBuffer x = device().upload(cast<float>(points)), out = device().allocate(ElementType::Float32, 1001);
  DeviceBuffer distances = device().allocate(ElementType::Float32, 1001);
  out.fill(nanBits());
  distances.fill(nanBits());
  run([&](const Exec& exec) {
    windingNumbers(exec, {.mesh = &mesh, .points = 1001, .x = x, .windings = out, .distances = distances});
  });
  const std::vector<float> got = out.download<float>(1001);
  // Distances at every point, near the surface too: a float nearest point of coordinates ≤ 1.4 is within a few
  // ulps (1e-7 each) of the double one, so 1e-5 leaves a wide margin.
  const std::vector<double> wantDistances = meshDistancesRef(points, vertices, faces);
  const std::vector<float> gotDistances = distances.download<float>(1001);
  for (size_t q = 0; q < wantDistances.size(); ++q)
    EXPECT_NEAR(gotDistances[q], wantDistances[q], 1e-5) << "point " << q;
  out.fill(nanBits());  // without distances: the same winding numbers
  run([&](const Exec& exec) { windingNumbers(exec, {.mesh = &mesh, .points = 1001, .x = x, .windings = out}); });
  EXPECT_EQ(out.download<float>(1001), got);
  size_t inside = 0, compared = 0;
  for (size_t q = 0; q < want.size(); ++q) {
    const double r = std::hypot(points[q * 3], points[q * 3 + 1], points[q * 3 + 2]);
    if (r > 0.79 && r < 1.21) continue;
    ++compared;
    inside += want[q] > 0.5;
    EXPECT_NEAR(got[q], want[q], 1e-4) << "point " << q;
  }
  EXPECT_GT(inside, 50u);
  EXPECT_GT(compared, 500u);
  EXPECT_THAT(errorOf([&] {
                DeviceTriangleMesh(device(), {0, 0, 0, 1, 0, 0}, {0, 1, 2});
              }),
              testing::HasSubstr("face 0's corner 2 is vertex 2, not in [0, 2)"));
  expectRejected([&](const Exec& e) { windingNumbers(e, {.mesh = &mesh, .points = 1002, .x = x, .windings = out}); },
                 "windingNumbers: x holds 3003 elements");
  const DeviceBuffer short1000 = device().allocate(ElementType::Float32, 1000);
  expectRejected(
      [&](const Exec& e) {
        windingNumbers(e, {.mesh = &mesh, .points = 1001, .x = x, .windings = out, .distances = short1000});
      },
      "windingNumbers: distances holds 1000 elements");
}

// The first step moves every parameter by lr·g/(|g| + ε) against its gradient (m̂ = g, v̂ = g²); over five steps on 1,027
// parameters the GPU follows the reference to 1e-6 (each step changes a parameter by ≤ lr = 0.01 in float).
TEST_P(FittingOps, AdamMatchesReference) {
  const size_t n = 1027;
  std::vector<double> params = uniform(n, -1, 1), m(n, 0.0), v(n, 0.0);
  for (double& x : params) x = double(float(x));
  const AdamSettings settings{0.01, 0.9, 0.999, 1e-8};
  DeviceBuffer p = device().upload(cast<float>(params)), mm = device().upload(std::vector<float>(n, 0.f)),
               vv = device().upload(std::vector<float>(n, 0.f));
  for (uint32_t step = 1; step <= 5; ++step) {
    std::vector<double> grads = uniform(n, -2, 2);
    for (double& x : grads) x = double(float(x));
    const std::vector<double> before = params;
    adamStepRef(params, grads, m, v, settings, step);
    if (step == 1) {
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(params[i] - before[i], -0.01 * grads[i] / (std::abs(grads[i]) + 1e-8), 1e-12);
      }
    }
    DeviceBuffer g = device().upload(cast<float>(grads));
    run([&](const Exec& exec) {
      adamStep(exec, {.params = p, .grads = g, .m = mm, .v = vv, .settings = settings, .step = step});
    });
  }
  EXPECT_TRUE(allClose(p.download<float>(n), params, Tol{1e-6, 0}));
  expectRejected(
      [&](const Exec& e) {
        adamStep(e, {.params = p, .grads = p, .m = mm, .v = vv, .settings = {0.01, 1.0, 0.999, 1e-8}, .step = 1});
      },
      "betas in [0, 1)");
  expectRejected(
      [&](const Exec& e) { adamStep(e, {.params = p, .grads = p, .m = mm, .v = vv, .settings = settings, .step = 0}); },
      "steps count from 1");
}
