#pragma once
// The grid hierarchy builder of Hunyuan3D-2's texture synthesis (custom_rasterizer's build_hierarchy and
// build_hierarchy_with_feat): surface points seen in three axis views, with several depth layers each, are
// quantised into a resolution³ voxel grid ("seqs", numbered in order of first appearance), coarsened level by
// level (each level halves the resolution, the dominant normal axis chosen by majority), linked to their 3×3
// neighbours in the view image that faces their normal, and padded with corner cells under coarse cells.
//
// Three implementations with identical outputs: buildGridHierarchyRef follows the original's loops with hash maps
// (the reference); buildGridHierarchy replaces every hash lookup of a pixel with a per-level, per-pixel seq map and
// spreads the neighbour search over threads; on CUDA every step runs as data-parallel passes on the GPU, each
// "numbered in order of first appearance" step a sort and a scan instead of a sequential hash walk (bench:
// armature-bench hierarchy).
//
// Where we deliberately differ from the original (both implementations):
//  * Points must lie in [-1, 1] (else an error); a coordinate of exactly +1 is put in the last cell. The original
//    computes cell R for it, and its key (x·R + y)·R + z then aliases a neighbouring cell.
//  * The resolution must be divisible by 2^(levels-1). Otherwise the original's coarse keys of pixels and of
//    fine cells disagree, and its lookups silently insert cell 0 for the missing keys.
//  * Bad shapes or a view count other than 3 are errors (the original prints and returns empty lists).
#include <cstdint>
#include <vector>

#include "armature/backend.h"

namespace armature {

// One axis view: `layers` depth layers of height × width pixels. View 0 looks along z (rows y, columns x), view 1
// along x (rows y, columns z), view 2 along y (rows -z, columns x), as the original's neighbour lookup reads them.
struct GridView {
  uint32_t layers = 0, height = 0, width = 0;
  std::vector<float> positions;  // (L,H,W,4): xyz in [-1, 1]; w = 0 marks an empty pixel
  std::vector<float> normals;    // (L,H,W,3)
  std::vector<float> features;   // (L,H,W,C), only for the with-features form
};

struct GridHierarchy {
  std::vector<float> positions;   // (N,3): the first point seen in each finest cell; padded cells: their centre
  std::vector<float> isOriginal;  // (N): 1 for cells seen in the views, 0 for padding
  std::vector<float> features;    // (N,C): the first point's features; padded cells 0.5 (with features only)
  uint32_t channels = 0;
  std::vector<std::vector<int64_t>> neighbors;    // per level (N_l,9): rows top to bottom, -1 = none
  std::vector<std::vector<int64_t>> downsamples;  // per level but the last (N_l): the parent cell one level up
  std::vector<std::vector<int64_t>> evenCorners;  // per level (N_l): 0/1
  std::vector<std::vector<int64_t>> oddCorners;   // per level (N_l): 0/1
};

// views: exactly three; features: every view's features empty (build_hierarchy) or all (L,H,W,C) with one C
// (build_hierarchy_with_feat). Throws armature::Error on bad input.
GridHierarchy buildGridHierarchyRef(const std::vector<GridView>& views, int levels, int resolution);
GridHierarchy buildGridHierarchy(const std::vector<GridView>& views, int levels, int resolution);
// The same on a backend: Cpu is the threaded builder above; Cuda takes the host views in and hands the host hierarchy
// out, the work between on the device (bit for bit the reference's). Vulkan has none.
GridHierarchy buildGridHierarchy(Backend backend, const std::vector<GridView>& views, int levels, int resolution);

// Test and benchmark input: analytic spheres seen from the three axes, up to `layers` hits per pixel front to
// back, with about `holeFraction` of the deeper layer entries knocked out (the original stops at the first hole).
std::vector<GridView> makeGridViews(uint32_t size, uint32_t layers, uint32_t channels, double holeFraction,
                                    uint32_t seed);

}  // namespace armature
