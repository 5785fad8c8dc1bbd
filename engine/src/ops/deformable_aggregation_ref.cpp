// Deformable aggregation's CPU reference in double, the layout's checks and featureMapsFormat.
#include <cmath>
#include <utility>

#include "armature/error.h"
#include "armature/ops/deformable_aggregation.h"

namespace armature {

void validateFeatureMapLayout(const FeatureMapLayout& l, uint64_t features) {
  const size_t maps = size_t(l.cameras) * l.levels;
  ARM_CHECK(l.cameras >= 1 && l.levels >= 1, "deformableAggregation: %u cameras and %u levels, at least 1 of each",
            l.cameras, l.levels);
  ARM_CHECK(l.spatialShape.size() == maps * 2, "deformableAggregation: spatial_shape has %zu values, not (%u,%u,2)",
            l.spatialShape.size(), l.cameras, l.levels);
  ARM_CHECK(l.scaleStartIndex.size() == maps, "deformableAggregation: scale_start_index has %zu values, not (%u,%u)",
            l.scaleStartIndex.size(), l.cameras, l.levels);
  for (size_t m = 0; m < maps; ++m) {
    const int64_t H = l.spatialShape[m * 2], W = l.spatialShape[m * 2 + 1], start = l.scaleStartIndex[m];
    ARM_CHECK(H >= 1 && W >= 1, "deformableAggregation: map (camera %zu, level %zu) is %lld × %lld, not at least 1 × 1",
              m / l.levels, m % l.levels, (long long)H, (long long)W);
    ARM_CHECK(start >= 0 && uint64_t(start + H * W) <= features,
              "deformableAggregation: map (camera %zu, level %zu) spans features [%lld, %lld), past the %llu there are",
              m / l.levels, m % l.levels, (long long)start, (long long)(start + H * W), (unsigned long long)features);
  }
}

FormattedFeatures featureMapsFormat(const std::vector<FeatureLevel>& levels, uint32_t batch, uint32_t cameras,
                                    uint32_t channels) {
  ARM_CHECK(!levels.empty(), "featureMapsFormat: no levels");
  FormattedFeatures out;
  FeatureMapLayout& l = out.layout;
  l.cameras = cameras, l.levels = uint32_t(levels.size());
  size_t perCamera = 0;
  for (size_t k = 0; k < levels.size(); ++k) {
    const FeatureLevel& level = levels[k];
    const size_t HW = size_t(level.height) * level.width;
    ARM_CHECK(HW > 0, "featureMapsFormat: level %zu is %u × %u", k, level.height, level.width);
    ARM_CHECK(level.values.size() == size_t(batch) * cameras * channels * HW,
              "featureMapsFormat: level %zu has %zu values, not (%u,%u,%u,%u,%u)", k, level.values.size(), batch,
              cameras, channels, level.height, level.width);
    perCamera += HW;
  }
  const size_t F = perCamera * cameras;
  out.features.resize(size_t(batch) * F * channels);
  for (uint32_t cam = 0; cam < cameras; ++cam) {
    size_t start = cam * perCamera;
    for (const FeatureLevel& level : levels) {
      l.spatialShape.push_back(int32_t(level.height)), l.spatialShape.push_back(int32_t(level.width));
      l.scaleStartIndex.push_back(int32_t(start));
      const size_t HW = size_t(level.height) * level.width;
      for (uint32_t b = 0; b < batch; ++b)
        for (uint32_t c = 0; c < channels; ++c)
          for (size_t t = 0; t < HW; ++t)
            out.features[(b * F + start + t) * channels + c] =
                level.values[((size_t(b) * cameras + cam) * channels + c) * HW + t];
      start += HW;
    }
  }
  return out;
}

void validateDeformableAggregation(const DeformableAggregationRef& op) {
  const DeformableAggregationSizes& s = op.sizes;
  validateFeatureMapLayout(op.layout, s.features);
  ARM_CHECK(s.groups >= 1 && s.channels % s.groups == 0,
            "deformableAggregation: %u channels do not split into %u groups", s.channels, s.groups);
  const size_t samples = size_t(s.batch) * s.anchors * s.points * op.layout.cameras;
  ARM_CHECK(op.features.size() == size_t(s.batch) * s.features * s.channels,
            "deformableAggregation: features has %zu values, not (%u,%u,%u)", op.features.size(), s.batch, s.features,
            s.channels);
  ARM_CHECK(op.locations.size() == samples * 2, "deformableAggregation: locations has %zu values, not (%u,%u,%u,%u,2)",
            op.locations.size(), s.batch, s.anchors, s.points, op.layout.cameras);
  ARM_CHECK(op.weights.size() == samples * op.layout.levels * s.groups,
            "deformableAggregation: weights has %zu values, not (%u,%u,%u,%u,%u,%u)", op.weights.size(), s.batch,
            s.anchors, s.points, op.layout.cameras, op.layout.levels, s.groups);
}

namespace {

// Visits every sample (batch, anchor, point, camera, level) that counts, with its bilinear corners: f(b, a, sample
// index into the weights without the group, feature row of each corner (or -1 off the map), coefficients, and their
// derivatives by x and y).
template <typename Visit>
void forEachSample(const DeformableAggregationRef& op, Visit&& visit) {
  const DeformableAggregationSizes& s = op.sizes;
  const FeatureMapLayout& l = op.layout;
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t a = 0; a < s.anchors; ++a)
      for (uint32_t p = 0; p < s.points; ++p)
        for (uint32_t cam = 0; cam < l.cameras; ++cam) {
          const size_t loc = (((size_t(b) * s.anchors + a) * s.points + p) * l.cameras + cam) * 2;
          const double x = op.locations[loc], y = op.locations[loc + 1];
          if (!(x > 0 && x < 1 && y > 0 && y < 1)) continue;
          for (uint32_t lvl = 0; lvl < l.levels; ++lvl) {
            const size_t map = size_t(cam) * l.levels + lvl;
            const int64_t H = l.spatialShape[map * 2], W = l.spatialShape[map * 2 + 1], start = l.scaleStartIndex[map];
            const double h = y * double(H) - 0.5, w = x * double(W) - 0.5, hf = std::floor(h), wf = std::floor(w);
            const double lh = h - hf, lw = w - wf;
            const int64_t h0 = int64_t(hf), w0 = int64_t(wf);
            int64_t row[4];
            double coef[4], dx[4], dy[4];
            for (int k = 0; k < 4; ++k) {
              const int64_t r = h0 + k / 2, c = w0 + k % 2;
              const double fy = k / 2 ? lh : 1 - lh, fx = k % 2 ? lw : 1 - lw;
              const bool on = r >= 0 && r < H && c >= 0 && c < W;
              row[k] = on ? (int64_t(b) * s.features + start + r * W + c) : -1;
              coef[k] = on ? fy * fx : 0;
              // d/dx = W·d/dw, d/dy = H·d/dh.
              dx[k] = on ? fy * (k % 2 ? 1.0 : -1.0) * double(W) : 0;
              dy[k] = on ? fx * (k / 2 ? 1.0 : -1.0) * double(H) : 0;
            }
            visit(b, a, loc / 2, (loc / 2) * l.levels + lvl, row, coef, dx, dy);
          }
        }
}

}  // namespace

std::vector<double> deformableAggregationRef(const DeformableAggregationRef& op) {
  validateDeformableAggregation(op);
  const DeformableAggregationSizes& s = op.sizes;
  const uint32_t C = s.channels, perGroup = C / s.groups;
  std::vector<double> out(size_t(s.batch) * s.anchors * C, 0.0);
  forEachSample(op, [&](uint32_t b, uint32_t a, size_t, size_t level, const int64_t* row, const double* coef,
                        const double*, const double*) {
    for (uint32_t c = 0; c < C; ++c) {
      double value = 0;
      for (int k = 0; k < 4; ++k)
        if (row[k] >= 0) value += coef[k] * op.features[size_t(row[k]) * C + c];
      out[(size_t(b) * s.anchors + a) * C + c] += op.weights[level * s.groups + c / perGroup] * value;
    }
  });
  return out;
}

DeformableAggregationGradsRef deformableAggregationBackwardRef(const DeformableAggregationRef& op,
                                                               const std::vector<double>& gradOut) {
  validateDeformableAggregation(op);
  const DeformableAggregationSizes& s = op.sizes;
  const uint32_t C = s.channels, perGroup = C / s.groups;
  ARM_CHECK(gradOut.size() == size_t(s.batch) * s.anchors * C,
            "deformableAggregationBackward: gradOut has %zu values, not (%u,%u,%u)", gradOut.size(), s.batch, s.anchors,
            C);
  DeformableAggregationGradsRef g;
  g.features.assign(op.features.size(), 0.0), g.locations.assign(op.locations.size(), 0.0);
  g.weights.assign(op.weights.size(), 0.0);
  forEachSample(op, [&](uint32_t b, uint32_t a, size_t location, size_t level, const int64_t* row, const double* coef,
                        const double* dx, const double* dy) {
    for (uint32_t c = 0; c < C; ++c) {
      const double go = gradOut[(size_t(b) * s.anchors + a) * C + c];
      const size_t wi = level * s.groups + c / perGroup;
      const double w = op.weights[wi];
      double value = 0, vx = 0, vy = 0;
      for (int k = 0; k < 4; ++k) {
        if (row[k] < 0) continue;
        const double f = op.features[size_t(row[k]) * C + c];
        value += coef[k] * f, vx += dx[k] * f, vy += dy[k] * f;
        g.features[size_t(row[k]) * C + c] += go * w * coef[k];
      }
      g.weights[wi] += go * value;
      g.locations[location * 2] += go * w * vx;
      g.locations[location * 2 + 1] += go * w * vy;
    }
  });
  return g;
}

}  // namespace armature
