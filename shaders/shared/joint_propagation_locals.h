// The joint shaders' helpers (GLSL only). localOf: a joint's local transform as a 3×4 matrix, read from the locals'
// buffers (CUDA's is Locals::at in cuda/src/joint_propagation.cu); before including this, declare the buffers
// `localA` (vec4: a quaternion, or an affine's three rows) and `localB` (translations), and the push constants `p`
// (JointsPush). storeLocalGradient (the backward shaders', below) needs more.
#ifndef ARMATURE_JOINTS_LOCALS_H
#define ARMATURE_JOINTS_LOCALS_H

// A transform in a vec4 array, three rows per joint: 128-bit accesses. In shared memory a warp makes them without
// bank conflicts at a joint's 48-byte stride (float by float, its lanes would meet four to a bank); in a buffer a
// joint's row is three transactions instead of twelve scattered ones.
#define JOINTS_ROWS_READ(array, e, m)                                      \
  for (int r_ = 0; r_ < 3; ++r_) {                                           \
    const vec4 v_ = array[(e) * 3u + uint(r_)];                              \
    m[r_ * 4] = v_.x, m[r_ * 4 + 1] = v_.y, m[r_ * 4 + 2] = v_.z, m[r_ * 4 + 3] = v_.w; \
  }
#define JOINTS_ROWS_WRITE(array, e, m) \
  for (int r_ = 0; r_ < 3; ++r_)         \
    array[(e) * 3u + uint(r_)] = vec4(m[r_ * 4], m[r_ * 4 + 1], m[r_ * 4 + 2], m[r_ * 4 + 3]);

void localOf(uint i, out float m[12]) {
  if ((p.flags & JOINTS_AFFINE) != 0u) {
    JOINTS_ROWS_READ(localA, i, m);
  } else {
    const vec4 q = localA[i];
    jointRigid(q.x, q.y, q.z, q.w, localB[i * 3u], localB[i * 3u + 1u], localB[i * 3u + 2u], m);
  }
}

#ifdef JOINTS_LOCAL_GRADIENTS
// Joint i's local's gradient from the joint's adjoint `a`, for both backward shaders (CUDA's callers compute it and
// store it with Backward::storeLocalGradient): G_i = G_parent · L_i, so dL_i = G_parentᵀ · dG_i, a root's its
// adjoint; stored as (dq, dt) for rigid locals. `parent`: the parent's index in `globals`, read unless `hasParent`
// is false. Before including this, define JOINTS_LOCAL_GRADIENTS and declare `globals` (vec4 rows), `gradA` (vec4:
// a quaternion or an affine's rows) and `gradB` (float: translations).
void storeLocalGradient(uint i, float a[12], bool hasParent, uint parent) {
  float dl[12];
  if (hasParent) {
    float gp[12];
    JOINTS_ROWS_READ(globals, parent, gp);
    jointTransposeTimes(gp, a, dl);
  } else {
    dl = a;
  }
  if ((p.flags & JOINTS_AFFINE) != 0u) {
    JOINTS_ROWS_WRITE(gradA, i, dl);
  } else {
    float dq[4];
    const vec4 q = localA[i];
    jointRigidBackward(q.x, q.y, q.z, q.w, dl, dq);
    gradA[i] = vec4(dq[0], dq[1], dq[2], dq[3]);
    gradB[i * 3u] = dl[3], gradB[i * 3u + 1u] = dl[7], gradB[i * 3u + 2u] = dl[11];
  }
}
#endif

#endif
