// project on CUDA: the same arithmetic as shaders/project_forward.comp and project_backward.comp.
#include "armature/ops/project.h"
#include "check.h"
#include "shared/project_io.h"

namespace armature::cuda {
namespace {

// m: column-major, element (row r, column c) at m[4c + r].
__global__ void projectKernel(ProjectPush p, const float* points, const float4* matrices, float4* clip) {
  const uint32_t total = p.views * p.points;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const uint32_t view = i / p.points, src = p.pointsPerView ? i : i - view * p.points;
    const float4* m = matrices + view * 4;  // its four columns
    const float x = points[size_t(src) * 3], y = points[size_t(src) * 3 + 1], z = points[size_t(src) * 3 + 2];
    const float4 c0 = m[0], c1 = m[1], c2 = m[2], c3 = m[3];
    clip[i] = make_float4(c0.x * x + c1.x * y + c2.x * z + c3.x, c0.y * x + c1.y * y + c2.y * z + c3.y,
                          c0.z * x + c1.z * y + c2.z * z + c3.z, c0.w * x + c1.w * y + c2.w * z + c3.w);
  }
}

// (Mᵀ g).xyz: column c of M dotted with g.
__device__ float3 transposedTimes(const float4* m, float4 g) {
  float r[3];
  for (int c = 0; c < 3; ++c) {
    const float4 column = m[c];
    r[c] = column.x * g.x + column.y * g.y + column.z * g.z + column.w * g.w;
  }
  return make_float3(r[0], r[1], r[2]);
}

__global__ void projectBackwardKernel(ProjectPush p, const float4* gradClip, const float4* matrices,
                                      float* gradPoints) {
  const uint32_t outputs = p.pointsPerView ? p.views * p.points : p.points;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < outputs; i += gridDim.x * blockDim.x) {
    float3 g = make_float3(0, 0, 0);
    if (p.pointsPerView) {
      g = transposedTimes(matrices + i / p.points * 4, gradClip[i]);
    } else {
      for (uint32_t view = 0; view < p.views; ++view) {  // in view order: deterministic
        const float3 v = transposedTimes(matrices + view * 4, gradClip[size_t(view) * p.points + i]);
        g.x += v.x, g.y += v.y, g.z += v.z;
      }
    }
    gradPoints[size_t(i) * 3] = g.x, gradPoints[size_t(i) * 3 + 1] = g.y, gradPoints[size_t(i) * 3 + 2] = g.z;
  }
}

// As shaders/project_matrix_grad.comp: each thread sums its points in order, then a tree in shared memory.
__global__ void projectMatrixGradKernel(ProjectPush p, const float* points, const float4* gradClip,
                                        float* gradMatrices) {
  __shared__ float partial[16][PROJECT_MATRIX_GROUP];
  const uint32_t view = blockIdx.x, lane = threadIdx.x;
  float sum[16] = {};
  for (uint32_t n = lane; n < p.points; n += PROJECT_MATRIX_GROUP) {
    const size_t src = p.pointsPerView ? size_t(view) * p.points + n : n;
    const float4 g = gradClip[size_t(view) * p.points + n];
    const float ph[4] = {points[src * 3], points[src * 3 + 1], points[src * 3 + 2], 1.0f};
    for (int c = 0; c < 4; ++c)  // column c, rows x y z w
      sum[c * 4] += g.x * ph[c], sum[c * 4 + 1] += g.y * ph[c], sum[c * 4 + 2] += g.z * ph[c],
          sum[c * 4 + 3] += g.w * ph[c];
  }
  for (int e = 0; e < 16; ++e) partial[e][lane] = sum[e];
  __syncthreads();
  for (uint32_t span = PROJECT_MATRIX_GROUP / 2; span > 0; span /= 2) {
    if (lane < span)
      for (int e = 0; e < 16; ++e) partial[e][lane] += partial[e][lane + span];
    __syncthreads();
  }
  if (lane < 16) gradMatrices[size_t(view) * 16 + lane] = partial[lane][0];
}

unsigned blocksFor(size_t n) { return unsigned(std::min<size_t>((n + PROJECT_GROUP - 1) / PROJECT_GROUP, 65535 * 4)); }

}  // namespace

void project(const Exec& exec, const ProjectArgs& a) {
  projectKernel<<<blocksFor(a.desc.clipFloats() / 4), PROJECT_GROUP, 0, stream(exec)>>>(
      projectPush(a.desc), a.points.cuda<float>(), a.matrices.cuda<float4>(), a.clip.cuda<float4>());
  CUDA_CHECK_LAUNCH();
}

void projectBackward(const Exec& exec, const ProjectBackwardArgs& a) {
  projectBackwardKernel<<<blocksFor(a.desc.pointFloats() / 3), PROJECT_GROUP, 0, stream(exec)>>>(
      projectPush(a.desc), a.gradClip.cuda<float4>(), a.matrices.cuda<float4>(), a.gradPoints.cuda<float>());
  CUDA_CHECK_LAUNCH();
}

void projectMatrixGrad(const Exec& exec, const ProjectMatrixGradArgs& a) {
  projectMatrixGradKernel<<<a.desc.views, PROJECT_MATRIX_GROUP, 0, stream(exec)>>>(
      projectPush(a.desc), a.points.cuda<float>(), a.gradClip.cuda<float4>(), a.gradMatrices.cuda<float>());
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
