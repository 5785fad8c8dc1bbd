// The .glb export, read back through tinygltf: the joint hierarchy and names, the inverse bind matrices, the
// weights, and the animation sampled at every frame, skinned as a glTF viewer skins it and compared with our
// skinning (the reference lbs()). Without pose correctives and with every influence kept the two agree to float
// rounding; with them, the difference is what the export reports.
#include <gtest/gtest.h>
#include <tiny_gltf.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "armature/body/gltf_character.h"
#include "armature/body/gltf_export.h"
#include "armature/ops/joint_propagation.h"
#include "armature/error.h"
#include "support/body_fixtures.h"
#include "support/temp_path.h"

using namespace armature;
using namespace armature::test;

namespace {

// An accessor's elements as stored (tightly packed, as the export writes them).
template <typename T>
std::vector<T> accessorData(const tinygltf::Model& g, int index) {
  const tinygltf::Accessor& a = g.accessors.at(size_t(index));
  const tinygltf::BufferView& view = g.bufferViews.at(size_t(a.bufferView));
  const size_t width = size_t(tinygltf::GetNumComponentsInType(uint32_t(a.type)));
  std::vector<T> out(a.count * width);
  EXPECT_EQ(size_t(tinygltf::GetComponentSizeInBytes(uint32_t(a.componentType))), sizeof(T));
  EXPECT_LE(a.byteOffset + out.size() * sizeof(T), view.byteLength);
  std::memcpy(out.data(), g.buffers.at(size_t(view.buffer)).data.data() + view.byteOffset + a.byteOffset,
              out.size() * sizeof(T));
  return out;
}

// A model whose vertices have up to 6 influences (the random fixture has up to 4), and a motion of T frames.
BodyModel sixInfluenceModel(uint32_t J, std::mt19937_64& rng) {
  BodyModel m = randomBodyModel(83, J, 10, 10, rng);
  std::uniform_real_distribution<double> u(0.05, 1);
  for (size_t v = 0; v < m.vertexCount; ++v) {
    double* w = &m.weights[v * J];
    for (int k = 0; k < 2; ++k) w[rng() % J] += u(rng);
    double sum = 0;
    for (size_t j = 0; j < J; ++j) sum += w[j];
    for (size_t j = 0; j < J; ++j) w[j] /= sum;
  }
  return m;
}

Motion randomMotion(const BodyModel& m, uint32_t frames, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-0.6, 0.6);
  Motion motion;
  motion.fps = 24;
  motion.frames = frames;
  motion.jointCount = m.jointCount;
  motion.pose.resize(size_t(frames) * m.jointCount * 3);
  for (double& x : motion.pose) x = u(rng);
  motion.transl.resize(size_t(frames) * 3);
  for (double& x : motion.transl) x = u(rng);
  motion.betas.resize(10);
  for (double& x : motion.betas) x = 2 * u(rng);
  return motion;
}

double maxDistance(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t v = 0; v < a.size() / 3; ++v)
    worst = std::max(worst, std::hypot(a[v * 3] - b[v * 3], a[v * 3 + 1] - b[v * 3 + 1], a[v * 3 + 2] - b[v * 3 + 2]));
  return worst;
}

}  // namespace

TEST(GltfExport, RoundTripThroughTinygltfMatchesOurSkinning) {
  for (uint32_t influences : {4u, 8u}) {
    SCOPED_TRACE("influences " + std::to_string(influences));
    std::mt19937_64 rng(21 + influences);
    const uint32_t J = 24, T = 7;
    const BodyModel model = sixInfluenceModel(J, rng);
    const Motion motion = randomMotion(model, T, rng);
    const uint32_t first = 2, count = 4;
    const GltfRig rig = gltfRig(model, motion.betas, {}, influences);
    const GltfAnimation animation = gltfAnimation(model, rig, motion, first, count);
    if (influences == 8)
      EXPECT_EQ(rig.maxDroppedWeight, 0.0);
    else
      EXPECT_GT(rig.maxDroppedWeight, 0.01);
    const std::string path = tempPath("export.glb");
    writeGlb(path, model, rig, animation);

    tinygltf::Model g;
    tinygltf::TinyGLTF loader;
    std::string error, warning;
    ASSERT_TRUE(loader.LoadBinaryFromFile(&g, &error, &warning, path)) << error;
    EXPECT_TRUE(error.empty()) << error;
    // The hierarchy: one node per joint, named, each joint a child of its parent, the mesh node skinned.
    ASSERT_EQ(g.nodes.size(), J + 1);
    std::vector<int> parentOf(J + 1, -1);
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int c : g.nodes[n].children) parentOf[size_t(c)] = int(n);
    for (uint32_t j = 0; j < J; ++j) {
      EXPECT_EQ(parentOf[j], model.parents[j]) << "joint " << j;
      EXPECT_EQ(g.nodes[j].name, model.jointNames[j]);
    }
    ASSERT_EQ(g.skins.size(), 1u);
    EXPECT_EQ(g.nodes[J].skin, 0);
    EXPECT_EQ(g.skins[0].joints.size(), J);
    // The bind pose: each inverse bind matrix undoes its joint's rest location.
    const std::vector<float> inverseBind = accessorData<float>(g, g.skins[0].inverseBindMatrices);
    for (uint32_t j = 0; j < J; ++j)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(inverseBind[j * 16 + 12 + uint32_t(c)], -rig.joints[j * 3 + uint32_t(c)]);

    // The rig and animation rebuilt from the file alone.
    GltfRig loaded;
    loaded.influences = influences;
    const tinygltf::Primitive& prim = g.meshes.at(0).primitives.at(0);
    loaded.vertices = accessorData<float>(g, prim.attributes.at("POSITION"));
    EXPECT_EQ(accessorData<uint32_t>(g, prim.indices), std::vector<uint32_t>(model.faces.begin(), model.faces.end()));
    loaded.indices.assign(model.vertexCount * influences, 0);
    loaded.weights.assign(model.vertexCount * influences, 0);
    for (uint32_t set = 0; set < influences / 4; ++set) {
      const auto joints = accessorData<uint16_t>(g, prim.attributes.at("JOINTS_" + std::to_string(set)));
      const auto weights = accessorData<float>(g, prim.attributes.at("WEIGHTS_" + std::to_string(set)));
      for (size_t v = 0; v < model.vertexCount; ++v)
        for (size_t k = 0; k < 4; ++k) {
          loaded.indices[v * influences + set * 4 + k] = joints[v * 4 + k];
          loaded.weights[v * influences + set * 4 + k] = weights[v * 4 + k];
        }
    }
    // Rest joints from the inverse bind matrices; the children's node translations are the rest offsets.
    loaded.joints.resize(J * 3);
    for (size_t j = 0; j < J; ++j)
      for (size_t c = 0; c < 3; ++c) loaded.joints[j * 3 + c] = -inverseBind[j * 16 + 12 + c];
    for (size_t j = 0; j < J; ++j)
      for (size_t c = 0; c < 3 && model.parents[j] >= 0; ++c)
        EXPECT_NEAR(g.nodes[j].translation[c],
                    loaded.joints[j * 3 + c] - loaded.joints[size_t(model.parents[j]) * 3 + c], 1e-6);
    GltfAnimation clip;
    clip.frames = count;
    clip.rotations.assign(size_t(count) * J * 4, 0);
    ASSERT_EQ(g.animations.size(), 1u);
    const tinygltf::Animation& anim = g.animations[0];
    EXPECT_EQ(anim.channels.size(), J + 1);
    for (const tinygltf::AnimationChannel& ch : anim.channels) {
      const tinygltf::AnimationSampler& s = anim.samplers.at(size_t(ch.sampler));
      EXPECT_EQ(s.interpolation, "LINEAR");
      const std::vector<float> times = accessorData<float>(g, s.input);
      ASSERT_EQ(times.size(), count);
      EXPECT_FLOAT_EQ(times[3], 3.0f / 24.0f);
      const std::vector<float> values = accessorData<float>(g, s.output);
      if (ch.target_path == "translation") {
        clip.rootTranslation = values;
      } else {
        ASSERT_EQ(ch.target_path, "rotation");
        for (size_t t = 0; t < count; ++t)
          std::memcpy(&clip.rotations[(t * J + size_t(ch.target_node)) * 4], &values[t * 4], 16);
      }
    }
    EXPECT_EQ(clip.rotations, animation.rotations);
    EXPECT_EQ(clip.rootTranslation, animation.rootTranslation);

    // Skinned from the file against our lbs(): to float rounding without pose correctives (every influence kept:
    // 8), and with the difference the correctives make otherwise.
    BodyModel noCorrectives = model;
    std::fill(noCorrectives.poseDirs.begin(), noCorrectives.poseDirs.end(), 0.0);
    BodyParams p = BodyParams::zeros(model, count, 10, 10);
    for (uint32_t t = 0; t < count; ++t) {
      std::copy_n(&motion.pose[(first + t) * J * 3], J * 3, &p.pose[t * J * 3]);
      std::copy_n(&motion.transl[(first + t) * 3], 3, &p.transl[t * 3]);
      std::copy_n(motion.betas.data(), 10, &p.betas[t * 10]);
    }
    const BodyOutput rigid = bodyForwardRef(noCorrectives, p), full = bodyForwardRef(model, p);
    const size_t V3 = size_t(model.vertexCount) * 3;
    for (uint32_t t = 0; t < count; ++t) {
      const std::vector<double> exported = gltfSkin(model, loaded, clip, t);
      const std::vector<double> want(rigid.vertices.begin() + long(t * V3),
                                     rigid.vertices.begin() + long((t + 1) * V3));
      const std::vector<double> withCorrectives(full.vertices.begin() + long(t * V3),
                                                full.vertices.begin() + long((t + 1) * V3));
      // Float storage of positions (~1), joints and quaternions: a few ulps through a chain of up to 24 joints.
      if (influences == 8) {
        EXPECT_LT(maxDistance(exported, want), 2e-5) << "frame " << t;
      } else {
        EXPECT_GT(maxDistance(exported, want), 1e-3) << "frame " << t << ": nothing dropped?";
      }
      EXPECT_GT(maxDistance(exported, withCorrectives), 1e-4) << "frame " << t << ": the correctives count";
      EXPECT_EQ(exported, gltfSkin(model, rig, animation, t));
    }
    std::filesystem::remove(path);
  }
}

// The export loaded as a glTF character and played through joint propagation and linear blend skinning: the same
// vertices as skinning the export directly, on every key frame.
TEST(GltfCharacter, ExportedAvatarPlaysThroughJointPropagation) {
  std::mt19937_64 rng(31);
  const uint32_t J = 24;
  const BodyModel model = sixInfluenceModel(J, rng);
  const Motion motion = randomMotion(model, 5, rng);
  const GltfRig rig = gltfRig(model, motion.betas, {}, 8);
  const GltfAnimation animation = gltfAnimation(model, rig, motion, 0, 5);
  const std::string path = tempPath("character.glb");
  writeGlb(path, model, rig, animation);
  const GltfCharacter c = loadGltfCharacter(path);
  EXPECT_EQ(c.jointCount(), J);
  EXPECT_EQ(c.parents, model.parents);
  EXPECT_EQ(c.influences, 8u);
  EXPECT_EQ(c.vertexCount(), model.vertexCount);
  ASSERT_EQ(c.clips.size(), 1u);
  EXPECT_NEAR(c.clips[0].seconds, 4.0 / 24.0, 1e-6);
  const JointForest forest(c.parents);
  for (uint32_t t = 0; t < 5; ++t) {
    JointLocalsRef locals;
    locals.kind = LocalTransform::Affine;
    locals.affine = sampleGltfLocals(c, 0, t / 24.0);
    locals.inverseBind = c.inverseBind;
    const JointGlobalsRef out = propagateJointsRef(forest, locals);
    std::vector<double> skinned(c.vertexCount() * 3, 0.0);
    for (size_t v = 0; v < c.vertexCount(); ++v)
      for (size_t k = 0; k < c.influences; ++k) {
        const double w = c.weights[v * c.influences + k];
        const double* m = &out.skinning[size_t(c.joints[v * c.influences + k]) * 12];
        for (size_t r = 0; r < 3; ++r)
          skinned[v * 3 + r] += w * (m[r * 4] * c.vertices[v * 3] + m[r * 4 + 1] * c.vertices[v * 3 + 1] +
                                     m[r * 4 + 2] * c.vertices[v * 3 + 2] + m[r * 4 + 3]);
      }
    EXPECT_LT(maxDistance(skinned, gltfSkin(model, rig, animation, t)), 2e-5) << "frame " << t;
  }
  std::filesystem::remove(path);
}

// STEP and CUBICSPLINE as glTF defines them, on a translation channel with two keys one second apart.
TEST(GltfCharacter, StepAndCubicSplineChannels) {
  GltfCharacter c;
  c.parents = {-1};
  c.restTrs = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  c.rootParent = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
  GltfChannel step;
  step.interpolation = GltfChannel::Interpolation::Step;
  step.times = {0, 1};
  step.values = {0, 0, 0, 1, 0, 0};
  GltfChannel cubic = step;
  cubic.interpolation = GltfChannel::Interpolation::CubicSpline;
  // Per key: in-tangent, value, out-tangent. Key 0 leaves with slope 2 along x.
  cubic.values = {0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
  c.clips = {{"step", 1, {step}}, {"cubic", 1, {cubic}}};
  EXPECT_EQ(sampleGltfLocals(c, 0, 0.5)[3], 0.0);  // holds key 0
  EXPECT_EQ(sampleGltfLocals(c, 0, 1.5)[3], 1.0);  // clamped to the last key
  // Hermite at s = 0.5: 0.5·v0 + 0.125·(slope 2 × 1 s) + 0.5·v1 = 0.75.
  EXPECT_NEAR(sampleGltfLocals(c, 1, 0.5)[3], 0.75, 1e-12);
  EXPECT_EQ(sampleGltfLocals(c, 1, 1.0)[3], 1.0);
}

TEST(GltfCharacter, FilesWithoutASkinnedMeshAreRefused) {
  const std::string path = tempPath("unskinned.gltf");
  std::ofstream(path) << R"({"asset": {"version": "2.0"}, "nodes": [{"name": "empty"}], "scenes": [{"nodes": [0]}]})";
  try {
    loadGltfCharacter(path);
    ADD_FAILURE() << "loaded a file without a skin";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no skinned mesh"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "not json";
  EXPECT_THROW(loadGltfCharacter(path), Error);
  std::filesystem::remove(path);
}

TEST(GltfExport, BadArgumentsAreClearErrors) {
  std::mt19937_64 rng(3);
  const BodyModel model = randomBodyModel(20, 24, 10, 0, rng);
  EXPECT_THROW(gltfRig(model, {}, {}, 6), Error);
  const GltfRig rig = gltfRig(model, {}, {}, 4);
  const Motion motion = randomMotion(model, 3, rng);
  EXPECT_THROW(gltfAnimation(model, rig, motion, 2, 2), Error);
  Motion wrong = motion;
  wrong.jointCount = 55;
  EXPECT_THROW(gltfAnimation(model, rig, wrong, 0, 1), Error);
  const GltfAnimation animation = gltfAnimation(model, rig, motion, 0, 3);
  EXPECT_THROW(gltfSkin(model, rig, animation, 3), Error);
  EXPECT_THROW(writeGlb("/nonexistent-dir/x.glb", model, rig, animation), Error);
}

// Weights that do not sum to 1 (exporters that skip normalising write such files) are rescaled with a note that
// says how many and by how much; a file whose weights sum to 1 gets none.
TEST(GltfCharacter, RescaledWeightsAreNoted) {
  std::mt19937_64 rng(5);
  const BodyModel model = sixInfluenceModel(24, rng);
  const Motion motion = randomMotion(model, 2, rng);
  GltfRig rig = gltfRig(model, motion.betas, {}, 4);
  const GltfAnimation animation = gltfAnimation(model, rig, motion, 0, 2);
  const std::string path = tempPath("weights.glb");
  writeGlb(path, model, rig, animation);
  EXPECT_TRUE(loadGltfCharacter(path).notes.empty());
  for (float& w : rig.weights) w *= 0.18f;
  writeGlb(path, model, rig, animation);
  const GltfCharacter c = loadGltfCharacter(path);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("of " + std::to_string(model.vertexCount) + " vertices sum to 0.18"), std::string::npos)
      << c.notes[0];
  double sum = 0;
  for (uint32_t k = 0; k < c.influences; ++k) sum += c.weights[k];
  EXPECT_NEAR(sum, 1.0, 1e-6);
  std::filesystem::remove(path);
}
