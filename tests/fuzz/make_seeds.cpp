// Writes the fuzz targets' seed files with the project's own writers: `make_seeds MODEL.npz OUT_DIR` writes
// OUT_DIR/motion/*.npz (AMASS, AMASS split keys, smplx parameters), OUT_DIR/gltf/tiny.glb (MODEL skinned and
// animated), OUT_DIR/volume/ball.npz (a fit-field volume) and OUT_DIR/field/two.npz (a fitted field). The files are
// committed under tests/fuzz/corpus; run this again when a writer changes.
#include <cstdio>
#include <filesystem>
#include <string>

#include "armature/body/body_model.h"
#include "armature/body/gltf_export.h"
#include "armature/body/motion.h"
#include "armature/body/npz.h"

using namespace armature;

namespace {
std::vector<double> ramp(size_t n, double scale) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * double(int(i % 7) - 3);
  return v;
}
}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds MODEL.npz OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[2];
  for (const char* kind : {"motion", "gltf", "volume", "field"}) std::filesystem::create_directories(out + "/" + kind);
  writeNpz(out + "/motion/amass.npz", {{"poses", {{3, 156}, NpyType::F64, ramp(3 * 156, 0.05)}},
                                       {"trans", {{3, 3}, NpyType::F64, ramp(9, 0.1)}},
                                       {"betas", {{16}, NpyType::F64, ramp(16, 0.2)}},
                                       {"mocap_framerate", {{}, NpyType::F64, {120}}}});
  writeNpz(out + "/motion/amass_smplx_split.npz",
           {{"root_orient", {{2, 3}, NpyType::F32, ramp(6, 0.1)}},
            {"pose_body", {{2, 63}, NpyType::F32, ramp(126, 0.05)}},
            {"pose_hand", {{2, 90}, NpyType::F32, ramp(180, 0.05)}},
            {"trans", {{2, 3}, NpyType::F32, ramp(6, 0.1)}}},
           /*deflate=*/true);
  writeNpz(out + "/motion/smplx_params.npz", {{"global_orient", {{1, 3}, NpyType::F32, ramp(3, 0.1)}},
                                              {"body_pose", {{1, 63}, NpyType::F32, ramp(63, 0.05)}},
                                              {"jaw_pose", {{1, 3}, NpyType::F32, ramp(3, 0.05)}},
                                              {"betas", {{1, 10}, NpyType::F32, ramp(10, 0.2)}},
                                              {"expression", {{1, 10}, NpyType::F32, ramp(10, 0.2)}},
                                              {"transl", {{1, 3}, NpyType::F32, ramp(3, 0.1)}}});
  std::vector<double> ball(4 * 4 * 4);
  for (size_t i = 0; i < ball.size(); ++i) ball[i] = (i % 4 == 1 || i % 4 == 2) && (i / 16 == 1 || i / 16 == 2);
  writeNpz(out + "/volume/ball.npz",
           {{"volume", {{4, 4, 4}, NpyType::F32, ball}}, {"bounds", {{2, 3}, NpyType::F32, {-1, -1, -1, 1, 1, 1}}}},
           /*deflate=*/true);
  writeNpz(out + "/field/two.npz", {{"means", {{2, 3}, NpyType::F32, ramp(6, 0.1)}},
                                    {"cholesky", {{2, 6}, NpyType::F32, ramp(12, 0.3)}},
                                    {"weights", {{2, 1}, NpyType::F32, {0.5, -0.25}}}});
  const BodyModel model = loadBodyModel(argv[1]);
  Motion motion;
  motion.fps = 30, motion.frames = 3, motion.jointCount = model.jointCount;
  motion.pose = ramp(size_t(motion.frames) * model.jointCount * 3, 0.1);
  motion.transl = ramp(size_t(motion.frames) * 3, 0.1);
  const GltfRig rig = gltfRig(model, {}, {}, /*influences=*/4);
  writeGlb(out + "/gltf/tiny.glb", model, rig, gltfAnimation(model, rig, motion, /*first=*/0, motion.frames));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "make_seeds: %s\n", e.what());
  return 1;
}
