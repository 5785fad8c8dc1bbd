// A joint forest analysed on the GPU (GLSL and CUDA): the tables joint propagation reads (shared/joint_propagation_io.h),
// built from the parents with the same result as JointForest on the host (armature/ops/joint_forest.h), for the
// forests too large to analyse on the host every time their topology changes.
//
// Every step is a pass of one invocation per item, or a scan of counts (shared/buckets_io.h); no pass loops over a
// joint's children or ancestors, so a root with a million children or a chain of a million joints costs the same:
//   1. the pairs (parent + 1, joint) sorted (bitonic): each joint's children in index order, the roots first;
//   2. the Euler tour of the forest (entering and leaving each joint, children in index order, roots one after
//      another) as a linked list; list ranking by pointer jumping gives each event's distance to the end, and a
//      joint's subtree size is (rank(enter) - rank(leave) + 1) / 2. A list that never ends is a cycle;
//   3. each joint's heavy child: the child with the largest subtree, ties to the lower index (integer atomics);
//   4. pointer jumping up heavy edges: each joint's path top and its offset in the path; then up from path tops
//      to their parents' tops: each path's generation;
//   5. the pairs (generation, top) sorted: the paths in order (by generation, then top index), their starts a scan
//      of their lengths, and each joint placed at its path's start plus its offset (with its top's parent);
//   6. each joint's light children (its children but the heavy one, in index order) as CSR.
// All sums are of integers, so the tables are the same on every run (and the same as the host's).
//
// Two buffers of 32-bit words: `words` (the scratch, JointsSetupLayout) and `tables` (the parents in, the results
// out, JointsSetupTables). GLSL gets them declared here; CUDA defines JOINTS_SETUP_BUFFERS as the parameters
// `uint32_t* words, uint32_t* tables,` before including it.
#ifndef ARMATURE_JOINTS_SETUP_H
#define ARMATURE_JOINTS_SETUP_H
#include "buckets_io.h"
#include "joint_propagation_io.h"

#define JOINTS_SETUP_THREADS 256
#define JOINTS_SETUP_END 0xFFFFFFFFu  // the end of a jump chain; also the sort's padding

#define JOINTS_SETUP_KEYS 0u          // per sort slot: (parent + 1, joint) and the children's counts
#define JOINTS_SETUP_BITONIC 1u       // per pair of sort slots: one compare-exchange of a bitonic sorting network
#define JOINTS_SETUP_EULER 2u         // per sorted joint: its two events' links
#define JOINTS_SETUP_JUMP 3u          // per chain element: one pointer-jumping round, half src to half 1 - src
#define JOINTS_SETUP_SUBTREE 4u       // per joint: its subtree's size from the ranks; a chain left over is a cycle
#define JOINTS_SETUP_HEAVY 5u         // per joint: its parent's heavy child if its subtree is the largest
#define JOINTS_SETUP_TOPS 6u          // per joint: the heavy edges as jump chains; light children counted
#define JOINTS_SETUP_GENERATIONS 7u   // per joint: top and offset kept; path tops' chains to their parents' tops
#define JOINTS_SETUP_PATH_KEYS 8u     // per sort slot: (generation, top) for path tops; the generations' counts
#define JOINTS_SETUP_PATHS 9u         // per sorted path: where its top lands, and its length to scan
#define JOINTS_SETUP_ORDER 10u        // per joint: its place in the order, and its top's parent there
#define JOINTS_SETUP_LIGHT 11u        // per joint: light-children CSR

#define JOINTS_SETUP_MAX_GENERATIONS 32u  // floor(log2 N) + 1 for N < 2^31
// The status words the host reads back (JointsSetupLayout::status).
#define JOINTS_SETUP_STATUS_CYCLE 0u       // non-zero: the parents form a cycle
#define JOINTS_SETUP_STATUS_FAN_OUT 1u     // the most light children of one joint
#define JOINTS_SETUP_STATUS_PATHS 8u       // paths per generation (MAX_GENERATIONS words)
#define JOINTS_SETUP_STATUS_JOINTS 40u     // joints per generation (MAX_GENERATIONS words)
#define JOINTS_SETUP_STATUS_WORDS 72u

#define JOINTS_SETUP_BINDING_WORDS 0
#define JOINTS_SETUP_BINDING_TABLES 1
#define JOINTS_SETUP_BINDINGS 2

ARM_SHARED_STRUCT(JointsSetupPush) {
  uint mode;
  uint joints;    // N
  uint sortSize;  // the sort's slots: the power of two at least N
  uint items;     // this pass's invocations
  uint block;     // bitonic: the size of the sequences being merged
  uint stride;    // bitonic: the compare distance
  uint side;      // jump: the half of the chains read (the other is written)
  uint pad;
};

// Word offsets of each region, 64-word aligned (a region can be bound on its own).
ARM_SHARED_STRUCT(JointsSetupTables) {
  uint parents, order, lightStart, lightChildren, topParents, words;
};

ARM_SHARED_STRUCT(JointsSetupLayout) {
  uint sort;                                    // 2 × sortSize: (key, value) pairs
  uint childCounts, childStarts, childSums;     // buckets parent + 1 (N + 1): counts, N + 2 starts, block sums
  uint slot;                                    // N: each joint's place in the sorted pairs
  uint jump;                                    // two halves of (link, sum, target), each 2N
  uint subtree, largestChild, heavy;            // N each; heavy: ~(heavy child), 0 for none
  uint top, offset, pathLength, pathOf;         // N each
  uint pathCounts, pathStarts, pathSums;        // N, N + 1, block sums
  uint lightCounts, lightStarts, lightSums;     // N, N + 1, block sums
  uint status;                                  // JOINTS_SETUP_STATUS_WORDS
  uint words;                                   // the total
};

ARM_FN uint jointsSetupAlign(uint words) { return (words + 63u) / 64u * 64u; }

ARM_FN JointsSetupTables jointsSetupTables(uint N) {
  JointsSetupTables t;
  t.parents = 0u;
  t.order = jointsSetupAlign(N);
  t.lightStart = t.order + jointsSetupAlign(N);
  t.lightChildren = t.lightStart + jointsSetupAlign(N + 1u);
  t.topParents = t.lightChildren + jointsSetupAlign(N);
  t.words = t.topParents + jointsSetupAlign(N);
  return t;
}

ARM_FN JointsSetupLayout jointsSetupLayout(uint N, uint sortSize) {
  JointsSetupLayout l;
  uint at = 0u;
  l.sort = at, at += jointsSetupAlign(2u * sortSize);
  l.childCounts = at, at += jointsSetupAlign(N + 1u);
  l.childStarts = at, at += jointsSetupAlign(N + 2u);
  l.childSums = at, at += jointsSetupAlign(bucketBlockSums(N + 1u));
  l.slot = at, at += jointsSetupAlign(N);
  l.jump = at, at += 6u * jointsSetupAlign(2u * N);
  l.subtree = at, at += jointsSetupAlign(N);
  l.largestChild = at, at += jointsSetupAlign(N);
  l.heavy = at, at += jointsSetupAlign(N);
  l.top = at, at += jointsSetupAlign(N);
  l.offset = at, at += jointsSetupAlign(N);
  l.pathLength = at, at += jointsSetupAlign(N);
  l.pathOf = at, at += jointsSetupAlign(N);
  l.pathCounts = at, at += jointsSetupAlign(N);
  l.pathStarts = at, at += jointsSetupAlign(N + 1u);
  l.pathSums = at, at += jointsSetupAlign(bucketBlockSums(N));
  l.lightCounts = at, at += jointsSetupAlign(N);
  l.lightStarts = at, at += jointsSetupAlign(N + 1u);
  l.lightSums = at, at += jointsSetupAlign(bucketBlockSums(N));
  l.status = at, at += jointsSetupAlign(JOINTS_SETUP_STATUS_WORDS);
  l.words = at;
  return l;
}

#if !defined(__cplusplus) || defined(__CUDACC__)
#ifdef __CUDACC__
#define JOINTS_SETUP_ATOMIC(op, at, value) atomic##op(&words[at], value)
#define JOINTS_SETUP_DEVICE __device__ inline
#else
layout(std430, binding = JOINTS_SETUP_BINDING_WORDS) buffer JointsSetupWords { uint words[]; };
layout(std430, binding = JOINTS_SETUP_BINDING_TABLES) buffer JointsSetupTableWords { uint tables[]; };
#define JOINTS_SETUP_ATOMIC(op, at, value) atomic##op(words[at], value)
#define JOINTS_SETUP_DEVICE
#define JOINTS_SETUP_BUFFERS
#endif

// A jump chain's arrays in half h: link, sum, target (each 2N words).
JOINTS_SETUP_DEVICE uint jointsSetupJump(JointsSetupLayout l, uint N, uint h, uint array) {
  return l.jump + (h * 3u + array) * jointsSetupAlign(2u * N);
}

// Invocation i of pass p.mode.
JOINTS_SETUP_DEVICE void jointsSetupStep(JOINTS_SETUP_BUFFERS JointsSetupPush p, uint i) {
  const uint N = p.joints;
  const JointsSetupLayout l = jointsSetupLayout(N, p.sortSize);
  const JointsSetupTables t = jointsSetupTables(N);
  const uint E = JOINTS_SETUP_END;
  if (p.mode == JOINTS_SETUP_KEYS || p.mode == JOINTS_SETUP_PATH_KEYS) {
    uint key = E;
    if (i < N && p.mode == JOINTS_SETUP_KEYS) {
      key = uint(int(tables[t.parents + i]) + 1);
      JOINTS_SETUP_ATOMIC(Add, l.childCounts + key, 1u);
    } else if (i < N) {  // generations: in the chains from the tops (half p.side)
      const uint top = words[l.top + i], generation = words[jointsSetupJump(l, N, p.side, 1u) + top];
      const uint g = min(generation, JOINTS_SETUP_MAX_GENERATIONS - 1u);
      JOINTS_SETUP_ATOMIC(Add, l.status + JOINTS_SETUP_STATUS_JOINTS + g, 1u);
      if (words[l.offset + i] == 0u) {
        key = generation;
        JOINTS_SETUP_ATOMIC(Add, l.status + JOINTS_SETUP_STATUS_PATHS + g, 1u);
      }
    }
    words[l.sort + 2u * i] = key;
    words[l.sort + 2u * i + 1u] = i < N ? i : E;
  } else if (p.mode == JOINTS_SETUP_BITONIC) {
    // Pair i of the network's step (block, stride): slots a < b, ascending where a's block bit is clear.
    const uint a = 2u * p.stride * (i / p.stride) + i % p.stride, b = a + p.stride;
    const uint ka = words[l.sort + 2u * a], va = words[l.sort + 2u * a + 1u];
    const uint kb = words[l.sort + 2u * b], vb = words[l.sort + 2u * b + 1u];
    const bool aAfterB = ka > kb || (ka == kb && va > vb);
    if (aAfterB == ((a & p.block) == 0u)) {
      words[l.sort + 2u * a] = kb, words[l.sort + 2u * a + 1u] = vb;
      words[l.sort + 2u * b] = ka, words[l.sort + 2u * b + 1u] = va;
    }
  } else if (p.mode == JOINTS_SETUP_EULER) {
    // Events: 2j enters joint j, 2j + 1 leaves it. Entering goes to the first child (or leaving, for a leaf);
    // leaving goes to the next sibling (roots: the next root), else to leaving the parent, else it ends.
    const uint key = words[l.sort + 2u * i], j = words[l.sort + 2u * i + 1u];
    words[l.slot + j] = i;
    const uint first = words[l.childStarts + j + 1u], end = words[l.childStarts + j + 2u];
    const uint link = jointsSetupJump(l, N, 0u, 0u), sum = jointsSetupJump(l, N, 0u, 1u);
    words[link + 2u * j] = end > first ? 2u * words[l.sort + 2u * first + 1u] : 2u * j + 1u;
    const bool sibling = i + 1u < N && words[l.sort + 2u * (i + 1u)] == key;
    words[link + 2u * j + 1u] = sibling ? 2u * words[l.sort + 2u * (i + 1u) + 1u] : key > 0u ? 2u * (key - 1u) + 1u : E;
    words[sum + 2u * j] = 1u, words[sum + 2u * j + 1u] = 1u;
  } else if (p.mode == JOINTS_SETUP_JUMP) {
    const uint from = jointsSetupJump(l, N, p.side, 0u), to = jointsSetupJump(l, N, 1u - p.side, 0u);
    const uint stride = jointsSetupAlign(2u * N), next = words[from + i];
    uint link = next, sum = words[from + stride + i], target = words[from + 2u * stride + i];
    if (next != E) {
      link = words[from + next];
      sum += words[from + stride + next];
      target = words[from + 2u * stride + next];
    }
    words[to + i] = link, words[to + stride + i] = sum, words[to + 2u * stride + i] = target;
  } else if (p.mode == JOINTS_SETUP_SUBTREE) {
    const uint link = jointsSetupJump(l, N, p.side, 0u), rank = jointsSetupJump(l, N, p.side, 1u);
    if (words[link + 2u * i] != E || words[link + 2u * i + 1u] != E)
      JOINTS_SETUP_ATOMIC(Or, l.status + JOINTS_SETUP_STATUS_CYCLE, 1u);
    const uint size = (words[rank + 2u * i] - words[rank + 2u * i + 1u] + 1u) / 2u;
    words[l.subtree + i] = size;
    const int parent = int(tables[t.parents + i]);
    if (parent >= 0) JOINTS_SETUP_ATOMIC(Max, l.largestChild + uint(parent), size);
  } else if (p.mode == JOINTS_SETUP_HEAVY) {
    const int parent = int(tables[t.parents + i]);
    if (parent >= 0 && words[l.subtree + i] == words[l.largestChild + uint(parent)])
      JOINTS_SETUP_ATOMIC(Max, l.heavy + uint(parent), ~i);
  } else if (p.mode == JOINTS_SETUP_TOPS) {
    const int parent = int(tables[t.parents + i]);
    const bool light = parent < 0 || words[l.heavy + uint(parent)] != ~i;
    const uint link = jointsSetupJump(l, N, 0u, 0u), stride = jointsSetupAlign(2u * N);
    words[link + i] = light ? E : uint(parent);
    words[link + stride + i] = light ? 0u : 1u;
    words[link + 2u * stride + i] = i;
    const uint children = words[l.childStarts + i + 2u] - words[l.childStarts + i + 1u];
    words[l.lightCounts + i] = children - (words[l.heavy + i] != 0u ? 1u : 0u);
  } else if (p.mode == JOINTS_SETUP_GENERATIONS) {
    // From the heavy chains (half p.side): top and offset; the tops' chains go to half 1 - p.side.
    const uint from = jointsSetupJump(l, N, p.side, 0u), to = jointsSetupJump(l, N, 1u - p.side, 0u);
    const uint stride = jointsSetupAlign(2u * N);
    const uint top = words[from + 2u * stride + i], offset = words[from + stride + i];
    words[l.top + i] = top, words[l.offset + i] = offset;
    JOINTS_SETUP_ATOMIC(Add, l.pathLength + top, 1u);
    const int parent = int(tables[t.parents + i]);
    const bool chained = offset == 0u && parent >= 0;
    words[to + i] = chained ? words[from + 2u * stride + uint(parent)] : E;
    words[to + stride + i] = chained ? 1u : 0u;
    words[to + 2u * stride + i] = i;
  } else if (p.mode == JOINTS_SETUP_PATHS) {
    const bool path = words[l.sort + 2u * i] != E;
    const uint top = words[l.sort + 2u * i + 1u];
    if (path) words[l.pathOf + top] = i;
    words[l.pathCounts + i] = path ? words[l.pathLength + top] : 0u;
  } else if (p.mode == JOINTS_SETUP_ORDER) {
    const uint offset = words[l.offset + i];
    const uint at = words[l.pathStarts + words[l.pathOf + words[l.top + i]]] + offset;
    if (at < N) {
      tables[t.order + at] = i | (offset == 0u ? JOINTS_HEAD : 0u);
      tables[t.topParents + at] = tables[t.parents + words[l.top + i]];
    }
  } else if (p.mode == JOINTS_SETUP_LIGHT) {
    tables[t.lightStart + i] = words[l.lightStarts + i];
    if (i == N) return;
    JOINTS_SETUP_ATOMIC(Max, l.status + JOINTS_SETUP_STATUS_FAN_OUT,
                        words[l.lightStarts + i + 1u] - words[l.lightStarts + i]);
    const int parent = int(tables[t.parents + i]);
    if (parent < 0 || words[l.heavy + uint(parent)] == ~i) return;
    // Its rank among its parent's children, less one if the heavy child comes before it.
    const uint k = words[l.slot + i], heavySlot = words[l.slot + ~words[l.heavy + uint(parent)]];
    const uint at = words[l.lightStarts + uint(parent)] + k - words[l.childStarts + uint(parent) + 1u] -
                    (heavySlot < k ? 1u : 0u);
    if (at < N) tables[t.lightChildren + at] = i;
  }
}
#endif

#endif
