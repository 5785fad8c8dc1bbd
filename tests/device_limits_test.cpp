// Every op just past what the device can address: a view one step longer than maxStorageBufferRange (or a count
// past a per-call cap that keeps dispatches and 32-bit indices in range) is refused at the op's entry with a message
// naming the argument and the limit, before anything is recorded. On lavapipe the range is 128 MiB, so the buffers
// are real and cheap; every view below is a slice of one buffer just longer than the range.
#include <cstdio>
#include <functional>

#include "armature/ops/adam.h"
#include "armature/ops/axpy.h"
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
#include "armature/vk/context.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// The phrases of the limits an op may name when it refuses.
bool namesALimit(const std::string& message) {
  for (const char* phrase : {"maxStorageBufferRange", "per call", "2^"})
    if (message.find(phrase) != std::string::npos) return true;
  return false;
}

class DeviceLimits : public ::testing::Test {
 protected:
  static constexpr size_t kSpare = 1 << 16;  // floats past the range: room for shapes that round up to a row

  void SetUp() override {
    std::string why;
    m_device = testDevice(Backend::Vulkan, &why);
    if (!m_device && vulkanRequired()) FAIL() << "Vulkan required (ARMATURE_REQUIRE_VULKAN): " << why;
    if (!m_device) GTEST_SKIP() << "no Vulkan device: " << why;
    m_floats = m_device->vulkan()->info().maxStorageBufferRange / 4;
    m_big = m_device->allocate(ElementType::Float32, m_floats + kSpare);
  }
  // `n` elements of `type` from the big buffer (n ≤ floats() + kSpare).
  DeviceView part(size_t n, ElementType type = ElementType::Float32) const { return m_big.view().slice(0, n).as(type); }
  // Floats in the range: a view of floats() + 1 is just past it.
  size_t floats() const { return m_floats; }
  Device& device() { return *m_device; }
  // `call` must be refused with armature::Error naming one of `arguments` (empty: any) and a limit, before any
  // work. Which limit comes first depends on the device (a 4 GiB range reaches a per-call count cap first).
  void expectRefused(const std::vector<std::string>& arguments, const std::function<void(const Exec&)>& call) {
    try {
      m_device->run(Backend::Vulkan, call);
      ADD_FAILURE() << "no error; expected a refusal";
    } catch (const Error& e) {
      const std::string message = e.what();
      std::printf("refused: %s\n", message.c_str());
      EXPECT_TRUE(namesALimit(message)) << message;
      bool named = arguments.empty();
      for (const std::string& a : arguments) named |= message.find(a) != std::string::npos;
      EXPECT_TRUE(named) << message;
    }
  }

 private:
  Device* m_device = nullptr;
  size_t m_floats = 0;
  DeviceBuffer m_big;
};

TEST_F(DeviceLimits, Axpy) {
  const size_t n = floats() + 1;
  expectRefused({"x"}, [&](const Exec& exec) { axpy(exec, {.a = 1, .x = part(n), .y = part(n)}); });
}

TEST_F(DeviceLimits, Adam) {
  const size_t n = floats() + 1;
  expectRefused({"params"}, [&](const Exec& exec) {
    adamStep(exec, {.params = part(n), .grads = part(n), .m = part(n), .v = part(n)});
  });
}

TEST_F(DeviceLimits, LinearBlendSkinning) {
  const DeviceSkinWeights weights(device(), 1, 1, {0, 0, 0, 0}, {1, 1, 1, 1});
  const uint32_t batch = uint32_t(floats() / 12 + 1);
  expectRefused({"skinning"}, [&](const Exec& exec) {
    linearBlendSkinning(exec, {.weights = &weights,
                               .batch = batch,
                               .rest = part(12),
                               .skinning = part(size_t(batch) * 12),
                               .positions = part(size_t(batch) * 12)});
  });
}

TEST_F(DeviceLimits, JointPropagation) {
  const DeviceJointForest forest(device(), JointForest({-1}));
  const uint32_t batch = uint32_t(floats() / 12 + 1);
  ASSERT_LE(forest.scratchFloats(batch), floats() + kSpare);
  expectRefused({}, [&](const Exec& exec) {
    propagateJoints(exec, {.forest = &forest,
                           .batch = batch,
                           .rotations = part(size_t(batch) * 4),
                           .translations = part(size_t(batch) * 3),
                           .globals = part(size_t(batch) * 12),
                           .scratch = part(forest.scratchFloats(batch))});
  });
}

TEST_F(DeviceLimits, GaussianField) {
  const uint32_t channels = 8, points = uint32_t(floats() / channels + 1);
  const GaussianFieldInputs in{.shape = GaussianShape::Anisotropic,
                               .points = points,
                               .gaussians = 1,
                               .channels = channels,
                               .x = part(size_t(points) * 3),
                               .means = part(3),
                               .cholesky = part(6),
                               .weights = part(channels)};
  expectRefused({"field", "points"},
                [&](const Exec& exec) { gaussianField(exec, {.in = in, .field = part(size_t(points) * channels)}); });
  // The backward's point side: gradPoints of (B,3) past the range, or B past the per-call cap.
  const uint32_t many = uint32_t(floats() / 3 + 1);
  const GaussianFieldInputs wide{.shape = GaussianShape::Anisotropic,
                                 .points = many,
                                 .gaussians = 1,
                                 .channels = 1,
                                 .x = part(size_t(many) * 3),
                                 .means = part(3),
                                 .cholesky = part(6),
                                 .weights = part(1)};
  expectRefused({"points"}, [&](const Exec& exec) {
    gaussianFieldBackward(exec, {.in = wide, .gradField = part(many), .gradPoints = part(size_t(many) * 3)});
  });
}

TEST_F(DeviceLimits, PoseGaussians) {
  const uint32_t n = uint32_t(floats() / 6 + 1);
  expectRefused({}, [&](const Exec& exec) {
    poseGaussians(exec, {.gaussians = n,
                         .joints = 1,
                         .transforms = part(12),
                         .gaussianJoints = part(n, ElementType::Int32),
                         .means = part(size_t(n) * 3),
                         .cholesky = part(size_t(n) * 6),
                         .posedMeans = part(size_t(n) * 3),
                         .posedCholesky = part(size_t(n) * 6)});
  });
}

TEST_F(DeviceLimits, Project) {
  const ProjectDesc desc{.views = 1, .points = uint32_t(floats() / 4 + 1)};
  expectRefused({"clip"}, [&](const Exec& exec) {
    project(exec,
            {.desc = desc, .points = part(desc.pointFloats()), .matrices = part(16), .clip = part(desc.clipFloats())});
  });
  expectRefused({"gradClip"}, [&](const Exec& exec) {
    projectBackward(exec, {.desc = desc,
                           .gradClip = part(desc.clipFloats()),
                           .matrices = part(16),
                           .gradPoints = part(desc.pointFloats())});
  });
}

TEST_F(DeviceLimits, Interpolate) {
  const InterpolateDesc desc{.pixels = uint32_t(floats() / 4 + 1), .channels = 4, .vertexCount = 3, .faceCount = 1};
  const size_t pixels = desc.pixels;
  expectRefused({"out"}, [&](const Exec& exec) {
    interpolate(exec, {.desc = desc,
                       .attr = part(desc.attrFloats()),
                       .findices = part(pixels, ElementType::Int32),
                       .barycentrics = part(pixels * 3),
                       .faces = part(3, ElementType::Int32),
                       .out = part(pixels * 4)});
  });
}

TEST_F(DeviceLimits, WindingNumbers) {
  const DeviceTriangleMesh mesh(device(), {0, 0, 0, 1, 0, 0, 0, 1, 0}, {0, 1, 2});
  const uint32_t points = uint32_t(floats() / 3 + 1);
  expectRefused({}, [&](const Exec& exec) {
    windingNumbers(exec, {.mesh = &mesh, .points = points, .x = part(size_t(points) * 3), .windings = part(points)});
  });
}

TEST_F(DeviceLimits, Rasterize) {
  // Images of at most 8192² whose barycentrics (3 floats a pixel) are just past the range.
  RasterDesc desc;
  for (uint32_t images = 1; images <= 64 && !desc.width; ++images)
    for (uint32_t width = 8192; width >= 4096 && !desc.width; --width) {
      const size_t height = (floats() / 3 + 1 + size_t(width) * images - 1) / (size_t(width) * images);
      if (height <= 8192 && size_t(width) * height * images * 3 <= floats() + kSpare)
        desc = {.width = width, .height = uint32_t(height), .images = images};
    }
  ASSERT_GT(desc.width, 0u) << "no image size reaches just past the range";
  const size_t pixels = desc.pixels();
  try {
    checkRasterDesc(desc);
  } catch (const Error&) {  // the rasteriser's pixel cap (2^28) comes before a 4 GiB range: the call refuses it
    expectRefused({}, [&](const Exec& exec) { rasterize(exec, {.desc = desc}); });
    return;
  }
  const size_t scratch = rasterScratchBytes(desc);
  ASSERT_LE(scratch, (floats() + kSpare) * 4);
  expectRefused({}, [&](const Exec& exec) {
    rasterize(exec, {.desc = desc,
                     .vertexCount = 3,
                     .faceCount = 1,
                     .positions = part(12),
                     .faces = part(3, ElementType::Int32),
                     .scratch = part(scratch / 4 + 1).as(ElementType::Byte).slice(0, scratch),
                     .findices = part(pixels, ElementType::Int32),
                     .barycentrics = part(pixels * 3)});
  });
}

TEST_F(DeviceLimits, DeformableAggregation) {
  const DeviceFeatureMaps maps(device(), {.cameras = 1, .levels = 1, .spatialShape = {1, 1}, .scaleStartIndex = {0}},
                               1);
  const DeformableAggregationSizes sizes{
      .batch = 1, .features = 1, .channels = 4, .anchors = uint32_t(floats() / 4 + 1), .points = 1, .groups = 1};
  const DeformableAggregationInputs in{.maps = &maps,
                                       .sizes = sizes,
                                       .features = part(4),
                                       .locations = part(size_t(sizes.anchors) * 2),
                                       .weights = part(sizes.anchors)};
  expectRefused({"out", "anchors"}, [&](const Exec& exec) {
    deformableAggregation(exec, {.in = in, .out = part(size_t(sizes.anchors) * 4)});
  });
}

TEST_F(DeviceLimits, BakeSamples) {
  const BakeDesc desc{
      .texels = uint32_t(floats() / 3 + 1), .views = 1, .width = 1, .height = 1, .vertexCount = 3, .faceCount = 1};
  const size_t T = desc.texels;
  expectRefused({"texelBary"}, [&](const Exec& exec) {
    bakeSamples(exec, {.desc = desc,
                       .positions = part(9),
                       .faces = part(3, ElementType::Int32),
                       .texelFaces = part(T, ElementType::Int32),
                       .texelBary = part(T * 3),
                       .viewFaces = part(1, ElementType::Int32),
                       .viewBary = part(3),
                       .matrices = part(16),
                       .locations = part(T * 2),
                       .weights = part(T)});
  });
}

}  // namespace
