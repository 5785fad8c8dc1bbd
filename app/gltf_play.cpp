// `armature gltf FILE.glb [-o OUT]`: a rigged glTF character's animation through joint propagation and linear blend
// skinning on the chosen backend, every sampled frame one skeleton of a batch; checked against the CPU reference
// in double on every frame, and written as a mesh per frame (OBJ, PLY) if asked.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "armature/body/gltf_character.h"
#include "armature/body/mesh_export.h"
#include "armature/device.h"
#include "armature/file_checks.h"
#include "armature/ops/joint_propagation.h"
#include "armature/ops/linear_blend_skinning.h"
#include "armature/read_limits.h"
#include "armature/vk/context.h"

namespace armature::app {

namespace {

std::vector<float> skinFramesGpu(Backend backend, const GltfCharacter& c, const JointForest& forest,
                                 const std::vector<double>& locals, uint32_t frames, double& seconds) {
  std::unique_ptr<vk::Context> ctx;
  if (backend == Backend::Vulkan) ctx = std::make_unique<vk::Context>();
  Device device(ctx.get(), Sharing::VulkanOnly);
  device.require(backend);
  const DeviceJointForest onDevice(device, forest);
  const DeviceSkinWeights skin(device, c.jointCount(), c.influences,
                               std::vector<uint32_t>(c.joints.begin(), c.joints.end()), c.weights);
  const size_t FJ = size_t(frames) * c.jointCount();
  auto floats = [&](size_t n) { return device.allocate(ElementType::Float32, std::max<size_t>(n, 1)); };
  DeviceBuffer affine = device.upload(std::vector<float>(locals.begin(), locals.end()));
  DeviceBuffer inverseBind = device.upload(std::vector<float>(c.inverseBind.begin(), c.inverseBind.end()));
  DeviceBuffer rest = device.upload(c.vertices), globals = floats(FJ * 12), skinning = floats(FJ * 12);
  DeviceBuffer scratch = floats(onDevice.scratchFloats(frames));
  DeviceBuffer positions = floats(size_t(frames) * c.vertexCount() * 3);
  JointPropagationArgs joints{&onDevice, frames,  LocalTransform::Affine, {}, {}, affine, inverseBind,
                              globals,   skinning};
  joints.scratch = scratch;
  const auto start = std::chrono::steady_clock::now();
  device.run(backend, [&](const Exec& exec) {
    propagateJoints(exec, joints);
    linearBlendSkinning(
        exec, {.weights = &skin, .batch = frames, .rest = rest, .skinning = skinning, .positions = positions});
  });
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return positions.download<float>(size_t(frames) * c.vertexCount() * 3);
}

}  // namespace

int runGltf(const GltfOptions& o) {
  const std::string ext = o.output.empty() ? "" : lowerExtension(o.output);
  if (!o.output.empty() && ext != ".obj" && ext != ".ply")
    throw Error(o.output + ": the output must end in .obj or .ply (a mesh per frame)");
  const GltfCharacter c = loadGltfCharacter(o.file);
  for (const std::string& note : c.notes) std::fprintf(stderr, "%s: %s\n", o.file.c_str(), note.c_str());
  if (c.clips.empty() && o.clip > 0) throw Error(o.file + ": has no animation");
  if (!c.clips.empty() && o.clip >= c.clips.size())
    throw Error(o.file + ": clip " + std::to_string(o.clip) + " of " + std::to_string(c.clips.size()));
  const double length = c.clips.empty() ? 0 : c.clips[o.clip].seconds;
  // Every frame is one skeleton of a batch held in memory at once: the count is bounded before anything is sized.
  const double wanted = o.frames ? double(o.frames) : std::floor(length * o.fps) + 1;
  checkLimit(uint64_t(std::min(wanted, 1e18)), readLimits().frames,
             o.file + ": clip " + std::to_string(o.clip) + " at " + std::to_string(o.fps) + " fps", "frames",
             "--frames N takes the first N; ARMATURE_MAX_FRAMES raises the limit");
  const uint32_t frames = uint32_t(wanted);
  const uint64_t perFrame = checkedSum(uint64_t(c.jointCount()) * 24, uint64_t(c.vertexCount()) * 6, o.file);
  checkLimit(checkedProduct({frames, perFrame, sizeof(double)}, o.file), readLimits().totalBytes,
             o.file + ": " + std::to_string(frames) + " frames of " + std::to_string(c.vertexCount()) +
                 " vertices held at once",
             "bytes", "--frames N takes fewer; ARMATURE_READ_BUDGET_MIB raises the limit");
  if (!o.output.empty() && frames > kMaxUnrangedOutputFiles && !o.frames)
    throw Error(o.output + ": the clip has " + std::to_string(frames) + " frames, and one file a frame is more than " +
                std::to_string(kMaxUnrangedOutputFiles) + " files; say how many with --frames N");
  const JointForest forest(c.parents);
  std::vector<double> locals;
  for (uint32_t f = 0; f < frames; ++f) {
    const std::vector<double> l =
        c.clips.empty() ? sampleGltfLocals(c, 0, 0) : sampleGltfLocals(c, o.clip, std::min(f / o.fps, length));
    locals.insert(locals.end(), l.begin(), l.end());
  }
  const Backend backend = chooseBackend(o.backend);
  std::printf("%s: %u joints (depth %u), %u vertices, %u influences; clip %s (%.3g s): %u frames at %g fps\n",
              o.file.c_str(), c.jointCount(), forest.depth(), c.vertexCount(), c.influences,
              c.clips.empty() ? "(none: the rest pose)" : ("'" + c.clips[o.clip].name + "'").c_str(), length, frames,
              o.fps);
  const std::vector<double> want = poseGltfCharacterRef(c, forest, locals, frames).vertices;
  std::vector<double> vertices = want;
  if (backend != Backend::Cpu) {
    double seconds = 0;
    const std::vector<float> got = skinFramesGpu(backend, c, forest, locals, frames, seconds);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {  // written so that a NaN anywhere makes worst NaN, and fails below
      const double d = std::abs(double(got[i]) - want[i]);
      if (!(d <= worst)) worst = d;
      scale = std::max(scale, std::abs(want[i]));
    }
    vertices.assign(got.begin(), got.end());
    std::printf(
        "%s: propagated and skinned in %.2f ms (wall, with submission); largest difference from the double "
        "reference %.3g (%.3g of the largest coordinate)\n",
        backendName(backend), seconds * 1e3, worst, worst / std::max(scale, 1e-30));
    if (!(worst <= 1e-4 * std::max(scale, 1.0)))
      throw Error(std::string(backendName(backend)) + " differs from the reference by " + std::to_string(worst));
  }
  if (o.output.empty()) return 0;
  const size_t V3 = size_t(c.vertexCount()) * 3;
  const std::vector<int32_t> faces(c.indices.begin(), c.indices.end());
  if (frames > 1) std::printf("writing %u files, %s and on\n", frames, numberedPath(o.output, 0).c_str());
  for (uint32_t f = 0; f < frames; ++f) {
    const std::vector<float> frame(vertices.begin() + long(f * V3), vertices.begin() + long((f + 1) * V3));
    const std::string path = frames == 1 ? o.output : numberedPath(o.output, f);
    ext == ".obj" ? writeObj(path, frame, faces) : writePly(path, frame, faces);
  }
  std::printf("wrote %s%s: %u frames\n", o.output.c_str(), frames > 1 ? " (one file per frame)" : "", frames);
  return 0;
}

}  // namespace armature::app
