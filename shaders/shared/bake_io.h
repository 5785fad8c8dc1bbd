// Texture baking's samples on the GPU (GLSL and CUDA), armature/ops/texture_bake.h's semantics: one invocation per
// texel finds where its surface point lands in each of K views, whether the view sees it at all four pixels its
// bilinear sample reads, and how squarely, and writes the deformable aggregation's locations and weights
// (normalised over the views).
#ifndef ARMATURE_BAKE_IO_H
#define ARMATURE_BAKE_IO_H
#include "common_io.h"

#define BAKE_THREADS 128
#define BAKE_MAX_VIEWS 64

// Bindings: the posed mesh, the texel map (an atlas rasterised once), the views' visibility buffers and matrices,
// then the outputs.
#define BAKE_BINDING_POSITIONS 0     // float (N,3)
#define BAKE_BINDING_FACES 1         // int (F,3)
#define BAKE_BINDING_TEXEL_FACES 2   // int (T): face + 1, 0 = no face
#define BAKE_BINDING_TEXEL_BARY 3    // float (T,3)
#define BAKE_BINDING_VIEW_FACES 4    // int (K,H,W): face + 1, 0 = background
#define BAKE_BINDING_VIEW_BARY 5     // float (K,H,W,3)
#define BAKE_BINDING_MATRICES 6      // float (K,16), column-major
#define BAKE_BINDING_LOCATIONS 7     // float (T,K,2), out
#define BAKE_BINDING_WEIGHTS 8       // float (T,K), out
#define BAKE_BINDINGS 9

ARM_SHARED_STRUCT(BakePush) {
  uint texels, views, width, height;
  uint vertexCount, faceCount;
  float tolerance;   // how far the point a view sees may lie from the texel's, in the mesh's units
  float minCosine;   // views seeing the surface more obliquely than this count for nothing
  float sharpness;   // a view's weight is cos^sharpness
  uint pad0, pad1, pad2;
};
#ifdef __cplusplus
static_assert(sizeof(BakePush) == 48);
#endif

// Row r of the column-major matrix m, dotted with (x, y, z, 1).
ARM_FN float bakeRow(const float m[16], int r, float x, float y, float z) {
  return m[r] * x + m[4 + r] * y + m[8 + r] * z + m[12 + r];
}

// Where point (x, y, z) lands in the view of matrix m: its normalised location (clip x/w, y/w mapped from [−1, 1] to
// [0, 1], the rasteriser's pixel rows), false behind the camera, off the view, or for a non-finite point.
ARM_FN bool bakeLocate(const float m[16], float x, float y, float z, ARM_OUT(float, loc, 2)) {
  const float w = bakeRow(m, 3, x, y, z);
  loc[0] = 0.5f * (bakeRow(m, 0, x, y, z) / w + 1.0f);
  loc[1] = 0.5f * (bakeRow(m, 1, x, y, z) / w + 1.0f);
  return w > 0.0f && loc[0] > 0.0f && loc[0] < 1.0f && loc[1] > 0.0f && loc[1] < 1.0f;
}

// The first of the two pixels the aggregation's bilinear sample at normalised coordinate t reads on an axis of
// `size` pixels (floor(t·size − ½), as aggregationCorners); −1 unless both lie on the image.
ARM_FN int bakeFootprint(float t, uint size) {
  const float f = floor(t * float(size) - 0.5f);
  return f >= 0.0f && f + 1.0f < float(size) ? int(f) : -1;
}

// The direction of the view's ray through a location: the ray is where the rows x − ndcX·w and y − ndcY·w of m
// vanish, so it runs along their cross product (any projective camera; its sign is arbitrary).
ARM_FN void bakeRay(const float m[16], const float loc[2], ARM_OUT(float, ray, 3)) {
  const float u = 2.0f * loc[0] - 1.0f, v = 2.0f * loc[1] - 1.0f;
  const float ax = m[0] - u * m[3], ay = m[4] - u * m[7], az = m[8] - u * m[11];
  const float bx = m[1] - v * m[3], by = m[5] - v * m[7], bz = m[9] - v * m[11];
  ray[0] = ay * bz - az * by, ray[1] = az * bx - ax * bz, ray[2] = ax * by - ay * bx;
}

// |cos| of the angle between the ray and normal n; NaN for a degenerate normal.
ARM_FN float bakeFacing(const float ray[3], float nx, float ny, float nz) {
  const float dot = ray[0] * nx + ray[1] * ny + ray[2] * nz;
  return abs(dot) / sqrt((ray[0] * ray[0] + ray[1] * ray[1] + ray[2] * ray[2]) * (nx * nx + ny * ny + nz * nz));
}

// How far along the ray from the texel's point p the plane of the face the view shows there lies: q − p = (dx, dy,
// dz) for a point q of that face, (mx, my, mz) its normal. A z-buffer test at p's exact location: 0 where p lies on
// what the view sees, whatever the pixel's size; NaN (never visible) for a degenerate face or a ray along it.
ARM_FN float bakeHitDistance(const float ray[3], float dx, float dy, float dz, float mx, float my, float mz) {
  const float along = ray[0] * mx + ray[1] * my + ray[2] * mz;
  return abs(dx * mx + dy * my + dz * mz) * sqrt(ray[0] * ray[0] + ray[1] * ray[1] + ray[2] * ray[2]) / abs(along);
}

// A view's weight before normalising, where it sees the texel: cos^sharpness where cos ≥ minCosine, cos > 0; else 0
// (also for NaN).
ARM_FN float bakeWeight(float facing, float minCosine, float sharpness) {
  return facing >= minCosine && facing > 0.0f ? pow(facing, sharpness) : 0.0f;
}

#endif
