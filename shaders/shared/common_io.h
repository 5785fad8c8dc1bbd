// Included by GLSL, C++ and CUDA: the few definitions that make one header serve all three.
#ifndef ARMATURE_COMMON_IO_H
#define ARMATURE_COMMON_IO_H
#if defined(__cplusplus) || defined(__CUDACC__)
#include <math.h>
#include <cstdint>
#define ARM_SHARED_STRUCT(name) struct name
typedef uint32_t uint;
#define ARM_CONST constexpr
#ifdef __CUDACC__
#define ARM_FN __host__ __device__ inline
#else
#define ARM_FN inline
#endif
#define ARM_PRECISE
#else
#define ARM_SHARED_STRUCT(name) struct name
#define ARM_CONST const
#define ARM_FN
// GLSL may fuse a*b+c unless told not to; C++ here (x86-64 baseline) and CUDA (-fmad=false where it matters) don't.
#define ARM_PRECISE precise
#endif
#endif
