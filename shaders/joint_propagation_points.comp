#version 450
// Points attached to joints, around joint propagation (shared/joint_propagation_io.h): moved by their joints' globals, and
// backward, their gradient turned into the globals' (each joint summing its points in a fixed order) and into their
// coordinates' (summed over the batch in order). No atomics: the same bits on every run.
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_io.h"

layout(local_size_x = 64) in;
layout(std430, binding = JOINTS_POINTS_BINDING_POINT_JOINTS) readonly buffer PointJoints { int pointJoints[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_POINT_START) readonly buffer PointStart { uint pointStart[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_POINT_ORDER) readonly buffer PointOrder { uint pointOrder[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_POINTS) readonly buffer Points { float points[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_GLOBALS) readonly buffer Globals { float globals[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_MOVED) buffer Moved { float moved[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_GRAD_GLOBALS) readonly buffer GradGlobals { float gradGlobals[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_JOINT_GRADS) writeonly buffer JointGrads { float jointGrads[]; };
layout(std430, binding = JOINTS_POINTS_BINDING_GRAD_POINTS) writeonly buffer GradPoints { float gradPoints[]; };
layout(push_constant) uniform Push { JointsPointsPush p; };

void main() {
  const uint stride = gl_NumWorkGroups.x * 64u;
  if (p.mode == JOINTS_POINTS_FORWARD) {
    for (uint item = gl_GlobalInvocationID.x; item < p.batch * p.points; item += stride) {
      const uint b = item / p.points, q = item % p.points, g = (b * p.joints + uint(pointJoints[q])) * 12u;
      for (uint r = 0u; r < 3u; ++r)
        moved[item * 3u + r] = globals[g + r * 4u] * points[q * 3u] + globals[g + r * 4u + 1u] * points[q * 3u + 1u] +
                               globals[g + r * 4u + 2u] * points[q * 3u + 2u] + globals[g + r * 4u + 3u];
    }
  } else if (p.mode == JOINTS_POINTS_JOINT_GRADS) {  // d<dY, G·[x;1]>/dG = dY ⊗ [x;1]
    for (uint item = gl_GlobalInvocationID.x; item < p.batch * p.joints; item += stride) {
      const uint b = item / p.joints, j = item % p.joints;
      float d[12];
      for (int k = 0; k < 12; ++k) d[k] = (p.flags & JOINTS_GRAD_GLOBALS) != 0u ? gradGlobals[item * 12u + uint(k)] : 0.0;
      for (uint c = pointStart[j]; c < pointStart[j + 1u]; ++c) {
        const uint q = pointOrder[c], at = (b * p.points + q) * 3u;
        for (uint r = 0u; r < 3u; ++r) {
          const float dy = moved[at + r];
          d[r * 4u] += dy * points[q * 3u], d[r * 4u + 1u] += dy * points[q * 3u + 1u];
          d[r * 4u + 2u] += dy * points[q * 3u + 2u], d[r * 4u + 3u] += dy;
        }
      }
      for (int k = 0; k < 12; ++k) jointGrads[item * 12u + uint(k)] = d[k];
    }
  } else {  // d<dY, G·[x;1]>/dx = Rᵀ dY, summed over the batch
    for (uint q = gl_GlobalInvocationID.x; q < p.points; q += stride) {
      const uint j = uint(pointJoints[q]);
      float d[3] = float[3](0.0, 0.0, 0.0);
      for (uint b = 0u; b < p.batch; ++b) {
        const uint g = (b * p.joints + j) * 12u, at = (b * p.points + q) * 3u;
        for (uint c = 0u; c < 3u; ++c)
          d[c] += globals[g + c] * moved[at] + globals[g + 4u + c] * moved[at + 1u] + globals[g + 8u + c] * moved[at + 2u];
      }
      for (uint c = 0u; c < 3u; ++c) gradPoints[q * 3u + c] = d[c];
    }
  }
}
