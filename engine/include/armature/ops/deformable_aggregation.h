#pragma once
// Multi-view deformable aggregation, SparseDrive's (Sparse4D v2) fused operation: multi-camera, multi-scale feature
// maps sampled bilinearly at projected points, weighted and summed per anchor. Forward and backward (features,
// locations, weights); a CPU reference in double and CUDA and Vulkan compute, deterministic (no float atomics).
//
// Semantics, as the original's:
//   - features (bs, F, C): every camera's levels flattened, channels last (featureMapsFormat); F = cams·Σ_l H_l·W_l.
//   - spatial shape (cams, levels, 2) = (H, W); scale start index (cams, levels): where map (cam, level) begins in F,
//     the exclusive sum of H·W in (camera, level) order.
//   - locations (bs, anchors, points, cams, 2): normalised (x, y). A sample counts only where both lie strictly
//     inside (0, 1) (NaN fails that test: such a sample adds nothing). Pixel coordinates are y·H − 0.5, x·W − 0.5;
//     bilinear with zero padding (corners off the map read 0).
//   - weights (bs, anchors, points, cams, levels, groups): channel c uses group c / (C / groups).
//   - out (bs, anchors, C) = Σ_{point, cam, level} weight · bilinear(map(cam, level), location)[c].
// The backward gives the gradients of the features, the locations (x: W·∂/∂w, y: H·∂/∂h) and the weights; no
// gradient flows through the floor of a pixel coordinate (the bilinear weights' kinks), as in the original.
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

struct FeatureMapLayout {
  uint32_t cameras = 0, levels = 0;
  std::vector<int32_t> spatialShape;     // (cams, levels, 2): H, W
  std::vector<int32_t> scaleStartIndex;  // (cams, levels)
};
// Throws armature::Error naming the entry: shapes of the arrays, H and W ≥ 1, maps inside [0, features).
void validateFeatureMapLayout(const FeatureMapLayout& layout, uint64_t features);

// SparseDrive's feature_maps_format: per-level maps, each (bs, cams, C, H_l, W_l) row-major, into the column layout
// (bs, cams·ΣHW, C) and its spatial shape and scale start index.
struct FeatureLevel {
  uint32_t height = 0, width = 0;
  std::vector<float> values;  // (bs, cams, C, H, W)
};
struct FormattedFeatures {
  std::vector<float> features;  // (bs, F, C)
  FeatureMapLayout layout;
};
FormattedFeatures featureMapsFormat(const std::vector<FeatureLevel>& levels, uint32_t batch, uint32_t cameras,
                                    uint32_t channels);

struct DeformableAggregationSizes {
  uint32_t batch = 0, features = 0, channels = 0, anchors = 0, points = 0, groups = 1;
};

struct DeformableAggregationRef {
  DeformableAggregationSizes sizes;  // cameras and levels from the layout
  FeatureMapLayout layout;
  std::vector<double> features;   // (bs, F, C)
  std::vector<double> locations;  // (bs, anchors, points, cams, 2)
  std::vector<double> weights;    // (bs, anchors, points, cams, levels, groups)
};
struct DeformableAggregationGradsRef {
  std::vector<double> features, locations, weights;  // shaped as the inputs
};
// Checks every shape and the layout; throws armature::Error naming the argument.
void validateDeformableAggregation(const DeformableAggregationRef& op);
std::vector<double> deformableAggregationRef(const DeformableAggregationRef& op);  // (bs, anchors, C)
DeformableAggregationGradsRef deformableAggregationBackwardRef(const DeformableAggregationRef& op,
                                                               const std::vector<double>& gradOut);

// ---- GPU ------------------------------------------------------------------------------------------------------

// The layout on the device (validated once).
class DeviceFeatureMaps {
 public:
  DeviceFeatureMaps(Device& device, const FeatureMapLayout& layout, uint32_t features);
  const FeatureMapLayout& layout() const { return m_layout; }
  uint32_t features() const { return m_features; }
  DeviceView table() const { return m_table.view(); }  // (cams, levels, 3): H, W, start

 private:
  FeatureMapLayout m_layout;
  uint32_t m_features = 0;
  DeviceBuffer m_table;
};

struct DeformableAggregationInputs {
  const DeviceFeatureMaps* maps = nullptr;
  DeformableAggregationSizes sizes;  // sizes.features must be maps->features()
  DeviceView features;               // (bs, F, C)
  DeviceView locations;              // (bs, anchors, points, cams, 2)
  DeviceView weights;                // (bs, anchors, points, cams, levels, groups)
};

struct DeformableAggregationArgs {
  DeformableAggregationInputs in;
  DeviceView out;  // (bs, anchors, C)
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void deformableAggregation(const Exec& exec, const DeformableAggregationArgs& args);

// UInt32 words of the backward's scratch: each texel's list of the samples that touch it.
size_t deformableAggregationScratchWords(const DeformableAggregationSizes& sizes, uint32_t cameras, uint32_t levels);

struct DeformableAggregationBackwardArgs {
  DeformableAggregationInputs in;
  DeviceView gradOut;        // (bs, anchors, C)
  DeviceView gradFeatures;   // out (bs, F, C), optional
  DeviceView gradLocations;  // out (bs, anchors, points, cams, 2), optional
  DeviceView gradWeights;    // out (…, levels, groups), optional (at least one of the three)
  DeviceView scratch;        // deformableAggregationScratchWords(…) words (for the features' gradient)
};
void deformableAggregationBackward(const Exec& exec, const DeformableAggregationBackwardArgs& args);

}  // namespace armature
