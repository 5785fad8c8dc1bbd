// `armature pose MODEL --motion FILE -o OUT`: a motion (AMASS or smplx parameters) through a body model, skinned in
// batches on the chosen backend, written as a mesh per frame (OBJ, PLY), as a skinned and animated glTF (.glb, with
// its vertex error against the skinning measured on every frame) or as every frame's joints (.npy, CSV).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "armature/body/gltf_export.h"
#include "armature/body/mesh_export.h"
#include "armature/body/motion.h"
#include "armature/device.h"
#include "armature/read_limits.h"
#include "armature/file_checks.h"
#include "armature/ops/skinning.h"
#include "armature/vk/context.h"

namespace armature::app {

namespace {

constexpr uint32_t kBatch = 64;  // frames skinned per call

// OUT for frame `frame` of `frames`: OUT itself for one frame, else OUT's stem with the frame number.
std::string framePath(const std::string& out, uint32_t frame, uint32_t frames) {
  return frames == 1 ? out : numberedPath(out, frame);
}

// Skins frames [first, first + count) with the CPU reference or a GPU backend; vertices (count,V,3) and joints
// (count,J,3) as floats.
class Skinner {
 public:
  Skinner(const BodyModel& model, Backend backend, uint32_t S, uint32_t E)
      : m_model(model), m_backend(backend), m_S(S), m_E(E) {
    if (backend == Backend::Cpu) return;
    if (backend == Backend::Vulkan) m_ctx = std::make_unique<vk::Context>();
    m_device = std::make_unique<Device>(m_ctx.get(), Sharing::VulkanOnly);
    m_device->require(backend);
    m_skinning = std::make_unique<Skinning>(*m_device, backend, model, S, E, kBatch);
    // A batch's parameters and outputs, allocated once for the largest batch.
    const size_t J3 = size_t(model.jointCount) * 3;
    for (auto [buffer, count] : {std::pair{&m_pose, J3},
                                 {&m_betas, size_t(std::max(S, 1u))},
                                 {&m_expression, size_t(std::max(E, 1u))},
                                 {&m_transl, size_t(3)},
                                 {&m_vertices, size_t(model.vertexCount) * 3},
                                 {&m_joints, J3}})
      *buffer = m_device->allocate(ElementType::Float32, count * kBatch);
  }
  void run(const BodyParams& p, std::vector<float>& vertices, std::vector<float>& joints) {
    if (m_backend == Backend::Cpu) {
      const BodyOutput out = bodyForwardRef(m_model, p);
      vertices.assign(out.vertices.begin(), out.vertices.end());
      joints.assign(out.joints.begin(), out.joints.end());
      return;
    }
    // The batch's parameters into the first rows of the buffers; views of exactly the batch's size.
    auto put = [](DeviceBuffer& b, const std::vector<double>& v) {
      const std::vector<float> f(v.begin(), v.end());
      b.upload(std::span<const float>(f));
      return b.view().slice(0, f.size());
    };
    const DeviceView pose = put(m_pose, p.pose), betas = put(m_betas, p.betas),
                     expression = put(m_expression, p.expression), transl = put(m_transl, p.transl);
    const DeviceView v = m_vertices.view().slice(0, size_t(p.batch) * m_model.vertexCount * 3),
                     j = m_joints.view().slice(0, size_t(p.batch) * m_model.jointCount * 3);
    m_device->run(m_backend, [&](const Exec& exec) {
      m_skinning->forward(exec, {.batch = p.batch,
                                 .pose = pose,
                                 .betas = betas,
                                 .expression = expression,
                                 .transl = transl,
                                 .vertices = v,
                                 .joints = j});
    });
    vertices = m_vertices.download<float>(v.count);
    joints = m_joints.download<float>(j.count);
  }

 private:
  const BodyModel& m_model;
  Backend m_backend;
  uint32_t m_S, m_E;
  std::unique_ptr<vk::Context> m_ctx;
  std::unique_ptr<Device> m_device;
  std::unique_ptr<Skinning> m_skinning;
  DeviceBuffer m_pose, m_betas, m_expression, m_transl, m_vertices, m_joints;
};

}  // namespace

int runPose(const PoseOptions& o) {
  const std::string ext = lowerExtension(o.output);
  const bool meshes = ext == ".obj" || ext == ".ply", glb = ext == ".glb", jointsOut = ext == ".npy" || ext == ".csv";
  if (!meshes && !glb && !jointsOut)
    throw Error(o.output +
                ": the output must end in .obj or .ply (a mesh per frame), .glb (an animated glTF) or .npy or .csv "
                "(joints)");
  const BodyModel model = loadBodyModel(o.model);
  Motion motion = loadMotion(o.motion, model);
  if (o.fps > 0) motion = resampleMotion(motion, o.fps);
  if (glb) motion = yUp(motion);  // glTF's world is y-up
  const uint32_t first = std::min(o.firstFrame, motion.frames);
  const uint32_t last = std::min(o.endFrame, motion.frames);
  if (first >= last)
    throw Error(o.motion + ": frames [" + std::to_string(o.firstFrame) + ", " + std::to_string(o.endFrame) +
                ") select nothing of its " + std::to_string(motion.frames));
  const uint32_t frames = last - first;
  if (meshes && frames > kMaxUnrangedOutputFiles && o.endFrame == UINT32_MAX)
    throw Error(o.output + ": " + std::to_string(frames) + " frames, and one mesh file a frame is more than " +
                std::to_string(kMaxUnrangedOutputFiles) + " files; choose the frames with --frames FIRST:END");
  if (meshes && frames > 1)
    std::fprintf(stderr, "writing %u files, %s and on\n", frames, framePath(o.output, first, frames).c_str());
  const uint32_t S = std::min<uint32_t>(uint32_t(std::max<size_t>(motion.betas.size(), 1)), model.shapeCount);
  const uint32_t E = std::min<uint32_t>(uint32_t(motion.expression.size() / motion.frames), model.exprCount);
  const Backend backend = chooseBackend(o.backend);
  std::fprintf(stderr, "%s: %s\n", o.motion.c_str(), motion.description.c_str());
  GltfRig rig;
  GltfAnimation animation;
  if (glb) {
    const BodyParams shape = motionFrames(model, motion, first, 1, S, E);
    rig = gltfRig(model, shape.betas, shape.expression, o.influences);
    animation = gltfAnimation(model, rig, motion, first, frames);
  }
  double maxError = 0, sumError = 0;  // the .glb's vertices against our skinning, metres
  Skinner skinner(model, backend, S, E);
  std::vector<float> allJoints, vertices, joints;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t done = 0; done < frames;) {
    const uint32_t count = std::min(kBatch, frames - done);
    skinner.run(motionFrames(model, motion, first + done, count, S, E), vertices, joints);
    const size_t V3 = size_t(model.vertexCount) * 3;
    for (uint32_t b = 0; b < count && meshes; ++b) {
      const std::vector<float> frame(vertices.begin() + long(b * V3), vertices.begin() + long((b + 1) * V3));
      const std::string path = framePath(o.output, first + done + b, frames);
      ext == ".obj" ? writeObj(path, frame, model.faces) : writePly(path, frame, model.faces);
    }
    for (uint32_t b = 0; b < count && glb; ++b) {
      const std::vector<double> exported = gltfSkin(model, rig, animation, done + b);
      for (size_t v = 0; v < model.vertexCount; ++v) {
        double d2 = 0;
        for (size_t c = 0; c < 3; ++c) {
          const double d = exported[v * 3 + c] - double(vertices[b * V3 + v * 3 + c]);
          d2 += d * d;
        }
        maxError = std::max(maxError, std::sqrt(d2));
        sumError += std::sqrt(d2);
      }
    }
    allJoints.insert(allJoints.end(), joints.begin(), joints.end());
    done += count;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\r%s: %u/%u frames, %.0f frames/s", backendName(backend), done, frames,
                 done / std::max(seconds, 1e-9));
  }
  std::fprintf(stderr, "\n");
  if (ext == ".npy") writeJointsNpy(o.output, allJoints, frames, model.jointCount);
  if (ext == ".csv") writeJointsCsv(o.output, allJoints, frames, model.jointCount);
  if (glb) {
    writeGlb(o.output, model, rig, animation);
    std::printf(
        "glb: %u joints, %u influences per vertex (largest weight dropped %.3g), %u frames at %g fps; vertex error "
        "against %s skinning: max %.2f mm, mean %.2f mm (glTF skinning has no pose correctives%s)\n",
        model.jointCount, rig.influences, rig.maxDroppedWeight, frames, motion.fps, backendName(backend),
        maxError * 1e3, sumError / (double(frames) * model.vertexCount) * 1e3,
        E > 0 ? " and keeps the first frame's expression" : "");
  }
  std::printf("wrote %s%s: %u frames\n", o.output.c_str(), meshes && frames > 1 ? " (one file per frame)" : "", frames);
  return 0;
}

}  // namespace armature::app
