// GPU skinning against the double CPU reference: forward and backward on CUDA and on Vulkan.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "armature/body/synth.h"
#include "armature/cuda/skinning.h"
#include "armature/ops/skinning.h"
#include "shared/skinning_io.h"
#include "support/body_fixtures.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// fp32 against double: vertices are sums of ~500 blend terms (each ≤ 1e-2) and chains of ≤ 8 rotations of
// metre-scale offsets; float rounding (6e-8 relative) accumulates to a few 1e-6 m. 5e-5 m (0.05 mm) leaves
// margin without hiding indexing errors, which are centimetres.
constexpr Tol kVertexTol{5e-5, 0};

struct FloatParams {
  std::vector<float> pose, betas, expression, transl;
};
FloatParams toFloat(BodyParams& p) {
  // The GPU sees floats: round the double parameters first so the reference sees the same inputs.
  for (auto* v : {&p.pose, &p.betas, &p.expression, &p.transl})
    for (auto& x : *v) x = double(float(x));
  return {cast<float>(p.pose), cast<float>(p.betas), cast<float>(p.expression), cast<float>(p.transl)};
}

// The parameters on the device, and the inputs that name them.
struct DeviceParams {
  cuda::DeviceMemory pose, betas, expr, transl;
  explicit DeviceParams(const FloatParams& f)
      : pose(cuda::DeviceMemory::from(f.pose)),
        betas(cuda::DeviceMemory::from(f.betas)),
        expr(cuda::DeviceMemory::from(f.expression)),
        transl(cuda::DeviceMemory::from(f.transl)) {}
  cuda::SkinningInputs inputs() const {
    return {pose.as<float>(), betas.as<float>(), expr.as<float>(), transl.as<float>()};
  }
  void upload(const FloatParams& f) {  // new values, same buffers (what a captured graph reads)
    pose.upload(f.pose.data(), f.pose.size() * 4);
    betas.upload(f.betas.data(), f.betas.size() * 4);
    expr.upload(f.expression.data(), f.expression.size() * 4);
    transl.upload(f.transl.data(), f.transl.size() * 4);
  }
};

// The parameters in Vulkan storage buffers.
struct VkParams {
  vk::Buffer pose, betas, expr, transl;
  VkParams(vk::Context& ctx, const FloatParams& f)
      : pose(vk::makeStorageBuffer<float>(ctx, f.pose)),
        betas(vk::makeStorageBuffer<float>(ctx, f.betas)),
        expr(vk::makeStorageBuffer<float>(ctx, f.expression)),
        transl(vk::makeStorageBuffer<float>(ctx, f.transl)) {}
};

// One random case on Vulkan: the skinning object, the parameters (rounded to the GPU's floats, and those floats), the
// reference forward and the parameters' buffers.
struct VkCase {
  SkinningVk skin;
  BodyParams p;
  FloatParams f;
  BodyOutput ref;
  VkParams in;
  VkCase(vk::Context& ctx, const BodyModel& m, uint32_t B, std::mt19937_64& rng)
      : skin(ctx, m, 10, 10, B),
        p(randomBodyParams(m, B, 10, 10, rng)),
        f(toFloat(p)),
        ref(bodyForwardRef(m, p)),
        in(ctx, f) {}
};

// Random gradients on the vertices and joints of `ref`, as floats (what the GPU sees) held in doubles.
std::pair<std::vector<double>, std::vector<double>> randomOutputGrads(const BodyOutput& ref, std::mt19937_64& rng) {
  std::normal_distribution<double> n;
  std::vector<double> gv(ref.vertices.size()), gj(ref.joints.size());
  for (auto& x : gv) x = double(float(n(rng)));
  for (auto& x : gj) x = double(float(n(rng)));
  return {gv, gj};
}

}  // namespace

TEST(SkinningTables, FoldTheRegressorIntoJointTables) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(40, 9, 4, 3, rng, true);
  auto t = buildSkinningTables(m, 3, 2);
  EXPECT_EQ(t.coefCount(), 5u);
  EXPECT_EQ(t.blendMatrix.size(), size_t(8 * 9 + 5) * 120);
  BodyParams p = randomBodyParams(m, 1, 3, 2, rng, 0);
  auto ref = bodyForwardRef(m, p);  // zero pose: joints are the regressed rest joints
  for (uint32_t j = 0; j < 9; ++j)
    for (int c = 0; c < 3; ++c) {
      double want = t.jointTemplate[j * 3 + size_t(c)];
      for (uint32_t k = 0; k < 5; ++k)
        want += (k < 3 ? p.betas[k] : p.expression[k - 3]) * t.jointDirs[(k * 9 + j) * 3 + size_t(c)];
      EXPECT_NEAR(want + p.transl[size_t(c)], ref.joints[j * 3 + size_t(c)], 1e-5);
    }
  BodyModel big = randomBodyModel(10, 65, 1, 0, rng);
  EXPECT_THROW(buildSkinningTables(big, 1, 0), Error);
  EXPECT_THROW(buildSkinningTables(m, 5, 0), Error);
}

TEST(SkinningVulkan, ForwardMatchesReference) {
  ARM_REQUIRE_VULKAN(ctx);
  std::mt19937_64 rng(::armature::test::rng()());
  // The default avatar at B ∈ {1, 3, 17}; B = 256 too on a GPU. On a CPU device (lavapipe) B = 256 runs on a
  // random 700-vertex model: the avatar's 256-item blend is 8 GFLOP, minutes on two cores.
  std::vector<std::pair<const BodyModel*, uint32_t>> cases = {
      {&defaultAvatar(), 1}, {&defaultAvatar(), 3}, {&defaultAvatar(), 17}};
  BodyModel small = randomBodyModel(700, 55, 10, 10, rng, true);
  cases.push_back({ctx.info().isCpu() ? &small : &defaultAvatar(), 256});
  for (auto [model, B] : cases) {
    SCOPED_TRACE("B=" + std::to_string(B) + " V=" + std::to_string(model->vertexCount));
    VkCase c(ctx, *model, B, rng);
    vk::Buffer verts(ctx, c.ref.vertices.size() * 4, vk::kStorageUsage | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT);
    vk::Buffer joints(ctx, c.ref.joints.size() * 4, vk::kStorageUsage);
    verts.fill(nanBits());
    joints.fill(nanBits());
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      c.skin.forward(cmd, B, c.in.pose, c.in.betas, c.in.expr, c.in.transl, verts, joints);
      vk::computeBarrier(cmd);
    });
    EXPECT_TRUE(allClose(verts.download<float>(c.ref.vertices.size()), c.ref.vertices, kVertexTol));
    EXPECT_TRUE(allClose(joints.download<float>(c.ref.joints.size()), c.ref.joints, kVertexTol));
  }
}

TEST(SkinningVulkan, BackwardMatchesReference) {
  ARM_REQUIRE_VULKAN(ctx);
  std::mt19937_64 rng(::armature::test::rng()());
  // The default avatar at B ∈ {1, 3} (its dL/dfeatures product on tiles of 8 items in 123 column slices); a random
  // model with shuffled joint order and an arbitrary tree (55 joints, 700 vertices) at B = 17, 40 and 131 (tiles of
  // 64 items, the last partial; per-joint sums of 1, 2 and 4 items a workgroup, the last of 131 partial).
  BodyModel small = randomBodyModel(700, 55, 10, 10, rng, true);
  const std::vector<std::pair<const BodyModel*, uint32_t>> cases = {
      {&defaultAvatar(), 1}, {&defaultAvatar(), 3}, {&small, 17}, {&small, 40}, {&small, 131}};
  for (auto [model, B] : cases) {
    SCOPED_TRACE("B=" + std::to_string(B) + " V=" + std::to_string(model->vertexCount));
    VkCase c(ctx, *model, B, rng);
    vk::Buffer verts(ctx, c.ref.vertices.size() * 4, vk::kStorageUsage),
        joints(ctx, c.ref.joints.size() * 4, vk::kStorageUsage);
    const auto [gv, gj] = randomOutputGrads(c.ref, rng);
    auto dgv = vk::makeStorageBuffer<float>(ctx, cast<float>(gv)),
         dgj = vk::makeStorageBuffer<float>(ctx, cast<float>(gj));
    vk::Buffer gPose(ctx, c.f.pose.size() * 4, vk::kStorageUsage), gBetas(ctx, c.f.betas.size() * 4, vk::kStorageUsage);
    vk::Buffer gExpr(ctx, c.f.expression.size() * 4, vk::kStorageUsage),
        gTransl(ctx, c.f.transl.size() * 4, vk::kStorageUsage);
    SkinningGradBuffers out{gPose, gBetas, gExpr, gTransl};
    // With and without a gradient on the posed joints (without: the reference's is zero).
    for (bool withJoints : {true, false}) {
      SCOPED_TRACE(withJoints ? "dL/djoints given" : "no dL/djoints");
      for (auto* g : {&gPose, &gBetas, &gExpr, &gTransl}) g->fill(nanBits());
      ctx.submitAndWait([&](VkCommandBuffer cmd) {
        c.skin.forward(cmd, B, c.in.pose, c.in.betas, c.in.expr, c.in.transl, verts, joints);
        c.skin.backward(cmd, B, c.in.pose, dgv, withJoints ? &dgj : nullptr, out);
        vk::computeBarrier(cmd);
      });
      auto gref = bodyBackwardRef(*model, c.p, gv, withJoints ? gj : std::vector<double>(gj.size(), 0.0));
      // As on CUDA: fp32 sums over thousands of vertices against double, compared as vectors relative to their
      // norm; fp32 accumulation errs ~sqrt(n)·6e-8 relative, an indexing or sign error gives O(1).
      auto gp = gPose.download<float>(c.f.pose.size());
      EXPECT_LT(relativeError(gp, gref.pose), 1e-4);
      EXPECT_LT(relativeError(gBetas.download<float>(c.f.betas.size()), gref.betas), 1e-4);
      EXPECT_LT(relativeError(gExpr.download<float>(c.f.expression.size()), gref.expression), 1e-4);
      EXPECT_LT(relativeError(gTransl.download<float>(c.f.transl.size()), gref.transl), 1e-4);
      // Deterministic: the backward again (on the same forward) gives the same bits.
      gPose.fill(nanBits());
      ctx.submitAndWait([&](VkCommandBuffer cmd) {
        c.skin.backward(cmd, B, c.in.pose, dgv, withJoints ? &dgj : nullptr, out);
        vk::computeBarrier(cmd);
      });
      auto gp2 = gPose.download<float>(c.f.pose.size());
      EXPECT_EQ(0, std::memcmp(gp.data(), gp2.data(), gp.size() * 4)) << "backward is not bitwise reproducible";
    }
  }
}

TEST(SkinningVulkan, RejectsBadInput) {
  ARM_REQUIRE_VULKAN(ctx);
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(50, 6, 2, 1, rng);
  SkinningVk skin(ctx, m, 2, 1, 4);
  vk::Buffer small(ctx, 16, vk::kStorageUsage), big(ctx, 4096, vk::kStorageUsage);
  vk::Buffer g0(ctx, 4096, vk::kStorageUsage), g1(ctx, 4096, vk::kStorageUsage), g2(ctx, 4096, vk::kStorageUsage);
  SkinningGradBuffers out{g0, g1, g2, big};
  auto record = [&](auto body) { ctx.submitAndWait([&](VkCommandBuffer cmd) { body(cmd); }); };
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.forward(cmd, 5, big, big, big, big, big, big); }), Error);
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.forward(cmd, 2, small, big, big, big, big, big); }), Error);
  // The backward: before any forward there is nothing to differentiate; then a batch other than the forward's, and
  // buffers too small for dL/dv, dL/djoints and dL/dpose.
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.backward(cmd, 2, big, big, nullptr, out); }), Error);
  record([&](VkCommandBuffer cmd) { skin.forward(cmd, 2, big, big, big, big, big, big); });
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.backward(cmd, 3, big, big, nullptr, out); }), Error);
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.backward(cmd, 2, big, small, nullptr, out); }), Error);
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.backward(cmd, 2, big, big, &small, out); }), Error);
  SkinningGradBuffers shortPose{small, g1, g2, big};
  EXPECT_THROW(record([&](VkCommandBuffer cmd) { skin.backward(cmd, 2, big, big, nullptr, shortPose); }), Error);
  record([&](VkCommandBuffer cmd) { skin.backward(cmd, 2, big, big, nullptr, out); });  // and the valid call runs
  EXPECT_THROW(SkinningVk(ctx, m, 3, 0, 4), Error);
  EXPECT_THROW(SkinningVk(ctx, m, 2, 0, 100'000'000), Error);  // more items than workgroups; v_posed beyond the range
  BodyModel many = randomBodyModel(20, 3, SKIN_MAX_COEFS + 8, 0, rng);
  EXPECT_THROW(SkinningVk(ctx, many, SKIN_MAX_COEFS + 8, 0, 1), Error);  // more components than the joint kernel holds
}

class SkinningCuda : public ::testing::Test {
 protected:
  void SetUp() override { ARM_REQUIRE_CUDA(); }
};

TEST_F(SkinningCuda, ForwardAndBackwardMatchReference) {
  std::mt19937_64 rng(::armature::test::rng()());
  cuda::Stream stream;
  // 1, 3: the fused kernel (its 4-row instantiation); 6: its 8-row one, and the backward's 32-row-tile product
  // with a partial tile; 17, 40: the 32-row-tile product (one and two row tiles); 256: the tensor cores.
  for (uint32_t B : {1u, 3u, 6u, 17u, 40u, 256u}) {
    SCOPED_TRACE("B=" + std::to_string(B));
    const BodyModel& m = defaultAvatar();
    cuda::Skinning skin(m, 10, 10, B);
    BodyParams p = randomBodyParams(m, B, 10, 10, rng);
    FloatParams f = toFloat(p);
    auto ref = bodyForwardRef(m, p);
    DeviceParams params(f);
    cuda::DeviceMemory verts(ref.vertices.size() * 4), joints(ref.joints.size() * 4);
    verts.fill32(nanBits());
    joints.fill32(nanBits());
    const cuda::SkinningInputs in = params.inputs();
    skin.forward(B, in, verts.as<float>(), joints.as<float>(), stream);
    stream.synchronize();
    EXPECT_TRUE(allClose(verts.download<float>(ref.vertices.size()), ref.vertices, kVertexTol));
    EXPECT_TRUE(allClose(joints.download<float>(ref.joints.size()), ref.joints, kVertexTol));

    const auto [gv, gj] = randomOutputGrads(ref, rng);
    auto gref = bodyBackwardRef(m, p, gv, gj);
    auto dgv = cuda::DeviceMemory::from(cast<float>(gv)), dgj = cuda::DeviceMemory::from(cast<float>(gj));
    cuda::DeviceMemory gPose(f.pose.size() * 4), gBetas(f.betas.size() * 4), gExpr(f.expression.size() * 4),
        gTransl(f.transl.size() * 4);
    for (auto* g : {&gPose, &gBetas, &gExpr, &gTransl}) g->fill32(nanBits());
    cuda::SkinningGrads out{gPose.as<float>(), gBetas.as<float>(), gExpr.as<float>(), gTransl.as<float>()};
    skin.backward(B, dgv.as<float>(), dgj.as<float>(), out, stream);
    stream.synchronize();
    // Gradients are sums over 10k vertices of fp32 products: compare as vectors, relative to their norm.
    // fp32 accumulation over n terms errs ~sqrt(n)·6e-8 relative; 1e-4 is a wide margin, and an indexing
    // or sign error gives O(1).
    auto gp = gPose.download<float>(f.pose.size());
    EXPECT_LT(relativeError(gp, gref.pose), 1e-4);
    EXPECT_LT(relativeError(gBetas.download<float>(f.betas.size()), gref.betas), 1e-4);
    EXPECT_LT(relativeError(gExpr.download<float>(f.expression.size()), gref.expression), 1e-4);
    EXPECT_LT(relativeError(gTransl.download<float>(f.transl.size()), gref.transl), 1e-4);
    // Deterministic: the same bits again.
    skin.backward(B, dgv.as<float>(), dgj.as<float>(), out, stream);
    stream.synchronize();
    auto gp2 = gPose.download<float>(f.pose.size());
    EXPECT_EQ(0, std::memcmp(gp.data(), gp2.data(), gp.size() * 4)) << "backward is not bitwise reproducible";
    // The chain on the caller's stream alone (setChainOverlap(false)), and the blend matrix streamed from DRAM
    // (setL2Residency(false)): the same kernels, the same bits.
    auto v1 = verts.download<float>(ref.vertices.size());
    skin.setChainOverlap(false);
    EXPECT_FALSE(skin.setL2Residency(false));
    EXPECT_EQ(skin.l2ResidentBytes(), 0u);
    verts.fill32(nanBits());
    skin.forward(B, in, verts.as<float>(), joints.as<float>(), stream);
    skin.backward(B, dgv.as<float>(), dgj.as<float>(), out, stream);
    stream.synchronize();
    auto v2 = verts.download<float>(ref.vertices.size());
    auto gp3 = gPose.download<float>(f.pose.size());
    EXPECT_EQ(0, std::memcmp(v1.data(), v2.data(), v1.size() * 4))
        << "forward differs without the overlap and residency";
    EXPECT_EQ(0, std::memcmp(gp.data(), gp3.data(), gp.size() * 4))
        << "backward differs without the overlap and residency";
    // The product on fp32 FMAs instead of the tensor cores (3xTF32, more than 64 items): both within the fp32
    // tolerance, and the tensor-core error no larger than twice the FMA error (both are fp32 accumulation error).
    EXPECT_FALSE(skin.setTensorCores(false));
    if (B <= 64) continue;  // fewer items have no tensor-core product
    verts.fill32(nanBits());
    skin.forward(B, in, verts.as<float>(), joints.as<float>(), stream);
    stream.synchronize();
    auto vFma = verts.download<float>(ref.vertices.size());
    EXPECT_TRUE(allClose(vFma, ref.vertices, kVertexTol));
    auto maxError = [&](const std::vector<float>& v) {
      double e = 0;
      for (size_t i = 0; i < v.size(); ++i) e = std::max(e, std::abs(v[i] - ref.vertices[i]));
      return e;
    };
    const double eTensor = maxError(v1), eFma = maxError(vFma);
    std::printf("B=%u max |vertex - double reference|: tensor cores (3xTF32) %.3g m, fp32 FMA %.3g m\n", B, eTensor,
                eFma);
    EXPECT_LE(eTensor, 2 * eFma + 1e-6);
  }
}

TEST_F(SkinningCuda, TensorCoreProductsMatchFma) {
  // The backward's product runs on the tensor cores from 1,024 items; a double reference of that many items would
  // take minutes, so the tensor-core results are compared with the fp32-FMA kernels (checked against the reference
  // above at 256 items, the same code) on an awkward batch. Both are fp32 accumulations of the same terms and
  // differ by rounding only; an indexing error would differ by O(1). Vertices: ~3e-8 relative, bound 1e-6. The
  // gradients sum 31k random-signed terms that largely cancel (the shape gradient differed by 4.8e-5 relative on
  // the H100, the pose gradient by 2e-7): bound 1e-4, the tolerance both have against the double reference above.
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  constexpr uint32_t B = 1031;
  cuda::Stream stream;
  cuda::Skinning skin(m, 10, 10, B);
  BodyParams p = randomBodyParams(m, B, 10, 10, rng);
  FloatParams f = toFloat(p);
  DeviceParams params(f);
  const size_t vCount = size_t(B) * m.vertexCount * 3, jCount = size_t(B) * m.jointCount * 3;
  if (!skin.setTensorCores(true)) GTEST_SKIP() << "this GPU has no tensor cores for TF32 (compute capability < 8.0)";
  cuda::DeviceMemory verts(vCount * 4), joints(jCount * 4), gPose(f.pose.size() * 4), gBetas(f.betas.size() * 4);
  cuda::DeviceMemory gExpr(f.expression.size() * 4), gTransl(f.transl.size() * 4);
  std::normal_distribution<float> n;
  std::vector<float> gv(vCount);
  for (auto& x : gv) x = n(rng);
  auto dgv = cuda::DeviceMemory::from(gv);
  const cuda::SkinningInputs in = params.inputs();
  auto run = [&](bool tensor) {
    skin.setTensorCores(tensor);
    for (auto* d : {&verts, &gPose, &gBetas}) d->fill32(nanBits());
    skin.forward(B, in, verts.as<float>(), joints.as<float>(), stream);
    skin.backward(B, dgv.as<float>(), nullptr,
                  {gPose.as<float>(), gBetas.as<float>(), gExpr.as<float>(), gTransl.as<float>()}, stream);
    stream.synchronize();
    return std::tuple{verts.download<float>(vCount), gPose.download<float>(f.pose.size()),
                      gBetas.download<float>(f.betas.size())};
  };
  auto [vTensor, gpTensor, gbTensor] = run(true);
  auto [vFma, gpFma, gbFma] = run(false);
  auto relative = [](const std::vector<float>& a, const std::vector<float>& b) {
    return relativeError(a, std::vector<double>(b.begin(), b.end()));
  };
  std::printf("B=%u tensor cores vs fp32 FMA, relative: vertices %.3g, pose gradient %.3g, shape gradient %.3g\n", B,
              relative(vTensor, vFma), relative(gpTensor, gpFma), relative(gbTensor, gbFma));
  EXPECT_LT(relative(vTensor, vFma), 1e-6);
  EXPECT_LT(relative(gpTensor, gpFma), 1e-4);
  EXPECT_LT(relative(gbTensor, gbFma), 1e-4);
}

TEST_F(SkinningCuda, ForwardReplaysFromACudaGraph) {
  // A real-time caller captures the frame once and replays it: the fused forward keeps no per-call state on the
  // host (its block roles and flags come from a ticket counter on the device), so every replay must compute the new
  // inputs.
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  cuda::Stream stream;
  for (uint32_t B : {3u, 17u}) {  // the fused kernel; the separate kernels with the chain stream's fork and join
    SCOPED_TRACE("B=" + std::to_string(B));
    cuda::Skinning skin(m, 10, 10, B, /*l2Residency=*/B == 17);  // B=3 as the viewer builds it: no residency
    if (B == 3) {
      EXPECT_EQ(skin.l2ResidentBytes(), 0u);
    }
    BodyParams p0 = randomBodyParams(m, B, 10, 10, rng);
    FloatParams f = toFloat(p0);
    DeviceParams params(f);
    cuda::DeviceMemory verts(size_t(B) * m.vertexCount * 3 * 4), joints(size_t(B) * m.jointCount * 3 * 4);
    const cuda::SkinningInputs in = params.inputs();
    cuda::Graph frame(stream,
                      [&](const cuda::Stream& s) { skin.forward(B, in, verts.as<float>(), joints.as<float>(), s); });
    for (int replay = 0; replay < 3; ++replay) {
      BodyParams p = randomBodyParams(m, B, 10, 10, rng);
      params.upload(toFloat(p));
      verts.fill32(nanBits());
      frame.launch(stream);
      stream.synchronize();
      auto ref = bodyForwardRef(m, p);
      EXPECT_TRUE(allClose(verts.download<float>(ref.vertices.size()), ref.vertices, kVertexTol))
          << "replay " << replay;
    }
  }
}

TEST_F(SkinningCuda, FusedForwardsOfMixedSizesBackToBack) {
  // The fused forward's launches for different item counts keep separate ticket counters and flags, and a launch
  // must never take the flags of an earlier one: many calls of mixed sizes (and both chain modes), no
  // synchronisation between them, each into its own NaN-poisoned outputs, the items a prefix of the same inputs.
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  constexpr uint32_t kItems = 8;
  cuda::Stream stream;
  cuda::Skinning skin(m, 10, 10, kItems);
  BodyParams p = randomBodyParams(m, kItems, 10, 10, rng);
  FloatParams f = toFloat(p);
  auto ref = bodyForwardRef(m, p);
  DeviceParams params(f);
  const cuda::SkinningInputs in = params.inputs();
  const std::vector<uint32_t> sizes = {1, 4, 2, 8, 1, 3, 1, 5, 2, 1, 8, 4};
  std::vector<cuda::DeviceMemory> verts, joints;
  for (size_t call = 0; call < sizes.size(); ++call) {
    verts.emplace_back(size_t(sizes[call]) * m.vertexCount * 3 * 4);
    joints.emplace_back(size_t(sizes[call]) * m.jointCount * 3 * 4);
    verts.back().fill32(nanBits());
    joints.back().fill32(nanBits());
  }
  stream.synchronize();
  for (size_t call = 0; call < sizes.size(); ++call) {
    skin.setChainOverlap(call % 5 != 4);
    skin.forward(sizes[call], in, verts[call].as<float>(), joints[call].as<float>(), stream);
  }
  stream.synchronize();
  for (size_t call = 0; call < sizes.size(); ++call) {
    SCOPED_TRACE("call " + std::to_string(call) + ", " + std::to_string(sizes[call]) + " items");
    const size_t nv = size_t(sizes[call]) * m.vertexCount * 3, nj = size_t(sizes[call]) * m.jointCount * 3;
    const auto v = verts[call].download<float>(nv), j = joints[call].download<float>(nj);
    EXPECT_TRUE(allClose(std::span<const float>(v), std::span<const double>(ref.vertices.data(), nv), kVertexTol));
    EXPECT_TRUE(allClose(std::span<const float>(j), std::span<const double>(ref.joints.data(), nj), kVertexTol));
  }
}

TEST_F(SkinningCuda, ArbitraryTreesAndNaNStaysInItsItem) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(333, 17, 4, 2, rng, /*shuffled=*/true);
  cuda::Stream stream;
  cuda::Skinning skin(m, 4, 2, 2);
  BodyParams p = randomBodyParams(m, 2, 4, 2, rng);
  FloatParams f = toFloat(p);
  auto ref = bodyForwardRef(m, p);
  // NaN parameters are not scanned on the device (that would cost a pass per call): they give NaN outputs for
  // their own item only. Validate on the host with validateBodyParams when inputs are untrusted.
  f.pose[17 * 3 + 4] = NAN;  // item 1
  DeviceParams params(f);
  cuda::DeviceMemory verts(ref.vertices.size() * 4), joints(ref.joints.size() * 4);
  verts.fill32(nanBits());
  skin.forward(2, params.inputs(), verts.as<float>(), joints.as<float>(), stream);
  stream.synchronize();
  auto got = verts.download<float>(ref.vertices.size());
  size_t half = got.size() / 2;
  EXPECT_TRUE(allClose(std::span<const float>(got.data(), half), std::span<const double>(ref.vertices.data(), half),
                       kVertexTol));
  EXPECT_TRUE(std::isnan(got[half + 5]));
  EXPECT_THROW(skin.forward(3, {}, verts.as<float>(), joints.as<float>(), stream), Error);
  cuda::DeviceMemory g(f.pose.size() * 4);  // a shape-gradient output missing while the model has shape components
  EXPECT_THROW(
      skin.backward(2, verts.as<float>(), nullptr, {g.as<float>(), nullptr, g.as<float>(), g.as<float>()}, stream),
      Error);
  EXPECT_THROW(cuda::Skinning(m, 4, 2, 2'000'000'000u), Error);  // does not fit: a clear error, no crash
}
