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
#include "armature/ops/deformable_aggregation.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/interpolate.h"
#include "armature/ops/project.h"
#include "armature/ops/raster.h"

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
      if (whole.vk_buffer == t.vk_buffer && whole.cuda == t.cuda) {
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
}

std::string backendName(const ::testing::TestParamInfo<armature_backend>& info) {
  return info.param == ARMATURE_BACKEND_VULKAN ? "vulkan" : "cuda";
}
INSTANTIATE_TEST_SUITE_P(Backends, CApi, ::testing::Values(ARMATURE_BACKEND_VULKAN, ARMATURE_BACKEND_CUDA),
                         backendName);

}  // namespace
