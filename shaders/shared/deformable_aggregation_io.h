// Deformable aggregation on the GPU (GLSL and CUDA), armature/ops/deformable_aggregation.h's semantics:
//   - deformable_aggregation_forward: an invocation per (batch, anchor) and 1 or 4 channels (lanes) sums its points, cameras and
//     levels in order; or, for anchors of many samples and few channels, AGGREGATION_FORWARD_SPLITS invocations
//     each sum every AGGREGATION_FORWARD_SPLITS-th sample, then their partial sums are added in order;
//   - deformable_aggregation_sample_grads (backward): a workgroup per (batch, anchor, point, camera): its invocations take the
//     channels, then fixed-order sums give the weights' gradient (per level and group) and the location's;
//     deformable_aggregation_sample_subgroup does the same with a subgroup per sample, 4 channels a lane, its sums over lanes
//     shuffle-xor trees (where the channels come in rounds of 4 × the subgroup size);
//   - deformable_aggregation_pairs (backward): each sample's four corners counted into, then filled into, their texel's bucket
//     (shared/buckets_io.h scans and sorts between);
//   - deformable_aggregation_taps: each sorted bucket entry decoded once into a tap of AGGREGATION_TAP_WORDS words (the output
//     row, the weights' row, the bilinear coefficient), so that
//   - deformable_aggregation_feature_grads: an invocation per (batch, texel) and 1 or 4 channels gathers its taps in order.
// No float atomics anywhere: the same bits on every run, and the same with either lane count.
#ifndef ARMATURE_AGGREGATION_IO_H
#define ARMATURE_AGGREGATION_IO_H
#include "common_io.h"

#define AGGREGATION_THREADS 256
#define AGGREGATION_SAMPLE_THREADS 64    // a sample's workgroup
#define AGGREGATION_FORWARD_SPLITS 64    // invocations that share an anchor's samples in the split forward
#define AGGREGATION_MAX_LEVEL_CHANNELS 4096  // levels × C of a sample's products in shared memory

#define AGGREGATION_BINDING_TABLE 0      // int (cams, levels, 3): H, W, start
#define AGGREGATION_BINDING_FEATURES 1   // float (bs, F, C)
#define AGGREGATION_BINDING_LOCATIONS 2  // float (bs, A, P, cams, 2)
#define AGGREGATION_BINDING_WEIGHTS 3    // float (bs, A, P, cams, levels, groups)
#define AGGREGATION_BINDING_GRAD_OUT 4   // float (bs, A, C)
#define AGGREGATION_BINDING_OUT_A 5      // float: the output; the locations' gradient; the features' gradient
#define AGGREGATION_BINDING_OUT_B 6      // float: the weights' gradient
#define AGGREGATION_BINDING_WORDS 7      // uint: the buckets (shared/buckets_io.h)
#define AGGREGATION_BINDINGS 8

#define AGGREGATION_PAIRS_COUNT 0u  // deformable_aggregation_pairs' modes
#define AGGREGATION_PAIRS_FILL 1u
#define AGGREGATION_GRAD_LOCATIONS 1u  // sample grads' flags
#define AGGREGATION_GRAD_WEIGHTS 2u
#define AGGREGATION_TAP_WORDS 3u    // a tap: output row (batch·anchors + anchor), sample·levels + level, coefficient

ARM_SHARED_STRUCT(AggregationPush) {
  uint batch, features, channels, anchors;
  uint points, cameras, levels, groups;
  uint mode;        // pairs: count or fill; sample grads: AGGREGATION_GRAD_* flags
  uint groupsX;     // workgroups along x of a 2D dispatch (sample grads)
  uint counts, entries;  // words: the buckets' counts (then cursors) and entries; their starts follow
  uint starts, taps;     // words: the buckets' starts (then the total), the taps (one per sorted entry)
  uint pad0, pad1;
};

#ifdef __cplusplus
static_assert(sizeof(AggregationPush) == 64);
#endif

#define AGG_OUT(name, n) ARM_OUT(float, name, n)
#define AGG_OUT_INT(name, n) ARM_OUT(int, name, n)

// A sample at (x, y) on an H × W map: false unless both lie strictly inside (0, 1). Else its four corners
// (row, column) = (h0 + k/2, w0 + k%2), k = 0..3, their bilinear coefficients (0 for a corner off the map), and the
// coefficients' derivatives by the pixel coordinates h and w.
ARM_FN bool aggregationCorners(float x, float y, int H, int W, AGG_OUT_INT(corner, 2), AGG_OUT(coef, 4),
                               AGG_OUT(dh, 4), AGG_OUT(dw, 4)) {
  corner[0] = 0, corner[1] = 0;
  for (int k = 0; k < 4; ++k) coef[k] = 0.0f, dh[k] = 0.0f, dw[k] = 0.0f;
  if (!(x > 0.0f && x < 1.0f && y > 0.0f && y < 1.0f)) return false;
  const float h = y * float(H) - 0.5f, w = x * float(W) - 0.5f;
  const float hf = floor(h), wf = floor(w);
  const int h0 = int(hf), w0 = int(wf);
  const float lh = h - hf, lw = w - wf, hh = 1.0f - lh, hw = 1.0f - lw;
  corner[0] = h0, corner[1] = w0;
  const bool top = h0 >= 0, bottom = h0 + 1 <= H - 1, left = w0 >= 0, right = w0 + 1 <= W - 1;
  if (top && left) coef[0] = hh * hw, dh[0] = -hw, dw[0] = -hh;
  if (top && right) coef[1] = hh * lw, dh[1] = -lw, dw[1] = hh;
  if (bottom && left) coef[2] = lh * hw, dh[2] = hw, dw[2] = -lh;
  if (bottom && right) coef[3] = lh * lw, dh[3] = lw, dw[3] = lh;
  return true;
}

#endif
