// The viewer's headless path on whatever Vulkan device the tests use (lavapipe in CI): the rendered avatar covers
// the same pixels as a CPU rasterisation of the reference mesh, pose changes move the right vertices, and the
// profile export is valid JSON with every stage.
#include <unistd.h>
#include <volk.h>  // the library's own Vulkan function table

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/avatar_scene.h"
#include "app/character_scene.h"
#include "app/composite_scene.h"
#include "app/keyframes.h"
#include "app/pose_drag.h"
#include "app/recorder.h"
#include "app/poses.h"
#include "app/renderer.h"
#include "app/viewer.h"
#include "armature/body/gltf_character.h"
#include "armature/body/gltf_export.h"
#include "armature/body/motion.h"
#include "armature/body/synth.h"
#include "armature/device.h"
#include "armature/body/npz.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/gaussian_pose.h"
#include "armature/ops/joint_propagation.h"
#include "armature/ops/texture_bake.h"
#include "support/compare.h"
#include "support/temp_path.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::app;
using namespace armature::test;

namespace {

const BodyModel& avatar() {
  static BodyModel m = [] {
    std::string p = defaultModelPath();
    return p.empty() ? synthesizeBodyModel({0}) : loadBodyModel(p);
  }();
  return m;
}

// Pixel-centre coverage of the projected triangles (the rasteriser's own rule, up to ties on edges).
std::vector<uint8_t> cpuCoverage(const std::vector<double>& verts, const std::vector<int32_t>& faces,
                                 const std::array<float, 16>& m, uint32_t W, uint32_t H) {
  size_t V = verts.size() / 3;
  std::vector<double> sx(V), sy(V);
  for (size_t v = 0; v < V; ++v) {
    double x = verts[v * 3], y = verts[v * 3 + 1], z = verts[v * 3 + 2];
    double cx = m[0] * x + m[4] * y + m[8] * z + m[12], cy = m[1] * x + m[5] * y + m[9] * z + m[13];
    double cw = m[3] * x + m[7] * y + m[11] * z + m[15];
    sx[v] = (cx / cw * 0.5 + 0.5) * W;
    sy[v] = (cy / cw * 0.5 + 0.5) * H;
  }
  std::vector<uint8_t> mask(size_t(W) * H, 0);
  for (size_t f = 0; f < faces.size(); f += 3) {
    size_t a = size_t(faces[f]), b = size_t(faces[f + 1]), c = size_t(faces[f + 2]);
    double area = (sx[b] - sx[a]) * (sy[c] - sy[a]) - (sx[c] - sx[a]) * (sy[b] - sy[a]);
    if (area == 0) continue;
    int x0 = std::max(0, int(std::floor(std::min({sx[a], sx[b], sx[c]})))),
        x1 = std::min(int(W) - 1, int(std::ceil(std::max({sx[a], sx[b], sx[c]}))));
    int y0 = std::max(0, int(std::floor(std::min({sy[a], sy[b], sy[c]})))),
        y1 = std::min(int(H) - 1, int(std::ceil(std::max({sy[a], sy[b], sy[c]}))));
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) {
        double px = x + 0.5, py = y + 0.5;
        double w0 = ((sx[b] - px) * (sy[c] - py) - (sx[c] - px) * (sy[b] - py)) / area;
        double w1 = ((sx[c] - px) * (sy[a] - py) - (sx[a] - px) * (sy[c] - py)) / area;
        if (w0 >= 0 && w1 >= 0 && w0 + w1 <= 1) mask[size_t(y) * W + size_t(x)] = 1;
      }
  }
  return mask;
}

// Resident memory of this process in bytes (/proc/self/statm).
size_t residentBytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * size_t(::sysconf(_SC_PAGESIZE));
}

std::filesystem::path scratchDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("armature_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Headless options for the profile tests: `frames` animated frames of the default avatar at W × H, the profile
// written to `profile`.
ViewerOptions profiledRun(const char* backend, int frames, uint32_t W, uint32_t H,
                          const std::filesystem::path& profile) {
  ViewerOptions o;
  o.headless = true;
  o.frames = frames;
  o.width = W, o.height = H;
  o.backend = backend;
  o.animate = true;
  o.model = defaultModelPath();
  o.profile = profile.string();
  return o;
}

// Checks a headless run's Chrome trace: every frame's spans are placed at device times that lie inside the
// frame (headless mode waits for each frame's GPU work before the next starts), frames follow each other, and
// spans on one track do not overlap. Returns the names of the spans seen on each track.
std::map<int, std::set<std::string>> checkTrace(const std::string& path, int frames) {
  nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));  // throws on invalid JSON
  constexpr double kToleranceUs = 100;  // calibration error: calibrated timestamps and CUDA anchors, a few µs
  std::map<int, std::set<std::string>> tracks;
  std::map<int, double> trackEnd;  // end of the last span per track
  double frameStart = -1, frameEnd = -1;
  int frameCount = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const double ts = e.at("ts"), end = ts + double(e.at("dur"));
    const int tid = e.at("tid");
    const std::string name = e.at("name");
    if (name == "frame") {
      EXPECT_EQ(int(e.at("args").at("frame")), frameCount);
      EXPECT_GE(ts, frameEnd) << "frame " << frameCount << " starts before the previous one ended";
      frameStart = ts, frameEnd = end, ++frameCount;
      continue;
    }
    EXPECT_FALSE(e.contains("args") && e["args"].contains("placement")) << name << " has no device time";
    EXPECT_GE(ts, frameStart - kToleranceUs) << name << " starts before its frame " << frameCount - 1;
    EXPECT_LE(end, frameEnd + kToleranceUs) << name << " ends after its frame " << frameCount - 1;
    if (tid != 1) {  // device tracks: in execution order, no overlap
      if (trackEnd.count(tid)) {
        EXPECT_GE(ts, trackEnd[tid] - kToleranceUs) << name << " overlaps the span before it";
      }
      trackEnd[tid] = end;
    }
    tracks[tid].insert(name);
  }
  EXPECT_EQ(frameCount, frames);
  return tracks;
}

// One posed avatar (Vulkan skinning), a renderer, an offscreen target of W × H and a camera framing the avatar.
struct Rig {
  AvatarScene scene;
  Renderer renderer;
  OffscreenTarget target;
  Camera camera;
  DrawSettings draw;
  Rig(vk::Context& ctx, const char* pose, uint32_t W, uint32_t H, uint32_t avatars = 1)
      : scene(ctx, avatar(), avatars),
        renderer(ctx, OffscreenTarget::kColorFormat, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, avatar().faces,
                 avatar().parents),
        target(ctx, renderer, {W, H}) {
    scene.applyPose(posePreset(scene.model(), pose));
    scene.setBackend(Backend::Vulkan);
    scene.setAvatars(avatars);
    scene.update(0);
    float lo[3], hi[3];
    scene.bounds(lo, hi);
    // A crowd stands on a grid 1.1 m apart (AvatarScene::update): frame all of it.
    const uint32_t columns = uint32_t(std::ceil(std::sqrt(double(avatars)))), rows = (avatars + columns - 1) / columns;
    lo[0] -= 0.55f * float(columns - 1), hi[0] += 0.55f * float(columns - 1), lo[2] -= 1.1f * float(rows - 1);
    camera.frame(lo, hi);
    draw.vertexCount = scene.model().vertexCount;
    draw.avatars = avatars;
    draw.floorY = scene.floorY();
  }
};

}  // namespace

TEST(Viewer, HeadlessCoverageMatchesCpuRasterization) {
  ARM_REQUIRE_VULKAN(ctx);
  const uint32_t W = 240, H = 180;
  Rig rig(ctx, "walk", W, H);
  auto& [scene, renderer, target, camera, draw] = rig;
  camera.yaw = 0.6f;
  draw.ground = false;  // background = the clear colour, so coverage is exact
  draw.clear[0] = draw.clear[1] = draw.clear[2] = 0;
  auto ref = bodyForwardRef(scene.model(), scene.params());
  auto cpu = cpuCoverage(ref.vertices, scene.model().faces, camera.viewProj(float(W) / H), W, H);
  // Every render path: the hardware rasteriser; the project's compute rasteriser's visibility buffer shaded by
  // the compute frame pass; and the same buffer shaded by the graphics pass (used when the target image cannot be
  // copied into, or with the wireframe).
  std::vector<uint8_t> images[3];
  for (int mode : {0, 1, 2}) {
    SCOPED_TRACE(mode == 0   ? "hardware raster"
                 : mode == 1 ? "compute raster, compute-shaded"
                             : "compute raster, graphics-shaded");
    FrameTarget frame = target.frameTarget();
    if (mode == 2) frame.image = VK_NULL_HANDLE;
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      scene.skin(cmd, nullptr);
      draw.visibility =
          mode ? scene.rasterize(cmd, nullptr, camera.viewProj(float(W) / H), target.extent()) : VisibilityBuffers{};
      renderer.record(cmd, frame, camera, scene.positions(), draw);
      target.recordReadback(cmd);
    });
    auto px = target.pixels();
    size_t inter = 0, uni = 0, gpuCount = 0;
    for (size_t i = 0; i < size_t(W) * H; ++i) {
      bool g = px[i * 4] | px[i * 4 + 1] | px[i * 4 + 2];
      gpuCount += g;
      inter += g && cpu[i];
      uni += g || cpu[i];
    }
    ASSERT_GT(gpuCount, size_t(W) * H / 50) << "the avatar is missing from the image";
    double iou = double(inter) / double(uni);
    EXPECT_GE(iou, 0.99) << "GPU " << gpuCount << " px, union " << uni << ", intersection " << inter;
    images[mode] = std::move(px);
  }
  // The paths shade the same surface points: colours agree except at a few silhouette and tie pixels.
  for (int mode : {1, 2}) {
    size_t differ = 0;
    for (size_t i = 0; i < images[0].size(); i += 4)
      differ += std::abs(int(images[0][i]) - int(images[mode][i])) +
                    std::abs(int(images[0][i + 1]) - int(images[mode][i + 1])) >
                24;
    EXPECT_LT(differ, size_t(W) * H / 200)
        << "path " << mode << " differs from the hardware rasteriser at " << differ << " pixels";
  }
}

// A crowd through the compute rasteriser: its face indices (each avatar's offset to its own vertices) are written
// on the GPU, so a wrong copy or offset would draw one avatar's faces over another's vertices; the hardware path
// draws each avatar as its own instance. On the CUDA backend the rasteriser reads the indices through interop.
namespace {
// Which pixels a scene covers drawn through the hardware rasteriser (a black frame without the ground), and how many
// it and the compute rasteriser both or either cover.
struct Coverage {
  std::vector<bool> hardware;
  size_t both = 0, either = 0, hardwareCount = 0;
};
Coverage coverageBothWays(vk::Context& ctx, Scene& scene, Renderer& renderer, OffscreenTarget& target,
                          const Camera& camera, DrawSettings draw) {
  draw.ground = false;
  draw.clear[0] = draw.clear[1] = draw.clear[2] = 0;
  const VkExtent2D extent = target.extent();
  std::vector<uint8_t> images[2];
  for (int mode : {0, 1}) {
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      scene.skin(cmd, nullptr);
      draw.visibility =
          mode ? scene.rasterize(cmd, nullptr, camera.viewProj(float(extent.width) / extent.height), extent)
               : VisibilityBuffers{};
      renderer.record(cmd, target.frameTarget(), camera, scene.positions(), draw);
      target.recordReadback(cmd);
    });
    images[mode] = target.pixels();
  }
  Coverage c;
  for (size_t i = 0; i < size_t(extent.width) * extent.height; ++i) {
    const bool h = images[0][i * 4] | images[0][i * 4 + 1] | images[0][i * 4 + 2];
    const bool k = images[1][i * 4] | images[1][i * 4 + 1] | images[1][i * 4 + 2];
    c.hardware.push_back(h);
    c.hardwareCount += h, c.both += h && k, c.either += h || k;
  }
  return c;
}

void expectCrowdMatchesTheHardwareRaster(vk::Context& ctx, Backend backend) {
  const uint32_t W = 320, H = 240;
  Rig rig(ctx, "walk", W, H, 3);
  rig.scene.setBackend(backend);
  const Coverage c = coverageBothWays(ctx, rig.scene, rig.renderer, rig.target, rig.camera, rig.draw);
  ASSERT_GT(c.hardwareCount, size_t(W) * H / 50) << "the crowd is missing from the image";
  EXPECT_GE(double(c.both) / double(c.either), 0.99)
      << "hardware " << c.hardwareCount << " px, union " << c.either << ", intersection " << c.both;
}
}  // namespace

TEST(Viewer, ComputeRasterDrawsEveryAvatarOfACrowd) {
  ARM_REQUIRE_VULKAN(ctx);
  expectCrowdMatchesTheHardwareRaster(ctx, Backend::Vulkan);
}

TEST(ViewerCuda, ComputeRasterDrawsEveryAvatarOfACrowd) {
  ARM_REQUIRE_VULKAN(ctx);
  if (auto why = cudaUnavailable()) GTEST_SKIP() << "no CUDA device: " << *why;
  expectCrowdMatchesTheHardwareRaster(ctx, Backend::Cuda);
}

// With the ground grid, the compute-shaded frame (ground found by intersecting each pixel's eye ray with the floor)
// matches the graphics pipeline's ground quad, apart from grid-line antialiasing and the horizon.
TEST(Viewer, ComputeShadedFrameMatchesTheGraphicsPipeline) {
  ARM_REQUIRE_VULKAN(ctx);
  const uint32_t W = 211, H = 163;
  Rig rig(ctx, "a-pose", W, H);
  auto& [scene, renderer, target, camera, draw] = rig;
  // A first raster at another size: the frames below then run after a resize (new image-sized buffers, the same
  // face indices).
  ctx.submitAndWait([&](VkCommandBuffer cmd) {
    scene.skin(cmd, nullptr);
    scene.rasterize(cmd, nullptr, camera.viewProj(float(W) / H), {W / 2, H / 3});
  });
  std::vector<uint8_t> images[2];
  for (int mode : {0, 1}) {
    FrameTarget frame = target.frameTarget();
    if (mode == 0) frame.image = VK_NULL_HANDLE;  // the graphics pipeline's ground and visibility pass
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      scene.skin(cmd, nullptr);
      draw.visibility = scene.rasterize(cmd, nullptr, camera.viewProj(float(W) / H), target.extent());
      renderer.record(cmd, frame, camera, scene.positions(), draw);
      target.recordReadback(cmd);
    });
    images[mode] = target.pixels();
  }
  size_t differ = 0, ground = 0;
  for (size_t i = 0; i < images[0].size(); i += 4) {
    int d = 0;
    for (int c = 0; c < 3; ++c) d = std::max(d, std::abs(int(images[0][i + c]) - int(images[1][i + c])));
    differ += d > 24;
    ground += images[0][i] != 28;  // not the clear colour (0.11 * 255)
  }
  EXPECT_GT(ground, size_t(W) * H / 3) << "the ground is missing";
  EXPECT_LT(differ, size_t(W) * H / 100) << "the compute-shaded frame differs at " << differ << " pixels";
}

// The hardware rasteriser's frame over the compute background (the colour shaded in compute, the depth drawn over
// the avatars' pixel bounds only) matches the one over background.frag's full-screen background, with the floor
// raised through the legs so that its depth must hide them. A first frame looking down at the floor from its near
// plane leaves a near depth in every pixel: where the bounds missed the avatar, that depth would hide it.
TEST(Viewer, ComputeBackgroundMatchesTheDrawnBackground) {
  ARM_REQUIRE_VULKAN(ctx);
  const uint32_t W = 200, H = 150;
  Rig rig(ctx, "walk", W, H);
  auto& [scene, renderer, target, camera, draw] = rig;
  draw.floorY = scene.floorY() + 0.8f;
  auto skinPixels = [](const std::vector<uint8_t>& px) {
    size_t n = 0;
    for (size_t i = 0; i < px.size(); i += 4) n += px[i] > 120 && px[i] > px[i + 2] + 40;
    return n;
  };
  Camera down = camera;
  down.target[1] = draw.floorY, down.pitch = 1.5f, down.distance = 0.06f;
  std::vector<uint8_t> images[2];
  for (int mode : {0, 1}) {
    SCOPED_TRACE(mode == 0 ? "compute background" : "full-screen background");
    FrameTarget frame = target.frameTarget();
    if (mode == 1) frame.image = VK_NULL_HANDLE;
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      scene.skin(cmd, nullptr);
      renderer.record(cmd, target.frameTarget(), down, scene.positions(), draw);
    });
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      renderer.record(cmd, frame, camera, scene.positions(), draw);
      target.recordReadback(cmd);
    });
    images[mode] = target.pixels();
  }
  const size_t raisedSkin = skinPixels(images[0]);
  draw.ground = false;
  ctx.submitAndWait([&](VkCommandBuffer cmd) {
    renderer.record(cmd, target.frameTarget(), camera, scene.positions(), draw);
    target.recordReadback(cmd);
  });
  const size_t wholeSkin = skinPixels(target.pixels());
  ASSERT_GT(raisedSkin, size_t(W) * H / 100) << "the avatar is missing";
  EXPECT_LT(double(raisedSkin), 0.8 * double(wholeSkin)) << "the raised floor hides none of the legs";
  size_t differ = 0;
  for (size_t i = 0; i < images[0].size(); i += 4) {
    int d = 0;
    for (int c = 0; c < 3; ++c) d = std::max(d, std::abs(int(images[0][i + c]) - int(images[1][i + c])));
    differ += d > 24;
  }
  // Both shade the floor per pixel from its eye ray; grid lines' antialiasing may differ at a few pixels.
  EXPECT_LT(differ, size_t(W) * H / 200) << "the backgrounds' frames differ at " << differ << " pixels";
}

TEST(Viewer, PoseChangesMoveTheRightVertices) {
  ARM_REQUIRE_VULKAN(ctx);
  const BodyModel& m = avatar();
  AvatarScene scene(ctx, m, 1);
  scene.applyPose(posePreset(m, "a-pose"));
  scene.update(0);
  auto skinNow = [&] {
    ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
    return scene.readPositions();
  };
  auto before = skinNow();
  EXPECT_TRUE(allClose(before, bodyForwardRef(m, scene.params()).vertices, {5e-5, 0}));
  // Bend the left elbow: only vertices skinned to the left forearm, hand and fingers may move.
  uint32_t elbow = 18;
  ASSERT_EQ(m.jointNames[elbow], "left_elbow");
  scene.base().pose[elbow * 3 + 1] -= 1.2;
  scene.update(0);
  auto after = skinNow();
  std::vector<bool> moving(m.jointCount, false);
  for (uint32_t j = 0; j < m.jointCount; ++j)
    for (int32_t a = int32_t(j); a >= 0; a = m.parents[size_t(a)]) moving[j] = moving[j] || a == int32_t(elbow);
  double maxMoved = 0;
  for (uint32_t v = 0; v < m.vertexCount; ++v) {
    double influence = 0;
    for (uint32_t j = 0; j < m.jointCount; ++j)
      if (moving[j]) influence += m.weights[v * m.jointCount + j];
    double d = std::hypot(after[v * 3] - before[v * 3], after[v * 3 + 1] - before[v * 3 + 1],
                          after[v * 3 + 2] - before[v * 3 + 2]);
    // Pose correctives let a vertex with no weight on the arm move by the elbow's corrective only: the synthetic
    // avatar's correctives live where the elbow's weight blends, so the rest stays put.
    if (influence == 0) {
      ASSERT_LT(d, 1e-5) << "vertex " << v << " has no weight below the elbow but moved " << d;
    }
    maxMoved = std::max(maxMoved, d);
  }
  EXPECT_GT(maxMoved, 0.1);  // the hand swings by tens of centimetres
}

TEST(Viewer, ProfileAndScreenshotAreWritten) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  auto dir = std::filesystem::temp_directory_path() / ("armature_viewer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ViewerOptions o;
  o.headless = true;
  o.frames = 3;
  o.width = 96, o.height = 64;
  o.backend = "vulkan";
  o.animate = true;
  o.skeleton = true;  // bones and joint markers drawn from the joint buffer, under the validation layer
  o.screenshot = (dir / "shot.png").string();
  o.profile = (dir / "profile.json").string();
  o.model = defaultModelPath();
  ASSERT_EQ(runHeadless(o), 0);
  auto tracks = checkTrace(o.profile, o.frames);
  EXPECT_EQ(tracks[1], std::set<std::string>{});                      // no host stage without the overlay
  EXPECT_EQ(tracks[2], (std::set<std::string>{"skinning", "draw"}));  // the Vulkan queue
  EXPECT_TRUE(std::filesystem::file_size(o.screenshot) > 100);
  EXPECT_TRUE(std::filesystem::exists(dir / "profile.csv"));
  std::filesystem::remove_all(dir);
  o.pose = "no-such-pose";
  EXPECT_THROW(runHeadless(o), Error);
}

// --drag: the scripted drag of headless mode (the drag tests below check the pose it reaches) puts the solve's GPU
// time in the profile as the "ik" stage of the Vulkan queue.
TEST(Viewer, HeadlessDragProfilesTheIkStage) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  auto dir = std::filesystem::temp_directory_path() / ("armature_drag_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ViewerOptions o = profiledRun("vulkan", 2, 96, 64, dir / "profile.json");
  o.animate = false;  // a drag poses the base pose
  o.drag = "right_wrist";
  o.ikIterations = 1;
  ASSERT_EQ(runHeadless(o), 0);
  auto tracks = checkTrace(o.profile, o.frames);
  EXPECT_EQ(tracks[2], (std::set<std::string>{"ik", "skinning", "draw"}));
  std::filesystem::remove_all(dir);
  o.drag = "no_such_joint";
  EXPECT_THROW(runHeadless(o), Error);
  o.drag = "right_wrist", o.animate = true;
  EXPECT_THROW(runHeadless(o), Error);
}

// A rigged glTF the suite writes itself: the default avatar with 8 influences and a 12-frame clip of swinging joints.
const std::string& characterGlb() {
  static const std::string path = [] {
    const BodyModel& m = avatar();
    Motion motion;
    motion.frames = 12, motion.jointCount = m.jointCount;
    motion.pose.resize(size_t(motion.frames) * m.jointCount * 3);
    for (size_t i = 0; i < motion.pose.size(); ++i)
      motion.pose[i] = 0.25 * std::sin(0.9 * double(i % 165) + 0.1 * double(i / 165));
    motion.transl.assign(size_t(motion.frames) * 3, 0.0);
    const GltfRig rig = gltfRig(m, std::vector<double>(10, 0.0), {}, 8);
    const std::string file =
        (std::filesystem::temp_directory_path() / ("armature_character_" + std::to_string(::getpid()) + ".glb"))
            .string();
    writeGlb(file, m, rig, gltfAnimation(m, rig, motion, 0, motion.frames));
    return file;
  }();
  return path;
}

// Fills a buffer's first `floats` floats with NaN (not the whole buffer: a Device allocation's guard band follows,
// docs/testing.md), visible to the compute work and host reads that follow.
void poisonBuffer(vk::Context& ctx, VkBuffer buffer, size_t floats) {
  ctx.submitAndWait([&](VkCommandBuffer cmd) {
    vkCmdFillBuffer(cmd, buffer, 0, floats * 4, nanBits());
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                         0, nullptr);
  });
}

// The first `floats` floats of any buffer the scenes draw from (device-local, or a CUDA part's interop buffer).
std::vector<float> downloadFloats(vk::Context& ctx, VkBuffer buffer, size_t floats) {
  vk::Buffer readback(ctx, floats * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, vk::MemoryKind::HostVisible);
  ctx.submitAndWait([&](VkCommandBuffer cmd) {
    VkBufferCopy region{0, 0, floats * 4};
    vkCmdCopyBuffer(cmd, buffer, readback.handle(), 1, &region);
  });
  return readback.download<float>(floats);
}

// A glTF crowd's skinned positions against the double reference of the scene's locals: all finite, within 1e-5 of
// the largest coordinate (as `armature gltf` allows: float transforms composed over the skeleton's 11 levels), and
// the members differ (each plays from its own phase, at its own place).
void expectCrowdMatchesReference(const std::vector<float>& got, const CharacterScene& scene) {
  const GltfCharacter& c = scene.character();
  const std::vector<double> want =
      poseGltfCharacterRef(c, JointForest(c.parents), scene.locals(), scene.avatars()).vertices;
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << "coordinate " << i;
    worst = std::max(worst, std::abs(double(got[i]) - want[i])), scale = std::max(scale, std::abs(want[i]));
  }
  EXPECT_LT(worst, 1e-5 * scale);
  const size_t V3 = size_t(c.vertexCount()) * 3;
  for (uint32_t i = 1; i < scene.avatars(); ++i)
    EXPECT_GT(std::abs(want[i * V3 + 1] - want[1]), 1e-4) << "member " << i;
}

// A glTF crowd in the viewer's scene, 5 members at two times, posed by the Vulkan backend (joint propagation and
// linear blend skinning) and by the CPU backend, each against the double reference; outputs NaN-poisoned first.
TEST(Viewer, GltfCrowdPosesAsTheDoubleReference) {
  ARM_REQUIRE_VULKAN(ctx);
  const GltfCharacter c = loadGltfCharacter(characterGlb());
  for (Backend backend : {Backend::Vulkan, Backend::Cpu}) {
    SCOPED_TRACE(backendName(backend));
    CharacterScene scene(ctx, c, 8);
    scene.animate = true;
    scene.setBackend(backend);
    scene.setAvatars(5);
    for (double seconds : {0.13, 0.29}) {
      SCOPED_TRACE(seconds);
      scene.update(seconds);
      poisonBuffer(ctx, scene.positions(), size_t(scene.avatars()) * scene.vertexCount() * 3);
      ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
      expectCrowdMatchesReference(scene.readPositions(), scene);
    }
  }
}

// The same on CUDA, read back through the buffer the renderer draws from (shared with Vulkan through interop), with
// the two stages timed on the CUDA stream.
TEST(ViewerCuda, GltfCrowdPosesAsTheDoubleReference) {
  ARM_REQUIRE_VULKAN(ctx);
  ARM_REQUIRE_CUDA();
  const GltfCharacter c = loadGltfCharacter(characterGlb());
  CharacterScene scene(ctx, c, 8);
  scene.animate = true;
  scene.setBackend(Backend::Cuda);
  scene.setAvatars(5);
  scene.update(0.29);
  poisonBuffer(ctx, scene.positions(), size_t(scene.avatars()) * scene.vertexCount() * 3);
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  std::set<std::string> stages;
  for (const Span& span : scene.ownTimes()) stages.insert(span.name);
  EXPECT_EQ(stages, (std::set<std::string>{"gltf joints (cuda)", "gltf skinning (cuda)"}));
  expectCrowdMatchesReference(downloadFloats(ctx, scene.positions(), size_t(5) * c.vertexCount() * 3), scene);
}

// SMPL-X avatars with a glTF crowd beside them, as one scene: the topology is the parts' one after another, the
// glTF crowd stands to the right, the gathered buffers (NaN-poisoned first) hold every part's member i in member i's
// slice bit for bit, the stages keep their parts' names, and the crowd renders the same through the hardware and
// the compute rasteriser, both parts showing.
void expectCompositeGathersItsParts(vk::Context& ctx, Backend backend, const std::set<std::string>& ownStages) {
  std::vector<std::unique_ptr<Scene>> parts;
  parts.push_back(std::make_unique<AvatarScene>(ctx, avatar(), 4));
  parts.push_back(std::make_unique<CharacterScene>(ctx, loadGltfCharacter(characterGlb()), 4));
  CompositeScene scene(ctx, std::move(parts));
  const Scene &body = scene.part(0), &character = scene.part(1);
  EXPECT_EQ(findScene<CharacterScene>(&scene), &character);
  scene.animate = true;
  scene.setBackend(backend);
  const uint32_t B = 3;
  scene.setAvatars(B);
  scene.update(0.21);
  const uint32_t V = scene.vertexCount(), J = scene.jointCount(), V0 = body.vertexCount(), J0 = body.jointCount();
  ASSERT_EQ(V, V0 + character.vertexCount());
  ASSERT_EQ(J, J0 + character.jointCount());
  ASSERT_EQ(scene.faces().size(), body.faces().size() + character.faces().size());
  for (size_t k = 0; k < character.faces().size(); ++k)
    ASSERT_EQ(scene.faces()[body.faces().size() + k], character.faces()[k] + int32_t(V0)) << "face index " << k;
  for (uint32_t j = 0; j < character.jointCount(); ++j)
    ASSERT_EQ(scene.parents()[J0 + j], character.parents()[j] < 0 ? -1 : character.parents()[j] + int32_t(J0));
  float bodyLo[3], bodyHi[3], charLo[3], charHi[3];
  body.crowdBounds(bodyLo, bodyHi);
  character.crowdBounds(charLo, charHi);
  EXPECT_GT(charLo[0], bodyHi[0]) << "the glTF crowd stands right of the avatars";

  poisonBuffer(ctx, scene.positions(), size_t(scene.avatars()) * scene.vertexCount() * 3);
  poisonBuffer(ctx, scene.joints(), size_t(scene.avatars()) * scene.jointCount() * 3);
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  std::set<std::string> stages;
  for (const Span& span : scene.ownTimes()) stages.insert(span.name);
  EXPECT_EQ(stages, ownStages);
  const std::vector<float> positions = scene.readPositions(), joints = downloadFloats(ctx, scene.joints(), B * J * 3);
  uint32_t vertexStart = 0, jointStart = 0;
  for (const Scene* part : {&body, &character}) {
    const uint32_t Vp = part->vertexCount(), Jp = part->jointCount();
    const std::vector<float> partPositions = downloadFloats(ctx, part->positions(), B * Vp * 3),
                             partJoints = downloadFloats(ctx, part->joints(), B * Jp * 3);
    for (uint32_t i = 0; i < B; ++i) {
      SCOPED_TRACE("member " + std::to_string(i) + ", part at vertex " + std::to_string(vertexStart));
      const auto got = positions.begin() + long(i * V + vertexStart) * 3;
      ASSERT_TRUE(std::equal(got, got + Vp * 3, partPositions.begin() + long(i * Vp) * 3));
      ASSERT_TRUE(std::isfinite(got[0]));
      const auto gotJoints = joints.begin() + long(i * J + jointStart) * 3;
      ASSERT_TRUE(std::equal(gotJoints, gotJoints + Jp * 3, partJoints.begin() + long(i * Jp) * 3));
    }
    vertexStart += Vp, jointStart += Jp;
  }

  const uint32_t W = 480, H = 240;  // edge pixels, where the two rasterisers may differ, a small part
  Renderer renderer(ctx, OffscreenTarget::kColorFormat, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, scene.faces(),
                    scene.parents());
  OffscreenTarget target(ctx, renderer, {W, H});
  Camera camera;
  frameAvatars(camera, scene, CameraView::Front);
  DrawSettings draw;
  draw.vertexCount = V, draw.avatars = B, draw.floorY = scene.floorY();
  const Coverage c = coverageBothWays(ctx, scene, renderer, target, camera, draw);
  size_t left = 0, right = 0;
  for (size_t i = 0; i < c.hardware.size(); ++i) (i % W < W / 2 ? left : right) += c.hardware[i];
  EXPECT_GT(left, size_t(W) * H / 100) << "the avatars are missing";
  EXPECT_GT(right, size_t(W) * H / 100) << "the glTF crowd is missing";
  EXPECT_GE(double(c.both) / double(std::max<size_t>(c.either, 1)), 0.99)
      << "union " << c.either << ", intersection " << c.both;
}

TEST(Viewer, GltfCrowdBesideAvatarsIsGatheredIntoOneScene) {
  ARM_REQUIRE_VULKAN(ctx);
  expectCompositeGathersItsParts(ctx, Backend::Vulkan, {});
  expectCompositeGathersItsParts(ctx, Backend::Cpu, {"skinning (cpu)", "gltf joints + skinning (cpu)"});
}

TEST(ViewerCuda, GltfCrowdBesideAvatarsIsGatheredIntoOneScene) {
  ARM_REQUIRE_VULKAN(ctx);
  ARM_REQUIRE_CUDA();
  expectCompositeGathersItsParts(ctx, Backend::Cuda, {"skinning (cuda)", "gltf joints (cuda)", "gltf skinning (cuda)"});
}

// Headless, the same side by side: every part's stages and the gather in the profile, the compute rasteriser's
// stage too when it draws, and the options go to the parts that take them (a motion with no body model is refused).
TEST(Viewer, GltfCrowdBesideAvatarsRendersWithEveryStage) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  auto dir = scratchDir("beside");
  ViewerOptions o = profiledRun("vulkan", 3, 96, 64, dir / "profile.json");
  o.beside = {characterGlb()};
  o.avatars = 2;
  o.skeleton = true;
  o.screenshot = (dir / "beside.png").string();
  ASSERT_EQ(runHeadless(o), 0);
  EXPECT_EQ(checkTrace(o.profile, o.frames)[2],
            (std::set<std::string>{"skinning", "gltf joints", "gltf skinning", "gather", "draw"}));
  EXPECT_GT(std::filesystem::file_size(o.screenshot), 100u);
  o.raster = "compute";
  ASSERT_EQ(runHeadless(o), 0);
  EXPECT_EQ(checkTrace(o.profile, o.frames)[2],
            (std::set<std::string>{"skinning", "gltf joints", "gltf skinning", "gather", "raster", "draw"}));
  ViewerOptions noBody = o;
  noBody.model = characterGlb();
  noBody.motion = characterGlb();
  EXPECT_THROW(runHeadless(noBody), Error);
  std::filesystem::remove_all(dir);
}

// The viewer plays a glTF crowd headless: joint propagation and skinning are their own stages in the profile, the
// frame shows the crowd, a motion file is refused (the character plays its own clips), and so is a clip past the
// file's.
TEST(Viewer, GltfCrowdRendersWithItsOwnStages) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  auto dir = scratchDir("gltf_crowd");
  ViewerOptions o = profiledRun("vulkan", 4, 96, 64, dir / "profile.json");
  o.model = characterGlb();
  o.avatars = 6;
  o.skeleton = true;
  o.screenshot = (dir / "crowd.png").string();
  ASSERT_EQ(runHeadless(o), 0);
  auto tracks = checkTrace(o.profile, o.frames);
  EXPECT_EQ(tracks[2], (std::set<std::string>{"gltf joints", "gltf skinning", "draw"}));
  EXPECT_GT(std::filesystem::file_size(o.screenshot), 100u);
  ViewerOptions withMotion = o;
  withMotion.motion = o.model;
  EXPECT_THROW(runHeadless(withMotion), Error);
  ViewerOptions badClip = o;
  badClip.clip = 1;
  EXPECT_THROW(runHeadless(badClip), Error);
  std::filesystem::remove_all(dir);
}

// The baked-texture mode: each frame bakes avatar 0 of a crowd, and the texture the renderer reads (NaN-poisoned
// before the second frame) holds the same bits as the texture baker run on its own over that avatar's skinned
// positions, with the same atlas, colours and cameras: the scene adds nothing of its own but the wiring. Most of
// the atlas's texels are seen. On CUDA the texture reaches Vulkan through interop.
namespace {
void expectSceneBakesAvatarZero(vk::Context& ctx, Backend backend) {
  const AvatarScene::BakeSettings settings{600, 4, 160};
  AvatarScene scene(ctx, avatar(), 3);
  scene.applyPose(posePreset(scene.model(), "walk"));
  scene.setBackend(backend);
  scene.setAvatars(3);
  scene.setBake(settings);
  scene.update(0.4);
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  const SurfaceTexture texture = scene.texture();
  ASSERT_TRUE(texture);
  EXPECT_EQ(texture.size, settings.textureSize);
  const size_t floats = size_t(settings.textureSize) * settings.textureSize * 4;
  poisonBuffer(ctx, texture.texels, floats);
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  EXPECT_EQ(scene.texture().texels, texture.texels) << "a frame made a new texture";
  const std::vector<float> got = downloadFloats(ctx, texture.texels, floats);
  std::set<std::string> stages;
  for (const Span& span : scene.ownTimes()) stages.insert(span.name);
  if (backend == Backend::Cuda) {
    EXPECT_EQ(stages, (std::set<std::string>{"skinning (cuda)", "bake views (cuda)", "bake samples (cuda)",
                                             "bake aggregate (cuda)"}));
  }

  const uint32_t V = scene.model().vertexCount;
  const std::vector<float> positions = downloadFloats(ctx, scene.positions(), size_t(V) * 3);
  float lo[3], hi[3];
  scene.bounds(lo, hi);
  for (size_t k = 0; k < 3; ++k) lo[k] += float(scene.params().transl[k]), hi[k] += float(scene.params().transl[k]);
  Device device(&ctx);
  const Backend own = backend == Backend::Cpu ? Backend::Vulkan : backend;
  TextureBaker::Settings bakerSettings;
  bakerSettings.views = settings.views, bakerSettings.width = bakerSettings.height = settings.viewSize;
  TextureBaker baker(device, own, *scene.atlas(), scene.model().faces, V, bakerSettings);
  baker.setCameras(bakeRingCameras(settings.views, lo, hi));
  DeviceBuffer dPositions = device.upload(positions), colours = device.upload(bodyPartColours(scene.model())),
               want = device.allocate(ElementType::Float32, floats);
  device.run(own, [&](const Exec& e) { baker.bake(e, dPositions, colours, want); });
  const std::vector<float> expected = want.download<float>();
  size_t differ = 0, seen = 0;
  for (size_t i = 0; i < floats; ++i) differ += std::memcmp(&got[i], &expected[i], 4) != 0;
  for (size_t t = 0; t < floats / 4; ++t) seen += got[t * 4 + 3] > 0.5f;
  EXPECT_EQ(differ, 0u) << "of " << floats << " floats";
  const std::vector<int32_t> texelFaces = baker.texelFaces().download<int32_t>();
  const size_t onCharts = size_t(std::count_if(texelFaces.begin(), texelFaces.end(), [](int32_t f) { return f; }));
  EXPECT_GT(double(seen), 0.6 * double(onCharts)) << seen << " of " << onCharts << " texels on the charts seen";
}
}  // namespace

TEST(Viewer, BakedTextureIsTheBakeOfAvatarZero) {
  ARM_REQUIRE_VULKAN(ctx);
  for (Backend backend : {Backend::Vulkan, Backend::Cpu}) {
    SCOPED_TRACE(backendName(backend));
    expectSceneBakesAvatarZero(ctx, backend);
  }
}

TEST(ViewerCuda, BakedTextureIsTheBakeOfAvatarZero) {
  ARM_REQUIRE_VULKAN(ctx);
  ARM_REQUIRE_CUDA();
  expectSceneBakesAvatarZero(ctx, Backend::Cuda);
}

// The crowd drawn with the baked texture: the hardware draw and the compute rasteriser's (its graphics pass) agree
// but for a few edge pixels, and the texture shows (most of the avatars' pixels are not the plain skin's). The
// hardware draw's two ways, indexed with (u, v) found per fragment and every face's corners with their (u, v),
// agree too.
TEST(Viewer, BakedTextureIsDrawnByBothRasterisers) {
  ARM_REQUIRE_VULKAN(ctx);
  const uint32_t W = 200, H = 150;
  Rig rig(ctx, "a-pose", W, H, 2);
  auto& [scene, renderer, target, camera, draw] = rig;
  draw.ground = false;
  draw.clear[0] = draw.clear[1] = draw.clear[2] = 0;
  std::vector<uint8_t> images[4];
  for (int mode : {0, 1, 2, 3}) {  // plain; textured: hardware, compute raster, hardware by corners
    if (mode == 3) renderer.setTexturedIndexed(false);
    scene.setBake(mode ? std::optional(AvatarScene::BakeSettings{600, 6, 192}) : std::nullopt);
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      scene.skin(cmd, nullptr);
      draw.texture = scene.texture();
      draw.visibility = mode == 2 ? scene.rasterize(cmd, nullptr, camera.viewProj(float(W) / H), target.extent())
                                  : VisibilityBuffers{};
      renderer.record(cmd, target.frameTarget(), camera, scene.positions(), draw);
      target.recordReadback(cmd);
    });
    images[mode] = target.pixels();
  }
  // The largest channel difference between images a and b at byte i.
  auto difference = [&](int a, int b, size_t i) {
    int d = 0;
    for (size_t c = 0; c < 3; ++c) d = std::max(d, std::abs(int(images[a][i + c]) - int(images[b][i + c])));
    return d;
  };
  size_t avatarPixels = 0, painted = 0, rasterisersDiffer = 0, drawsDiffer = 0;
  for (size_t i = 0; i < images[0].size(); i += 4) {
    const bool covered = images[0][i] | images[0][i + 1] | images[0][i + 2];
    avatarPixels += covered, painted += covered && difference(0, 1, i) > 24;
    rasterisersDiffer += difference(1, 2, i) > 24, drawsDiffer += difference(1, 3, i) > 24;
  }
  ASSERT_GT(avatarPixels, size_t(W) * H / 30) << "the avatars are missing";
  EXPECT_GT(painted, avatarPixels / 2) << "the texture does not show";
  // Untextured, the two differ at ~1.5% of the pixels here (silhouettes and ties on edges); textured, an edge pixel
  // that one gives to the neighbour face also reads the neighbour's chart, whose colour may jump: ~3.5%.
  EXPECT_LT(rasterisersDiffer, avatarPixels / 20) << "the rasterisers' textured frames differ";
  // The same rasteriser: only (u, v) found from the point versus interpolated, a rounding apart.
  EXPECT_LT(drawsDiffer, avatarPixels / 100) << "the indexed and corner draws differ";
}

// Headless: --bake's stages are in the profile; a glTF character has no body-part atlas to bake, and is refused.
TEST(Viewer, BakedTextureRendersWithItsStages) {
  ARM_REQUIRE_VULKAN(ctx);
  auto dir = scratchDir("bake");
  ViewerOptions o = profiledRun("vulkan", 3, 96, 64, dir / "profile.json");
  o.bake = 600;
  o.bakeViews = 4;
  o.avatars = 2;
  o.screenshot = (dir / "baked.png").string();
  ASSERT_EQ(runHeadless(o), 0);
  EXPECT_EQ(checkTrace(o.profile, o.frames)[2],
            (std::set<std::string>{"skinning", "bake views", "bake samples", "bake aggregate", "draw"}));
  EXPECT_GT(std::filesystem::file_size(o.screenshot), 100u);
  ViewerOptions character = o;
  character.model = characterGlb();
  EXPECT_THROW(runHeadless(character), Error);
  std::filesystem::remove_all(dir);
  // A texture the atlas's charts cannot fit is refused, and the scene keeps drawing without one.
  AvatarScene scene(ctx, avatar(), 1);
  EXPECT_THROW(scene.setBake(AvatarScene::BakeSettings{64, 4, 64}), Error);
  EXPECT_FALSE(scene.bake().has_value());
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  EXPECT_FALSE(scene.texture());
}

// ---- The field mode --------------------------------------------------------------------------------------------

namespace {
// N Gaussians at random rest vertices of the avatar, scales 2 … 6 cm, off-diagonals ±1 cm, weights 0.5 … 1.
BodyField testField(uint32_t N) {
  const BodyModel& m = avatar();
  std::vector<float> means, cholesky, weights;
  for (uint32_t i = 0; i < N; ++i) {
    const size_t v = rng()() % m.vertexCount;
    for (size_t k = 0; k < 3; ++k) means.push_back(float(m.vTemplate[v * 3 + k]));
    const std::vector<double> s = uniform(3, std::log(0.02), std::log(0.06)), o = uniform(3, -0.01, 0.01);
    cholesky.insert(cholesky.end(), {float(s[0]), float(o[0]), float(s[1]), float(o[1]), float(o[2]), float(s[2])});
    weights.push_back(float(uniform(1, 0.5, 1)[0]));
  }
  return attachField(means, cholesky, weights, m, "test");
}
}  // namespace

// The host side of the field mode against the lbs() reference: the joints it poses with land where bodyForwardRef
// puts them (shape, pose and translation included), and a Gaussian at a vertex that one joint moves follows that
// joint.
TEST(BodyField, FollowsTheLbsReferenceJoints) {
  const BodyModel& m = avatar();
  BodyParams p = BodyParams::zeros(m, 1, 10, 10);
  walkCycle(m, 0.7, p.pose.data());
  p.betas = uniform(10, -1.5, 1.5), p.expression = uniform(10, -1, 1), p.transl = {0.3, -0.2, 1.1};
  const FieldJoints joints =
      fieldJoints(m, JointForest(m.parents), p.pose.data(),
                  regressJoints(m, shapedVertices(m, p.betas.data(), 10, p.expression.data(), 10)), p.transl.data());
  EXPECT_TRUE(allClose(joints.posed, bodyForwardRef(m, p).joints, Tol{1e-9, 1e-9}));
  size_t v = 0;  // the vertex most wholly one joint's
  for (size_t i = 0; i < m.vertexCount; ++i)
    if (*std::max_element(&m.weights[i * m.jointCount], &m.weights[(i + 1) * m.jointCount]) >
        *std::max_element(&m.weights[v * m.jointCount], &m.weights[(v + 1) * m.jointCount]))
      v = i;
  const double* w = &m.weights[v * m.jointCount];
  const BodyField f =
      attachField({float(m.vTemplate[v * 3]), float(m.vTemplate[v * 3 + 1]), float(m.vTemplate[v * 3 + 2])},
                  {0, 0, 0, 0, 0, 0}, {1}, m);
  EXPECT_EQ(f.joints[0], std::max_element(w, w + m.jointCount) - w);
}

// The field mode's volume, NaN-poisoned before the second frame, against the double reference: avatar 0's joints
// propagated (propagateJointsRef over fieldJoints' locals, checked above against lbs()), its Gaussians posed
// (poseGaussiansRef) and the dense field (gaussianFieldRef) at the volume's cell centres over the scene's box. The
// culled field leaves out terms below ε = 1e-6 (at most N·ε = 2e-4 at a point); the float path adds ~1e-5 (a
// Gaussian posed in float, its exponent's relative error a few 1e-6 on values ≤ 1, summed over the ~10 that reach a
// point): 1e-3 absolute covers both with margin, far below the field's values (≥ 0.5 at the Gaussians). The box holds
// the field: its outer cells are at most N·ε. On CUDA the volume reaches Vulkan through interop.
namespace {
void expectSceneFieldIsThePosedField(vk::Context& ctx, Backend backend) {
  const uint32_t N = 200, R = 24;
  const BodyField field = testField(N);
  AvatarScene scene(ctx, avatar(), 2);
  scene.applyPose(posePreset(scene.model(), "walk"));
  scene.setBackend(backend);
  scene.setAvatars(2);
  scene.base().betas[0] = 1.2, scene.base().transl = {0.2, 0.1, -0.3};
  scene.setField(field, FieldSettings{.resolution = R, .epsilon = 1e-6f});
  scene.update(0.4);
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  const FieldVolume first = scene.volume();
  ASSERT_TRUE(first);
  poisonBuffer(ctx, first.values, size_t(R) * R * R);
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  const FieldVolume volume = scene.volume();
  EXPECT_EQ(volume.values, first.values) << "a frame made a new volume";
  EXPECT_EQ(volume.size, R);
  const std::vector<float> got = downloadFloats(ctx, volume.values, size_t(R) * R * R);
  if (backend == Backend::Cuda) {
    std::set<std::string> stages;
    for (const Span& span : scene.ownTimes()) stages.insert(span.name);
    EXPECT_EQ(stages, (std::set<std::string>{"skinning (cuda)", "field pose (cuda)", "field grid (cuda)",
                                             "field eval (cuda)"}));
  }

  const BodyModel& m = scene.model();
  const BodyParams& p = scene.params();
  const std::vector<double> rest = regressJoints(
      m, shapedVertices(m, p.betas.data(), scene.shapeComponents(), p.expression.data(), scene.exprComponents()));
  const FieldJoints joints = fieldJoints(m, JointForest(m.parents), p.pose.data(), rest, p.transl.data());
  JointLocalsRef locals;
  locals.kind = LocalTransform::Affine;
  locals.affine.assign(joints.locals.begin(), joints.locals.end());
  locals.inverseBind.assign(joints.inverseBinds.begin(), joints.inverseBinds.end());
  const JointGlobalsRef globals = propagateJointsRef(JointForest(m.parents), locals);
  GaussianFieldRef posed;
  poseGaussiansRef(globals.skinning, field.joints, std::vector<double>(field.means.begin(), field.means.end()),
                   std::vector<double>(field.cholesky.begin(), field.cholesky.end()), posed.means, posed.cholesky);
  posed.weights.assign(field.weights.begin(), field.weights.end());
  for (uint32_t k = 0; k < R; ++k)
    for (uint32_t j = 0; j < R; ++j)
      for (uint32_t i = 0; i < R; ++i) {
        const uint32_t cell[3] = {i, j, k};
        for (int a = 0; a < 3; ++a)
          posed.points.push_back(volume.lo[a] + (cell[a] + 0.5) * (double(volume.hi[a]) - volume.lo[a]) / R);
      }
  const std::vector<double> want = gaussianFieldRef(posed).field;
  EXPECT_TRUE(allClose(got, want, Tol{1e-3, 0}));
  EXPECT_GT(*std::max_element(want.begin(), want.end()), 0.5) << "the volume misses the field";
  double outer = 0;
  for (uint32_t k = 0; k < R; ++k)
    for (uint32_t j = 0; j < R; ++j)
      for (uint32_t i = 0; i < R; ++i)
        if (std::min({i, j, k}) == 0 || std::max({i, j, k}) == R - 1)
          outer = std::max(outer, want[(size_t(k) * R + j) * R + i]);
  EXPECT_LE(outer, N * 1e-6) << "the box cuts the field";
}
}  // namespace

TEST(Viewer, FieldVolumeIsThePosedField) {
  ARM_REQUIRE_VULKAN(ctx);
  for (Backend backend : {Backend::Vulkan, Backend::Cpu}) {
    SCOPED_TRACE(backendName(backend));
    expectSceneFieldIsThePosedField(ctx, backend);
  }
}

TEST(ViewerCuda, FieldVolumeIsThePosedField) {
  ARM_REQUIRE_VULKAN(ctx);
  ARM_REQUIRE_CUDA();
  expectSceneFieldIsThePosedField(ctx, Backend::Cuda);
}

// The ray march: pixels change only inside the box's projection, and enough of them do; at density 0 the layer
// is transparent (the blend leaves the frame as it was, bit for bit).
TEST(Viewer, FieldIsRayMarchedInsideItsBox) {
  ARM_REQUIRE_VULKAN(ctx);
  const uint32_t W = 200, H = 150;
  Rig rig(ctx, "a-pose", W, H, 1);
  auto& [scene, renderer, target, camera, draw] = rig;
  scene.setField(testField(300), FieldSettings{.resolution = 32});
  std::vector<uint8_t> images[3];
  for (int mode : {0, 1, 2}) {  // without the field, with it, with it at density 0
    scene.fieldSettings().density = mode == 2 ? 0.0f : 30.0f;
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      scene.skin(cmd, nullptr);
      draw.field = mode ? scene.volume() : FieldVolume{};
      renderer.record(cmd, target.frameTarget(), camera, scene.positions(), draw);
      target.recordReadback(cmd);
    });
    images[mode] = target.pixels();
  }
  EXPECT_EQ(images[0], images[2]) << "a transparent field changed the frame";
  // The box's projection: the rectangle around its 8 corners' pixels.
  const FieldVolume v = scene.volume();
  const auto m = camera.viewProj(float(W) / H);
  float x0 = 1e9f, y0 = 1e9f, x1 = -1e9f, y1 = -1e9f;
  for (int c = 0; c < 8; ++c) {
    const float p[3] = {c & 1 ? v.hi[0] : v.lo[0], c & 2 ? v.hi[1] : v.lo[1], c & 4 ? v.hi[2] : v.lo[2]};
    float clip[4];
    for (int r = 0; r < 4; ++r) clip[r] = m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r];
    const float x = (clip[0] / clip[3] * 0.5f + 0.5f) * W, y = (clip[1] / clip[3] * 0.5f + 0.5f) * H;
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  }
  size_t changed = 0, outside = 0;
  for (uint32_t y = 0; y < H; ++y)
    for (uint32_t x = 0; x < W; ++x) {
      const size_t i = (size_t(y) * W + x) * 4;
      if (std::memcmp(&images[0][i], &images[1][i], 3) == 0) continue;
      ++changed;
      outside += x + 1 < x0 || x > x1 + 1 || y + 1 < y0 || y > y1 + 1;
    }
  EXPECT_EQ(outside, 0u) << "the march drew outside its box";
  EXPECT_GT(double(changed), 0.05 * (x1 - x0) * (y1 - y0)) << "the field does not show";
}

// Headless: --field's stages are in the profile; a glTF character has no body joints to follow and is refused, as
// are a malformed field file and a volume out of range.
TEST(Viewer, FieldRendersWithItsStages) {
  ARM_REQUIRE_VULKAN(ctx);
  auto dir = scratchDir("field");
  const BodyField f = testField(50);
  auto write = [&](const std::string& name, bool withWeights) {
    std::map<std::string, NpyWrite> arrays{
        {"means", {{50, 3}, NpyType::F32, std::vector<double>(f.means.begin(), f.means.end())}},
        {"cholesky", {{50, 6}, NpyType::F32, std::vector<double>(f.cholesky.begin(), f.cholesky.end())}}};
    if (withWeights)
      arrays["weights"] = {{50, 1}, NpyType::F32, std::vector<double>(f.weights.begin(), f.weights.end())};
    writeNpz((dir / name).string(), arrays);
    return (dir / name).string();
  };
  ViewerOptions o = profiledRun("vulkan", 3, 96, 64, dir / "profile.json");
  o.field = write("field.npz", true);
  o.fieldResolution = 16;
  o.avatars = 2;
  o.screenshot = (dir / "field.png").string();
  ASSERT_EQ(runHeadless(o), 0);
  EXPECT_EQ(checkTrace(o.profile, o.frames)[2],
            (std::set<std::string>{"skinning", "field pose", "field grid", "field eval", "draw", "field march"}));
  ViewerOptions character = o;
  character.model = characterGlb();
  EXPECT_THROW(runHeadless(character), Error);
  ViewerOptions malformed = o;
  malformed.field = write("no_weights.npz", false);
  try {
    runHeadless(malformed);
    ADD_FAILURE() << "a field without weights was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'weights' is missing"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
  AvatarScene scene(ctx, avatar(), 1);
  EXPECT_THROW(scene.setField(f, FieldSettings{.resolution = 2}), Error);
  EXPECT_FALSE(scene.field());
  ctx.submitAndWait([&](VkCommandBuffer cmd) { scene.skin(cmd, nullptr); });
  EXPECT_FALSE(scene.volume());
}

// GPU spans sit at their device times on every backend's track: Vulkan's zones through calibrated timestamps (or
// the fallback anchor), CUDA's events against a host-clock anchor, the CPU backend's skinning on the host track.
TEST(Viewer, ProfileSpansSitAtDeviceTimesInsideTheirFrames) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  auto dir = scratchDir("trace");
  for (const char* backend : {"vulkan", "cpu"}) {
    // 12 frames: past the profiler's settling delay, so frames are streamed while the run goes on.
    ViewerOptions o = profiledRun(backend, 12, 80, 60, dir / (std::string(backend) + ".json"));
    o.raster = "compute";
    ASSERT_EQ(runHeadless(o), 0);
    auto tracks = checkTrace(o.profile, o.frames);
    if (std::string(backend) == "cpu") {
      EXPECT_EQ(tracks[1], std::set<std::string>{"skinning (cpu)"});
    }
    EXPECT_TRUE(tracks[2].count("raster") && tracks[2].count("draw")) << backend;
  }
  std::filesystem::remove_all(dir);
}

TEST(ViewerCuda, ProfileSpansSitAtDeviceTimesInsideTheirFrames) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  ARM_REQUIRE_CUDA();
  auto dir = scratchDir("trace_cuda");
  ViewerOptions o = profiledRun("cuda", 12, 80, 60, dir / "cuda.json");
  o.raster = "compute";
  ASSERT_EQ(runHeadless(o), 0);
  auto tracks = checkTrace(o.profile, o.frames);
  EXPECT_EQ(tracks[3], (std::set<std::string>{"skinning (cuda)", "raster (cuda)"}));  // the CUDA stream
  std::filesystem::remove_all(dir);
}

// A long headless run keeps its resident memory flat: the profiler keeps a fixed window of frames and streams the
// trace to its file. 5,000 frames of the CPU backend (the quickest on lavapipe, and it allocates every frame);
// after warm-up (the window filled) resident memory may not grow by more than 512 KiB — a leak of the former
// ~0.7 kB per frame would grow it by 2.4 MB over the measured 3,500 frames.
TEST(Viewer, SoakResidentMemoryStaysFlat) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  auto dir = scratchDir("soak");
  ViewerOptions o = profiledRun("cpu", 5000, 64, 48, dir / "soak.json");
  constexpr uint64_t kWarmUp = 1500;
  size_t base = 0, peak = 0;
  uintmax_t traceBytesMidway = 0;
  o.afterFrame = [&](uint64_t f) {
    if (f == kWarmUp) base = residentBytes();
    if (f >= kWarmUp && f % 50 == 0) peak = std::max(peak, residentBytes());
    if (f == 3000) traceBytesMidway = std::filesystem::file_size(o.profile);
  };
  ASSERT_EQ(runHeadless(o), 0);
  peak = std::max(peak, residentBytes());
  std::printf("resident memory: %.1f MiB after %llu frames, peak %.1f MiB up to frame %d (+%.0f KiB)\n",
              base / 1048576.0, (unsigned long long)kWarmUp, peak / 1048576.0, o.frames,
              (double(peak) - double(base)) / 1024);
  EXPECT_LE(peak, base + 512 * 1024);
  EXPECT_GT(traceBytesMidway, 100'000u) << "the trace is not streamed while the viewer runs";
  checkTrace(o.profile, o.frames);
  std::filesystem::remove_all(dir);
}

namespace {
// The scripted drag through the mouse's path (PoseDrag, as the window calls it): pick the right wrist at its pixel,
// pin both ankles, drag the wrist's target 20 cm across the view over 3 frames of 4 IK iterations, then check the
// wrist within 1 mm of its target and the ankles within 1 mm of where they were, every pose component within the
// default limits, and undo and redo restoring each pose exactly.
void expectScriptedDrag(vk::Context& ctx, Backend backend) {
  const BodyModel& m = avatar();
  AvatarScene scene(ctx, m, 3);  // avatar 0 stands off the origin in a crowd: world and model space differ
  scene.applyPose(posePreset(m, "a-pose"));
  scene.setBackend(backend);
  scene.setAvatars(3);
  scene.update(0);
  Camera camera;
  float lo[3], hi[3];
  scene.bounds(lo, hi);
  camera.frame(lo, hi);
  const ViewRay view{camera.viewProj(640.f / 480.f), 640, 480};
  auto named = [&](const char* name) {
    return uint32_t(std::find(m.jointNames.begin(), m.jointNames.end(), name) - m.jointNames.begin());
  };
  const uint32_t wrist = named("right_wrist"), ankles[2] = {named("left_ankle"), named("right_ankle")};
  PoseDrag drag(scene);
  const std::optional<std::array<float, 2>> at = drag.pixelOf(view, wrist);
  ASSERT_TRUE(at);
  const std::optional<uint32_t> picked = drag.pick(view, (*at)[0], (*at)[1]);
  ASSERT_TRUE(picked);  // the surface over the wrist: the wrist, or a neighbour that dominates its skin
  drag.select(wrist);
  drag.togglePin(ankles[0]);
  drag.togglePin(ankles[1]);
  const BodyParams before = scene.base();
  const std::vector<double> rest = bodyForwardRef(m, scene.shown()).joints;
  drag.begin(view);
  // 20 cm along the camera's right: a point at the wrist's depth, so the target lands exactly there.
  const std::array<float, 3> eye = camera.eye();
  double right[3] = {camera.target[2] - eye[2], 0, eye[0] - camera.target[0]};  // forward × up
  const double norm = std::hypot(right[0], right[2]);
  const std::array<double, 3> start = drag.problem().targets[0].position;
  const std::array<float, 2> from = *at;
  std::array<double, 3> goal{};
  for (int c = 0; c < 3; ++c) goal[size_t(c)] = start[size_t(c)] + 0.2 * right[c] / norm;
  // The goal's pixel: through the view-projection, with avatar 0's offset in the crowd.
  const std::array<float, 16>& vp = view.viewProj;
  double world[3];
  for (int c = 0; c < 3; ++c) world[c] = goal[size_t(c)] + scene.params().transl[size_t(c)] - before.transl[size_t(c)];
  double clip[4];
  for (int r = 0; r < 4; ++r)
    clip[r] =
        vp[size_t(r)] * world[0] + vp[size_t(4 + r)] * world[1] + vp[size_t(8 + r)] * world[2] + vp[size_t(12 + r)];
  const float px = float((clip[0] / clip[3] + 1) / 2 * 640), py = float((clip[1] / clip[3] + 1) / 2 * 480);
  for (int frame = 1; frame <= 3; ++frame) {  // the mouse moves a third of the way each frame
    drag.move(from[0] + (px - from[0]) * float(frame) / 3, from[1] + (py - from[1]) * float(frame) / 3);
    drag.step(4);
    scene.update(0);
  }
  const std::array<double, 3> target = drag.problem().targets[0].position;
  EXPECT_NEAR(std::hypot(target[0] - start[0], target[1] - start[1], target[2] - start[2]), 0.2, 2e-3);
  const int64_t stepStartNs = steadyNowNs();
  drag.step(4);  // the last frames with the mouse still
  const double stepHostMs = double(steadyNowNs() - stepStartNs) * 1e-6;
  // The "ik" stage the overlay shows: the solve's GPU time on its queue or stream (within the host's wait for it),
  // the host's time on the CPU.
  ASSERT_TRUE(drag.lastStep());
  const Span& ik = *drag.lastStep();
  EXPECT_EQ(ik.name, "ik");
  EXPECT_EQ(ik.track, backend == Backend::Cpu      ? Track::Cpu
                      : backend == Backend::Vulkan ? Track::VulkanQueue
                                                   : Track::CudaStream);
  EXPECT_GT(ik.ms, 0.0);
  EXPECT_LE(ik.ms, stepHostMs);
  EXPECT_GE(ik.startHostNs, stepStartNs);
  drag.end();
  EXPECT_FALSE(drag.lastStep()) << "a stage of a drag that ended";
  const BodyParams solved = scene.base();
  const std::vector<double> joints = bodyForwardRef(m, scene.shown()).joints;
  auto distance = [&](const std::vector<double>& a, const std::array<double, 3>& b, uint32_t j) {
    return std::hypot(a[3 * j] - b[0], a[3 * j + 1] - b[1], a[3 * j + 2] - b[2]);
  };
  EXPECT_LT(distance(joints, target, wrist), 1e-3) << "wrist";
  for (uint32_t a : ankles)
    EXPECT_LT(distance(joints, {rest[3 * a], rest[3 * a + 1], rest[3 * a + 2]}, a), 1e-3) << m.jointNames[a];
  for (double x : solved.pose) EXPECT_LE(std::abs(x), M_PI + 1e-6);
  ASSERT_TRUE(drag.undo());
  EXPECT_EQ(scene.base().pose, before.pose);
  ASSERT_TRUE(drag.redo());
  EXPECT_EQ(scene.base().pose, solved.pose);
  drag.resetJoint(wrist);
  EXPECT_EQ(scene.base().pose[3 * wrist], 0.0);
  ASSERT_TRUE(drag.undo());
  EXPECT_EQ(scene.base().pose, solved.pose);
}
}  // namespace

TEST(Viewer, DragsAJointWithInverseKinematicsOnTheCpu) {
  ARM_REQUIRE_VULKAN(ctx);
  expectScriptedDrag(ctx, Backend::Cpu);
}

TEST(Viewer, DragsAJointWithInverseKinematicsOnVulkan) {
  ARM_REQUIRE_VULKAN(ctx);
  expectScriptedDrag(ctx, Backend::Vulkan);
}

TEST(ViewerCuda, DragsAJointWithInverseKinematics) {
  ARM_REQUIRE_VULKAN(ctx);
  if (auto why = cudaUnavailable()) GTEST_SKIP() << "no CUDA device: " << *why;
  expectScriptedDrag(ctx, Backend::Cuda);
}

// The rotation rings and the mirror, through the calls the window makes: a ring is a closed circle of pixels about
// the joint; a turn about the joint's x from rest is that axis-angle, and turning back restores the pose (to 1e-12:
// quaternion round trips); a mirror copies a left joint onto its right twin reflected, (a, b, c) → (a, −b, −c);
// undo restores each step exactly.
TEST(Viewer, RingsTurnAJointAboutItsOwnAxesAndMirrorCopiesASide) {
  ARM_REQUIRE_VULKAN(ctx);
  const BodyModel& m = avatar();
  AvatarScene scene(ctx, m, 1);
  scene.setBackend(Backend::Cpu);
  scene.update(0);
  Camera camera;
  float lo[3], hi[3];
  scene.bounds(lo, hi);
  camera.frame(lo, hi);
  const ViewRay view{camera.viewProj(640.f / 480.f), 640, 480};
  auto named = [&](const char* name) {
    return uint32_t(std::find(m.jointNames.begin(), m.jointNames.end(), name) - m.jointNames.begin());
  };
  const uint32_t left = named("left_elbow"), right = named("right_elbow");
  PoseDrag drag(scene);
  EXPECT_TRUE(drag.ring(view, 0, 0.1).empty());  // nothing selected
  drag.select(left);
  const std::vector<std::array<float, 2>> ring = drag.ring(view, 0, 0.1);
  ASSERT_EQ(ring.size(), 49u);
  EXPECT_NEAR(ring.front()[0], ring.back()[0], 1e-3);
  const BodyParams rest = scene.base();
  drag.beginRotate();
  drag.rotate(0, 0.3);
  EXPECT_NEAR(scene.base().pose[3 * left], 0.3, 1e-12);
  EXPECT_NEAR(std::hypot(scene.base().pose[3 * left + 1], scene.base().pose[3 * left + 2]), 0.0, 1e-12);
  drag.rotate(2, 0.4);
  drag.rotate(2, -0.4);
  drag.rotate(0, -0.3);
  for (size_t i = 0; i < rest.pose.size(); ++i) EXPECT_NEAR(scene.base().pose[i], rest.pose[i], 1e-12);
  ASSERT_TRUE(drag.undo());
  EXPECT_EQ(scene.base().pose, rest.pose);
  scene.base().pose[3 * left] = 0.1, scene.base().pose[3 * left + 1] = 0.2, scene.base().pose[3 * left + 2] = 0.3;
  const BodyParams before = scene.base();
  drag.mirror(true);
  EXPECT_EQ(scene.base().pose[3 * right], 0.1);
  EXPECT_EQ(scene.base().pose[3 * right + 1], -0.2);
  EXPECT_EQ(scene.base().pose[3 * right + 2], -0.3);
  ASSERT_TRUE(drag.undo());
  EXPECT_EQ(scene.base().pose, before.pose);
}

namespace {
// Three keys of the default avatar with one expression (a glb bakes the first frame's into its mesh): rest at 0 s,
// a random pose at 0.4 s, another at 1 s (with a translation).
Keyframes threeKeys(const BodyModel& m) {
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> u(-0.6, 0.6);
  Keyframes keys;
  BodyParams p = BodyParams::zeros(m, 1);
  for (double& x : p.expression) x = u(gen);
  keys.set(0, p);
  for (double& x : p.pose) x = u(gen);
  keys.set(0.4, p);
  for (double& x : p.pose) x = u(gen);
  p.transl = {0.3, 0.1, -0.2};
  keys.set(1.0, p);
  return keys;
}
}  // namespace

// Sampling: keys come back at their times; between two keys of one axis the angle is interpolated at constant
// speed (slerp) and the translation linearly; outside the keys the nearest key holds; a key within 1 ms replaces.
TEST(Keyframes, SampleInterpolatesRotationsAlongTheShorterArc) {
  const BodyModel& m = avatar();
  Keyframes keys;
  BodyParams a = BodyParams::zeros(m, 1), b = a;
  a.pose[3] = 0.2, b.pose[3] = 1.0, b.transl = {1, 2, 3};
  keys.set(1.0, a);
  keys.set(3.0, b);
  EXPECT_EQ(keys.sample(1.0).pose, a.pose);
  EXPECT_EQ(keys.sample(0.0).pose, a.pose);
  EXPECT_EQ(keys.sample(9.0).pose, b.pose);
  const BodyParams mid = keys.sample(1.5);  // a quarter of the way
  EXPECT_NEAR(mid.pose[3], 0.4, 1e-12);
  EXPECT_NEAR(mid.pose[4], 0.0, 1e-12);
  EXPECT_NEAR(mid.transl[1], 0.5, 1e-12);
  // 170° about x one way and 170° the other: the short way passes through 180°, not through 0.
  a.pose[3] = 170 * M_PI / 180, b.pose[3] = -170 * M_PI / 180;
  keys.set(1.0, a);
  keys.set(3.0005, b);  // replaces the key at 3 s
  EXPECT_EQ(keys.keys().size(), 2u);
  EXPECT_NEAR(std::abs(keys.sample(2.00025).pose[3]), M_PI, 1e-9);
  EXPECT_TRUE(keys.remove(1.0004));
  EXPECT_FALSE(keys.remove(1.0));
  EXPECT_THROW(keys.set(-1, a), Error);
}

// Keys → .npz → the motion reader (what `armature pose --motion` runs) → the same vertices as the keys sampled at
// each frame (float64 files: 1e-9 m); keys → .glb → the glTF reader, posed by the double reference → the same joints
// (float32 files: 1e-5 m).
TEST(Keyframes, RoundTripThroughNpzAndGlb) {
  const BodyModel& m = avatar();
  const Keyframes keys = threeKeys(m);
  const double fps = 10;
  const std::string npz = tempPath("keys.npz"), glb = tempPath("keys.glb");
  writeKeyframes(npz, m, keys, fps);
  const Motion back = loadMotion(npz, m);
  ASSERT_EQ(back.frames, 11u);
  EXPECT_EQ(back.fps, fps);
  for (uint32_t f : {0u, 3u, 4u, 7u, 10u}) {
    const BodyParams read = motionFrames(m, back, f, 1, 10, 10);
    const std::vector<double> want = bodyForwardRef(m, keys.sample(f / fps)).vertices;
    EXPECT_TRUE(allClose(bodyForwardRef(m, read).vertices, want, Tol{1e-9, 0})) << "frame " << f;
  }
  writeKeyframes(glb, m, keys, fps);
  const GltfCharacter c = loadGltfCharacter(glb);
  ASSERT_EQ(c.clips.size(), 1u);
  EXPECT_NEAR(c.clips[0].seconds, 1.0, 1e-6);
  const JointForest forest(c.parents);
  for (uint32_t f : {0u, 4u, 10u}) {
    const GltfPoseRef posed = poseGltfCharacterRef(c, forest, sampleGltfLocals(c, 0, f / fps), 1);
    EXPECT_TRUE(allClose(posed.joints, bodyForwardRef(m, keys.sample(f / fps)).joints, Tol{1e-5, 0})) << "frame " << f;
  }
  EXPECT_THROW(writeKeyframes(tempPath("keys.obj"), m, keys, fps), Error);
  EXPECT_THROW(writeKeyframes(npz, m, Keyframes{}, fps), Error);
  std::filesystem::remove(npz);
  std::filesystem::remove(glb);
}

// A model 165 units tall (glTF's Fox) framed from each preset: its whole box lies inside the view and its depth range.
TEST(Viewer, PresetCamerasHoldAModelInLargeUnits) {
  const float lo[3] = {-20, 0, -40}, hi[3] = {20, 165, 40};
  for (float yaw : {0.f, 1.5707963f}) {
    Camera camera;
    camera.yaw = yaw, camera.pitch = 0.05f;
    camera.frame(lo, hi);
    const std::array<float, 16> vp = camera.viewProj(16.f / 9.f);
    for (int corner = 0; corner < 8; ++corner) {
      const float p[3] = {corner & 1 ? hi[0] : lo[0], corner & 2 ? hi[1] : lo[1], corner & 4 ? hi[2] : lo[2]};
      float c[4];
      for (int r = 0; r < 4; ++r)
        c[r] = vp[size_t(r)] * p[0] + vp[size_t(4 + r)] * p[1] + vp[size_t(8 + r)] * p[2] + vp[size_t(12 + r)];
      EXPECT_GT(c[3], 0) << "corner " << corner << " behind the camera";
      EXPECT_GE(c[2] / c[3], 0.f) << "corner " << corner;
      EXPECT_LE(c[2] / c[3], 1.f) << "corner " << corner << ": past the far plane";
      EXPECT_LE(std::abs(c[1] / c[3]), 1.f) << "corner " << corner;
    }
  }
}

// Recording from --headless: with ffmpeg on PATH the frames go to its standard input as raw RGBA (a stand-in
// ffmpeg here copies them to the output file, so the bytes are checked: 3 frames of 96×64×4); without it, numbered
// PNGs beside the path, one per frame.
TEST(Viewer, RecordsToFfmpegOrNumberedPngs) {
  ARM_REQUIRE_VULKAN(ctx);
  (void)ctx;
  const auto dir = std::filesystem::temp_directory_path() / ("armature_record_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "bin");
  {
    std::ofstream fake(dir / "bin" / "ffmpeg");
    fake << "#!/bin/sh\nfor last; do :; done\ncat > \"$last\"\n";
  }
  std::filesystem::permissions(dir / "bin" / "ffmpeg", std::filesystem::perms::owner_all);
  ViewerOptions o;
  o.headless = true;
  o.frames = 3;
  o.width = 96, o.height = 64;
  o.backend = "vulkan";
  o.model = defaultModelPath();
  o.record = (dir / "it's.mp4").string();  // a quote in the path: the shell command must keep it whole
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", ((dir / "bin").string() + ":" + path).c_str(), 1);
  const int rc = runHeadless(o);
  EXPECT_THROW(VideoRecorder((dir / "odd.mp4").string(), 95, 64, 60), Error);  // H.264's yuv420p: even sizes
  setenv("PATH", path.c_str(), 1);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(std::filesystem::file_size(o.record), 3u * 96 * 64 * 4);
  setenv("PATH", (dir / "empty").string().c_str(), 1);  // no ffmpeg anywhere
  o.record = (dir / "clip.mp4").string();
  const int rc2 = runHeadless(o);
  setenv("PATH", path.c_str(), 1);
  ASSERT_EQ(rc2, 0);
  for (int f = 0; f < 3; ++f) EXPECT_TRUE(std::filesystem::exists(dir / ("clip_0000" + std::to_string(f) + ".png")));
  EXPECT_FALSE(std::filesystem::exists(dir / "clip.mp4"));
  std::filesystem::remove_all(dir);
}
