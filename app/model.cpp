#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include "app/commands.h"
#include "app/poses.h"
#include "armature/body/motion.h"
#include "armature/error.h"
#include "armature/body/synth.h"

namespace armature::app {

int runModelInfo(const std::string& path) {
  NpzReader archive = openArrayFile(path);
  BodyModel m = bodyModelFromNpz(archive);
  std::set<int32_t> used(m.faces.begin(), m.faces.end());
  std::printf("%s: %s model\n", path.c_str(), m.kindName());
  std::printf("  vertices %u (%zu referenced by faces), faces %u, joints %u\n", m.vertexCount, used.size(), m.faceCount,
              m.jointCount);
  std::printf("  shape directions %u, expression directions %u, pose correctives %u\n", m.shapeCount, m.exprCount,
              m.poseFeatureCount());
  std::printf("  hand PCA %s, landmarks %s, UVs %s\n", m.hasHandPca() ? "yes" : "no",
              m.lmkFacesIdx.empty() ? "no" : (std::to_string(m.lmkFacesIdx.size())).c_str(),
              m.vt.empty() ? "no" : (std::to_string(m.vt.size() / 2) + " texture coordinates").c_str());
  std::printf("  entries (key dtype shape; * = not read: a dtype the loader leaves alone):\n");
  for (const NpzEntry& e : archive.entries()) {
    NpyArray shape;
    shape.shape = e.shape;
    std::printf("    %-24s %-6s %s%s\n", e.key.c_str(), e.dtype.c_str(), shape.shapeString().c_str(),
                e.readable ? "" : " *");
  }
  std::printf("  joints (index name <- parent):\n");
  for (uint32_t j = 0; j < m.jointCount; ++j)
    std::printf("    %2u %-20s <- %s\n", j, m.jointNames[j].c_str(),
                m.parents[j] < 0 ? "(root)" : m.jointNames[size_t(m.parents[j])].c_str());
  return 0;
}

int runMotionSynth(const std::string& kind, const std::string& modelPath, const std::string& out, double seconds,
                   double fps) {
  ARM_CHECK(kind == "walk", "motion synth: '%s' is not a motion this makes (walk)", kind.c_str());
  const BodyModel model = loadModelOrDefault(modelPath);
  // A stride a second, forward along +z (the model's facing direction, y up) at a walker's 1.1 m/s; the length a
  // whole number of strides, so that the clip loops.
  const double stride = 1.0, speed = 1.1;
  const double strides = std::max(1.0, std::round(seconds / stride));
  const uint32_t frames = std::max<uint32_t>(1, uint32_t(std::lround(strides * stride * fps)));
  BodyParams p = BodyParams::zeros(model, frames, std::min(10u, model.shapeCount), std::min(10u, model.exprCount));
  const size_t J3 = size_t(model.jointCount) * 3;
  for (uint32_t t = 0; t < frames; ++t) {
    const double time = t / fps;
    walkCycle(model, 2 * M_PI * time / stride, p.pose.data() + t * J3);
    p.transl[size_t(t) * 3 + 2] = speed * time;
  }
  writeMotionParameters(out, model, p, fps);
  std::printf("wrote %s: a %s, %u frames at %g fps (%.2f s), smplx parameters for %s\n", out.c_str(), kind.c_str(),
              frames, fps, frames / fps, modelPath.empty() ? "the default avatar" : modelPath.c_str());
  return 0;
}

int runModelSynth(const std::string& out, uint64_t seed) {
  auto t0 = std::chrono::steady_clock::now();
  BodyModel m = synthesizeBodyModel({seed});
  saveBodyModel(m, out);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: synthetic SMPL-X-compatible model (seed %llu), %u vertices, %u faces, %u joints, %.1f s\n",
              out.c_str(), (unsigned long long)seed, m.vertexCount, m.faceCount, m.jointCount, s);
  return 0;
}

}  // namespace armature::app
