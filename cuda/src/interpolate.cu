// interpolate on CUDA: the same arithmetic as shaders/interpolate_*.comp. Built with -fmad=false, as the
// rasteriser it follows, so its products round as the CPU's and GLSL's.
#include "armature/ops/interpolate.h"
#include "check.h"
#include "launch.h"
#include "visibility_buffer.h"

namespace armature::cuda {
namespace {

// The first attribute of pixel pix's image: attributes (N,C) shared, or (B,N,C) per image of imagePixels pixels.
__device__ size_t attrBase(size_t pix, uint32_t imagePixels, uint32_t N, uint32_t C) {
  return imagePixels ? pix / imagePixels * N * C : 0;
}

// One thread per pixel: its face's corners and weights are read once for all channels.
__global__ void interpolateKernel(uint32_t pixels, uint32_t C, uint32_t N, const float* attr, const int32_t* ids,
                                  const float* bary, const int32_t* faces, uint32_t M, float* out,
                                  uint32_t imagePixels) {
  waitForPrevious();  // the visibility buffer (launched as a dependent of the resolve)
  for (size_t pix = blockIdx.x * size_t(blockDim.x) + threadIdx.x; pix < pixels;
       pix += size_t(gridDim.x) * blockDim.x) {
    const float* image = attr + attrBase(pix, imagePixels, N, C);
    int corner[3];
    float weight[3];
    for (int k = 0; k < 3; ++k) {
      corner[k] = cornerVertex(ids, faces, M, N, pix, k);
      weight[k] = corner[k] >= 0 ? bary[pix * 3 + k] : 0.0f;
    }
    for (uint32_t c = 0; c < C; ++c) {
      float v = 0;
      for (int k = 0; k < 3; ++k)
        if (corner[k] >= 0) v += weight[k] * image[size_t(corner[k]) * C + c];
      out[pix * C + c] = v;
    }
  }
}

__global__ void interpolateBackwardKernel(uint32_t pixels, uint32_t C, uint32_t N, const float* attr,
                                          const int32_t* ids, const float* bary, const int32_t* faces, uint32_t M,
                                          const float* gradOut, float* gradAttr, float* gradBary,
                                          uint32_t imagePixels) {
  waitForPrevious();
  for (size_t pix = blockIdx.x * size_t(blockDim.x) + threadIdx.x; pix < pixels;
       pix += size_t(gridDim.x) * blockDim.x) {
    const size_t base = attrBase(pix, imagePixels, N, C);
    for (int k = 0; k < 3; ++k) {
      int vi = cornerVertex(ids, faces, M, N, pix, k);
      float gb = 0;
      if (vi >= 0)
        for (uint32_t c = 0; c < C; ++c) {
          float g = gradOut[pix * C + c];
          gb += attr[base + size_t(vi) * C + c] * g;
          atomicAdd(gradAttr + base + size_t(vi) * C + c, bary[pix * 3 + k] * g);
        }
      gradBary[pix * 3 + k] = gb;
    }
  }
}

}  // namespace

void interpolate(const Exec& exec, const InterpolateArgs& a) {
  const InterpolateDesc& d = a.desc;
  launchAfterPrevious(deviceTraits().dependentLaunches, interpolateKernel, dim3(grid(d.pixels)), dim3(256),
                      stream(exec), d.pixels, d.channels, d.vertexCount, a.attr.cuda<float>(),
                      a.findices.cuda<int32_t>(), a.barycentrics.cuda<float>(), a.faces.cuda<int32_t>(), d.faceCount,
                      a.out.cuda<float>(), d.imagePixels);
}

void interpolateBackward(const Exec& exec, const InterpolateBackwardArgs& a) {
  const InterpolateDesc& d = a.desc;
  launchAfterPrevious(deviceTraits().dependentLaunches, interpolateBackwardKernel, dim3(grid(d.pixels)), dim3(256),
                      stream(exec), d.pixels, d.channels, d.vertexCount, a.attr.cuda<float>(),
                      a.findices.cuda<int32_t>(), a.barycentrics.cuda<float>(), a.faces.cuda<int32_t>(), d.faceCount,
                      a.gradOut.cuda<float>(), a.gradAttr.cuda<float>(), a.gradBarycentrics.cuda<float>(),
                      d.imagePixels);
}

}  // namespace armature::cuda
