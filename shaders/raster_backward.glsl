// The rasteriser's backward: at each covered pixel, dL/dbarycentrics through x, y and w of its face's three corners
// into dL/dpositions (rasterPerspectiveWeightsBackward; float atomics into a buffer the host cleared). Variants
// (shaders/CMakeLists.txt): RASTER_FP64 (double arithmetic, on devices with shaderFloat64, or float). With
// RASTER_SUBGROUP_SUMS a run of consecutive invocations on the same face sums its nine values first (a segmented
// scan over the subgroup) and its last invocation issues the atomics: a big triangle's pixels otherwise send
// hundreds of atomics to the same addresses. (A loop over the subgroup's faces, wherever their invocations are, cost
// more than it saved where small triangles put several faces in a subgroup.)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_float : require
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#if RASTER_SUBGROUP_SUMS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#endif
#include "shared/raster_weights.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = RASTER_BINDING_POSITIONS) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = RASTER_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = RASTER_BACKWARD_BINDING_FINDICES) readonly buffer FaceIds { int findices[]; };
layout(std430, binding = RASTER_BACKWARD_BINDING_GRAD_BARY) readonly buffer GradBary { float gradBary[]; };
layout(std430, binding = RASTER_BACKWARD_BINDING_GRAD_POSITIONS) buffer GradPositions { float gradPositions[]; };
layout(push_constant) uniform Push { RasterPush p; };

void addGrads(uint corner[3], float g[9]) {
  for (uint k = 0u; k < 3u; ++k) {
    atomicAdd(gradPositions[corner[k] * 4u], g[k * 3u]);
    atomicAdd(gradPositions[corner[k] * 4u + 1u], g[k * 3u + 1u]);
    atomicAdd(gradPositions[corner[k] * 4u + 3u], g[k * 3u + 2u]);
  }
}

void main() {
  uint imagePixels = p.width * p.height, total = imagePixels * p.images, stride = gl_NumWorkGroups.x * RASTER_GROUP;
  // Uniform over the workgroup: every invocation reaches the subgroup operations.
  for (uint first = gl_WorkGroupID.x * RASTER_GROUP; first < total; first += stride) {
    uint pix = first + gl_LocalInvocationID.x;
    int id = pix < total ? findices[pix] : 0;
    uint image = pix / imagePixels, inImage = pix - image * imagePixels;
    uint base = p.instanced != 0u ? image * p.vertexCount : 0u;
    bool live = id > 0 && uint(id) <= p.triangleCount;  // else background, or an id outside F: no gradient
    uint corner[3] = uint[3](0u, 0u, 0u);
    for (uint k = 0u; k < 3u && live; ++k) {
      int vi = faces[(uint(id) - 1u) * 3u + k];
      live = vi >= 0 && uint(vi) < p.vertexCount;
      corner[k] = base + uint(max(vi, 0));
    }
    float g[9] = float[9](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    if (live) {
      vec4 a = positions[corner[0]], b = positions[corner[1]], c = positions[corner[2]];
      RasterCornerGrads r = rasterPerspectiveWeightsBackward(
          RasterReal(a.x), RasterReal(a.y), RasterReal(a.w), RasterReal(b.x), RasterReal(b.y), RasterReal(b.w),
          RasterReal(c.x), RasterReal(c.y), RasterReal(c.w), p.width, p.height,
          RasterReal(inImage % p.width) + RasterReal(0.5), RasterReal(inImage / p.width) + RasterReal(0.5),
          RasterReal(gradBary[pix * 3u]), RasterReal(gradBary[pix * 3u + 1u]), RasterReal(gradBary[pix * 3u + 2u]));
      g = float[9](float(r.x0), float(r.y0), float(r.w0), float(r.x1), float(r.y1), float(r.w1), float(r.x2),
                   float(r.y2), float(r.w2));
    }
#if RASTER_SUBGROUP_SUMS
    // Runs of invocations on one face: an invocation starts a run where its face differs from the one before.
    uint lane = gl_SubgroupInvocationID;
    uvec2 face = live ? uvec2(image, uint(id)) : uvec2(~0u);
    uvec2 before = subgroupShuffleUp(face, 1u);  // every invocation, outside the || below (uniform control flow)
    bool head = lane == 0u || before != face;
    uvec4 heads = subgroupBallot(head);
    uint runStart = subgroupBallotFindMSB(heads & gl_SubgroupLeMask);
    for (uint d = 1u; d < gl_SubgroupSize; d *= 2u)
      for (uint i = 0u; i < 9u; ++i) {
        float below = subgroupShuffleUp(g[i], d);
        if (lane >= runStart + d) g[i] += below;
      }
    bool tail = lane + 1u == gl_SubgroupSize || subgroupBallotBitExtract(heads, lane + 1u);
    if (live && tail) addGrads(corner, g);
#else
    if (live) addGrads(corner, g);
#endif
  }
}
