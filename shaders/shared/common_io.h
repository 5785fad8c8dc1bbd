// Included by GLSL, C++ and CUDA: the few definitions that make one header serve all three.
#ifndef ARMATURE_COMMON_IO_H
#define ARMATURE_COMMON_IO_H
#if defined(__cplusplus) || defined(__CUDACC__)
#include <math.h>
#include <cstdint>
#include <cstring>
#define ARM_SHARED_STRUCT(name) struct name
typedef uint32_t uint;
#define ARM_CONST constexpr
#ifdef __CUDACC__
#define ARM_FN __host__ __device__ inline
// A function for rare paths, kept out of line on the GPU so that its registers do not weigh on the hot path.
#define ARM_RARE_FN __host__ __device__ __noinline__ inline
#else
#define ARM_FN inline
#define ARM_RARE_FN inline
#endif
#define ARM_PRECISE
#define ARM_OUT(type, name, n) type name[n]    // an array a shared function writes (GLSL: `out type name[n]`)
#define ARM_INOUT(type, name, n) type name[n]  // an array a shared function reads and writes (GLSL: `inout`)
// A float's IEEE bits (GLSL's floatBitsToUint).
ARM_FN uint armFloatBits(float f) {
  uint u;
  memcpy(&u, &f, sizeof u);
  return u;
}
// The float with IEEE bits u (GLSL's uintBitsToFloat).
ARM_FN float armBitsFloat(uint u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
#else
#define ARM_SHARED_STRUCT(name) struct name
#define ARM_CONST const
#define ARM_FN
#define ARM_RARE_FN
// GLSL may fuse a*b+c unless told not to; C++ here (x86-64 baseline) and CUDA (-fmad=false where it matters) don't.
#define ARM_PRECISE precise
#define ARM_OUT(type, name, n) out type name[n]
#define ARM_INOUT(type, name, n) inout type name[n]
#define armFloatBits(f) floatBitsToUint(f)
#define armBitsFloat(u) uintBitsToFloat(u)
#endif
#endif
