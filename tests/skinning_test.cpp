// GPU skinning against the double CPU reference: forward and backward, one body per behaviour on every backend.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "armature/body/synth.h"
#include "armature/cuda/runtime.h"
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

// The parameters on the device.
struct DeviceParams {
  DeviceBuffer pose, betas, expr, transl;
  DeviceParams(Device& device, const FloatParams& f)
      : pose(device.upload(f.pose)),
        betas(device.upload(f.betas)),
        expr(device.upload(f.expression)),
        transl(device.upload(f.transl)) {}
  void upload(const FloatParams& f) {  // new values, same buffers (what a captured graph reads)
    pose.upload(std::span<const float>(f.pose));
    betas.upload(std::span<const float>(f.betas));
    expr.upload(std::span<const float>(f.expression));
    transl.upload(std::span<const float>(f.transl));
  }
  SkinningForwardArgs forward(uint32_t batch, const DeviceBuffer& vertices, const DeviceBuffer& joints) const {
    return {batch, pose, betas, expr, transl, vertices, joints};
  }
};

// The gradients' outputs, poisoned.
struct DeviceGrads {
  DeviceBuffer pose, betas, expr, transl;
  DeviceGrads(Device& device, const FloatParams& f)
      : pose(device.allocate(ElementType::Float32, f.pose.size())),
        betas(device.allocate(ElementType::Float32, f.betas.size())),
        expr(device.allocate(ElementType::Float32, f.expression.size())),
        transl(device.allocate(ElementType::Float32, f.transl.size())) {
    for (auto* g : {&pose, &betas, &expr, &transl}) g->fill(nanBits());
  }
  SkinningBackwardArgs backward(uint32_t batch, const DeviceParams& in, DeviceView gradVertices,
                                DeviceView gradJoints) const {
    return {batch, in.pose, gradVertices, gradJoints, pose, betas, expr, transl};
  }
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

class SkinningOp : public OnBackend {
 protected:
  // The default avatar, or on a CPU device (lavapipe) a random 700-vertex model for big batches: the avatar's 256-item
  // blend is 8 GFLOP, minutes on two cores.
  bool slowDevice() { return backend() == Backend::Vulkan && device().vulkan()->info().isCpu(); }
};
ARM_ON_GPU_BACKENDS(SkinningOp);

TEST_P(SkinningOp, ForwardAndBackwardMatchReference) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel small = randomBodyModel(700, 55, 10, 10, rng, /*shuffled=*/true);
  // 1, 3: CUDA's fused kernel (its 4-row instantiation); 6: its 8-row one, and the backward's 32-row-tile product
  // with a partial tile; 17, 40: the 32-row-tile product (one and two row tiles) and Vulkan's tiles of 64 items and
  // per-joint sums of 1 and 2 items a workgroup; 131: the last tile and sum partial; 256: the tensor cores. The
  // random model has a shuffled joint order and an arbitrary tree.
  std::vector<std::pair<const BodyModel*, uint32_t>> cases = {
      {&defaultAvatar(), 1}, {&defaultAvatar(), 3}, {&defaultAvatar(), 6}, {&small, 17}, {&small, 40}, {&small, 131}};
  if (!slowDevice()) cases.insert(cases.end(), {{&defaultAvatar(), 17}, {&defaultAvatar(), 256}});
  for (auto [model, B] : cases) {
    SCOPED_TRACE("B=" + std::to_string(B) + " V=" + std::to_string(model->vertexCount));
    Skinning skin(device(), backend(), *model, 10, 10, B);
    BodyParams p = randomBodyParams(*model, B, 10, 10, rng);
    FloatParams f = toFloat(p);
    auto ref = bodyForwardRef(*model, p);
    DeviceParams in(device(), f);
    DeviceBuffer verts = device().allocate(ElementType::Float32, ref.vertices.size()),
                 joints = device().allocate(ElementType::Float32, ref.joints.size());
    verts.fill(nanBits());
    joints.fill(nanBits());
    run([&](const Exec& exec) { skin.forward(exec, in.forward(B, verts, joints)); });
    EXPECT_TRUE(allClose(verts.download<float>(), ref.vertices, kVertexTol));
    EXPECT_TRUE(allClose(joints.download<float>(), ref.joints, kVertexTol));

    const auto [gv, gj] = randomOutputGrads(ref, rng);
    DeviceBuffer dgv = device().upload(cast<float>(gv)), dgj = device().upload(cast<float>(gj));
    // With and without a gradient on the posed joints (without: the reference's is zero).
    for (bool withJoints : {true, false}) {
      SCOPED_TRACE(withJoints ? "dL/djoints given" : "no dL/djoints");
      DeviceGrads out(device(), f);
      const auto args = out.backward(B, in, dgv, withJoints ? dgj.view() : DeviceView{});
      run([&](const Exec& exec) { skin.backward(exec, args); });
      auto gref = bodyBackwardRef(*model, p, gv, withJoints ? gj : std::vector<double>(gj.size(), 0.0));
      // Gradients are sums over thousands of vertices of fp32 products: compare as vectors, relative to their norm.
      // fp32 accumulation over n terms errs ~sqrt(n)·6e-8 relative; 1e-4 is a wide margin, and an indexing or sign
      // error gives O(1).
      auto gp = out.pose.download<float>();
      EXPECT_LT(relativeError(gp, gref.pose), 1e-4);
      EXPECT_LT(relativeError(out.betas.download<float>(), gref.betas), 1e-4);
      EXPECT_LT(relativeError(out.expr.download<float>(), gref.expression), 1e-4);
      EXPECT_LT(relativeError(out.transl.download<float>(), gref.transl), 1e-4);
      // Deterministic: the backward again (on the same forward) gives the same bits, and so do both with CUDA's
      // chain on the caller's stream alone and the blend matrix streamed from DRAM (the same kernels).
      out.pose.fill(nanBits());
      run([&](const Exec& exec) { skin.backward(exec, args); });
      EXPECT_EQ(0, std::memcmp(gp.data(), out.pose.download<float>().data(), gp.size() * 4))
          << "backward is not bitwise reproducible";
      const auto v1 = verts.download<float>();
      EXPECT_FALSE(skin.setTuning({.chainOverlap = false, .l2Residency = false}).l2Residency);
      EXPECT_EQ(skin.l2ResidentBytes(), 0u);
      verts.fill(nanBits());
      out.pose.fill(nanBits());
      run([&](const Exec& exec) {
        skin.forward(exec, in.forward(B, verts, joints));
        skin.backward(exec, args);
      });
      EXPECT_EQ(0, std::memcmp(v1.data(), verts.download<float>().data(), v1.size() * 4))
          << "forward differs without the overlap and residency";
      EXPECT_EQ(0, std::memcmp(gp.data(), out.pose.download<float>().data(), gp.size() * 4))
          << "backward differs without the overlap and residency";
      skin.setTuning({});
    }
  }
}

// At the rest pose (every axis-angle exactly zero: smplx's Rodrigues then works at angle √3·1e-8) the rotation's
// gradient must survive: SPIR-V lets sin err by 2⁻¹¹ and NVIDIA's Vulkan returns sin(1.7e-8) = 0, which zeroed it
// (IK and fits from rest did not move). A gradient on the posed joints alone, and one on the vertices, against the
// reference at 1e-4 relative (as above).
TEST_P(SkinningOp, RestPoseGradientsMatchReference) {
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& model = defaultAvatar();
  const uint32_t B = 2;
  Skinning skin(device(), backend(), model, 10, 10, B);
  BodyParams p = randomBodyParams(model, B, 10, 10, rng);
  std::fill(p.pose.begin(), p.pose.end(), 0.0);
  const FloatParams f = toFloat(p);
  const BodyOutput ref = bodyForwardRef(model, p);
  DeviceParams in(device(), f);
  DeviceBuffer verts = device().allocate(ElementType::Float32, ref.vertices.size()),
               joints = device().allocate(ElementType::Float32, ref.joints.size());
  const auto [gv, gj] = randomOutputGrads(ref, rng);
  for (bool onJoints : {true, false}) {
    SCOPED_TRACE(onJoints ? "dL/djoints alone" : "dL/dvertices alone");
    const std::vector<double> gvUsed = onJoints ? std::vector<double>(gv.size(), 0.0) : gv;
    const std::vector<double> gjUsed = onJoints ? gj : std::vector<double>(gj.size(), 0.0);
    DeviceBuffer dgv = device().upload(cast<float>(gvUsed)), dgj = device().upload(cast<float>(gjUsed));
    DeviceGrads out(device(), f);
    run([&](const Exec& exec) {
      skin.forward(exec, in.forward(B, verts, joints));
      skin.backward(exec, out.backward(B, in, dgv, dgj));
    });
    const BodyGrads gref = bodyBackwardRef(model, p, gvUsed, gjUsed);
    EXPECT_GT(largest(gref.pose), 1e-2);  // the case has a gradient to lose
    EXPECT_LT(relativeError(out.pose.download<float>(), gref.pose), 1e-4);
    EXPECT_LT(relativeError(out.transl.download<float>(), gref.transl), 1e-4);
  }
}

// CUDA's product on fp32 FMAs instead of the tensor cores (3xTF32, more than 64 items): both within the fp32 tolerance
// of the double reference, and the tensor-core error no larger than twice the FMA error (both are fp32 accumulation).
TEST_P(SkinningOp, TensorCoresKeepFp32Accuracy) {
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  constexpr uint32_t B = 256;
  Skinning skin(device(), backend(), m, 10, 10, B);
  if (!skin.tuning().tensorCores) GTEST_SKIP() << backendName(backend()) << " skinning has no tensor-core product here";
  BodyParams p = randomBodyParams(m, B, 10, 10, rng);
  DeviceParams in(device(), toFloat(p));
  auto ref = bodyForwardRef(m, p);
  DeviceBuffer verts = device().allocate(ElementType::Float32, ref.vertices.size()),
               joints = device().allocate(ElementType::Float32, ref.joints.size());
  auto forward = [&](bool tensorCores) {
    skin.setTuning({.tensorCores = tensorCores});
    verts.fill(nanBits());
    run([&](const Exec& exec) { skin.forward(exec, in.forward(B, verts, joints)); });
    return verts.download<float>();
  };
  const auto vTensor = forward(true), vFma = forward(false);
  EXPECT_TRUE(allClose(vTensor, ref.vertices, kVertexTol));
  EXPECT_TRUE(allClose(vFma, ref.vertices, kVertexTol));
  auto maxError = [&](const std::vector<float>& v) {
    double e = 0;
    for (size_t i = 0; i < v.size(); ++i) e = std::max(e, std::abs(v[i] - ref.vertices[i]));
    return e;
  };
  const double eTensor = maxError(vTensor), eFma = maxError(vFma);
  std::printf("B=%u max |vertex - double reference|: tensor cores (3xTF32) %.3g m, fp32 FMA %.3g m\n", B, eTensor,
              eFma);
  EXPECT_LE(eTensor, 2 * eFma + 1e-6);
}

TEST_P(SkinningOp, TensorCoreProductsMatchFma) {
  // The backward's product runs on the tensor cores from 1,024 items; a double reference of that many items would
  // take minutes, so the tensor-core results are compared with the fp32-FMA kernels (checked against the reference
  // above at 256 items, the same code) on an awkward batch. Both are fp32 accumulations of the same terms and
  // differ by rounding only; an indexing error would differ by O(1). Vertices: ~3e-8 relative, bound 1e-6. The
  // gradients sum 31k random-signed terms that largely cancel: bound 1e-4, the tolerance both have against the
  // double reference above.
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  constexpr uint32_t B = 1031;
  if (slowDevice()) GTEST_SKIP() << "1,031 avatars are hours on a CPU device, and it has no tensor cores";
  Skinning skin(device(), backend(), m, 10, 10, B);
  if (!skin.tuning().tensorCores) GTEST_SKIP() << backendName(backend()) << " skinning has no tensor-core product here";
  BodyParams p = randomBodyParams(m, B, 10, 10, rng);
  FloatParams f = toFloat(p);
  DeviceParams in(device(), f);
  const size_t vCount = size_t(B) * m.vertexCount * 3, jCount = size_t(B) * m.jointCount * 3;
  DeviceBuffer verts = device().allocate(ElementType::Float32, vCount),
               joints = device().allocate(ElementType::Float32, jCount);
  DeviceGrads out(device(), f);
  std::normal_distribution<float> n;
  std::vector<float> gv(vCount);
  for (auto& x : gv) x = n(rng);
  DeviceBuffer dgv = device().upload(gv);
  auto once = [&](bool tensor) {
    skin.setTuning({.tensorCores = tensor});
    for (auto* d : {&verts, &out.pose, &out.betas}) d->fill(nanBits());
    run([&](const Exec& exec) {
      skin.forward(exec, in.forward(B, verts, joints));
      skin.backward(exec, out.backward(B, in, dgv, {}));
    });
    return std::tuple{verts.download<float>(), out.pose.download<float>(), out.betas.download<float>()};
  };
  auto [vTensor, gpTensor, gbTensor] = once(true);
  auto [vFma, gpFma, gbFma] = once(false);
  auto relative = [](const std::vector<float>& a, const std::vector<float>& b) {
    return relativeError(a, std::vector<double>(b.begin(), b.end()));
  };
  std::printf("B=%u tensor cores vs fp32 FMA, relative: vertices %.3g, pose gradient %.3g, shape gradient %.3g\n", B,
              relative(vTensor, vFma), relative(gpTensor, gpFma), relative(gbTensor, gbFma));
  EXPECT_LT(relative(vTensor, vFma), 1e-6);
  EXPECT_LT(relative(gpTensor, gpFma), 1e-4);
  EXPECT_LT(relative(gbTensor, gbFma), 1e-4);
}

// A real-time caller captures the frame once and replays it (CUDA graphs): the fused forward keeps no per-call state
// on the host (its block roles and flags come from a ticket counter on the device), so every replay must compute the
// new inputs.
TEST(SkinningCuda, ForwardReplaysFromACudaGraph) {
  std::string why;
  Device* device = testDevice(Backend::Cuda, &why);
  if (!device) GTEST_SKIP() << "cuda: " << why;
#if ARMATURE_HAS_CUDA
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  cuda::Stream stream;
  for (uint32_t B : {3u, 17u}) {  // the fused kernel; the separate kernels with the chain stream's fork and join
    SCOPED_TRACE("B=" + std::to_string(B));
    Skinning skin(*device, Backend::Cuda, m, 10, 10, B, {.l2Residency = B == 17});  // B=3 as the viewer builds it
    if (B == 3) {
      EXPECT_EQ(skin.l2ResidentBytes(), 0u);
    }
    BodyParams p0 = randomBodyParams(m, B, 10, 10, rng);
    DeviceParams params(*device, toFloat(p0));
    DeviceBuffer verts = device->allocate(ElementType::Float32, size_t(B) * m.vertexCount * 3),
                 joints = device->allocate(ElementType::Float32, size_t(B) * m.jointCount * 3);
    cuda::Graph frame(
        stream, [&](const cuda::Stream& s) { skin.forward(Exec::cuda(s.handle()), params.forward(B, verts, joints)); });
    for (int replay = 0; replay < 3; ++replay) {
      BodyParams p = randomBodyParams(m, B, 10, 10, rng);
      params.upload(toFloat(p));
      verts.fill(nanBits());
      frame.launch(stream);
      stream.synchronize();
      auto ref = bodyForwardRef(m, p);
      EXPECT_TRUE(allClose(verts.download<float>(), ref.vertices, kVertexTol)) << "replay " << replay;
    }
  }
#endif
}

// Many forwards of mixed sizes (and both chain modes) recorded or enqueued back to back, no host synchronisation
// between them, each into its own NaN-poisoned outputs, the items a prefix of the same inputs. On CUDA the fused
// forward's launches for different item counts keep separate ticket counters and flags, and a launch must never take
// the flags of an earlier one (exec.barrier() is a no-op there); on Vulkan the barriers order the shared work buffers.
TEST_P(SkinningOp, ForwardsOfMixedSizesBackToBack) {
  std::mt19937_64 rng(::armature::test::rng()());
  const BodyModel& m = defaultAvatar();
  constexpr uint32_t kItems = 8;
  Skinning skin(device(), backend(), m, 10, 10, kItems);
  BodyParams p = randomBodyParams(m, kItems, 10, 10, rng);
  FloatParams f = toFloat(p);
  auto ref = bodyForwardRef(m, p);
  DeviceParams in(device(), f);
  const std::vector<uint32_t> sizes = {1, 4, 2, 8, 1, 3, 1, 5, 2, 1, 8, 4};
  std::vector<DeviceBuffer> verts, joints;
  for (uint32_t size : sizes) {
    verts.push_back(device().allocate(ElementType::Float32, size_t(size) * m.vertexCount * 3));
    joints.push_back(device().allocate(ElementType::Float32, size_t(size) * m.jointCount * 3));
    verts.back().fill(nanBits());
    joints.back().fill(nanBits());
  }
  run([&](const Exec& exec) {
    for (size_t call = 0; call < sizes.size(); ++call) {
      skin.setTuning({.chainOverlap = call % 5 != 4});
      skin.forward(exec, in.forward(sizes[call], verts[call], joints[call]));
      exec.barrier();
    }
  });
  for (size_t call = 0; call < sizes.size(); ++call) {
    SCOPED_TRACE("call " + std::to_string(call) + ", " + std::to_string(sizes[call]) + " items");
    const size_t nv = size_t(sizes[call]) * m.vertexCount * 3, nj = size_t(sizes[call]) * m.jointCount * 3;
    const auto v = verts[call].download<float>(nv), j = joints[call].download<float>(nj);
    EXPECT_TRUE(allClose(std::span<const float>(v), std::span<const double>(ref.vertices.data(), nv), kVertexTol));
    EXPECT_TRUE(allClose(std::span<const float>(j), std::span<const double>(ref.joints.data(), nj), kVertexTol));
  }
}

// NaN parameters are not scanned on the device (that would cost a pass per call): they give NaN outputs for their own
// item only. Validate on the host with validateBodyParams when inputs are untrusted.
TEST_P(SkinningOp, NaNStaysInItsItem) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(333, 17, 4, 2, rng, /*shuffled=*/true);
  Skinning skin(device(), backend(), m, 4, 2, 2);
  BodyParams p = randomBodyParams(m, 2, 4, 2, rng);
  FloatParams f = toFloat(p);
  auto ref = bodyForwardRef(m, p);
  f.pose[17 * 3 + 4] = NAN;  // item 1
  DeviceParams in(device(), f);
  DeviceBuffer verts = device().allocate(ElementType::Float32, ref.vertices.size()),
               joints = device().allocate(ElementType::Float32, ref.joints.size());
  verts.fill(nanBits());
  run([&](const Exec& exec) { skin.forward(exec, in.forward(2, verts, joints)); });
  auto got = verts.download<float>();
  size_t half = got.size() / 2;
  EXPECT_TRUE(allClose(std::span<const float>(got.data(), half), std::span<const double>(ref.vertices.data(), half),
                       kVertexTol));
  EXPECT_TRUE(std::isnan(got[half + 5]));
}

// Every argument is checked before any work: batch sizes, each buffer against its shape, the backward's order.
TEST_P(SkinningOp, RejectsBadInput) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(50, 6, 2, 1, rng);
  Skinning skin(device(), backend(), m, 2, 1, 4);
  DeviceBuffer small = device().allocate(ElementType::Float32, 4), big = device().allocate(ElementType::Float32, 1024);
  DeviceBuffer g0 = device().allocate(ElementType::Float32, 1024), ints = device().allocate(ElementType::Int32, 1024);
  const SkinningForwardArgs ok{2, big, big, big, big, big, big};
  auto with = [&](auto change) {
    SkinningForwardArgs a = ok;
    change(a);
    return a;
  };
  expectRejected([&](const Exec& e) { skin.forward(e, with([](auto& a) { a.batch = 5; })); }, "batch 5 outside [1, 4]");
  expectRejected([&](const Exec& e) { skin.forward(e, with([&](auto& a) { a.pose = small; })); },
                 "pose holds 4 elements");
  expectRejected([&](const Exec& e) { skin.forward(e, with([&](auto& a) { a.vertices = ints; })); },
                 "vertices holds int32");
  expectRejected([&](const Exec& e) { skin.forward(e, with([&](auto& a) { a.transl = {}; })); }, "transl is missing");
  // The backward: before any forward there is nothing to differentiate; then a batch other than the forward's, and
  // buffers too small for dL/dv, dL/djoints and dL/dpose.
  const SkinningBackwardArgs back{2, big, big, {}, g0, big, big, big};
  expectRejected([&](const Exec& e) { skin.backward(e, back); }, "no forward before it");
  run([&](const Exec& e) { skin.forward(e, ok); });
  auto backWith = [&](auto change) {
    SkinningBackwardArgs a = back;
    change(a);
    return a;
  };
  expectRejected([&](const Exec& e) { skin.backward(e, backWith([](auto& a) { a.batch = 3; })); }, "batch 3, but");
  expectRejected([&](const Exec& e) { skin.backward(e, backWith([&](auto& a) { a.gradVertices = small; })); },
                 "gradVertices holds 4");
  expectRejected([&](const Exec& e) { skin.backward(e, backWith([&](auto& a) { a.gradJoints = small; })); },
                 "gradJoints holds 4");
  expectRejected([&](const Exec& e) { skin.backward(e, backWith([&](auto& a) { a.gradPose = small; })); },
                 "gradPose holds 4");
  run([&](const Exec& e) { skin.backward(e, back); });                   // and the valid call runs
  EXPECT_THROW(Skinning(device(), backend(), m, 3, 0, 4), Error);        // more components than the model has
  EXPECT_THROW(Skinning(device(), backend(), m, 2, 0, 100'000), Error);  // more items than workgroups
  BodyModel many = randomBodyModel(20, 3, SKIN_MAX_COEFS + 8, 0, rng);
  if (backend() == Backend::Vulkan) {  // the Vulkan joint kernel holds at most SKIN_MAX_COEFS components
    EXPECT_THROW(Skinning(device(), backend(), many, SKIN_MAX_COEFS + 8, 0, 1), Error);
  }
}
