#version 450
// Texture baking's samples (shared/bake_io.h): an invocation per texel walks the views in order.
#extension GL_GOOGLE_include_directive : require
#include "shared/bake_io.h"

layout(local_size_x = BAKE_THREADS) in;
layout(std430, binding = BAKE_BINDING_POSITIONS) readonly buffer Positions { float positions[]; };
layout(std430, binding = BAKE_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = BAKE_BINDING_TEXEL_FACES) readonly buffer TexelFaces { int texelFaces[]; };
layout(std430, binding = BAKE_BINDING_TEXEL_BARY) readonly buffer TexelBary { float texelBary[]; };
layout(std430, binding = BAKE_BINDING_VIEW_FACES) readonly buffer ViewFaces { int viewFaces[]; };
layout(std430, binding = BAKE_BINDING_VIEW_BARY) readonly buffer ViewBary { float viewBary[]; };
layout(std430, binding = BAKE_BINDING_MATRICES) readonly buffer Matrices { float matrices[]; };
layout(std430, binding = BAKE_BINDING_LOCATIONS) writeonly buffer Locations { float locations[]; };
layout(std430, binding = BAKE_BINDING_WEIGHTS) buffer Weights { float weights[]; };
layout(push_constant) uniform Push { BakePush p; };

// The point at barycentrics (b0, b1, b2) of face f (0 ≤ f < F), false if a corner is past the vertices.
bool facePoint(uint f, vec3 b, out vec3 point, out vec3 normal) {
  vec3 corner[3];
  for (int k = 0; k < 3; ++k) {
    const uint v = uint(faces[f * 3u + uint(k)]);
    if (v >= p.vertexCount) return false;
    corner[k] = vec3(positions[v * 3u], positions[v * 3u + 1u], positions[v * 3u + 2u]);
  }
  point = b.x * corner[0] + b.y * corner[1] + b.z * corner[2];
  normal = cross(corner[1] - corner[0], corner[2] - corner[0]);
  return true;
}

// Texel t's views in order: locations and weights written as found, then the weights normalised (read back
// rather than kept in an array, which would spill to memory).
void bakeTexel(uint t) {
  const uint K = p.views, face = uint(texelFaces[t]) - 1u;
  vec3 point, normal;
  const bool onMesh = face < p.faceCount &&
                      facePoint(face, vec3(texelBary[t * 3u], texelBary[t * 3u + 1u], texelBary[t * 3u + 2u]), point,
                                normal);
  float total = 0.0;
  for (uint k = 0u; k < K; ++k) {
    const uint s = t * K + k;
    float w = 0.0, loc[2];
    if (onMesh) {
      float m[16];
      for (int i = 0; i < 16; ++i) m[i] = matrices[k * 16u + uint(i)];
      if (bakeLocate(m, point.x, point.y, point.z, loc)) {
        const int row = bakeFootprint(loc[1], p.height), column = bakeFootprint(loc[0], p.width);
        float ray[3];
        bakeRay(m, loc, ray);
        // Seen where each of the four pixels the bilinear sample reads shows a surface within the tolerance of p
        // along the ray.
        bool seen = row >= 0 && column >= 0;
        for (int c = 0; c < 4 && seen; ++c) {
          const uint pixel = (k * p.height + uint(row + c / 2)) * p.width + uint(column + c % 2);
          const uint shownFace = uint(viewFaces[pixel]) - 1u;
          vec3 q, shown;
          seen = shownFace < p.faceCount &&
                 facePoint(shownFace, vec3(viewBary[pixel * 3u], viewBary[pixel * 3u + 1u], viewBary[pixel * 3u + 2u]),
                           q, shown) &&
                 bakeHitDistance(ray, q.x - point.x, q.y - point.y, q.z - point.z, shown.x, shown.y, shown.z) <=
                     p.tolerance;
        }
        if (seen) w = bakeWeight(bakeFacing(ray, normal.x, normal.y, normal.z), p.minCosine, p.sharpness);
      }
    }
    weights[s] = w;
    locations[s * 2u] = w > 0.0 ? loc[0] : -1.0;
    locations[s * 2u + 1u] = w > 0.0 ? loc[1] : -1.0;
    total += w;
  }
  for (uint k = 0u; k < K; ++k) weights[t * K + k] = total > 0.0 ? weights[t * K + k] / total : 0.0;
}

void main() {
  for (uint t = gl_GlobalInvocationID.x; t < p.texels; t += gl_NumWorkGroups.x * BAKE_THREADS) bakeTexel(t);
}
