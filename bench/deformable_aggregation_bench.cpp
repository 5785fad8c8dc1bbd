// armature-bench deformable_aggregation: deformable aggregation at SparseDrive's sizes (batch 1, 6 cameras, 4 levels
// 64×176, 32×88, 16×44, 8×22, C = 256 in 8 groups): the detection head (900 anchors × 13 points) with every location
// valid (uniform in (0, 1)) and with about a quarter valid (uniform in (−0.5, 1.5)), and the map head (100 × 300,
// valid); forward and forward + backward (features, locations, weights), GPU-timed.
#include <random>

#include "armature/ops/deformable_aggregation.h"
#include "bench/bench.h"

namespace armature::bench {

void runDeformableAggregation(std::vector<Row>& rows, Device& device, Backend backend, int iters) {
  const uint32_t cameras = 6, channels = 256, groups = 8;
  std::vector<FeatureLevel> levels;
  for (const auto& [H, W] : {std::pair{64u, 176u}, {32u, 88u}, {16u, 44u}, {8u, 22u}})
    levels.push_back({H, W, std::vector<float>(size_t(cameras) * channels * H * W)});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (FeatureLevel& level : levels)
    for (float& v : level.values) v = u(rng);
  const FormattedFeatures formatted = featureMapsFormat(levels, 1, cameras, channels);
  const uint32_t F = uint32_t(formatted.features.size() / channels);
  DeviceFeatureMaps maps(device, formatted.layout, F);
  DeviceBuffer features = device.upload(formatted.features);
  struct Case {
    const char* name;
    uint32_t anchors, points;
    float lo, hi;
  };
  for (const Case& c : {Case{"detection,valid", 900, 13, 0.0f, 1.0f}, Case{"detection,25% valid", 900, 13, -0.5f, 1.5f},
                        Case{"map,valid", 100, 300, 0.0f, 1.0f}}) {
    const DeformableAggregationSizes sizes{1, F, channels, c.anchors, c.points, groups};
    const size_t samples = size_t(c.anchors) * c.points * cameras;
    std::uniform_real_distribution<float> where(c.lo, c.hi);
    std::vector<float> locations(samples * 2), weights(samples * levels.size() * groups);
    for (float& v : locations) v = where(rng);
    for (float& v : weights) v = u(rng);
    DeviceBuffer loc = device.upload(locations), w = device.upload(weights);
    DeviceBuffer out = device.allocate(ElementType::Float32, size_t(c.anchors) * channels);
    DeviceBuffer gradOut = device.upload(std::vector<float>(size_t(c.anchors) * channels, 0.5f));
    DeviceBuffer gFeatures = device.allocate(ElementType::Float32, formatted.features.size());
    DeviceBuffer gLocations = device.allocate(ElementType::Float32, locations.size());
    DeviceBuffer gWeights = device.allocate(ElementType::Float32, weights.size());
    DeviceBuffer scratch = device.allocate(ElementType::UInt32,
                                           deformableAggregationScratchWords(sizes, cameras, uint32_t(levels.size())));
    const DeformableAggregationInputs in{&maps, sizes, features, loc, w};
    // Floors: the forward reads each sample's 4 texels × C (from L2 mostly; DRAM floor: the maps once, the
    // locations, weights and output) and does ~10 flops per texel and channel; the backward writes the features'
    // gradient (as large as the maps), reads them again for the location's gradient, and does ~3× the flops.
    const double mapBytes = double(formatted.features.size()) * 4;
    const double sampleBytes = double(samples) * (8 + levels.size() * groups * 4) + double(c.anchors) * channels * 4;
    const double flops = double(samples) * levels.size() * channels * 10;
    for (bool backward : {false, true}) {
      Row r{"deformable_aggregation",
            backendName(backend),
            std::string(backward ? "fwd+bwd," : "forward,") + c.name,
            c.anchors,
            0,
            0,
            backward ? 3 * mapBytes + 3 * sampleBytes : mapBytes + sampleBytes,
            backward ? 4 * flops : flops,
            {}};
      measure(
          r, device, backend,
          [&](const Exec& exec) {
            deformableAggregation(exec, {.in = in, .out = out});
            if (backward)
              deformableAggregationBackward(exec, {.in = in,
                                                   .gradOut = gradOut,
                                                   .gradFeatures = gFeatures,
                                                   .gradLocations = gLocations,
                                                   .gradWeights = gWeights,
                                                   .scratch = scratch});
          },
          iters);
      rows.push_back(r);
    }
  }
}

}  // namespace armature::bench
