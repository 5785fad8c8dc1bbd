// Joint propagation on the GPU (GLSL and CUDA): bindings, push constants, and the transform math both backends run.
//
// A generation of the forest's heavy-path decomposition (armature/ops/joint_forest.h) is a run of whole paths in
// order(); for a batch it is that run repeated per skeleton.
//   - forward: one segmented scan of every path's locals at once (order() from start to end, a segment per path)
//     gives each joint its path's product from the top, S; a path hanging from joint t then has globals G_t · S, so
//     each later generation is one elementwise pass (PLACE: a joint's S premultiplied by its top's parent's global,
//     finished by the pass before). Only those passes wait on each other: the scan's products depend on no
//     generation, and a pass is one load and one product deep.
//   - backward, generation by generation from the last, a segmented scan along the generation's sequence, a segment
//     per path: an element is the map c -> (a + c)·Lᵀ carrying the adjoint c arriving from the heavy child to the
//     parent, where a is the joint's own gradient plus its light children's messages (a later generation's: each
//     one's adjoint through its local, as its path's top sends it; gathered in a fixed order) and L its local; a
//     path's bottom starts a segment. Maps compose as (u, P): c -> u + c·Pᵀ.
// The scan runs in tiles of JOINTS_TILE elements, each invocation holding JOINTS_ITEMS consecutive ones in
// registers (CUDA's block scans them by warp shuffles, the shaders' workgroup in shared memory). On a GPU one
// dispatch per scan does it (SINGLE): each tile publishes its aggregate, then combines its predecessors' back to the
// first that starts a segment, for its carry: a look-back (after Merrill and Garland's single-pass scan, 2016)
// without their shortcut through finished prefixes, whose association would vary from run to run; tiles wait only
// on earlier ones, which run first (CUDA starts blocks in index order in practice; the shaders take tiles by a
// ticket, in the order workgroups start, which Vulkan does not promise to be their IDs'). (CUDA's look-back reads 32
// predecessors at once: a path across many tiles costs one round trip per 32 of them. The shaders' reads one at a
// time: most look-backs end at the first, and a workgroup-wide window was slower there.) On lavapipe, whose
// invocations may not wait on others, three: each tile's aggregate (REDUCE), one workgroup scanning them (CARRY), and
// each tile again from its carry (APPLY). A scan of one tile needs one dispatch either way.
// A forest of at most JOINTS_SMALL_JOINTS joints (a body's skeleton, usually batched) takes another way, one
// dispatch per direction (joints_small_*.comp): a workgroup holds whole skeletons in shared memory, read and written
// with coalesced accesses, and walks them level by level (each joint its parent's global times its local; backward,
// each joint gathering its children's adjoints through their locals in their fixed order, then every joint's local's
// gradient at once).
// Transforms are 3×4 row-major float[12] ([R | t], the last row 0 0 0 1 implied), as the CPU reference's.
#ifndef ARMATURE_JOINTS_IO_H
#define ARMATURE_JOINTS_IO_H
#include "common_io.h"

#define JOINTS_THREADS 256                               // a workgroup
#define JOINTS_ITEMS 2  // a tile of 512: a scan is latency-bound, and small tiles spread a generation over more SMs
#define JOINTS_TILE (JOINTS_THREADS * JOINTS_ITEMS)
// CUDA's backward scans of two waves of tiles or more take tiles twice as long (jointsTileLength): a block holds a
// multiprocessor either way (the backward's registers), so each wave covers twice the elements. Those of fewer tiles
// than multiprocessors take tiles half as long, spread over more of them.
#define JOINTS_WIDE_TILE (2 * JOINTS_TILE)
#define JOINTS_NARROW_TILE (JOINTS_TILE / 2)
#define JOINTS_STATE_WORDS 25                            // a scan state: segment flag, u[12], P[12]
// Scratch (32-bit words): a status word per tile of each generation's scan, then that scan's tile ticket for the
// shaders (SINGLE; all zeroed at the start of a call, the status words then JOINTS_HAS_AGGREGATE), then a state per
// tile of the largest scan (the forward's, of every path).
#define JOINTS_HAS_AGGREGATE 1u
#define JOINTS_HEAD 0x80000000u                          // in the order table: this joint starts a path
// llvmpipe (lavapipe) stops an invocation's loops after 65535 iterations in all; one element gathers all its
// joint's light children, so there a joint with more than this many is refused (DeviceJointForest::widestFanOut).
#define JOINTS_LAVAPIPE_MAX_FAN_OUT 60000u

#define JOINTS_SMALL_JOINTS 220        // the most joints of a small forest, and of CUDA's forward block (four SMPL-X)
#define JOINTS_SMALL_THREADS 128       // a workgroup's invocations: few are busy on a level, so more workgroups fit
// The joints a shader's workgroup holds (12 floats each), as measured best on NVIDIA's driver (docs/
// joint_propagation.md): the forward two SMPL-X skeletons (four and more ran slower; a larger skeleton takes the
// variant joint_propagation_small_forward_whole, which holds JOINTS_SMALL_JOINTS), the backward six, so that more share each
// level's barrier (four, five and eight ran slower; CUDA's block holds eight).
#ifndef JOINTS_SMALL_FORWARD_JOINTS
#define JOINTS_SMALL_FORWARD_JOINTS 110
#endif
#define JOINTS_SMALL_BACKWARD_JOINTS 330

#define JOINTS_BINDING_ORDER 0         // uint (N): the forest's order(), JOINTS_HEAD marking each path's top; small:
                                       // the joints by depth, then each level's start (levels + 1)
#define JOINTS_BINDING_PARENTS 1       // int (N)
#define JOINTS_BINDING_LIGHT_START 2   // uint (N + 1): each joint's children that start paths, as CSR (small: all
#define JOINTS_BINDING_LIGHT_CHILDREN 3  // its children)
#define JOINTS_BINDING_LOCAL_A 4       // float: rotations (B,N,4) or affine (B,N,12)
#define JOINTS_BINDING_LOCAL_B 5       // float: translations (B,N,3) (rigid)
#define JOINTS_BINDING_INVERSE_BIND 6  // float (N,12)
#define JOINTS_BINDING_GLOBALS 7       // float (B,N,12): written by the forward, read by the backward
#define JOINTS_BINDING_SKINNING 8      // float (B,N,12): forward output, or its gradient in the backward
#define JOINTS_BINDING_POSITIONS 9     // float (B,N,3): forward output, or its gradient in the backward
#define JOINTS_BINDING_GRAD_GLOBALS 10 // float (B,N,12) (backward)
#define JOINTS_BINDING_ADJOINT 11      // float (B,N,12) (backward: each path top's message, its adjoint · Lᵀ)
#define JOINTS_BINDING_GRAD_A 12       // float: gradient of rotations or affine (backward)
#define JOINTS_BINDING_GRAD_B 13       // float: gradient of translations (backward)
#define JOINTS_BINDING_SCRATCH 14      // uint: statuses and the tiles' records (above)
#define JOINTS_BINDING_TOP_PARENTS 15  // int (N): per order() position, the parent of its path's top (-1: a root's)
#define JOINTS_BINDINGS 16

#define JOINTS_AFFINE 1u          // flags: the locals are affine 3×4 (else rigid)
#define JOINTS_SKINNING 2u        // skinning matrices (forward output, or a gradient for them)
#define JOINTS_POSITIONS 4u       // positions (forward output, or a gradient for them)
#define JOINTS_GRAD_GLOBALS 8u    // backward: a gradient for the globals

#define JOINTS_SMALL 4u   // the small-forest dispatch: genStart is the levels' count, tiles the skeletons a round
#define JOINTS_SINGLE 0u
#define JOINTS_REDUCE 1u
#define JOINTS_CARRY 2u
#define JOINTS_APPLY 3u
#define JOINTS_PLACE 5u  // forward, a generation after the first: an invocation per element, S to its global

// Points attached to joints (joint_propagation_points.comp): three passes around the propagation.
#define JOINTS_POINTS_FORWARD 0u      // an invocation per (skeleton, point): the point by its joint's global
#define JOINTS_POINTS_JOINT_GRADS 1u  // per (skeleton, joint): the globals' gradient plus its points' (fixed order)
#define JOINTS_POINTS_GRADS 2u        // per point: its coordinates' gradient, summed over the batch in order
#define JOINTS_POINTS_BINDING_POINT_JOINTS 0  // int (P)
#define JOINTS_POINTS_BINDING_POINT_START 1   // uint (N + 1): each joint's points, as CSR
#define JOINTS_POINTS_BINDING_POINT_ORDER 2   // uint (P)
#define JOINTS_POINTS_BINDING_POINTS 3        // float (P,3) in their joints' frames
#define JOINTS_POINTS_BINDING_GLOBALS 4       // float (B,N,12)
#define JOINTS_POINTS_BINDING_MOVED 5         // float (B,P,3): forward output, or its gradient
#define JOINTS_POINTS_BINDING_GRAD_GLOBALS 6  // float (B,N,12), optional (JOINTS_GRAD_GLOBALS)
#define JOINTS_POINTS_BINDING_JOINT_GRADS 7   // float (B,N,12): the globals' whole gradient
#define JOINTS_POINTS_BINDING_GRAD_POINTS 8   // float (P,3)
#define JOINTS_POINTS_BINDINGS 9

ARM_SHARED_STRUCT(JointsPointsPush) {
  uint joints, batch, points, mode, flags, pad0, pad1, pad2;
};

ARM_SHARED_STRUCT(JointsPush) {
  uint joints;       // N
  uint batch;        // B
  uint genStart;     // this dispatch's generation: order() positions [genStart, genStart + genLength)
  uint genLength;
  uint flags;
  uint phase;        // JOINTS_SINGLE, JOINTS_REDUCE, JOINTS_CARRY, JOINTS_APPLY or JOINTS_PLACE
  uint tiles;        // ceil(B·genLength / tileLength); a single tile needs no carry (PLACE: unused)
  uint statusStart;  // SINGLE: this generation's first status word
  uint recordStart;  // the first record's word
  uint tileLength;   // a tile's elements: JOINTS_TILE, or on CUDA JOINTS_WIDE_TILE or JOINTS_NARROW_TILE (the host
                     // picks the kernel by it; the shaders and kernels know their own)
  uint pad0, pad1;
};

#if defined(__cplusplus) || defined(__CUDACC__)
#define JOINT_IN(name, n) const float name[n]
#define JOINT_OUT(name, n) float name[n]
#else
#define JOINT_IN(name, n) in float name[n]
#define JOINT_OUT(name, n) out float name[n]
#endif

// The one transform product of joint propagation and the SMPL-X skinning chain (skin_joints.comp,
// cuda/src/skinning_forward.h): a joint's global rotation and translation from its parent's (gp, tp) and its local's
// (r, t): g = gp·r, tr = tp + gp·t, rotations row-major 3×3, the terms summed in this order.
ARM_FN void jointChainStep(JOINT_IN(gp, 9), JOINT_IN(tp, 3), JOINT_IN(r, 9), JOINT_IN(t, 3), JOINT_OUT(g, 9),
                           JOINT_OUT(tr, 3)) {
  for (int i = 0; i < 3; ++i) {
    for (int c = 0; c < 3; ++c) g[i * 3 + c] = gp[i * 3] * r[c] + gp[i * 3 + 1] * r[3 + c] + gp[i * 3 + 2] * r[6 + c];
    tr[i] = tp[i] + gp[i * 3] * t[0] + gp[i * 3 + 1] * t[1] + gp[i * 3 + 2] * t[2];
  }
}

// c = a · b for 3×4 transforms: jointChainStep on their parts.
ARM_FN void jointCompose(JOINT_IN(a, 12), JOINT_IN(b, 12), JOINT_OUT(c, 12)) {
  float ga[9], ta[3], rb[9], tb[3], g[9], t[3];
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) ga[i * 3 + k] = a[i * 4 + k], rb[i * 3 + k] = b[i * 4 + k];
    ta[i] = a[i * 4 + 3], tb[i] = b[i * 4 + 3];
  }
  jointChainStep(ga, ta, rb, tb, g, t);
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) c[i * 4 + k] = g[i * 3 + k];
    c[i * 4 + 3] = t[i];
  }
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


// The forward scan's operator on (segment flag, product): x then y (the result's flag is x's or y's).
ARM_FN void jointsCombineForward(JOINT_IN(px, 12), uint fy, JOINT_IN(py, 12), JOINT_OUT(p, 12)) {
  if (fy != 0u) {
    for (int k = 0; k < 12; ++k) p[k] = py[k];
  } else {
    jointCompose(px, py, p);
  }
}

// The backward scan's operator on maps (flag, u, P), c -> u + c·Pᵀ: x (below) then y (above). A flagged y ignores
// what arrives from below.
ARM_FN void jointsCombineBackward(JOINT_IN(ux, 12), JOINT_IN(px, 12), uint fy, JOINT_IN(uy, 12), JOINT_IN(py, 12),
                                  JOINT_OUT(u, 12), JOINT_OUT(p, 12)) {
  if (fy != 0u) {
    for (int k = 0; k < 12; ++k) u[k] = uy[k], p[k] = py[k];
  } else {
    jointTimesTranspose(ux, py, u);
    for (int k = 0; k < 12; ++k) u[k] += uy[k];
    jointCompose(py, px, p);
  }
}

#ifdef __cplusplus
static_assert(sizeof(JointsPush) == 48);
static_assert(sizeof(JointsPointsPush) == 32);
#endif
#endif
