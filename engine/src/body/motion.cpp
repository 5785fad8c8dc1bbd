#include "armature/body/motion.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "armature/error.h"
#include "armature/read_limits.h"
#include "math/transform34.h"

namespace armature {

namespace {
constexpr uint32_t kBodyJoints = 22;  // pelvis and the 21 body joints every layout shares

uint32_t jointsOf(JointLayout l) { return l == JointLayout::Smpl ? 24 : l == JointLayout::SmplH ? 52 : 55; }
const char* nameOf(JointLayout l) {
  return l == JointLayout::Smpl ? "SMPL" : l == JointLayout::SmplH ? "SMPL+H" : "SMPL-X";
}

// The arrays of one archive, read on demand, with messages naming the file and the key.
struct Keys {
  NpzReader& archive;
  bool has(const std::string& key) const {
    const NpzEntry* e = archive.find(key);
    return e && e->readable;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw Error(archive.name() + ": key '" + key + "': " + message);
  }
  NpyArray read(const std::string& key) const {
    NpyArray a = archive.read(key);
    for (size_t i = 0; i < a.values.size(); ++i)
      if (!std::isfinite(a.values[i])) fail(key, "non-finite value at flat index " + std::to_string(i));
    return a;
  }
  // A (T, width) array, or one row (width) or (1, width) for T = 1, or (T, width / 3, 3); returns T.
  uint32_t rows(const std::string& key, const NpyArray& a, size_t width) const {
    const size_t n = a.values.size();
    if (width == 0 || n % width != 0 || (a.shape.size() > 1 && a.shape.back() != width && a.shape.back() != 3))
      fail(key, "expected (T, " + std::to_string(width) + ") values, found " + a.shapeString());
    return uint32_t(n / width);
  }
  // The values an entry holds, from its header (nothing decoded).
  size_t count(const std::string& key) const {
    size_t n = 1;
    for (size_t d : archive.find(key)->shape) n *= d;
    return n;
  }
  double scalar(const std::string& key) const {
    NpyArray a = read(key);
    if (a.values.size() != 1) fail(key, "expected one value, found " + a.shapeString());
    return a.values[0];
  }
};

// The axis-angle vector of a unit quaternion (w, x, y, z), taken with w >= 0.
void axisAngle(std::array<double, 4> q, double* r) {
  if (q[0] < 0)
    for (double& c : q) c = -c;
  const double v = std::sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const double scale = v < 1e-12 ? 2 / q[0] : 2 * std::atan2(v, q[0]) / v;
  for (int c = 0; c < 3; ++c) r[c] = q[size_t(c) + 1] * scale;
}
}  // namespace

std::array<double, 4> quaternionFromAxisAngle(const double* r) {
  const double angle = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  if (angle < 1e-12) return {1, r[0] / 2, r[1] / 2, r[2] / 2};
  const double s = std::sin(angle / 2) / angle;
  return {std::cos(angle / 2), r[0] * s, r[1] * s, r[2] * s};
}

JointLayout jointLayoutOf(uint32_t joints) {
  if (joints == 24) return JointLayout::Smpl;
  if (joints == 52) return JointLayout::SmplH;
  if (joints == 55) return JointLayout::SmplX;
  throw Error("motion: a model of " + std::to_string(joints) +
              " joints has no known layout (SMPL 24, SMPL+H 52, SMPL-X 55)");
}

int mapJoint(JointLayout from, JointLayout to, uint32_t j) {
  ARM_CHECK(j < jointsOf(from), "mapJoint: joint %u of a %s layout (%u joints)", j, nameOf(from), jointsOf(from));
  if (j < kBodyJoints) return int(j);
  if (from == to) return int(j);
  // Fingers: SMPL+H 22..51, SMPL-X 25..54 (after its jaw and eyes). SMPL's hand joints and SMPL-X's jaw and eyes
  // exist in no other layout.
  if (from == JointLayout::SmplH && to == JointLayout::SmplX) return int(j + 3);
  if (from == JointLayout::SmplX && to == JointLayout::SmplH && j >= 25) return int(j - 3);
  return -1;
}

Motion readMotion(NpzReader& archive, const BodyModel& model) {
  const JointLayout target = jointLayoutOf(model.jointCount);
  const Keys k{archive};
  Motion m;
  m.jointCount = model.jointCount;
  JointLayout source;
  std::vector<double> pose;  // (T, source joints, 3)
  std::string kind;
  if (k.has("poses")) {  // AMASS, one array
    const NpyArray a = k.read("poses");
    const size_t width = a.shape.size() == 2 ? a.shape[1] : 0;
    if (width != 72 && width != 156 && width != 165)
      k.fail("poses",
             "expected (T, 72) for SMPL, (T, 156) for SMPL+H or (T, 165) for SMPL-X, found " + a.shapeString());
    source = width == 72 ? JointLayout::Smpl : width == 156 ? JointLayout::SmplH : JointLayout::SmplX;
    m.frames = uint32_t(a.shape[0]);
    pose = a.values;
    kind = std::string("AMASS ") + nameOf(source) + " sequence";
    m.zUp = true;
  } else if (k.has("root_orient") && k.has("pose_body")) {  // AMASS SMPL-X, split
    source = JointLayout::SmplX;
    const NpyArray root = k.read("root_orient"), body = k.read("pose_body");
    m.frames = k.rows("root_orient", root, 3);
    if (k.rows("pose_body", body, 63) != m.frames)
      k.fail("pose_body", "expected (T, 63) with T = " + std::to_string(m.frames));
    pose.assign(size_t(m.frames) * 55 * 3, 0.0);
    auto place = [&](const std::string& key, const NpyArray& a, uint32_t firstJoint, uint32_t joints) {
      if (k.rows(key, a, joints * 3) != m.frames)
        k.fail(key, "expected (T, " + std::to_string(joints * 3) + ") with T = " + std::to_string(m.frames));
      for (uint32_t t = 0; t < m.frames; ++t)
        std::copy_n(a.values.begin() + long(t) * joints * 3, joints * 3, pose.begin() + long(t * 55 + firstJoint) * 3);
    };
    place("root_orient", root, 0, 1);
    place("pose_body", body, 1, 21);
    if (k.has("pose_jaw")) place("pose_jaw", k.read("pose_jaw"), 22, 1);
    if (k.has("pose_eye")) place("pose_eye", k.read("pose_eye"), 23, 2);
    if (k.has("pose_hand")) place("pose_hand", k.read("pose_hand"), 25, 30);
    kind = "AMASS SMPL-X sequence (split keys)";
    m.zUp = true;
  } else if (k.has("global_orient") || k.has("body_pose")) {  // smplx / SMPLify-X parameters
    const NpyArray body = k.read("body_pose");
    // Frames from the global orientation (T, 3) where there is one, else from body_pose's leading dimension.
    const uint32_t T = k.has("global_orient")                             ? uint32_t(k.count("global_orient") / 3)
                       : body.shape.size() >= 2 && body.shape.back() != 3 ? uint32_t(body.shape[0])
                                                                          : 1u;
    const size_t width = T ? body.values.size() / T : 0;
    if (T == 0 || (width != 63 && width != 69) || body.values.size() != size_t(T) * width)
      k.fail("body_pose", "expected (T, 63) for SMPL-X or (T, 69) for SMPL with T = " + std::to_string(T) + ", found " +
                              body.shapeString());
    const bool smpl = width == 69;
    source = smpl ? JointLayout::Smpl : JointLayout::SmplX;
    m.frames = T;
    auto rowsOf = [&](const std::string& key, size_t w) {
      std::vector<double> out(size_t(T) * w, 0.0);
      if (!k.has(key)) return out;
      const NpyArray a = k.read(key);
      if (k.rows(key, a, w) != T) k.fail(key, "expected (T, " + std::to_string(w) + ") with T = " + std::to_string(T));
      return a.values;
    };
    if (smpl) {
      const std::vector<double> orient = rowsOf("global_orient", 3);
      pose.assign(size_t(T) * 24 * 3, 0.0);
      for (uint32_t t = 0; t < T; ++t) {
        std::copy_n(orient.begin() + long(t) * 3, 3, pose.begin() + long(t) * 72);
        std::copy_n(body.values.begin() + long(t) * 69, 69, pose.begin() + long(t) * 72 + 3);
      }
      kind = "SMPL parameters";
    } else {
      if (target != JointLayout::SmplX && (k.has("left_hand_pose") || k.has("jaw_pose")))
        throw Error(archive.name() + ": SMPL-X parameters need an SMPL-X model (the model has " +
                    std::to_string(model.jointCount) + " joints)");
      // Hands as smplx's defaults read them: PCA coefficients when fewer than 45 values per hand, else the full 15
      // joint rotations; the model's mean hand added (flat_hand_mean=False) where it has one.
      const uint32_t handWidth = k.has("left_hand_pose") ? uint32_t(k.count("left_hand_pose") / T) : 45;
      SmplxPoseOptions options;
      options.usePca = handWidth != 45;
      options.numPcaComps = handWidth;
      options.flatHandMean = !model.hasHandPca();  // no mean hand to add
      if (options.usePca && !model.hasHandPca())
        k.fail("left_hand_pose",
               "PCA coefficients (" + std::to_string(handWidth) + " per hand) need a model with hand PCA");
      SmplxPose p;
      p.globalOrient = rowsOf("global_orient", 3);
      p.bodyPose = body.values;
      p.jaw = rowsOf("jaw_pose", 3);
      p.leye = rowsOf("leye_pose", 3);
      p.reye = rowsOf("reye_pose", 3);
      p.leftHand = rowsOf("left_hand_pose", handWidth);
      p.rightHand = rowsOf("right_hand_pose", handWidth);
      if (target == JointLayout::SmplX) {
        pose = smplxFullPose(model, p, options, T);
      } else {  // body only, placed as SMPL-X's
        pose.assign(size_t(T) * 55 * 3, 0.0);
        for (uint32_t t = 0; t < T; ++t) {
          std::copy_n(p.globalOrient.begin() + long(t) * 3, 3, pose.begin() + long(t) * 165);
          std::copy_n(p.bodyPose.begin() + long(t) * 63, 63, pose.begin() + long(t) * 165 + 3);
        }
      }
      kind = "smplx parameters";
    }
    m.transl = rowsOf("transl", 3);
    if (k.has("expression")) {
      const NpyArray e = k.read("expression");
      if (e.values.size() % T != 0) k.fail("expression", "expected (T, E) with T = " + std::to_string(T));
      m.expression = e.values;
    }
  } else {
    std::string have;
    for (const NpzEntry& e : archive.entries()) have += (have.empty() ? "" : ", ") + e.key;
    throw Error(archive.name() +
                ": not a motion file: no 'poses' (AMASS), 'root_orient' and 'pose_body' (AMASS "
                "SMPL-X) or 'body_pose' (smplx parameters); the file has " +
                (have.empty() ? "nothing" : have));
  }
  if (m.frames == 0) throw Error(archive.name() + ": the sequence has no frames");
  checkLimit(m.frames, readLimits().frames, archive.name() + ": the sequence", "frames",
             "ARMATURE_MAX_FRAMES raises the limit");
  // AMASS keys shared by both of its layouts.
  if (m.transl.empty()) {
    m.transl.assign(size_t(m.frames) * 3, 0.0);
    if (k.has("trans")) {
      const NpyArray t = k.read("trans");
      if (k.rows("trans", t, 3) != m.frames) k.fail("trans", "expected (T, 3) with T = " + std::to_string(m.frames));
      m.transl = t.values;
    }
  }
  if (k.has("betas")) m.betas = k.read("betas").values;
  m.fps = 30;  // parameter files carry no rate
  for (const char* key : {"mocap_framerate", "mocap_frame_rate"})
    if (k.has(key)) m.fps = k.scalar(key);
  if (!(m.fps > 0 && m.fps < 10000))
    k.fail("mocap_framerate", "expected a frame rate in (0, 10000), found " + std::to_string(m.fps));
  // Values a body can take, with room: an axis-angle of 1e3 rad is already 160 turns; 1e5 m is 100 km.
  checkFinite(pose.data(), pose.size(), 1e3, archive.name() + ": the pose");
  checkFinite(m.transl.data(), m.transl.size(), 1e5, archive.name() + ": the translation");
  checkFinite(m.betas.data(), m.betas.size(), 1e3, archive.name() + ": betas");
  checkFinite(m.expression.data(), m.expression.size(), 1e3, archive.name() + ": expression");
  // Into the model's layout.
  const uint32_t from = jointsOf(source);
  m.pose.assign(size_t(m.frames) * m.jointCount * 3, 0.0);
  for (uint32_t t = 0; t < m.frames; ++t)
    for (uint32_t j = 0; j < from; ++j) {
      const int to = mapJoint(source, target, j);
      if (to >= 0)
        std::copy_n(pose.begin() + long(size_t(t) * from + j) * 3, 3,
                    m.pose.begin() + long(size_t(t) * m.jointCount + size_t(to)) * 3);
    }
  char rate[64];
  std::snprintf(rate, sizeof rate, ", %u frames at %g fps", m.frames, m.fps);
  m.description = kind + rate + (source == target ? "" : std::string(", mapped to ") + nameOf(target));
  return m;
}

Motion loadMotion(const std::string& path, const BodyModel& model) {
  NpzReader archive = openArrayFile(path);
  return readMotion(archive, model);
}

Motion resampleMotion(const Motion& in, double fps) {
  ARM_CHECK(fps > 0 && fps < 10000, "resampleMotion: a frame rate in (0, 10000), not %g", fps);
  ARM_CHECK(in.frames > 0, "resampleMotion: the motion has no frames");
  Motion out = in;
  out.fps = fps;
  const double frames = std::floor((in.frames - 1) * fps / in.fps + 1e-9) + 1;
  checkLimit(uint64_t(std::min(frames, 1e18)), readLimits().frames,
             "resampling " + std::to_string(in.frames) + " frames at " + std::to_string(in.fps) + " fps to " +
                 std::to_string(fps) + " fps",
             "frames", "ARMATURE_MAX_FRAMES raises the limit");
  out.frames = uint32_t(frames);
  const size_t J = in.jointCount, E = in.expression.size() / in.frames;
  out.pose.assign(size_t(out.frames) * J * 3, 0.0);
  out.transl.assign(size_t(out.frames) * 3, 0.0);
  out.expression.assign(size_t(out.frames) * E, 0.0);
  for (uint32_t k = 0; k < out.frames; ++k) {
    const double time = k * in.fps / fps;
    uint32_t i = std::min(uint32_t(std::floor(time + 1e-9)), in.frames - 1);
    const double f = i + 1 < in.frames ? std::max(0.0, time - i) : 0.0;
    const uint32_t next = std::min(i + 1, in.frames - 1);
    for (size_t j = 0; j < J; ++j) {
      const double* a = &in.pose[(size_t(i) * J + j) * 3];
      double* r = &out.pose[(size_t(k) * J + j) * 3];
      if (f < 1e-9) {
        std::copy_n(a, 3, r);  // on a source frame: its values exactly
      } else {
        axisAngle(slerp(quaternionFromAxisAngle(a), quaternionFromAxisAngle(&in.pose[(size_t(next) * J + j) * 3]), f),
                  r);
      }
    }
    for (size_t c = 0; c < 3; ++c) out.transl[k * 3 + c] = (1 - f) * in.transl[i * 3 + c] + f * in.transl[next * 3 + c];
    for (size_t e = 0; e < E; ++e)
      out.expression[k * E + e] = (1 - f) * in.expression[i * E + e] + f * in.expression[next * E + e];
  }
  char rate[64];
  std::snprintf(rate, sizeof rate, ", resampled to %g fps", fps);
  out.description += rate;
  return out;
}

Motion yUp(const Motion& in) {
  if (!in.zUp) return in;
  Motion out = in;
  out.zUp = false;
  // R = R_x(-90°): (x, y, z) -> (x, z, -y). The root's rotation becomes R·R_root; the translation R·t.
  const double rx[3] = {-M_PI / 2, 0, 0};
  const std::array<double, 9> R = rodrigues(rx);
  for (uint32_t t = 0; t < in.frames; ++t) {
    double* root = &out.pose[size_t(t) * in.jointCount * 3];
    const std::array<double, 9> G = rodrigues(root);
    std::array<double, 9> M{};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k) M[size_t(r * 3 + c)] += R[size_t(r * 3 + k)] * G[size_t(k * 3 + c)];
    // Back to axis-angle through M's quaternion, reordered (x, y, z, w) -> (w, x, y, z).
    const std::array<double, 4> xyzw = quaternionFromRotation(M.data());
    const std::array<double, 4> q = {xyzw[3], xyzw[0], xyzw[1], xyzw[2]};
    axisAngle(q, root);
    double* tr = &out.transl[size_t(t) * 3];
    const double x = tr[0], y = tr[1], z = tr[2];
    tr[0] = x, tr[1] = z, tr[2] = -y;
  }
  out.description += ", turned y-up";
  return out;
}

BodyParams motionFrames(const BodyModel& model, const Motion& motion, uint32_t first, uint32_t count, uint32_t S,
                        uint32_t E) {
  ARM_CHECK(motion.jointCount == model.jointCount, "motionFrames: the motion has %u joints, the model %u",
            motion.jointCount, model.jointCount);
  ARM_CHECK(count >= 1 && first < motion.frames && count <= motion.frames - first,
            "motionFrames: frames [%u, %u) outside the motion's %u", first, first + count, motion.frames);
  BodyParams p = BodyParams::zeros(model, count, S, E);
  const size_t J3 = size_t(model.jointCount) * 3, Em = motion.expression.size() / motion.frames;
  for (uint32_t b = 0; b < count; ++b) {
    const size_t t = first + b;
    std::copy_n(motion.pose.begin() + long(t * J3), J3, p.pose.begin() + long(b * J3));
    std::copy_n(motion.transl.begin() + long(t * 3), 3, p.transl.begin() + long(b) * 3);
    for (uint32_t s = 0; s < S && s < motion.betas.size(); ++s) p.betas[size_t(b) * S + s] = motion.betas[s];
    for (uint32_t e = 0; e < E && e < Em; ++e) p.expression[size_t(b) * E + e] = motion.expression[t * Em + e];
  }
  return p;
}

void writeMotionParameters(const std::string& path, const BodyModel& model, const BodyParams& p, double fps) {
  validateBodyParams(model, p);
  ARM_CHECK(p.batch >= 1, "writeMotionParameters: no frames");
  ARM_CHECK(fps > 0 && fps < 10000, "writeMotionParameters: a frame rate in (0, 10000), not %g", fps);
  const JointLayout layout = jointLayoutOf(model.jointCount);
  const size_t T = p.batch, J = model.jointCount;
  auto rows = [&](size_t firstJoint, size_t joints) {  // (T, joints·3) of every frame
    NpyWrite w{{T, joints * 3}, NpyType::F64, {}};
    for (size_t t = 0; t < T; ++t) {
      const auto begin = p.pose.begin() + long((t * J + firstJoint) * 3);
      w.values.insert(w.values.end(), begin, begin + long(joints * 3));
    }
    return w;
  };
  std::map<std::string, NpyWrite> out;
  out["betas"] = {{1, p.shapeComponents}, NpyType::F64, {p.betas.begin(), p.betas.begin() + p.shapeComponents}};
  out["mocap_frame_rate"] = {{}, NpyType::F64, {fps}};
  const NpyWrite transl{{T, 3}, NpyType::F64, p.transl};
  if (layout == JointLayout::SmplH) {
    out["poses"] = rows(0, 52);
    out["trans"] = transl;
  } else {
    out["global_orient"] = rows(0, 1);
    out["body_pose"] = rows(1, layout == JointLayout::Smpl ? 23 : 21);
    out["transl"] = transl;
  }
  if (layout == JointLayout::SmplX) {
    out["jaw_pose"] = rows(22, 1);
    out["leye_pose"] = rows(23, 1);
    out["reye_pose"] = rows(24, 1);
    out["left_hand_pose"] = rows(25, 15);
    out["right_hand_pose"] = rows(40, 15);
    if (model.hasHandPca())  // loadMotion adds the mean hand back, as smplx does with flat_hand_mean=False
      for (size_t t = 0; t < T; ++t)
        for (size_t k = 0; k < 45; ++k) {
          out["left_hand_pose"].values[t * 45 + k] -= model.handsMeanL[k];
          out["right_hand_pose"].values[t * 45 + k] -= model.handsMeanR[k];
        }
    out["expression"] = {{T, p.exprComponents}, NpyType::F64, p.expression};
  }
  writeNpz(path, out);
}

void writePoseParameters(const std::string& path, const BodyModel& model, const BodyParams& p) {
  ARM_CHECK(p.batch == 1, "writePoseParameters: one pose, not a batch of %u", p.batch);
  writeMotionParameters(path, model, p, 30);
}

}  // namespace armature
