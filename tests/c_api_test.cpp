// The C API (armature/armature.h) through libarmature, as ctypes or a C program calls it: every op it exposes against
// the double reference on random inputs of awkward sizes, outputs poisoned first; and every misuse a status with a
// message naming the argument, never a crash. Runs on Vulkan (lavapipe in CI) and on CUDA where a device exists.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "armature/armature.h"
#include "armature/body/body_model.h"
#include "armature/ops/adam.h"
#include "armature/ops/deformable_aggregation.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/gaussian_pose.h"
#include "armature/ops/interpolate.h"
#include "armature/ops/joint_propagation.h"
#include "armature/ops/linear_blend_skinning.h"
#include "armature/ops/project.h"
#include "armature/ops/raster.h"
#include "armature/ops/texture_bake.h"
#include "armature/ops/winding_numbers.h"
#include "support/body_fixtures.h"
#include "support/temp_path.h"

using namespace armature;

namespace {

std::vector<double> uniform(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = double(float(u(rng)));  // what the GPU sees
  return v;
}

// One library buffer per tensor, freed with the test.
class CApi : public ::testing::TestWithParam<armature_backend> {
 protected:
  void SetUp() override {
    if (GetParam() == ARMATURE_BACKEND_VULKAN) {
      armature_context_info info{ARMATURE_STRUCT_CONTEXT_INFO, sizeof info, nullptr, 1};
      if (armature_context_create(&info, &m_context) != ARMATURE_OK) {
        if (std::getenv("ARMATURE_REQUIRE_VULKAN")) FAIL() << armature_last_error();
        GTEST_SKIP() << armature_last_error();
      }
    }
    ASSERT_EQ(armature_device_create(m_context, &m_device), ARMATURE_OK) << armature_last_error();
    if (armature_device_supports(m_device, GetParam()) != ARMATURE_OK) GTEST_SKIP() << armature_last_error();
  }
  void TearDown() override {
    uint32_t messages = 0;
    if (m_context) EXPECT_EQ(armature_context_validation_messages(m_context, &messages), ARMATURE_OK);
    EXPECT_EQ(messages, 0u) << "validation messages (printed above)";
    for (armature_buffer b : m_buffers) armature_buffer_destroy(b);
    armature_device_destroy(m_device);
    armature_context_destroy(m_context);
  }

  template <typename T>
  armature_tensor tensor(const std::vector<T>& values, std::vector<int64_t> shape) {
    const armature_dtype dtype = std::is_same_v<T, int32_t>    ? ARMATURE_INT32
                                 : std::is_same_v<T, uint32_t> ? ARMATURE_UINT32
                                                               : ARMATURE_FLOAT32;
    armature_buffer b;
    EXPECT_EQ(armature_buffer_create(m_device, dtype, std::max<size_t>(values.size(), 1), &b), ARMATURE_OK);
    m_buffers.push_back(b);
    EXPECT_EQ(armature_buffer_upload(b, values.data(), values.size() * sizeof(T), 0), ARMATURE_OK);
    armature_tensor t;
    EXPECT_EQ(armature_buffer_tensor(b, uint32_t(shape.size()), shape.data(), &t), ARMATURE_OK);
    return t;
  }
  armature_tensor floats(const std::vector<double>& values, std::vector<int64_t> shape) {
    return tensor(std::vector<float>(values.begin(), values.end()), std::move(shape));
  }
  // NaN-filled float32 of `shape`.
  armature_tensor poisoned(std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    return tensor(std::vector<float>(n, NAN), std::move(shape));
  }
  template <typename T = float>
  std::vector<T> download(const armature_tensor& t) {
    size_t n = 1;
    for (uint32_t d = 0; d < t.rank; ++d) n *= size_t(t.shape[d]);
    for (armature_buffer b : m_buffers) {
      armature_tensor whole;
      const int64_t one = 1;
      armature_buffer_tensor(b, 1, &one, &whole);
      if (whole.vk_buffer == t.vk_buffer && whole.data == t.data) {
        std::vector<T> out(n);
        EXPECT_EQ(armature_buffer_download(b, out.data(), n * sizeof(T), 0), ARMATURE_OK) << armature_last_error();
        return out;
      }
    }
    ADD_FAILURE() << "not a buffer of this test";
    return {};
  }
  // Runs `work` to completion on the test's backend.
  template <typename Work>
  void run(Work&& work) {
    auto call = [](void* user, const armature_exec* exec) { return (*static_cast<Work*>(user))(exec); };
    ASSERT_EQ(armature_device_run(m_device, GetParam(), call, &work), ARMATURE_OK) << armature_last_error();
  }

  armature_context m_context = nullptr;
  armature_device m_device = nullptr;
  std::vector<armature_buffer> m_buffers;
};

void expectClose(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])))) ++bad;  // NaN fails
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " past " << tol;
}

TEST_P(CApi, AxpyIsExact) {
  const auto x = uniform(1001, -4, 4, 1), y = uniform(1001, -4, 4, 2);
  armature_tensor tx = floats(x, {1001}), ty = floats(y, {1001});
  run([&](const armature_exec* e) { return armature_axpy(m_device, e, 0.5f, &tx, &ty); });
  std::vector<double> want(y);
  for (size_t i = 0; i < y.size(); ++i) want[i] = double(float(y[i] + 0.5 * x[i]));
  expectClose(download(ty), want, 1e-6, "y");  // one fp32 rounding of a fused multiply-add
}

// A dense field of 37 Gaussians at 53 points, 3 channels: forward and every gradient. fp32 sums of 37 terms of
// magnitude ≤ 1 against double: 1e-4 relative covers them.
TEST_P(CApi, GaussianFieldMatchesReference) {
  const uint32_t B = 53, N = 37, C = 3;
  GaussianFieldRef ref;
  ref.channels = C;
  ref.points = uniform(B * 3, -1, 1, 3), ref.means = uniform(N * 3, -1, 1, 4);
  ref.cholesky = uniform(N * 6, -0.3, 0.3, 5), ref.weights = uniform(N * C, -1, 1, 6);
  const auto gradField = uniform(B * C, -1, 1, 7);
  armature_tensor x = floats(ref.points, {B, 3}), means = floats(ref.means, {N, 3});
  armature_tensor chol = floats(ref.cholesky, {N, 6}), weights = floats(ref.weights, {N, C});
  armature_tensor field = poisoned({B, C}), grad = floats(gradField, {B, C});
  armature_tensor gPoints = poisoned({B, 3}), gMeans = poisoned({N, 3}), gChol = poisoned({N, 6});
  armature_tensor gWeights = poisoned({N, C});
  uint64_t forwardScratch = 0, backwardScratch = 0;
  ASSERT_EQ(armature_gaussian_field_scratch(B, N, C, 0, &forwardScratch), ARMATURE_OK);
  ASSERT_EQ(armature_gaussian_field_scratch(B, N, C, 1, &backwardScratch), ARMATURE_OK);
  armature_tensor scratch = poisoned({int64_t(std::max<uint64_t>({forwardScratch, backwardScratch, 1}))});
  const armature_gaussian_field_inputs in{&x, &means, &chol, &weights};
  run([&](const armature_exec* e) {
    armature_status s = armature_gaussian_field(m_device, e, &in, &field, &scratch);
    if (s == ARMATURE_OK) s = armature_barrier(m_device, e);
    if (s == ARMATURE_OK)
      s = armature_gaussian_field_backward(m_device, e, &in, &grad, &gPoints, &gMeans, &gChol, &gWeights, &scratch);
    return s;
  });
  expectClose(download(field), gaussianFieldRef(ref).field, 1e-4, "field");
  const GaussianFieldGradsRef g = gaussianFieldBackwardRef(ref, gradField);
  expectClose(download(gPoints), g.points, 1e-4, "grad points");
  expectClose(download(gMeans), g.means, 1e-4, "grad means");
  expectClose(download(gChol), g.cholesky, 1e-4, "grad cholesky");
  expectClose(download(gWeights), g.weights, 1e-4, "grad weights");
}

// The culled mode through a grid the C API builds: within the documented bound of the dense field, N·ε.
TEST_P(CApi, CulledGaussianFieldStaysWithinItsBound) {
  const uint32_t B = 301, N = 37, C = 2;
  const float epsilon = 1e-4f;
  GaussianFieldRef ref;
  ref.channels = C;
  ref.points = uniform(B * 3, -1, 1, 14), ref.means = uniform(N * 3, -1, 1, 15);
  ref.cholesky = uniform(N * 6, -0.2, 0.2, 16), ref.weights = uniform(N * C, -1, 1, 17);
  for (uint32_t i = 0; i < N; ++i)  // scales about 0.1: local supports, so the grid culls
    for (int k : {0, 2, 5}) ref.cholesky[i * 6 + k] = double(float(std::log(0.1) + ref.cholesky[i * 6 + k]));
  armature_tensor x = floats(ref.points, {B, 3}), means = floats(ref.means, {N, 3});
  armature_tensor chol = floats(ref.cholesky, {N, 6}), weights = floats(ref.weights, {N, C});
  uint64_t words = 0;
  ASSERT_EQ(armature_gaussian_grid_words(B, N, &words), ARMATURE_OK);
  armature_tensor grid = tensor(std::vector<uint32_t>(words), {int64_t(words)}), field = poisoned({B, C});
  const armature_gaussian_field_inputs in{&x, &means, &chol, &weights, &grid};
  run([&](const armature_exec* e) {
    armature_status s = armature_build_gaussian_grid(m_device, e, &in, epsilon, &grid);
    if (s == ARMATURE_OK) s = armature_barrier(m_device, e);
    if (s == ARMATURE_OK) s = armature_gaussian_field(m_device, e, &in, &field, nullptr);
    return s;
  });
  const std::vector<double> dense = gaussianFieldRef(ref).field;
  const std::vector<float> got = download(field);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - dense[i]), N * epsilon + 1e-4) << "at " << i;  // + fp32 sums of ≤ 37 terms
}

// Two views of 29 shared points: clip coordinates and both gradients. Each output is a 4-term dot product.
TEST_P(CApi, ProjectMatchesReference) {
  const ProjectDesc desc{.views = 2, .points = 29};
  const auto points = uniform(29 * 3, -1, 1, 18), gradClip = uniform(2 * 29 * 4, -1, 1, 19);
  const auto m = uniform(32, -1, 1, 20);
  const std::vector<float> matrices(m.begin(), m.end());
  armature_tensor tp = floats(points, {29, 3}), tm = tensor(matrices, {2, 16}), clip = poisoned({2, 29, 4});
  armature_tensor tg = floats(gradClip, {2, 29, 4}), gPoints = poisoned({29, 3}), gMatrices = poisoned({2, 16});
  run([&](const armature_exec* e) {
    armature_status s = armature_project(m_device, e, &tp, &tm, &clip);
    if (s == ARMATURE_OK) s = armature_project_backward(m_device, e, &tp, &tm, &tg, &gPoints, &gMatrices);
    return s;
  });
  expectClose(download(clip), projectRef(desc, points, matrices), 1e-6, "clip");
  expectClose(download(gPoints), projectBackwardRef(desc, gradClip, matrices), 1e-5, "grad points");
  expectClose(download(gMatrices), projectMatrixGradRef(desc, points, gradClip), 1e-5, "grad matrices");
}

// SparseDrive's layout with awkward sizes: 2 cameras, 2 levels of 5×7 and 3×4, 8 channels in 2 groups.
TEST_P(CApi, DeformableAggregationMatchesReference) {
  DeformableAggregationRef ref;
  ref.layout = {
      .cameras = 2, .levels = 2, .spatialShape = {5, 7, 3, 4, 5, 7, 3, 4}, .scaleStartIndex = {0, 35, 47, 82}};
  const uint32_t bs = 1, F = 94, C = 8, A = 11, P = 3, G = 2;
  ref.sizes = {.batch = bs, .features = F, .channels = C, .anchors = A, .points = P, .groups = G};
  ref.features = uniform(size_t(bs) * F * C, -1, 1, 8);
  ref.locations = uniform(size_t(bs) * A * P * 2 * 2, -0.1, 1.1, 9);
  ref.weights = uniform(size_t(bs) * A * P * 2 * 2 * G, 0, 1, 10);
  const auto gradOut = uniform(size_t(bs) * A * C, -1, 1, 11);
  armature_feature_maps maps;
  ASSERT_EQ(armature_feature_maps_create(m_device, 2, 2, ref.layout.spatialShape.data(),
                                         ref.layout.scaleStartIndex.data(), F, &maps),
            ARMATURE_OK)
      << armature_last_error();
  armature_tensor features = floats(ref.features, {bs, F, C}), locations = floats(ref.locations, {bs, A, P, 2, 2});
  armature_tensor weights = floats(ref.weights, {bs, A, P, 2, 2, G}), out = poisoned({bs, A, C});
  armature_tensor grad = floats(gradOut, {bs, A, C}), gFeatures = poisoned({bs, F, C});
  armature_tensor gLocations = poisoned({bs, A, P, 2, 2}), gWeights = poisoned({bs, A, P, 2, 2, G});
  uint64_t words = 0;
  ASSERT_EQ(armature_deformable_aggregation_scratch(maps, &features, &locations, &weights, &words), ARMATURE_OK);
  armature_tensor scratch =
      tensor(std::vector<uint32_t>(std::max<uint64_t>(words, 1)), {int64_t(std::max<uint64_t>(words, 1))});
  run([&](const armature_exec* e) {
    armature_status s = armature_deformable_aggregation(m_device, e, maps, &features, &locations, &weights, &out);
    if (s == ARMATURE_OK) s = armature_barrier(m_device, e);
    if (s == ARMATURE_OK)
      s = armature_deformable_aggregation_backward(m_device, e, maps, &features, &locations, &weights, &grad,
                                                   &gFeatures, &gLocations, &gWeights, &scratch);
    return s;
  });
  // Bilinear taps of fp32 values: sums of at most 2·2·3·4 weighted terms, 1e-4 relative.
  expectClose(download(out), deformableAggregationRef(ref), 1e-4, "out");
  const DeformableAggregationGradsRef g = deformableAggregationBackwardRef(ref, gradOut);
  expectClose(download(gFeatures), g.features, 1e-4, "grad features");
  expectClose(download(gLocations), g.locations, 1e-3, "grad locations");  // slopes of the bilinear cells
  expectClose(download(gWeights), g.weights, 1e-4, "grad weights");
  armature_feature_maps_destroy(maps);
}

// Two images of 13×9 of two triangles, then 3 channels interpolated: exact face ids, barycentrics and attributes.
TEST_P(CApi, RasterizeAndInterpolateMatchReference) {
  const armature_raster_desc desc{13, 9, 2, 0, 0, 1e-6f, 0};
  const std::vector<float> positions = {-0.9f, -0.8f, 0.1f, 1,    0.7f, -0.6f, 0.3f, 1,     -0.2f, 0.9f, 0.5f,
                                        1,     0.8f,  0.8f, 0.2f, 1,    -0.5f, 0.1f, 0.4f,  1,     0.6f, -0.9f,
                                        0.6f,  1,     0.1f, 0.2f, 0.3f, 1,     0.9f, 0.95f, 0.4f,  1};
  const std::vector<int32_t> faces = {0, 1, 2, 1, 3, 2};
  uint64_t scratchBytes = 0;
  ASSERT_EQ(armature_raster_scratch_bytes(&desc, &scratchBytes), ARMATURE_OK) << armature_last_error();
  armature_tensor pos = tensor(positions, {2, 4, 4}), tri = tensor(faces, {2, 3});
  armature_tensor scratch = tensor(std::vector<int32_t>(scratchBytes / 4 + 1), {int64_t(scratchBytes / 4 + 1)});
  scratch.dtype = ARMATURE_BYTE, scratch.shape[0] = int64_t(scratchBytes);
  armature_tensor ids = tensor(std::vector<int32_t>(2 * 9 * 13, -7), {2, 9, 13}), bary = poisoned({2, 9, 13, 3});
  const auto attr = uniform(4 * 3, -1, 1, 12);
  armature_tensor tattr = floats(attr, {4, 3}), out = poisoned({2, 9, 13, 3});
  run([&](const armature_exec* e) {
    armature_status s = armature_rasterize(m_device, e, &desc, &pos, &tri, nullptr, nullptr, &scratch, &ids, &bary);
    if (s == ARMATURE_OK) s = armature_barrier(m_device, e);
    if (s == ARMATURE_OK) s = armature_interpolate(m_device, e, &tattr, &ids, &bary, &tri, &out);
    return s;
  });
  const RasterResult want = rasterizeRef(positions, faces, RasterDesc{.width = 13, .height = 9, .images = 2});
  const std::vector<int32_t> gotIds = download<int32_t>(ids);
  EXPECT_EQ(gotIds, want.findices);
  const std::vector<float> gotBary = download(bary);
  expectClose(gotBary, std::vector<double>(want.barycentrics.begin(), want.barycentrics.end()), 1e-6, "barycentrics");
  const std::vector<double> wantOut =
      interpolateRef(attr, 3, gotIds, std::vector<double>(gotBary.begin(), gotBary.end()), faces);
  expectClose(download(out), wantOut, 1e-6, "interpolated");
}

// A forest of 41 joints (two roots, each parent numbered after its children), 2 bodies, rigid locals with inverse
// binds and 13 attached points: every output and gradient. Chains of up to ~10 fp32 rigid products of O(1) values
// against double: 1e-4 relative.
TEST_P(CApi, JointPropagationMatchesReference) {
  const uint32_t N = 41, B = 2, P = 13;
  std::mt19937_64 rng(11);
  std::vector<int32_t> parents(N);  // numbered backwards: every parent after its children
  for (uint32_t i = 0; i < N; ++i) parents[N - 1 - i] = i == 0 || i == 23 ? -1 : int32_t(N - 1 - uint32_t(rng() % i));
  JointLocalsRef locals;
  locals.batch = B;
  locals.rotations = uniform(size_t(B) * N * 4, -1, 1, 12), locals.translations = uniform(size_t(B) * N * 3, -1, 1, 13);
  for (size_t j = 0; j < size_t(B) * N; ++j) {  // unit quaternions, as fp32 sees them
    double* q = &locals.rotations[j * 4];
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; ++k) q[k] = double(float(q[k] / n));
  }
  locals.inverseBind = uniform(size_t(N) * 12, -1, 1, 14);
  for (uint32_t i = 0; i < P; ++i) locals.pointJoints.push_back(int32_t(rng() % N));
  locals.points = uniform(size_t(P) * 3, -1, 1, 15);
  const JointForest forest(parents);
  const JointGlobalsRef want = propagateJointsRef(forest, locals);
  JointGlobalsRef grads{uniform(want.globals.size(), -1, 1, 16), uniform(want.skinning.size(), -1, 1, 17),
                        uniform(want.positions.size(), -1, 1, 18), uniform(want.points.size(), -1, 1, 19)};
  const JointLocalGradsRef wantGrads = propagateJointsBackwardRef(forest, locals, grads);

  armature_joint_forest f = nullptr;
  ASSERT_EQ(armature_joint_forest_create(m_device, N, parents.data(), P, locals.pointJoints.data(), &f), ARMATURE_OK)
      << armature_last_error();
  uint64_t scratchFloats = 0;
  ASSERT_EQ(armature_joint_forest_scratch(f, B, &scratchFloats), ARMATURE_OK);
  armature_tensor rotations = floats(locals.rotations, {B, N, 4}),
                  translations = floats(locals.translations, {B, N, 3});
  armature_tensor inverseBind = floats(locals.inverseBind, {N, 12}), points = floats(locals.points, {P, 3});
  const armature_joint_locals l{ARMATURE_LOCAL_RIGID, &rotations, &translations, nullptr, &inverseBind};
  armature_tensor globals = poisoned({B, N, 12}), skinning = poisoned({B, N, 12}), positions = poisoned({B, N, 3});
  armature_tensor pointsOut = poisoned({B, P, 3}), scratch = poisoned({int64_t(std::max<uint64_t>(scratchFloats, 1))});
  armature_tensor gGlobals = floats(grads.globals, {B, N, 12}), gSkinning = floats(grads.skinning, {B, N, 12});
  armature_tensor gPositions = floats(grads.positions, {B, N, 3}), gPointsOut = floats(grads.points, {B, P, 3});
  armature_tensor adjoint = poisoned({B, N, 12}), gRotations = poisoned({B, N, 4}), gTranslations = poisoned({B, N, 3});
  armature_tensor gPoints = poisoned({P, 3});
  run([&](const armature_exec* e) {
    armature_status s =
        armature_joint_propagation(m_device, e, f, &l, &points, &globals, &skinning, &positions, &pointsOut, &scratch);
    if (s == ARMATURE_OK) s = armature_barrier(m_device, e);
    if (s == ARMATURE_OK)
      s = armature_joint_propagation_backward(m_device, e, f, &l, &points, &globals, &gGlobals, &gSkinning, &gPositions,
                                              &gPointsOut, &adjoint, &scratch, &gRotations, &gTranslations, nullptr,
                                              &gPoints);
    return s;
  });
  expectClose(download(globals), want.globals, 1e-4, "globals");
  expectClose(download(skinning), want.skinning, 1e-4, "skinning");
  expectClose(download(positions), want.positions, 1e-4, "positions");
  expectClose(download(pointsOut), want.points, 1e-4, "points_out");
  expectClose(download(gRotations), wantGrads.rotations, 1e-4, "grad_rotations");
  expectClose(download(gTranslations), wantGrads.translations, 1e-4, "grad_translations");
  expectClose(download(gPoints), wantGrads.points, 1e-4, "grad_points");
  armature_joint_forest_destroy(f);
}

// 101 vertices of 3 influences over 7 joints, 2 bodies: sums of 3 fp32 products of O(1) values, 1e-5 relative.
TEST_P(CApi, LinearBlendSkinningMatchesReference) {
  const uint32_t V = 101, K = 3, J = 7, B = 2;
  std::mt19937_64 rng(21);
  std::vector<uint32_t> joints(size_t(V) * K);
  for (uint32_t& j : joints) j = uint32_t(rng() % J);
  const auto weights = uniform(size_t(V) * K, 0, 1, 22), rest = uniform(size_t(V) * 3, -1, 1, 23);
  const auto skinning = uniform(size_t(B) * J * 12, -1, 1, 24);
  armature_skin_weights w = nullptr;
  const std::vector<float> weights32(weights.begin(), weights.end());
  ASSERT_EQ(armature_skin_weights_create(m_device, J, K, V, joints.data(), weights32.data(), &w), ARMATURE_OK)
      << armature_last_error();
  armature_tensor tRest = floats(rest, {V, 3}), tSkinning = floats(skinning, {B, J, 12}), out = poisoned({B, V, 3});
  run([&](const armature_exec* e) { return armature_linear_blend_skinning(m_device, e, w, &tRest, &tSkinning, &out); });
  expectClose(download(out), linearBlendSkinningRef(rest, joints, weights, K, skinning, J, B), 1e-5, "positions");
  armature_skin_weights_destroy(w);
}

// 29 Gaussians on 5 joints whose transforms are near the identity (well conditioned), with a post transform.
TEST_P(CApi, PoseGaussiansMatchesReference) {
  const uint32_t N = 29, J = 5;
  std::mt19937_64 rng(31);
  auto transforms = uniform(size_t(J) * 12, -0.3, 0.3, 32);
  for (uint32_t j = 0; j < J; ++j)
    for (int d = 0; d < 3; ++d) transforms[j * 12 + d * 5] += 1;
  std::vector<int32_t> joints(N);
  for (int32_t& j : joints) j = int32_t(rng() % J);
  const auto means = uniform(size_t(N) * 3, -1, 1, 33), cholesky = uniform(size_t(N) * 6, -0.3, 0.3, 34);
  const std::array<float, 12> post{1, 0, 0, 0.5f, 0, 0, -1, 0.25f, 0, 1, 0, 0};  // a turn about x, and a move
  std::vector<double> wantMeans, wantCholesky;
  std::array<double, 12> post64;
  std::copy(post.begin(), post.end(), post64.begin());
  poseGaussiansRef(transforms, joints, means, cholesky, wantMeans, wantCholesky, post64);
  armature_tensor tTransforms = floats(transforms, {J, 12}), tJoints = tensor(joints, {N});
  armature_tensor tMeans = floats(means, {N, 3}), tCholesky = floats(cholesky, {N, 6});
  armature_tensor posedMeans = poisoned({N, 3}), posedCholesky = poisoned({N, 6});
  run([&](const armature_exec* e) {
    return armature_pose_gaussians(m_device, e, &tTransforms, &tJoints, &tMeans, &tCholesky, post.data(), &posedMeans,
                                   &posedCholesky);
  });
  expectClose(download(posedMeans), wantMeans, 1e-5, "posed_means");
  expectClose(download(posedCholesky), wantCholesky, 1e-4, "posed_cholesky");  // through a 3×3 LQ factorisation
}

// A closed tetrahedron and 97 points around it: winding numbers (sums of 4 solid angles) and distances, 1e-4.
TEST_P(CApi, WindingNumbersMatchReference) {
  const std::vector<float> vertices{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  const std::vector<int32_t> faces{0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};  // outward
  const uint32_t P = 97;
  const auto x = uniform(size_t(P) * 3, -0.5, 1, 41);
  armature_triangle_mesh mesh = nullptr;
  ASSERT_EQ(armature_triangle_mesh_create(m_device, 4, vertices.data(), 4, faces.data(), &mesh), ARMATURE_OK)
      << armature_last_error();
  armature_tensor tx = floats(x, {P, 3}), windings = poisoned({P}), distances = poisoned({P});
  run([&](const armature_exec* e) { return armature_winding_numbers(m_device, e, mesh, &tx, &windings, &distances); });
  const std::vector<double> v64(vertices.begin(), vertices.end());
  expectClose(download(windings), windingNumbersRef(x, v64, faces), 1e-4, "windings");
  expectClose(download(distances), meshDistancesRef(x, v64, faces), 1e-5, "distances");
  armature_triangle_mesh_destroy(mesh);
}

// Texture baking's sampling over random texels and views of a random mesh, with a tolerance that sees through
// nothing and every facing view counted: locations are fp32 divisions (1e-5), weights normalised cos² (1e-4).
TEST_P(CApi, BakeSamplesMatchReference) {
  const uint32_t V = 30, F = 20, T = 53, K = 3, H = 9, W = 11;
  std::mt19937_64 rng(51);
  const auto positions = uniform(size_t(V) * 3, -1, 1, 52);
  std::vector<int32_t> faces(size_t(F) * 3), texelFaces(T), viewFaces(size_t(K) * H * W);
  for (int32_t& v : faces) v = int32_t(rng() % V);
  for (int32_t& f : texelFaces) f = int32_t(rng() % (F + 1));  // 0: no face
  for (int32_t& f : viewFaces) f = 1 + int32_t(rng() % F);
  const auto texelBary = uniform(size_t(T) * 3, 0, 0.5, 53), viewBary = uniform(size_t(K) * H * W * 3, 0, 0.5, 54);
  std::vector<float> matrices;  // orthographic views turned about y by 0, 0.7 and 1.4 rad, scaled into the image
  for (uint32_t k = 0; k < K; ++k) {
    const float c = std::cos(0.7f * float(k)), s = std::sin(0.7f * float(k));
    matrices.insert(matrices.end(), {0.4f * c, 0, 0, 0, 0, 0.4f, 0, 0, 0.4f * s, 0, 0, 0, 0, 0, 0, 1});
  }
  const BakeDesc desc{.texels = T,
                      .views = K,
                      .width = W,
                      .height = H,
                      .vertexCount = V,
                      .faceCount = F,
                      .tolerance = 1e6f,
                      .minCosine = 0,
                      .sharpness = 2};
  const BakeSamplesRef want =
      bakeSamplesRef(desc, positions, faces, texelFaces, texelBary, viewFaces, viewBary, matrices);
  const armature_bake_desc d{T, K, W, H, V, F, desc.tolerance, desc.minCosine, desc.sharpness};
  armature_tensor tPositions = floats(positions, {V, 3}), tFaces = tensor(faces, {F, 3});
  armature_tensor tTexelFaces = tensor(texelFaces, {T}), tTexelBary = floats(texelBary, {T, 3});
  armature_tensor tViewFaces = tensor(viewFaces, {K, H, W}), tViewBary = floats(viewBary, {K, H, W, 3});
  armature_tensor tMatrices = tensor(matrices, {K, 16}), locations = poisoned({T, K, 2}), weights = poisoned({T, K});
  run([&](const armature_exec* e) {
    return armature_bake_samples(m_device, e, &d, &tPositions, &tFaces, &tTexelFaces, &tTexelBary, &tViewFaces,
                                 &tViewBary, &tMatrices, &locations, &weights);
  });
  expectClose(download(locations), want.locations, 1e-5, "locations");
  expectClose(download(weights), want.weights, 1e-4, "weights");
}

// Three Adam steps' third from given moments: one fp32 update of each value, 1e-5 relative.
TEST_P(CApi, AdamStepMatchesReference) {
  const uint32_t n = 1003;
  auto params = uniform(n, -1, 1, 61), m = uniform(n, -0.1, 0.1, 63), v = uniform(n, 0, 0.01, 64);
  const auto grads = uniform(n, -1, 1, 62);
  armature_tensor tParams = floats(params, {n}), tGrads = floats(grads, {n}), tm = floats(m, {n}), tv = floats(v, {n});
  const armature_adam_settings settings{1e-2, 0.9, 0.999, 1e-8};
  run([&](const armature_exec* e) {
    return armature_adam_step(m_device, e, &settings, 3, &tParams, &tGrads, &tm, &tv);
  });
  adamStepRef(params, grads, m, v, {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}, 3);
  expectClose(download(tParams), params, 1e-5, "params");
  expectClose(download(tm), m, 1e-5, "m");
  expectClose(download(tv), v, 1e-5, "v");
}

TEST_P(CApi, MisuseIsAStatusWithAMessage) {
  const auto x = uniform(10, -1, 1, 13);
  armature_tensor tx = floats(x, {10}), ty = floats(x, {10});
  run([&](const armature_exec* e) {
    EXPECT_EQ(armature_axpy(m_device, nullptr, 1, &tx, &ty), ARMATURE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(armature_last_error()).find("exec is NULL"), std::string::npos) << armature_last_error();
    EXPECT_EQ(armature_axpy(m_device, e, 1, nullptr, &ty), ARMATURE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(armature_last_error()).find("x is missing"), std::string::npos) << armature_last_error();
    armature_tensor strided = tx;
    strided.rank = 2, strided.shape[0] = 5, strided.shape[1] = 2, strided.strides[0] = 1, strided.strides[1] = 5;
    EXPECT_EQ(armature_axpy(m_device, e, 1, &strided, &ty), ARMATURE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(armature_last_error()).find("not dense row-major"), std::string::npos)
        << armature_last_error();
    armature_tensor negative = tx;
    negative.shape[0] = -3;
    EXPECT_EQ(armature_axpy(m_device, e, 1, &negative, &ty), ARMATURE_ERROR_INVALID_ARGUMENT);
    armature_tensor huge = tx;  // 2^62 floats: the count fits 64 bits, its bytes do not
    huge.rank = 2, huge.shape[0] = int64_t(1) << 31, huge.shape[1] = int64_t(1) << 31;
    EXPECT_EQ(armature_axpy(m_device, e, 1, &huge, &ty), ARMATURE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(armature_last_error()).find("x: its bytes"), std::string::npos) << armature_last_error();
    return ARMATURE_OK;
  });
  armature_context_info wrongSize{ARMATURE_STRUCT_CONTEXT_INFO, 4, nullptr, 0};
  armature_context ctx = nullptr;
  EXPECT_EQ(armature_context_create(&wrongSize, &ctx), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("info.size"), std::string::npos) << armature_last_error();
  armature_host_device host{};
  EXPECT_EQ(armature_context_attach(&host, &ctx), ARMATURE_ERROR_INVALID_ARGUMENT);  // s_type 0
  host.s_type = ARMATURE_STRUCT_HOST_DEVICE, host.size = sizeof host;
  EXPECT_EQ(armature_context_attach(&host, &ctx), ARMATURE_ERROR_INVALID_ARGUMENT);  // no handles
  EXPECT_NE(std::string(armature_last_error()).find("required"), std::string::npos) << armature_last_error();
  armature_skinning_info skin{
      ARMATURE_STRUCT_SKINNING_INFO, sizeof skin, nullptr, "/nonexistent.npz", GetParam(), 10, 10, 1};
  armature_skinning s = nullptr;
  EXPECT_EQ(armature_skinning_create(m_device, &skin, &s), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("/nonexistent.npz"), std::string::npos) << armature_last_error();
  EXPECT_EQ(std::string(armature_last_error()).empty(), false);
  EXPECT_EQ(armature_api_version(), uint32_t(ARMATURE_C_API_VERSION));
  // The handles' inputs are checked as the ops' are, naming what is wrong.
  const int32_t cycle[3] = {2, 0, 1};
  armature_joint_forest forest = nullptr;
  EXPECT_EQ(armature_joint_forest_create(m_device, 3, cycle, 0, nullptr, &forest), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("cycle"), std::string::npos) << armature_last_error();
  EXPECT_EQ(armature_joint_forest_create(m_device, 3, nullptr, 0, nullptr, &forest), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("parents is NULL"), std::string::npos) << armature_last_error();
  const uint32_t badJoint[2] = {0, 9};
  const float weights[2] = {0.5f, 0.5f};
  armature_skin_weights w = nullptr;
  EXPECT_EQ(armature_skin_weights_create(m_device, 4, 1, 2, badJoint, weights, &w), ARMATURE_ERROR_INVALID_ARGUMENT);
  const float vertices[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  const int32_t badFace[3] = {0, 1, 3};
  armature_triangle_mesh mesh = nullptr;
  EXPECT_EQ(armature_triangle_mesh_create(m_device, 3, vertices, 1, badFace, &mesh), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("face"), std::string::npos) << armature_last_error();
}

std::string backendName(const ::testing::TestParamInfo<armature_backend>& info) {
  return info.param == ARMATURE_BACKEND_VULKAN ? "vulkan" : "cuda";
}
INSTANTIATE_TEST_SUITE_P(Backends, CApi, ::testing::Values(ARMATURE_BACKEND_VULKAN, ARMATURE_BACKEND_CUDA),
                         backendName);

}  // namespace

namespace {
// A float64 host tensor over `values` (the CPU backend's).
armature_tensor host(std::vector<double>& values, std::vector<int64_t> shape) {
  armature_tensor t{};
  t.data = values.data(), t.dtype = ARMATURE_FLOAT64, t.rank = uint32_t(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) t.shape[d] = shape[d];
  return t;
}

// The CPU backend is the double reference itself, through the C API, with no device: the same values bit for bit.
TEST(CApiCpu, RunsTheReferencesOnHostMemory) {
  const armature_exec cpu{ARMATURE_BACKEND_CPU, 0, nullptr};
  // Joint propagation: a chain of 3 joints, one point, rigid locals; forward and backward.
  const std::vector<int32_t> parents{-1, 0, 1}, pointJoints{2};
  armature_joint_forest forest = nullptr;
  ASSERT_EQ(armature_joint_forest_create(nullptr, 3, parents.data(), 1, pointJoints.data(), &forest), ARMATURE_OK)
      << armature_last_error();
  JointLocalsRef in{.batch = 2, .pointJoints = pointJoints};
  in.rotations = uniform(2 * 3 * 4, -1, 1, 71), in.translations = uniform(2 * 3 * 3, -1, 1, 72);
  in.points = uniform(3, -1, 1, 73);
  const JointGlobalsRef want = propagateJointsRef(JointForest(parents), in);
  std::vector<double> globals(2 * 3 * 12, NAN), positions(2 * 3 * 3, NAN), pointsOut(2 * 3, NAN);
  armature_tensor rot = host(in.rotations, {2, 3, 4}), trans = host(in.translations, {2, 3, 3});
  armature_tensor pts = host(in.points, {1, 3}), tg = host(globals, {2, 3, 12}), tp = host(positions, {2, 3, 3});
  armature_tensor tpo = host(pointsOut, {2, 1, 3});
  const armature_joint_locals locals{ARMATURE_LOCAL_RIGID, &rot, &trans, nullptr, nullptr};
  ASSERT_EQ(armature_joint_propagation(nullptr, &cpu, forest, &locals, &pts, &tg, nullptr, &tp, &tpo, nullptr),
            ARMATURE_OK)
      << armature_last_error();
  EXPECT_EQ(globals, want.globals);
  EXPECT_EQ(positions, want.positions);
  EXPECT_EQ(pointsOut, want.points);
  JointGlobalsRef grads{.positions = uniform(2 * 3 * 3, -1, 1, 74)};
  const JointLocalGradsRef wantGrads = propagateJointsBackwardRef(JointForest(parents), in, grads);
  std::vector<double> gRot(2 * 3 * 4, NAN), gTrans(2 * 3 * 3, NAN), gPts(3, NAN);
  armature_tensor tgPos = host(grads.positions, {2, 3, 3}), tgRot = host(gRot, {2, 3, 4});
  armature_tensor tgTrans = host(gTrans, {2, 3, 3}), tgPts = host(gPts, {1, 3});
  ASSERT_EQ(armature_joint_propagation_backward(nullptr, &cpu, forest, &locals, &pts, &tg, nullptr, nullptr, &tgPos,
                                                nullptr, nullptr, nullptr, &tgRot, &tgTrans, nullptr, &tgPts),
            ARMATURE_OK)
      << armature_last_error();
  EXPECT_EQ(gRot, wantGrads.rotations);
  EXPECT_EQ(gTrans, wantGrads.translations);
  EXPECT_EQ(gPts, wantGrads.points);

  // A forest without a device serves only the CPU; a float32 tensor is not the CPU backend's.
  armature_exec gpu{ARMATURE_BACKEND_VULKAN, 1, nullptr};
  EXPECT_NE(armature_joint_propagation(nullptr, &gpu, forest, &locals, &pts, &tg, nullptr, &tp, &tpo, nullptr),
            ARMATURE_OK);
  armature_tensor wrong = rot;
  wrong.dtype = ARMATURE_FLOAT32;
  const armature_joint_locals wrongLocals{ARMATURE_LOCAL_RIGID, &wrong, &trans, nullptr, nullptr};
  EXPECT_EQ(armature_joint_propagation(nullptr, &cpu, forest, &wrongLocals, &pts, &tg, nullptr, &tp, &tpo, nullptr),
            ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("locals.rotations: the CPU backend takes float64"),
            std::string::npos)
      << armature_last_error();
  std::vector<double> small(5);
  armature_tensor tooSmall = host(small, {5});
  EXPECT_EQ(armature_joint_propagation(nullptr, &cpu, forest, &locals, &pts, &tooSmall, nullptr, &tp, &tpo, nullptr),
            ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("globals holds 5 values; the output has 72"), std::string::npos)
      << armature_last_error();
  armature_joint_forest_destroy(forest);

  // The dense Gaussian field and its gradients.
  GaussianFieldRef field{.channels = 2};
  field.points = uniform(7 * 3, -1, 1, 75), field.means = uniform(4 * 3, -1, 1, 76);
  field.cholesky = uniform(4 * 6, -0.3, 0.3, 77), field.weights = uniform(4 * 2, -1, 1, 78);
  std::vector<double> values(7 * 2, NAN), gradField = uniform(7 * 2, -1, 1, 79), gMeans(4 * 3, NAN);
  armature_tensor x = host(field.points, {7, 3}), means = host(field.means, {4, 3});
  armature_tensor chol = host(field.cholesky, {4, 6}), weights = host(field.weights, {4, 2});
  armature_tensor tv = host(values, {7, 2}), tgf = host(gradField, {7, 2}), tgm = host(gMeans, {4, 3});
  const armature_gaussian_field_inputs fin{&x, &means, &chol, &weights, nullptr};
  ASSERT_EQ(armature_gaussian_field(nullptr, &cpu, &fin, &tv, nullptr), ARMATURE_OK) << armature_last_error();
  EXPECT_EQ(values, gaussianFieldRef(field).field);
  ASSERT_EQ(armature_gaussian_field_backward(nullptr, &cpu, &fin, &tgf, nullptr, &tgm, nullptr, nullptr, nullptr),
            ARMATURE_OK)
      << armature_last_error();
  EXPECT_EQ(gMeans, gaussianFieldBackwardRef(field, gradField).means);

  // Deformable aggregation over one camera's two levels.
  const int32_t shape[4] = {3, 4, 2, 2}, start[2] = {0, 12};
  armature_feature_maps maps = nullptr;
  ASSERT_EQ(armature_feature_maps_create(nullptr, 1, 2, shape, start, 16, &maps), ARMATURE_OK) << armature_last_error();
  DeformableAggregationRef op{
      .sizes = {.batch = 1, .features = 16, .channels = 2, .anchors = 3, .points = 2},
      .layout = {.cameras = 1, .levels = 2, .spatialShape = {3, 4, 2, 2}, .scaleStartIndex = {0, 12}}};
  op.features = uniform(16 * 2, -1, 1, 80), op.locations = uniform(3 * 2 * 2, 0, 1, 81);
  op.weights = uniform(3 * 2 * 2, -1, 1, 82);
  std::vector<double> out(3 * 2, NAN);
  armature_tensor tf = host(op.features, {1, 16, 2}), tl = host(op.locations, {1, 3, 2, 1, 2});
  armature_tensor tw = host(op.weights, {1, 3, 2, 1, 2, 1}), to = host(out, {1, 3, 2});
  ASSERT_EQ(armature_deformable_aggregation(nullptr, &cpu, maps, &tf, &tl, &tw, &to), ARMATURE_OK)
      << armature_last_error();
  EXPECT_EQ(out, deformableAggregationRef(op));
  armature_feature_maps_destroy(maps);
}

// A body model file through the C API (its arrays, as smplx's pieces around skinning need them) and body skinning
// on the CPU backend: the reference's values and exact gradients, bit for bit.
TEST(CApiCpu, BodyModelsAndSkinningOnTheReference) {
  std::mt19937_64 rng(91);
  const std::string path = armature::test::tempPath("c_api_body.npz");
  saveBodyModel(armature::test::randomBodyModel(37, 5, 4, 0, rng), path);
  const BodyModel model = loadBodyModel(path);  // as stored (float32 arrays)
  armature_body_model m = nullptr;
  ASSERT_EQ(armature_body_model_load(path.c_str(), &m), ARMATURE_OK) << armature_last_error();
  armature_body_model_info info{};
  ASSERT_EQ(armature_body_model_info_get(m, &info), ARMATURE_OK);
  EXPECT_EQ(info.vertices, 37u);
  EXPECT_EQ(info.joints, 5u);
  EXPECT_EQ(info.shape_count, 4u);
  std::vector<double> vTemplate(37 * 3), parents(5);
  ASSERT_EQ(armature_body_model_array(m, "v_template", vTemplate.data(), vTemplate.size()), ARMATURE_OK);
  EXPECT_EQ(vTemplate, model.vTemplate);
  ASSERT_EQ(armature_body_model_array(m, "kintree_parents", parents.data(), parents.size()), ARMATURE_OK);
  EXPECT_EQ(parents, std::vector<double>(model.parents.begin(), model.parents.end()));
  uint32_t rank = 0;
  uint64_t shape[4];
  ASSERT_EQ(armature_body_model_array_shape(m, "posedirs", &rank, shape), ARMATURE_OK);
  EXPECT_EQ(std::vector<uint64_t>(shape, shape + rank), (std::vector<uint64_t>{37, 3, 36}));
  ASSERT_EQ(armature_body_model_array_shape(m, "dynamic_lmk_faces_idx", &rank, shape), ARMATURE_OK);
  EXPECT_EQ(std::vector<uint64_t>(shape, shape + rank), std::vector<uint64_t>{0});  // the file has none
  EXPECT_EQ(armature_body_model_array(m, "v_template", vTemplate.data(), 5), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(armature_body_model_array(m, "nonsense", nullptr, 0), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("no array 'nonsense'"), std::string::npos);
  armature_body_model_destroy(m);

  armature_skinning_info si{
      ARMATURE_STRUCT_SKINNING_INFO, sizeof si, nullptr, path.c_str(), ARMATURE_BACKEND_CPU, 4, 0, 2, nullptr};
  armature_skinning skin = nullptr;
  ASSERT_EQ(armature_skinning_create(nullptr, &si, &skin), ARMATURE_OK) << armature_last_error();
  BodyParams p{.batch = 2, .shapeComponents = 4, .exprComponents = 0};  // a body without expressions
  p.pose = uniform(2 * 5 * 3, -0.5, 0.5, 92), p.betas = uniform(2 * 4, -1, 1, 93);
  p.transl = uniform(2 * 3, -1, 1, 95);
  const BodyOutput want = bodyForwardRef(model, p);
  std::vector<double> vertices(2 * 37 * 3, NAN), joints(2 * 5 * 3, NAN);
  armature_tensor pose = host(p.pose, {2, 5, 3}), betas = host(p.betas, {2, 4});
  armature_tensor transl = host(p.transl, {2, 3}), tv = host(vertices, {2, 37, 3}), tj = host(joints, {2, 5, 3});
  const armature_exec cpu{ARMATURE_BACKEND_CPU, 0, nullptr};
  ASSERT_EQ(armature_skinning_forward(skin, &cpu, &pose, &betas, nullptr, &transl, &tv, &tj), ARMATURE_OK)
      << armature_last_error();
  EXPECT_EQ(vertices, want.vertices);
  EXPECT_EQ(joints, want.joints);
  std::vector<double> gradVertices = uniform(vertices.size(), -1, 1, 96);
  const BodyGrads wantGrads = bodyBackwardRef(model, p, gradVertices, {});
  std::vector<double> gPose(p.pose.size(), NAN), gBetas(p.betas.size(), NAN), gTransl(6, NAN);
  armature_tensor tgv = host(gradVertices, {2, 37, 3}), tgp = host(gPose, {2, 5, 3}), tgb = host(gBetas, {2, 4});
  armature_tensor tgt = host(gTransl, {2, 3});
  ASSERT_EQ(armature_skinning_backward(skin, &cpu, &pose, &tgv, nullptr, &tgp, &tgb, nullptr, &tgt), ARMATURE_OK)
      << armature_last_error();
  EXPECT_EQ(gPose, wantGrads.pose);
  EXPECT_EQ(gBetas, wantGrads.betas);
  EXPECT_EQ(gTransl, wantGrads.transl);
  armature_tensor wide = host(p.betas, {1, 8});  // more columns than the skinning allows
  EXPECT_EQ(armature_skinning_forward(skin, &cpu, &pose, &wide, nullptr, &transl, &tv, &tj),
            ARMATURE_ERROR_INVALID_ARGUMENT);
  armature_skinning_destroy(skin);

  // A vertex template of the caller's (smplx's v_template) in place of the file's; a non-finite one is refused.
  BodyModel moved = model;
  for (double& v : moved.vTemplate) v += 0.25;
  si.v_template = moved.vTemplate.data();
  ASSERT_EQ(armature_skinning_create(nullptr, &si, &skin), ARMATURE_OK) << armature_last_error();
  ASSERT_EQ(armature_skinning_forward(skin, &cpu, &pose, &betas, nullptr, &transl, &tv, &tj), ARMATURE_OK)
      << armature_last_error();
  const BodyOutput wantMoved = bodyForwardRef(moved, p);
  EXPECT_EQ(vertices, wantMoved.vertices);
  EXPECT_EQ(joints, wantMoved.joints);
  armature_skinning_destroy(skin);
  moved.vTemplate[7] = NAN;
  EXPECT_EQ(armature_skinning_create(nullptr, &si, &skin), ARMATURE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(armature_last_error()).find("v_template"), std::string::npos);
  std::remove(path.c_str());
}
}  // namespace
