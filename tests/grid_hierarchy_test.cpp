// The grid hierarchy builder: the fast builder against the reference on generated multi-view layers, a case
// worked out by hand from the original's rules, structural invariants, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include <functional>

#include "armature/device.h"
#include "armature/error.h"
#include "armature/ops/grid_hierarchy.h"
#include "support/vk_test_env.h"

using namespace armature;

namespace {
void expectIdentical(const GridHierarchy& a, const GridHierarchy& b) {
  EXPECT_EQ(a.positions, b.positions);  // bit-identical: both copy the same floats or round the same centres
  EXPECT_EQ(a.isOriginal, b.isOriginal);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.channels, b.channels);
  ASSERT_EQ(a.neighbors.size(), b.neighbors.size());
  for (size_t l = 0; l < a.neighbors.size(); ++l) {
    EXPECT_EQ(a.neighbors[l], b.neighbors[l]) << "level " << l;
    EXPECT_EQ(a.evenCorners[l], b.evenCorners[l]) << "level " << l;
    EXPECT_EQ(a.oddCorners[l], b.oddCorners[l]) << "level " << l;
  }
  EXPECT_EQ(a.downsamples, b.downsamples);
}

void expectWellFormed(const GridHierarchy& h, int levels) {
  ASSERT_EQ(h.neighbors.size(), size_t(levels));
  ASSERT_EQ(h.downsamples.size(), size_t(levels - 1));
  size_t n0 = h.isOriginal.size();
  EXPECT_EQ(h.positions.size(), n0 * 3);
  EXPECT_EQ(h.features.size(), n0 * h.channels);
  for (size_t i = 0; i < n0; ++i) {
    if (h.isOriginal[i] != 0) continue;
    for (uint32_t c = 0; c < h.channels; ++c) EXPECT_EQ(h.features[i * h.channels + c], 0.5f);
  }
  for (int l = 0; l < levels; ++l) {
    size_t n = h.neighbors[size_t(l)].size() / 9;
    EXPECT_EQ(h.evenCorners[size_t(l)].size(), n);
    size_t linked = 0;
    for (size_t s = 0; s < n; ++s) {
      const int64_t* row = &h.neighbors[size_t(l)][s * 9];
      for (int k = 0; k < 9; ++k) ASSERT_TRUE(row[k] >= -1 && row[k] < int64_t(n)) << "level " << l;
      linked += row[4] == int64_t(s);  // the centre is the cell itself once it was visited
    }
    EXPECT_GT(linked, n * 9 / 10) << "level " << l;
    if (l + 1 < levels) {
      size_t parents = h.neighbors[size_t(l) + 1].size() / 9;
      ASSERT_EQ(h.downsamples[size_t(l)].size(), n);
      for (int64_t p : h.downsamples[size_t(l)]) ASSERT_TRUE(p >= 0 && p < int64_t(parents));
    }
  }
}
}  // namespace

TEST(GridHierarchy, FastBuilderMatchesReference) {
  struct Case {
    uint32_t size, layers, channels;
    double holes;
    int levels, resolution;
  };
  for (Case c : {Case{37, 4, 0, 0.05, 3, 64}, Case{20, 2, 5, 0.0, 1, 32}, Case{50, 3, 3, 0.1, 4, 48},
                 Case{64, 4, 0, 0.02, 5, 128}}) {
    SCOPED_TRACE(std::to_string(c.size) + " px, " + std::to_string(c.levels) + " levels, R " +
                 std::to_string(c.resolution));
    auto views = makeGridViews(c.size, c.layers, c.channels, c.holes, c.size);
    GridHierarchy ref = buildGridHierarchyRef(views, c.levels, c.resolution);
    GridHierarchy fast = buildGridHierarchy(views, c.levels, c.resolution);
    expectWellFormed(ref, c.levels);
    expectIdentical(fast, ref);
    if (c.levels > 1) {
      size_t padded = 0;
      for (float o : ref.isOriginal) padded += o == 0;
      EXPECT_GT(padded, 0u) << "padding never exercised";
    }
  }
}

TEST(GridHierarchy, CudaBuilderMatchesReference) {
  if (auto why = cudaUnavailable()) GTEST_SKIP() << "cuda: " << *why;
  struct Case {
    uint32_t size, layers, channels;
    double holes;
    int levels, resolution;
  };
  for (Case c : {Case{37, 4, 0, 0.05, 3, 64}, Case{20, 2, 5, 0.0, 1, 32}, Case{50, 3, 3, 0.1, 4, 48},
                 Case{64, 4, 0, 0.02, 5, 128}, Case{131, 4, 2, 0.03, 4, 256}}) {
    SCOPED_TRACE(std::to_string(c.size) + " px, " + std::to_string(c.levels) + " levels, R " +
                 std::to_string(c.resolution));
    auto views = makeGridViews(c.size, c.layers, c.channels, c.holes, c.size + 1);
    GridHierarchy ref = buildGridHierarchyRef(views, c.levels, c.resolution);
    expectIdentical(buildGridHierarchy(Backend::Cuda, views, c.levels, c.resolution), ref);
  }
}

namespace {
// The reference, the threaded builder, and CUDA's where it runs.
using Build = std::function<GridHierarchy(const std::vector<GridView>&, int, int)>;
std::vector<Build> builders() {
  std::vector<Build> all{&buildGridHierarchyRef,
                         [](const auto& v, int l, int r) { return buildGridHierarchy(Backend::Cpu, v, l, r); }};
  if (!cudaUnavailable())
    all.push_back([](const auto& v, int l, int r) { return buildGridHierarchy(Backend::Cuda, v, l, r); });
  return all;
}
}  // namespace

TEST(GridHierarchy, HandWorkedCase) {
  // One point at the origin, seen in view 0's centre pixel of 3×3, normal +z (axis code 0). R = 4, two levels.
  std::vector<GridView> views(3);
  for (GridView& v : views) {
    v.layers = 1, v.height = 3, v.width = 3;
    v.positions.assign(9 * 4, 0.f);
    v.normals.assign(9 * 3, 0.f);
  }
  views[0].positions[4 * 4 + 3] = 1;
  views[0].normals[4 * 3 + 2] = 1;
  for (const Build& build : builders()) {
    GridHierarchy h = build(views, 2, 4);
    // Level 0: the cell (2,2,2) (seq 0) and a padded corner cell (3,2,3) (seq 1) under the coarse cell, which has
    // neither corner kind. The padded cell reads its neighbours at its corner point (0.75, 0.25, 0.75): row 1,
    // column 2 of view 0, so the original point sits to its left.
    EXPECT_EQ(h.isOriginal, (std::vector<float>{1, 0}));
    EXPECT_EQ(h.positions, (std::vector<float>{0, 0, 0, 0.75f, 0.25f, 0.75f}));
    EXPECT_EQ(h.neighbors[0],
              (std::vector<int64_t>{-1, -1, -1, -1, 0, -1, -1, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, -1}));
    EXPECT_EQ(h.evenCorners[0], (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(h.oddCorners[0], (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(h.downsamples[0], (std::vector<int64_t>{0, 0}));
    // Level 1: one cell, stride 2: every other neighbour falls outside the image or on empty pixels.
    EXPECT_EQ(h.neighbors[1], (std::vector<int64_t>{-1, -1, -1, -1, 0, -1, -1, -1, -1}));
    EXPECT_EQ(h.evenCorners[1], (std::vector<int64_t>{0}));
  }
}

TEST(GridHierarchy, BadInputIsAnError) {
  auto views = makeGridViews(8, 2, 2, 0, 1);
  for (const Build& build : builders()) {
    EXPECT_THROW(build({views[0], views[1]}, 2, 16), Error);  // two views
    EXPECT_THROW(build(views, 0, 16), Error);                 // no level
    EXPECT_THROW(build(views, 3, 30), Error);                 // 30 not divisible by 4
    auto bad = views;
    bad[1].positions[4 * 5] = 1.5f, bad[1].positions[4 * 5 + 3] = 1;  // outside [-1, 1]
    EXPECT_THROW(build(bad, 2, 16), Error);
    bad = views;
    bad[2].positions[0] = std::nan(""), bad[2].positions[3] = 1;
    EXPECT_THROW(build(bad, 2, 16), Error);
    bad = views;
    bad[0].normals.pop_back();
    EXPECT_THROW(build(bad, 2, 16), Error);
    bad = views;
    bad[2].features.clear();  // one view without features
    EXPECT_THROW(build(bad, 2, 16), Error);
  }
}
