// One inverse-kinematics step on CUDA: shaders/ik.comp's workgroup as one block.
#include "check.h"
#include "ops/ik_backend.h"

namespace armature {
namespace cuda {
namespace {

struct IkBuffers {
  const float *joints, *gradPose, *gradTransl;
  const IkTargetIO* targets;
  float *pose, *transl;
  const float* bounds;
};

__device__ float jacobian(const IkBuffers& b, const IkPush& p, uint32_t k, uint32_t q) {
  const uint32_t P = p.params, poseParams = 3 * p.joints;
  const float d = q < poseParams ? b.gradPose[k * poseParams + q] : b.gradTransl[k * 3 + (q - poseParams)];
  return b.targets[k / 3].weight * b.bounds[3 * P + q] * d;
}

__device__ float parameter(const IkBuffers& b, const IkPush& p, uint32_t q) {
  const uint32_t poseParams = 3 * p.joints;
  return q < poseParams ? b.pose[q] : b.transl[q - poseParams];
}

__global__ void __launch_bounds__(IK_WORKGROUP_SIZE) ikKernel(IkBuffers b, IkPush p) {
  __shared__ float sResidual[IK_MAX_ROWS], sG[IK_MAX_PARAMS], sA[IK_MAX_ROWS * IK_MAX_ROWS], sY[IK_MAX_ROWS];
  const uint32_t t = threadIdx.x, m = p.rows, P = p.params, poseParams = 3 * p.joints;
  if (t < m) {
    IkTargetIO target = b.targets[t / 3];
    target.joint = min(target.joint, p.joints - 1);  // memory safety only: IkSolver checks the joints
    const uint32_t axis = t % 3;
    const float goal = axis == 0 ? target.x : axis == 1 ? target.y : target.z;
    sResidual[t] = target.weight * (b.joints[target.joint * 3 + axis] - goal);
  }
  __syncthreads();
  for (uint32_t q = t; q < P; q += IK_WORKGROUP_SIZE) {
    float g = 0;
    for (uint32_t k = 0; k < m; ++k) g += jacobian(b, p, k, q) * sResidual[k];
    if (q < poseParams) g += p.prior * b.bounds[3 * P + q] * (parameter(b, p, q) - b.bounds[q]);
    sG[q] = g;
  }
  __syncthreads();
  const float c = p.prior + p.damping;
  for (uint32_t e = t; e < m * m + m; e += IK_WORKGROUP_SIZE) {
    float s = 0;
    if (e < m * m) {  // (JJᵀ + cI)[a][b]
      const uint32_t r = e / m, col = e % m;
      for (uint32_t q = 0; q < P; ++q) s += jacobian(b, p, r, q) * jacobian(b, p, col, q);
      sA[e] = s + (r == col ? c : 0.0f);
    } else {  // (Jg)[a]
      const uint32_t r = e - m * m;
      for (uint32_t q = 0; q < P; ++q) s += jacobian(b, p, r, q) * sG[q];
      sY[r] = s;
    }
  }
  __syncthreads();
  if (t == 0) ikCholeskySolve(m, sA, sY);
  __syncthreads();
  for (uint32_t q = t; q < P; q += IK_WORKGROUP_SIZE) {
    float s = sG[q];
    for (uint32_t k = 0; k < m; ++k) s -= jacobian(b, p, k, q) * sY[k];
    const float value = fminf(fmaxf(parameter(b, p, q) - s / c, b.bounds[P + q]), b.bounds[2 * P + q]);
    if (b.bounds[3 * P + q] != 0.0f)
      for (uint32_t k = 0; k < m; ++k) {  // every row: the next forward skins m copies of this body
        if (q < poseParams)
          b.pose[k * poseParams + q] = value;
        else
          b.transl[k * 3 + (q - poseParams)] = value;
      }
  }
}

}  // namespace

void ikStep(const Exec& exec, const IkStepArgs& a) {
  const IkPush push = ikPush(a);
  const IkBuffers b{a.joints.cuda<float>(),     a.gradPose.cuda<float>(),
                    a.gradTransl.cuda<float>(), reinterpret_cast<const IkTargetIO*>(a.targets.cuda<uint32_t>()),
                    a.pose.cuda<float>(),       a.transl.cuda<float>(),
                    a.bounds.cuda<float>()};
  ikKernel<<<1, IK_WORKGROUP_SIZE, 0, stream(exec)>>>(b, push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace armature
