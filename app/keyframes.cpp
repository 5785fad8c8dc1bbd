#include "app/keyframes.h"

#include <cmath>

#include "app/rotation.h"
#include "armature/body/gltf_export.h"
#include "armature/error.h"
#include "armature/file_checks.h"

namespace armature::app {

namespace {
constexpr double kSameKey = 1e-3;  // seconds

// a + (b − a)·t over whole vectors.
std::vector<double> lerp(const std::vector<double>& a, const std::vector<double>& b, double t) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + (b[i] - a[i]) * t;
  return out;
}

}  // namespace

void Keyframes::set(double seconds, const BodyParams& body) {
  ARM_CHECK(std::isfinite(seconds) && seconds >= 0, "key at %g s: a time of 0 or more seconds", seconds);
  ARM_CHECK(body.batch == 1, "a key is one pose (batch 1), got %u", body.batch);
  ARM_CHECK(m_keys.empty() || (m_keys.begin()->second.pose.size() == body.pose.size() &&
                               m_keys.begin()->second.expression.size() == body.expression.size()),
            "a key of another model or component count than the others");
  remove(seconds);
  m_keys[seconds] = body;
}

bool Keyframes::remove(double seconds) {
  auto it = m_keys.lower_bound(seconds - kSameKey);
  if (it == m_keys.end() || it->first > seconds + kSameKey) return false;
  m_keys.erase(it);
  return true;
}

BodyParams Keyframes::sample(double seconds) const {
  ARM_CHECK(!m_keys.empty(), "no keys to sample");
  const auto next = m_keys.lower_bound(seconds);
  if (next == m_keys.begin()) return next->second;
  if (next == m_keys.end()) return m_keys.rbegin()->second;
  const auto prev = std::prev(next);
  const double t = (seconds - prev->first) / (next->first - prev->first);
  const BodyParams &a = prev->second, &b = next->second;
  BodyParams out = a;
  for (size_t j = 0; j + 2 < a.pose.size(); j += 3) {
    const glm::dvec3 r = axisAngleOf(glm::slerp(rotationOf(&a.pose[j]), rotationOf(&b.pose[j]), t));
    for (int c = 0; c < 3; ++c) out.pose[j + size_t(c)] = r[c];
  }
  out.transl = lerp(a.transl, b.transl, t);
  out.expression = lerp(a.expression, b.expression, t);
  return out;
}

Motion Keyframes::motion(const BodyModel& model, double fps) const {
  ARM_CHECK(!m_keys.empty(), "no keys to write");
  ARM_CHECK(std::isfinite(fps) && fps > 0 && fps <= 1000, "%g frames per second: 0 < fps ≤ 1000", fps);
  const double frames = std::floor(last() * fps + 1e-9) + 1;
  ARM_CHECK(frames <= 1e6, "%g frames: keys more than %g s apart at %g fps", frames, 1e6 / fps, fps);
  Motion m;
  m.fps = fps, m.frames = uint32_t(frames), m.jointCount = model.jointCount;
  m.betas = m_keys.begin()->second.betas;
  m.description = std::to_string(m_keys.size()) + " keys";
  for (uint32_t f = 0; f < m.frames; ++f) {
    const BodyParams p = sample(f / fps);
    ARM_CHECK(p.pose.size() == 3 * size_t(model.jointCount), "keys of %zu pose values for a model of %u joints",
              p.pose.size(), model.jointCount);
    m.pose.insert(m.pose.end(), p.pose.begin(), p.pose.end());
    m.transl.insert(m.transl.end(), p.transl.begin(), p.transl.end());
    m.expression.insert(m.expression.end(), p.expression.begin(), p.expression.end());
  }
  return m;
}

void writeKeyframes(const std::string& path, const BodyModel& model, const Keyframes& keys, double fps) {
  const Motion m = keys.motion(model, fps);
  const BodyParams& first = keys.keys().begin()->second;
  const std::string ext = lowerExtension(path);
  if (ext == ".npz")
    return writeMotionParameters(path, model,
                                 motionFrames(model, m, 0, m.frames, first.shapeComponents, first.exprComponents), fps);
  ARM_CHECK(ext == ".glb", "%s: keys are written as .npz (smplx parameters) or .glb", path.c_str());
  const GltfRig rig = gltfRig(model, m.betas, first.expression, 4);
  writeGlb(path, model, rig, gltfAnimation(model, rig, m, 0, m.frames));
}

}  // namespace armature::app
