// A joint's local transform as a 3×4 matrix, read from the locals' buffers (GLSL only: the joint shaders'; CUDA's is
// Locals::at in cuda/src/joint_propagation.cu). Before including it, declare the buffers `localA` (rotations or
// affine) and `localB` (translations), and the push constants `p` (JointsPush).
#ifndef ARMATURE_JOINTS_LOCALS_H
#define ARMATURE_JOINTS_LOCALS_H

void localOf(uint i, out float m[12]) {
  if ((p.flags & JOINTS_AFFINE) != 0u) {
    for (int k = 0; k < 12; ++k) m[k] = localA[i * 12u + uint(k)];
  } else {
    jointRigid(localA[i * 4u], localA[i * 4u + 1u], localA[i * 4u + 2u], localA[i * 4u + 3u], localB[i * 3u],
               localB[i * 3u + 1u], localB[i * 3u + 2u], m);
  }
}

#endif
