#pragma once
// Axis-angle rotation vectors (smplx's pose parameters) and quaternions, exactly: smplx's rodrigues adds 1e-8 to
// every component, which a turn of the gizmo or a slerp between keys must not.
#include <glm/glm.hpp>
#include <glm/gtc/quaternion.hpp>

#include <cmath>

namespace armature::app {

inline glm::dquat rotationOf(const double* r) {
  const glm::dvec3 v(r[0], r[1], r[2]);
  const double angle = glm::length(v);
  return angle > 0 ? glm::angleAxis(angle, v / angle) : glm::dquat(1, 0, 0, 0);
}

// The axis-angle vector of a rotation, its angle in [0, π].
inline glm::dvec3 axisAngleOf(glm::dquat q) {
  if (q.w < 0) q = -q;
  const glm::dvec3 v(q.x, q.y, q.z);
  const double s = glm::length(v);
  return s > 0 ? v * (2 * std::atan2(s, q.w) / s) : glm::dvec3(0);
}

}  // namespace armature::app
