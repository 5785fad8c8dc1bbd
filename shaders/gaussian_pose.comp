#version 450
#extension GL_GOOGLE_include_directive : require
#include "shared/gaussian_pose_io.h"

layout(local_size_x = GAUSSIAN_POSE_THREADS) in;
layout(std430, binding = GAUSSIAN_POSE_BINDING_TRANSFORMS) readonly buffer Transforms { float transforms[]; };
layout(std430, binding = GAUSSIAN_POSE_BINDING_JOINTS) readonly buffer Joints { int joints[]; };
layout(std430, binding = GAUSSIAN_POSE_BINDING_MEANS) readonly buffer Means { float means[]; };
layout(std430, binding = GAUSSIAN_POSE_BINDING_CHOLESKY) readonly buffer Cholesky { float cholesky[]; };
layout(std430, binding = GAUSSIAN_POSE_BINDING_OUT_MEANS) writeonly buffer OutMeans { float outMeans[]; };
layout(std430, binding = GAUSSIAN_POSE_BINDING_OUT_CHOLESKY) writeonly buffer OutCholesky { float outCholesky[]; };
layout(push_constant) uniform Push { GaussianPosePush p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.gaussians) return;
  const int j = joints[i];
  float mean[3], params[6], posedMean[3], posedParams[6];
  if (j < 0 || uint(j) >= p.joints) {  // the defined result of a bad index: NaN
    const float nan = uintBitsToFloat(0x7fc00000u);
    for (int k = 0; k < 3; ++k) outMeans[i * 3 + k] = nan;
    for (int k = 0; k < 6; ++k) outCholesky[i * 6 + k] = nan;
    return;
  }
  float t[12], m[12];
  for (int k = 0; k < 12; ++k) t[k] = transforms[uint(j) * 12 + k];
  gaussianPoseCompose(p.post, t, m);
  for (int k = 0; k < 3; ++k) mean[k] = means[i * 3 + k];
  for (int k = 0; k < 6; ++k) params[k] = cholesky[i * 6 + k];
  gaussianPoseOne(m, mean, params, posedMean, posedParams);
  for (int k = 0; k < 3; ++k) outMeans[i * 3 + k] = posedMean[k];
  for (int k = 0; k < 6; ++k) outCholesky[i * 6 + k] = posedParams[k];
}
