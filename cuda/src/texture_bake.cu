// Texture baking's samples on CUDA: the arithmetic of shaders/bake_samples.comp (shared/bake_io.h), a thread per
// texel, its views in order.
#include <algorithm>

#include "armature/ops/texture_bake.h"
#include "check.h"
#include "shared/bake_io.h"

namespace armature::cuda {
namespace {

struct Mesh {
  const float* positions;
  const int32_t* faces;
  // The point at barycentrics b of face f (< F) and the face's normal; false if a corner is past the vertices.
  __device__ bool point(const BakePush& p, uint32_t f, const float* b, float3& point, float3& normal) const {
    float3 corner[3];
    for (int k = 0; k < 3; ++k) {
      const uint32_t v = uint32_t(faces[size_t(f) * 3 + k]);
      if (v >= p.vertexCount) return false;
      corner[k] = make_float3(positions[size_t(v) * 3], positions[size_t(v) * 3 + 1], positions[size_t(v) * 3 + 2]);
    }
    point = make_float3(b[0] * corner[0].x + b[1] * corner[1].x + b[2] * corner[2].x,
                        b[0] * corner[0].y + b[1] * corner[1].y + b[2] * corner[2].y,
                        b[0] * corner[0].z + b[1] * corner[1].z + b[2] * corner[2].z);
    const float3 e1 = make_float3(corner[1].x - corner[0].x, corner[1].y - corner[0].y, corner[1].z - corner[0].z);
    const float3 e2 = make_float3(corner[2].x - corner[0].x, corner[2].y - corner[0].y, corner[2].z - corner[0].z);
    normal = make_float3(e1.y * e2.z - e1.z * e2.y, e1.z * e2.x - e1.x * e2.z, e1.x * e2.y - e1.y * e2.x);
    return true;
  }
};

__global__ void __launch_bounds__(BAKE_THREADS)
    bakeSamplesKernel(BakePush p, Mesh mesh, const int32_t* __restrict__ texelFaces,
                      const float* __restrict__ texelBary, const int32_t* __restrict__ viewFaces,
                      const float* __restrict__ viewBary, const float* __restrict__ matrices, float* locations,
                      float* weights) {
  const uint32_t K = p.views;
  for (uint32_t t = blockIdx.x * BAKE_THREADS + threadIdx.x; t < p.texels; t += gridDim.x * BAKE_THREADS) {
    const uint32_t face = uint32_t(texelFaces[t]) - 1u;
    float3 point, normal;
    const bool onMesh = face < p.faceCount && mesh.point(p, face, texelBary + size_t(t) * 3, point, normal);
    float total = 0.0f;
    for (uint32_t k = 0; k < K; ++k) {
      const size_t s = size_t(t) * K + k;
      float w = 0.0f, loc[2] = {-1.0f, -1.0f};
      if (onMesh) {
        float m[16];
        for (int i = 0; i < 16; ++i) m[i] = matrices[k * 16 + i];
        if (bakeLocate(m, point.x, point.y, point.z, loc)) {
          const int row = bakeFootprint(loc[1], p.height), column = bakeFootprint(loc[0], p.width);
          float ray[3];
          bakeRay(m, loc, ray);
          bool seen = row >= 0 && column >= 0;
          for (int c = 0; c < 4 && seen; ++c) {
            const size_t pixel = (size_t(k) * p.height + uint32_t(row + c / 2)) * p.width + uint32_t(column + c % 2);
            const uint32_t shownFace = uint32_t(viewFaces[pixel]) - 1u;
            float3 q, shown;
            seen = shownFace < p.faceCount && mesh.point(p, shownFace, viewBary + pixel * 3, q, shown) &&
                   bakeHitDistance(ray, q.x - point.x, q.y - point.y, q.z - point.z, shown.x, shown.y, shown.z) <=
                       p.tolerance;
          }
          if (seen) w = bakeWeight(bakeFacing(ray, normal.x, normal.y, normal.z), p.minCosine, p.sharpness);
        }
      }
      weights[s] = w;
      locations[s * 2] = w > 0.0f ? loc[0] : -1.0f;
      locations[s * 2 + 1] = w > 0.0f ? loc[1] : -1.0f;
      total += w;
    }
    for (uint32_t k = 0; k < K; ++k) {
      const size_t s = size_t(t) * K + k;
      weights[s] = total > 0.0f ? weights[s] / total : 0.0f;
    }
  }
}

}  // namespace

void bakeSamples(const Exec& exec, const BakeSamplesArgs& a) {
  const unsigned blocks = unsigned(std::min<size_t>((size_t(a.desc.texels) + BAKE_THREADS - 1) / BAKE_THREADS, 65535));
  bakeSamplesKernel<<<blocks, BAKE_THREADS, 0, stream(exec)>>>(
      bakePush(a.desc), Mesh{a.positions.cuda<float>(), a.faces.cuda<int32_t>()}, a.texelFaces.cuda<int32_t>(),
      a.texelBary.cuda<float>(), a.viewFaces.cuda<int32_t>(), a.viewBary.cuda<float>(), a.matrices.cuda<float>(),
      a.locations.cuda<float>(), a.weights.cuda<float>());
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
