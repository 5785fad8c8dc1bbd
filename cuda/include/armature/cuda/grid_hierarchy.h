#pragma once
// The grid hierarchy builder on CUDA (armature/ops/grid_hierarchy.h for the contract): the same outputs as
// buildGridHierarchyRef, bit for bit. Host views in, host hierarchy out; the work between is on the device, with
// every "numbered in order of first appearance" step done as a sort and a scan instead of a sequential hash walk.
#include <vector>

#include "armature/cuda/runtime.h"
#include "armature/ops/grid_hierarchy.h"

namespace armature::cuda {
GridHierarchy buildGridHierarchy(const std::vector<GridView>& views, int levels, int resolution);
}  // namespace armature::cuda
