// Generalised winding numbers of points with respect to a triangle mesh (GLSL and CUDA): w(p) = Σ_f Ω_f(p) / 4π, Ω_f
// the solid angle triangle f subtends at p by Van Oosterom and Strackee's formula. For a closed, outward-wound mesh
// w is 1 inside and 0 outside; across a small hole it blends smoothly, so w > ½ is a robust inside test. A point
// per invocation walks the faces in order, WINDING_TILE at a time staged in shared memory; on request the same walk
// keeps the point's distance to the nearest triangle (with the inside test, a signed distance).
#ifndef ARMATURE_WINDING_IO_H
#define ARMATURE_WINDING_IO_H
#include "common_io.h"

#define WINDING_WORKGROUP_SIZE 128
#define WINDING_TILE 128  // faces staged per round: one per invocation

#define WINDING_BINDING_POINTS 0    // float (P,3)
#define WINDING_BINDING_VERTICES 1  // float (V,3)
#define WINDING_BINDING_FACES 2     // int (F,3), each index in [0, V)
#define WINDING_BINDING_OUT 3       // float (P)
#define WINDING_BINDING_DISTANCES 4 // float (P), written when WindingPush::distances is 1
#define WINDING_BINDINGS 5

ARM_SHARED_STRUCT(WindingPush) {
  uint points, faces, distances, pad;
};

#ifdef __cplusplus
static_assert(sizeof(WindingPush) == 16);
#endif

#if defined(__CUDACC__)
#define WINDING_ATAN2(y, x) atan2f(y, x)
#elif defined(__cplusplus)
#define WINDING_ATAN2(y, x) std::atan2(y, x)
#else
#define WINDING_ATAN2(y, x) atan(y, x)
#endif

// The signed solid angle of triangle (a, b, c), given relative to the point: 2·atan2(a·(b×c), |a||b||c| + (a·b)|c| +
// (a·c)|b| + (b·c)|a|).
ARM_FN float windingSolidAngle(float ax, float ay, float az, float bx, float by, float bz, float cx, float cy,
                               float cz) {
  const float la = sqrt(ax * ax + ay * ay + az * az), lb = sqrt(bx * bx + by * by + bz * bz),
              lc = sqrt(cx * cx + cy * cy + cz * cz);
  const float det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx);
  const float den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (ax * cx + ay * cy + az * cz) * lb +
                    (bx * cx + by * cy + bz * cz) * la;
  return 2.0f * WINDING_ATAN2(det, den);
}

// The squared distance from the origin to triangle (a, b, c): the nearest point is a corner, a point of an edge or
// one inside, told apart by the signs of the corners' projections (Ericson, Real-Time Collision Detection §5.1.5).
ARM_FN float windingTriangleDistance2(float ax, float ay, float az, float bx, float by, float bz, float cx, float cy,
                                      float cz) {
  const float abx = bx - ax, aby = by - ay, abz = bz - az, acx = cx - ax, acy = cy - ay, acz = cz - az;
  const float d1 = -(abx * ax + aby * ay + abz * az), d2 = -(acx * ax + acy * ay + acz * az);
  if (d1 <= 0.0f && d2 <= 0.0f) return ax * ax + ay * ay + az * az;
  const float d3 = -(abx * bx + aby * by + abz * bz), d4 = -(acx * bx + acy * by + acz * bz);
  if (d3 >= 0.0f && d4 <= d3) return bx * bx + by * by + bz * bz;
  const float d5 = -(abx * cx + aby * cy + abz * cz), d6 = -(acx * cx + acy * cy + acz * cz);
  if (d6 >= 0.0f && d5 <= d6) return cx * cx + cy * cy + cz * cz;
  const float vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
  float v = 0.0f, w = 0.0f;  // the nearest point: a + v·ab + w·ac
  if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
    v = d1 / (d1 - d3);
  } else if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
    w = d2 / (d2 - d6);
  } else if (va <= 0.0f && d4 - d3 >= 0.0f && d5 - d6 >= 0.0f) {
    w = (d4 - d3) / ((d4 - d3) + (d5 - d6));  // on edge bc: b + w·(c − b)
    v = 1.0f - w;
  } else if (va + vb + vc > 0.0f) {
    v = vb / (va + vb + vc);
    w = vc / (va + vb + vc);
  } else {  // a degenerate triangle the tests above missed: its nearest corner
    const float a2 = ax * ax + ay * ay + az * az, b2 = bx * bx + by * by + bz * bz, c2 = cx * cx + cy * cy + cz * cz;
    const float ab2 = a2 < b2 ? a2 : b2;
    return ab2 < c2 ? ab2 : c2;
  }
  const float px = ax + v * abx + w * acx, py = ay + v * aby + w * acy, pz = az + v * abz + w * acz;
  return px * px + py * py + pz * pz;
}

#endif
