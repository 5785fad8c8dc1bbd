// Motion in: AMASS sequences of both layouts and smplx parameter files, written here in their released layouts,
// mapped into a model's joint layout, resampled, and refused with a clear error when they do not fit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <random>

#include "armature/body/motion.h"
#include "armature/error.h"
#include "support/body_fixtures.h"
#include "support/temp_path.h"

using namespace armature;
using namespace armature::test;

namespace {

std::vector<double> uniformValues(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

NpyWrite f64(std::vector<size_t> shape, std::vector<double> values) {
  return {std::move(shape), NpyType::F64, std::move(values)};
}

// An AMASS file: the arrays, plus the string entry AMASS writes for the gender.
std::string writeAmass(const std::string& name, std::map<std::string, NpyWrite> arrays) {
  std::map<std::string, std::vector<uint8_t>> entries;
  for (const auto& [key, array] : arrays) entries[key] = encodeNpy(array);
  entries["gender"] = rawNpy("<U6", "()", std::vector<uint8_t>(24, 0));
  const std::string path = tempPath(name);
  writeNpzEntries(path, entries, true);
  return path;
}

BodyModel modelWithJoints(uint32_t joints) {
  std::mt19937_64 rng(3);
  return randomBodyModel(40, joints, 10, 10, rng);
}

void expectError(const std::function<void()>& load, const std::vector<std::string>& parts) {
  try {
    load();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

// The rule, joint by joint: body shared, fingers shared by SMPL+H and SMPL-X, the rest dropped (or left zero).
TEST(Motion, JointLayoutsMapByTheStatedRule) {
  using L = JointLayout;
  for (uint32_t j = 0; j < 22; ++j)
    for (L from : {L::Smpl, L::SmplH, L::SmplX})
      for (L to : {L::Smpl, L::SmplH, L::SmplX}) EXPECT_EQ(mapJoint(from, to, j), int(j));
  EXPECT_EQ(mapJoint(L::SmplH, L::SmplX, 22), 25);  // left index 1
  EXPECT_EQ(mapJoint(L::SmplH, L::SmplX, 51), 54);
  EXPECT_EQ(mapJoint(L::SmplX, L::SmplH, 25), 22);
  EXPECT_EQ(mapJoint(L::SmplX, L::SmplH, 22), -1);  // jaw
  EXPECT_EQ(mapJoint(L::SmplX, L::SmplH, 24), -1);  // right eye
  EXPECT_EQ(mapJoint(L::SmplH, L::Smpl, 30), -1);   // fingers
  EXPECT_EQ(mapJoint(L::Smpl, L::SmplX, 23), -1);   // SMPL's right hand joint
  EXPECT_EQ(mapJoint(L::Smpl, L::Smpl, 23), 23);
  EXPECT_THROW(mapJoint(L::Smpl, L::SmplX, 24), Error);
  EXPECT_EQ(jointLayoutOf(55), L::SmplX);
  EXPECT_THROW(jointLayoutOf(16), Error);
}

// An AMASS SMPL+H sequence into an SMPL-X model: body and fingers in place, jaw and eyes zero, translation, betas
// and frame rate as written. The split SMPL-X keys give the same as one (T, 165) array.
TEST(Motion, AmassSequencesOfBothLayoutsLoad) {
  const BodyModel smplx = modelWithJoints(55);
  const uint32_t T = 7;
  const std::vector<double> poses = uniformValues(T * 156, -0.6, 0.6, 1), trans = uniformValues(T * 3, -1, 1, 2);
  const std::string path = writeAmass("smplh.npz", {{"poses", f64({T, 156}, poses)},
                                                    {"trans", f64({T, 3}, trans)},
                                                    {"betas", f64({16}, uniformValues(16, -1, 1, 3))},
                                                    {"mocap_framerate", f64({}, {120.0})}});
  const Motion m = loadMotion(path, smplx);
  EXPECT_EQ(m.frames, T);
  EXPECT_EQ(m.fps, 120.0);
  EXPECT_EQ(m.transl, trans);
  EXPECT_EQ(m.betas.size(), 16u);
  EXPECT_NE(m.description.find("SMPL+H"), std::string::npos) << m.description;
  for (uint32_t t = 0; t < T; ++t)
    for (uint32_t j = 0; j < 55; ++j)
      for (uint32_t c = 0; c < 3; ++c) {
        const double got = m.pose[(t * 55 + j) * 3 + c];
        const double want = j < 22 ? poses[(t * 52 + j) * 3 + c] : j < 25 ? 0.0 : poses[(t * 52 + j - 3) * 3 + c];
        ASSERT_EQ(got, want) << "frame " << t << " joint " << j;
      }
  std::filesystem::remove(path);

  // SMPL-X: one array, and the same data in the split keys.
  const std::vector<double> full = uniformValues(T * 165, -0.6, 0.6, 4);
  const std::string one = writeAmass(
      "smplx.npz",
      {{"poses", f64({T, 165}, full)}, {"trans", f64({T, 3}, trans)}, {"mocap_frame_rate", f64({}, {60.0})}});
  auto part = [&](uint32_t firstJoint, uint32_t joints) {
    std::vector<double> out;
    for (uint32_t t = 0; t < T; ++t)
      out.insert(out.end(), full.begin() + (t * 55 + firstJoint) * 3,
                 full.begin() + (t * 55 + firstJoint + joints) * 3);
    return f64({T, size_t(joints) * 3}, out);
  };
  const std::string split = writeAmass("smplx_split.npz", {{"root_orient", part(0, 1)},
                                                           {"pose_body", part(1, 21)},
                                                           {"pose_jaw", part(22, 1)},
                                                           {"pose_eye", part(23, 2)},
                                                           {"pose_hand", part(25, 30)},
                                                           {"trans", f64({T, 3}, trans)},
                                                           {"mocap_frame_rate", f64({}, {60.0})}});
  const Motion a = loadMotion(one, smplx), b = loadMotion(split, smplx);
  EXPECT_EQ(a.pose, full);
  EXPECT_EQ(b.pose, full);
  EXPECT_EQ(b.fps, 60.0);
  // Into an SMPL+H model: jaw and eyes dropped, fingers moved down.
  const Motion h = loadMotion(one, modelWithJoints(52));
  EXPECT_EQ(h.pose[(2 * 52 + 22) * 3], full[(2 * 55 + 25) * 3]);
  std::filesystem::remove(one);
  std::filesystem::remove(split);
}

// smplx parameter files: a single frame with the full hand poses, and SMPL's (T, 69) body pose.
TEST(Motion, SmplxParameterFilesLoad) {
  const BodyModel smplx = modelWithJoints(55);
  const std::vector<double> body = uniformValues(63, -0.5, 0.5, 5), left = uniformValues(45, -0.5, 0.5, 6);
  const std::string path = tempPath("params.npz");
  writeNpz(path, {{"global_orient", f64({1, 3}, {0.1, 0.2, 0.3})},
                  {"body_pose", f64({1, 63}, body)},
                  {"left_hand_pose", f64({1, 45}, left)},
                  {"right_hand_pose", f64({1, 45}, std::vector<double>(45, 0.0))},
                  {"jaw_pose", f64({1, 3}, {0.4, 0, 0})},
                  {"betas", f64({1, 10}, uniformValues(10, -1, 1, 7))},
                  {"expression", f64({1, 10}, uniformValues(10, -1, 1, 8))},
                  {"transl", f64({1, 3}, {1, 2, 3})}});
  const Motion m = loadMotion(path, smplx);
  ASSERT_EQ(m.frames, 1u);
  EXPECT_EQ(m.pose[0], 0.1);
  EXPECT_EQ(m.pose[3], body[0]);
  EXPECT_EQ(m.pose[22 * 3], 0.4);      // jaw
  EXPECT_EQ(m.pose[25 * 3], left[0]);  // full hand poses; this model has no mean hand to add
  EXPECT_EQ(m.transl, (std::vector<double>{1, 2, 3}));
  const BodyParams p = motionFrames(smplx, m, 0, 1, 10, 10);
  EXPECT_EQ(p.expression.size(), 10u);
  EXPECT_NO_THROW(bodyForwardRef(smplx, p));
  std::filesystem::remove(path);

  const std::string smplPath = tempPath("smpl_params.npz");
  const std::vector<double> smplBody = uniformValues(3 * 69, -0.5, 0.5, 9);
  writeNpz(smplPath,
           {{"global_orient", f64({3, 3}, std::vector<double>(9, 0.2))}, {"body_pose", f64({3, 69}, smplBody)}});
  const Motion s = loadMotion(smplPath, modelWithJoints(24));
  ASSERT_EQ(s.frames, 3u);
  EXPECT_EQ(s.pose[72 + 3], smplBody[69]);
  std::filesystem::remove(smplPath);
}

// Hands as PCA coefficients (fewer than 45 values per hand), as SMPLify-X writes them: the full pose is what smplx
// builds with use_pca=True and flat_hand_mean=False, as .npz and as .pkl.
TEST(Motion, PcaHandParameterFilesLoad) {
  BodyModel model = modelWithJoints(55);
  model.handsComponentsL = uniformValues(45 * 45, -1, 1, 11);
  model.handsComponentsR = uniformValues(45 * 45, -1, 1, 12);
  model.handsMeanL = uniformValues(45, -0.3, 0.3, 13);
  model.handsMeanR = uniformValues(45, -0.3, 0.3, 14);
  SmplxPose p;
  p.globalOrient = uniformValues(3, -0.5, 0.5, 15);
  p.bodyPose = uniformValues(63, -0.5, 0.5, 16);
  p.jaw = p.leye = p.reye = {0, 0, 0};
  p.leftHand = uniformValues(6, -1, 1, 17);
  p.rightHand = uniformValues(6, -1, 1, 18);
  const std::string path = tempPath("pca_hands.npz");
  writeNpz(path, {{"global_orient", f64({1, 3}, p.globalOrient)},
                  {"body_pose", f64({1, 63}, p.bodyPose)},
                  {"left_hand_pose", f64({1, 6}, p.leftHand)},
                  {"right_hand_pose", f64({1, 6}, p.rightHand)}});
  SmplxPoseOptions options;
  options.numPcaComps = 6;
  const std::vector<double> want = smplxFullPose(model, p, options, 1);
  const Motion m = loadMotion(path, model);
  ASSERT_EQ(m.pose.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(m.pose[i], want[i], 1e-12) << "pose value " << i;
  std::filesystem::remove(path);
}

// A pose saved as a parameter file reads back as the same pose, shape, expression and translation, for each layout
// (SMPL-X's hands through the model's mean hand, which saving subtracts and loading adds back).
TEST(Motion, SavedPoseParametersLoadBack) {
  for (uint32_t joints : {55u, 52u, 24u}) {
    SCOPED_TRACE("joints " + std::to_string(joints));
    BodyModel model = modelWithJoints(joints);
    if (joints == 55) {
      model.handsComponentsL = uniformValues(45 * 45, -1, 1, 1);
      model.handsComponentsR = uniformValues(45 * 45, -1, 1, 2);
      model.handsMeanL = uniformValues(45, -0.3, 0.3, 3);
      model.handsMeanR = uniformValues(45, -0.3, 0.3, 4);
    }
    BodyParams p = BodyParams::zeros(model, 1, 10, joints == 55 ? 10 : 0);
    p.pose = uniformValues(p.pose.size(), -0.7, 0.7, joints);
    p.betas = uniformValues(10, -2, 2, 5);
    p.expression = uniformValues(p.expression.size(), -2, 2, 6);
    p.transl = {0.1, -0.2, 0.3};
    const std::string path = tempPath("saved_pose.npz");
    writePoseParameters(path, model, p);
    const Motion m = loadMotion(path, model);
    ASSERT_EQ(m.frames, 1u);
    const BodyParams back = motionFrames(model, m, 0, 1, p.shapeComponents, p.exprComponents);
    for (size_t i = 0; i < p.pose.size(); ++i) EXPECT_NEAR(back.pose[i], p.pose[i], 1e-12) << "pose value " << i;
    EXPECT_EQ(back.betas, p.betas);
    EXPECT_EQ(back.expression, p.expression);
    EXPECT_EQ(back.transl, p.transl);
    std::filesystem::remove(path);
  }
  const BodyModel model = modelWithJoints(24);
  EXPECT_THROW(writePoseParameters(tempPath("batch.npz"), model, BodyParams::zeros(model, 2)), Error);
}

// Several frames and their rate, for every layout: each frame read back as written.
TEST(Motion, SavedMotionParametersLoadBack) {
  for (uint32_t joints : {24u, 52u, 55u}) {
    const BodyModel model = modelWithJoints(joints);
    BodyParams p = BodyParams::zeros(model, 4, 10, joints == 55 ? 10 : 0);
    p.pose = uniformValues(p.pose.size(), -0.7, 0.7, joints + 10);
    for (uint32_t t = 0; t < 4; ++t)  // one shape for the sequence
      for (uint32_t s = 0; s < 10; ++s) p.betas[t * 10 + s] = 0.1 * s;
    p.expression = uniformValues(p.expression.size(), -2, 2, 7);
    p.transl = uniformValues(12, -1, 1, 8);
    const std::string path = tempPath("saved_motion.npz");
    writeMotionParameters(path, model, p, 24);
    const Motion m = loadMotion(path, model);
    ASSERT_EQ(m.frames, 4u);
    EXPECT_EQ(m.fps, 24);
    const BodyParams back = motionFrames(model, m, 0, 4, p.shapeComponents, p.exprComponents);
    for (size_t i = 0; i < p.pose.size(); ++i) EXPECT_NEAR(back.pose[i], p.pose[i], 1e-12) << joints << " " << i;
    EXPECT_EQ(back.betas, p.betas);
    EXPECT_EQ(back.expression, p.expression);
    EXPECT_EQ(back.transl, p.transl);
    std::filesystem::remove(path);
  }
}

// Resampling: frames on source frames keep their values exactly; between them each rotation is the slerp (for two
// rotations about one axis, the mean angle) and the translation the mean.
TEST(Motion, ResamplingSlerpsRotations) {
  Motion m;
  m.fps = 120;
  m.frames = 9;
  m.jointCount = 24;
  const std::vector<double> axes = uniformValues(24 * 3, -1, 1, 10), angles = uniformValues(9 * 24, -1.4, 1.4, 11);
  for (uint32_t t = 0; t < m.frames; ++t)
    for (uint32_t j = 0; j < 24; ++j) {
      const double* a = &axes[j * 3];
      const double norm = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
      for (int c = 0; c < 3; ++c) m.pose.push_back(a[c] / norm * angles[t * 24 + j]);
    }
  m.transl = uniformValues(9 * 3, -1, 1, 12);
  const Motion down = resampleMotion(m, 30);
  ASSERT_EQ(down.frames, 3u);
  for (uint32_t k = 0; k < 3; ++k)
    for (size_t i = 0; i < 24 * 3; ++i) ASSERT_EQ(down.pose[k * 72 + i], m.pose[k * 4 * 72 + i]);
  const Motion up = resampleMotion(m, 240);
  ASSERT_EQ(up.frames, 17u);
  for (uint32_t t = 0; t + 1 < m.frames; ++t)
    for (size_t i = 0; i < 72; ++i) {
      const double want = (m.pose[t * 72 + i] + m.pose[(t + 1) * 72 + i]) / 2;
      ASSERT_NEAR(up.pose[(2 * t + 1) * 72 + i], want, 1e-12) << "frame " << t << " value " << i;
    }
  EXPECT_NEAR(up.transl[3], (m.transl[0] + m.transl[3]) / 2, 1e-15);
}

// AMASS's z-up world turned y-up: the root's rotation is R_x(-90°)·R, the translation (x, y, z) -> (x, z, -y).
TEST(Motion, ZUpSequencesTurnYUp) {
  Motion m;
  m.frames = 2, m.jointCount = 24, m.zUp = true;
  m.pose = uniformValues(2 * 24 * 3, -2, 2, 13);
  m.transl = {1, 2, 3, 4, 5, 6};
  const Motion y = yUp(m);
  EXPECT_FALSE(y.zUp);
  EXPECT_EQ(y.transl, (std::vector<double>{1, 3, -2, 4, 6, -5}));
  const double rx[3] = {-M_PI / 2, 0, 0};
  const auto R = rodrigues(rx);
  for (uint32_t t = 0; t < 2; ++t) {
    const auto G = rodrigues(&m.pose[t * 72]), got = rodrigues(&y.pose[t * 72]);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) {
        double want = 0;
        for (int k = 0; k < 3; ++k) want += R[r * 3 + k] * G[k * 3 + c];
        EXPECT_NEAR(got[r * 3 + c], want, 1e-7);  // smplx's Rodrigues takes the norm of r + 1e-8: ~1e-8 off
      }
    for (size_t i = 3; i < 72; ++i) EXPECT_EQ(y.pose[t * 72 + i], m.pose[t * 72 + i]);  // only the root turns
  }
  EXPECT_EQ(yUp(y).pose, y.pose);  // y-up already: unchanged
}

// Files that do not fit get an error naming the file and the key.
TEST(Motion, BadFilesAreRefusedClearly) {
  const BodyModel smplx = modelWithJoints(55);
  const std::string wrong = writeAmass("wrong.npz", {{"poses", f64({4, 100}, std::vector<double>(400, 0.0))}});
  expectError([&] { loadMotion(wrong, smplx); }, {"wrong.npz", "'poses'", "(T, 156)", "found (4, 100)"});
  std::vector<double> trans(12, 0.0);
  trans[5] = std::nan("");
  const std::string nan =
      writeAmass("nan.npz", {{"poses", f64({4, 156}, std::vector<double>(624, 0.0))}, {"trans", f64({4, 3}, trans)}});
  expectError([&] { loadMotion(nan, smplx); }, {"nan.npz", "'trans'", "non-finite"});
  const std::string short_ = writeAmass("short.npz", {{"poses", f64({4, 156}, std::vector<double>(624, 0.0))},
                                                      {"trans", f64({3, 3}, std::vector<double>(9, 0.0))}});
  expectError([&] { loadMotion(short_, smplx); }, {"short.npz", "'trans'", "T = 4"});
  const std::string none = writeAmass("none.npz", {{"something", f64({2}, {1, 2})}});
  expectError([&] { loadMotion(none, smplx); }, {"none.npz", "not a motion file", "something"});
  expectError([&] { loadMotion(wrong, modelWithJoints(16)); }, {"16 joints"});
  for (const auto& p : {wrong, nan, short_, none}) std::filesystem::remove(p);
}
