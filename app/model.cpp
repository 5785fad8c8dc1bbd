#include <chrono>
#include <cstdio>
#include <set>

#include "app/commands.h"
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
