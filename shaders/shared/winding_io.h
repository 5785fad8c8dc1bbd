// Generalised winding numbers of points with respect to a triangle mesh (GLSL and CUDA): w(p) = Σ_f Ω_f(p) / 4π, Ω_f
// the solid angle triangle f subtends at p by Van Oosterom and Strackee's formula. For a closed, outward-wound mesh
// w is 1 inside and 0 outside; across a small hole it blends smoothly, so w > ½ is a robust inside test. A point
// per invocation walks the faces in order, WINDING_TILE at a time staged in shared memory.
#ifndef ARMATURE_WINDING_IO_H
#define ARMATURE_WINDING_IO_H
#include "common_io.h"

#define WINDING_WORKGROUP_SIZE 128
#define WINDING_TILE 128  // faces staged per round: one per invocation

#define WINDING_BINDING_POINTS 0    // float (P,3)
#define WINDING_BINDING_VERTICES 1  // float (V,3)
#define WINDING_BINDING_FACES 2     // int (F,3), each index in [0, V)
#define WINDING_BINDING_OUT 3       // float (P)
#define WINDING_BINDINGS 4

ARM_SHARED_STRUCT(WindingPush) {
  uint points, faces, pad0, pad1;
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

#endif
