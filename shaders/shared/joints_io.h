// Joint propagation on the GPU (GLSL and CUDA): bindings, push constants, and the transform math both backends run.
// A path of the forest's heavy-path decomposition (armature/ops/joint_forest.h) is walked by one invocation, top
// down in the forward and bottom up in the backward; one dispatch per generation. Transforms are 3×4 row-major
// float[12] ([R | t], the last row 0 0 0 1 implied), as the CPU reference's.
#ifndef ARMATURE_JOINTS_IO_H
#define ARMATURE_JOINTS_IO_H
#include "common_io.h"

#define JOINTS_WORKGROUP_SIZE 64
// llvmpipe (lavapipe) stops an invocation's loops after 65535 iterations in all, so there a path's walk (its joints,
// plus in the backward their light children) is refused past this many steps (DeviceJointForest::longestWalk).
#define JOINTS_LAVAPIPE_MAX_WALK 60000u

#define JOINTS_BINDING_ORDER 0         // uint (N): the forest's order(), path by path
#define JOINTS_BINDING_PATH_START 1    // uint (paths + 1)
#define JOINTS_BINDING_PARENTS 2       // int (N)
#define JOINTS_BINDING_LIGHT_START 3   // uint (N + 1): each joint's children that start paths, as CSR
#define JOINTS_BINDING_LIGHT_CHILDREN 4
#define JOINTS_BINDING_LOCAL_A 5       // float: rotations (B,N,4) or affine (B,N,12)
#define JOINTS_BINDING_LOCAL_B 6       // float: translations (B,N,3) (rigid)
#define JOINTS_BINDING_INVERSE_BIND 7  // float (N,12)
#define JOINTS_BINDING_GLOBALS 8       // float (B,N,12): written by the forward, read by the backward
#define JOINTS_BINDING_SKINNING 9      // float (B,N,12): forward output, or its gradient in the backward
#define JOINTS_BINDING_POSITIONS 10    // float (B,N,3): forward output, or its gradient in the backward
#define JOINTS_BINDING_GRAD_GLOBALS 11 // float (B,N,12) (backward)
#define JOINTS_BINDING_ADJOINT 12      // float (B,N,12) (backward scratch: each joint's finished adjoint)
#define JOINTS_BINDING_GRAD_A 13       // float: gradient of rotations or affine (backward)
#define JOINTS_BINDING_GRAD_B 14       // float: gradient of translations (backward)
#define JOINTS_BINDINGS 15

#define JOINTS_AFFINE 1u          // flags: the locals are affine 3×4 (else rigid)
#define JOINTS_SKINNING 2u        // skinning matrices (forward output, or a gradient for them)
#define JOINTS_POSITIONS 4u       // positions (forward output, or a gradient for them)
#define JOINTS_GRAD_GLOBALS 8u    // backward: a gradient for the globals

ARM_SHARED_STRUCT(JointsPush) {
  uint joints;     // N
  uint batch;      // B
  uint firstPath;  // this dispatch's generation: paths [firstPath, firstPath + paths)
  uint paths;
  uint flags;
  uint pad0, pad1, pad2;
};

#if defined(__cplusplus) || defined(__CUDACC__)
#define JOINT_IN(name, n) const float name[n]
#define JOINT_OUT(name, n) float name[n]
#else
#define JOINT_IN(name, n) in float name[n]
#define JOINT_OUT(name, n) out float name[n]
#endif

// c = a · b.
ARM_FN void jointCompose(JOINT_IN(a, 12), JOINT_IN(b, 12), JOINT_OUT(c, 12)) {
  for (int r = 0; r < 3; ++r)
    for (int col = 0; col < 4; ++col)
      c[r * 4 + col] = a[r * 4] * b[col] + a[r * 4 + 1] * b[4 + col] + a[r * 4 + 2] * b[8 + col] +
                       (col == 3 ? a[r * 4 + 3] : 0.0f);
}

// [R(q) | t] for q = (x, y, z, w) by the unit quaternion's formula (as the reference's trsMatrix).
ARM_FN void jointRigid(float x, float y, float z, float w, float tx, float ty, float tz, JOINT_OUT(m, 12)) {
  m[0] = 1.0f - 2.0f * (y * y + z * z), m[1] = 2.0f * (x * y - z * w), m[2] = 2.0f * (x * z + y * w), m[3] = tx;
  m[4] = 2.0f * (x * y + z * w), m[5] = 1.0f - 2.0f * (x * x + z * z), m[6] = 2.0f * (y * z - x * w), m[7] = ty;
  m[8] = 2.0f * (x * z - y * w), m[9] = 2.0f * (y * z + x * w), m[10] = 1.0f - 2.0f * (x * x + y * y), m[11] = tz;
}

// y = a · bᵀ with b's implied last row: the adjoint a of a product's result carried to its left factor.
ARM_FN void jointTimesTranspose(JOINT_IN(a, 12), JOINT_IN(b, 12), JOINT_OUT(y, 12)) {
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c)
      y[r * 4 + c] = a[r * 4] * b[c * 4] + a[r * 4 + 1] * b[c * 4 + 1] + a[r * 4 + 2] * b[c * 4 + 2] +
                     a[r * 4 + 3] * b[c * 4 + 3];
    y[r * 4 + 3] = a[r * 4 + 3];
  }
}

// y = gᵀ · a (g's linear part): the adjoint a of a product's result carried to its right factor.
ARM_FN void jointTransposeTimes(JOINT_IN(g, 12), JOINT_IN(a, 12), JOINT_OUT(y, 12)) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) y[r * 4 + c] = g[r] * a[c] + g[4 + r] * a[4 + c] + g[8 + r] * a[8 + c];
}

// d<G, [R(q) | t]>/dq for jointRigid's rotation (G's linear part).
ARM_FN void jointRigidBackward(float x, float y, float z, float w, JOINT_IN(G, 12), JOINT_OUT(dq, 4)) {
  dq[0] = 2.0f * (y * G[1] + z * G[2] + y * G[4] - 2.0f * x * G[5] - w * G[6] + z * G[8] + w * G[9] - 2.0f * x * G[10]);
  dq[1] = 2.0f * (-2.0f * y * G[0] + x * G[1] + w * G[2] + x * G[4] + z * G[6] - w * G[8] + z * G[9] - 2.0f * y * G[10]);
  dq[2] = 2.0f * (-2.0f * z * G[0] - w * G[1] + x * G[2] + w * G[4] - 2.0f * z * G[5] + y * G[6] + x * G[8] + y * G[9]);
  dq[3] = 2.0f * (-z * G[1] + y * G[2] + z * G[4] - x * G[6] - y * G[8] + x * G[9]);
}

#ifdef __cplusplus
static_assert(sizeof(JointsPush) == 32);
#endif
#endif
