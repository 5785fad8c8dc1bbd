// The culled Gaussian field: the grid's build and the culled passes (shared/gaussian_grid_io.h), planned here and
// run by vk::gaussianGridPass or cuda::gaussianGridPass; gaussian_field.cpp's entry points come here when a grid
// is given.
#include <algorithm>
#include <utility>

#include "buckets.h"
#include "dispatch.h"
#include "gaussian_field_backend.h"

namespace armature {

namespace {

static_assert(GAUSSIAN_CULLED_SPAN_CELLS <= GAUSSIAN_CULLED_SLOTS, "a slot looks up each cell of a support's box");
static_assert(GAUSSIAN_THREADS % GAUSSIAN_CULLED_SLOTS == 0);

uint32_t groupsOf(size_t items, uint32_t threads) {
  return uint32_t(std::max<size_t>(1, (items + threads - 1) / threads));
}

// The grid buffer's layout: header and histogram first (cleared with the Gaussians' counts in one pass), then the
// lists.
GaussianGridPush layoutOf(const GaussianFieldInputs& in) {
  GaussianGridPush p{};
  p.points = in.points, p.gaussians = in.gaussians, p.channels = in.channels;
  p.flags = in.shape == GaussianShape::Isotropic ? GAUSSIAN_ISOTROPIC : 0u;
  p.cells = gaussianGridCells(in.gaussians);
  uint32_t at = GAUSSIAN_GRID_HEADER_WORDS;
  auto take = [&](uint32_t words) { return std::exchange(at, at + words); };
  p.histogram = take(GAUSSIAN_GRID_HISTOGRAM_BINS);
  p.gaussianCounts = take(p.cells + 1);  // the cells, then the outsized list
  p.gaussianStarts = take(p.cells + 2);
  p.gaussianEntries = take(GAUSSIAN_GRID_SPAN * GAUSSIAN_GRID_SPAN * GAUSSIAN_GRID_SPAN * in.gaussians);
  at = (at + 3u) & ~3u;  // 16-byte aligned: CUDA reads a prepared Gaussian as three 16-byte words
  p.prepared = take(GAUSSIAN_PREPARED * in.gaussians);
  p.pointCounts = take(p.cells);
  p.pointStarts = take(p.cells + 1);
  p.pointEntries = take(in.points);
  p.blockSums = take(bucketBlockSums(p.cells + 1));
  return p;
}

void checkGrid(const char* op, const OpChecks& check, const GaussianFieldInputs& in, const DeviceView& grid) {
  ARM_CHECK(size_t(in.gaussians) * (GAUSSIAN_GRID_SPAN * GAUSSIAN_GRID_SPAN * GAUSSIAN_GRID_SPAN + GAUSSIAN_PREPARED) +
                    in.points + 4 * size_t(GAUSSIAN_GRID_MAX_CELLS) <
                UINT32_MAX,
            "%s: %u Gaussians and %u points: the grid's indices pass 2^32", op, in.gaussians, in.points);
  check.view("grid", grid, ElementType::UInt32, gaussianGridWords(in.points, in.gaussians));
}

void run(const char* op, const Exec& exec, const GaussianGridPass& pass) {
  dispatch(op, exec, pass, &vk::gaussianGridPass, ARM_CUDA_BACKEND(gaussianGridPass));
}

GaussianGridPass gridPass(const GaussianFieldInputs& in, const GaussianGridPush& layout, const DeviceView& grid,
                          uint32_t mode, size_t items) {
  GaussianGridPass pass;
  pass.push = layout;
  pass.push.mode = mode;
  pass.groups = groupsOf(items, GAUSSIAN_GRID_THREADS);
  pass.points = in.x, pass.means = in.means, pass.cholesky = in.cholesky, pass.weights = in.weights;
  pass.grid = grid;
  return pass;
}

BucketLists gaussianLists(const GaussianGridPush& layout, const DeviceView& grid) {
  return {
      grid, layout.cells + 1, layout.gaussianCounts, layout.gaussianStarts, layout.gaussianEntries, layout.blockSums};
}
BucketLists pointLists(const GaussianGridPush& layout, const DeviceView& grid) {
  return {grid, layout.cells, layout.pointCounts, layout.pointStarts, layout.pointEntries, layout.blockSums};
}

GaussianGridPass culledPass(GaussianGridPass::Kind kind, const GaussianFieldInputs& in, const DeviceView& grid,
                            const DeviceView& gradField, const DeviceView& out) {
  GaussianGridPass pass;
  pass.kind = kind;
  pass.push = layoutOf(in);  // the offsets the culled shaders read
  // The Gaussians' pass: GAUSSIAN_CULLED_GAUSSIANS_PER_GROUP a workgroup. The points' tiles:
  // GAUSSIAN_CULLED_TILE_POINTS points a workgroup. The gather: a list entry (at most one per point) an invocation.
  using Kind = GaussianGridPass::Kind;
  pass.groups = kind == Kind::GaussianGrads
                    ? std::min(groupsOf(in.gaussians, GAUSSIAN_CULLED_GAUSSIANS_PER_GROUP), 65535u)
                : kind == Kind::Gather ? groupsOf(in.points, GAUSSIAN_THREADS)
                                       : groupsOf(in.points, GAUSSIAN_CULLED_TILE_POINTS);
  pass.maxChannels = gaussianChannelVariant(in.channels);
  pass.points = in.x, pass.weights = in.weights, pass.gradField = gradField, pass.out = out, pass.grid = grid;
  return pass;
}

// The points binned into the grid's cells (those off the grid left out); sorted where a sum walks the lists (the
// Gaussians' side), while the points' tiles only need them grouped by cell. On CUDA the clear, count, scan and fill
// are one cooperative launch (grid barriers instead of kernel boundaries; Vulkan has no barrier across workgroups)
// wherever the GPU holds all of its blocks at once. Few points on a small layout: one workgroup, sorted, unless CUDA's
// cooperative launch can bin them and no sort is wanted (it is the faster of the two then).
void binPoints(const char* op, const Exec& exec, const GaussianFieldInputs& in, const DeviceView& grid, bool sorted) {
  const GaussianGridPush layout = layoutOf(in);
  const size_t binners =
      (size_t(in.points) + GAUSSIAN_GRID_POINTS_PER_INVOCATION - 1) / GAUSSIAN_GRID_POINTS_PER_INVOCATION;
  const GaussianGridPass oneLaunch = gridPass(in, layout, grid, GAUSSIAN_GRID_BIN_POINTS, binners);
  bool fits = false;
#if ARMATURE_HAS_CUDA
  fits = exec.backend() == Backend::Cuda && oneLaunch.groups <= cuda::gaussianBinBlocks();
#endif
  const bool few = in.points <= GAUSSIAN_GRID_FEW_POINTS && layout.cells <= GAUSSIAN_GRID_FEW_POINTS_CELLS;
  if (few && (sorted || !fits)) {
    run(op, exec, gridPass(in, layout, grid, GAUSSIAN_GRID_BIN_FEW_POINTS, GAUSSIAN_GRID_THREADS));
    return;
  }
  if (fits) {
    run(op, exec, oneLaunch);
  } else {
    run(op, exec, gridPass(in, layout, grid, GAUSSIAN_GRID_CLEAR_POINTS, layout.cells));
    run(op, exec, gridPass(in, layout, grid, GAUSSIAN_GRID_COUNT_POINTS, binners));
    scanBuckets(op, exec, pointLists(layout, grid));
    run(op, exec, gridPass(in, layout, grid, GAUSSIAN_GRID_FILL_POINTS, binners));
  }
  if (sorted) sortBuckets(op, exec, pointLists(layout, grid));
}

}  // namespace

uint32_t gaussianGridCells(uint32_t gaussians) {
  return uint32_t(std::clamp<size_t>(size_t(gaussians) * 4, 4096, GAUSSIAN_GRID_MAX_CELLS));
}

size_t gaussianGridWords(uint32_t points, uint32_t gaussians) {
  GaussianFieldInputs in;
  in.points = points, in.gaussians = gaussians;
  const GaussianGridPush layout = layoutOf(in);
  return size_t(layout.blockSums) + bucketBlockSums(layout.cells + 1);
}

void buildGaussianGrid(const Exec& exec, const GaussianGridArgs& a) {
  const char* op = "buildGaussianGrid";
  OpChecks check(op, exec);
  checkGaussianInputs(op, check, a.in);
  ARM_CHECK(a.epsilon > 0.0f && a.epsilon < 3.0e38f, "%s: epsilon is %g, expected a finite value > 0", op,
            double(a.epsilon));
  checkGrid(op, check, a.in, a.grid);
  const GaussianGridPush layout = layoutOf(a.in);
  const uint32_t N = a.in.gaussians;
  auto pass = [&](uint32_t mode, size_t items) {
    GaussianGridPass p = gridPass(a.in, layout, a.grid, mode, items);
    p.push.epsilon = a.epsilon;
    return p;
  };
  run(op, exec, pass(GAUSSIAN_GRID_CLEAR, layout.gaussianCounts + layout.cells + 1));
  run(op, exec, pass(GAUSSIAN_GRID_PREPARE, N));
  run(op, exec, pass(GAUSSIAN_GRID_PLAN, 1));
  run(op, exec, pass(GAUSSIAN_GRID_COUNT_GAUSSIANS, N));
  scanBuckets(op, exec, gaussianLists(layout, a.grid));
  run(op, exec, pass(GAUSSIAN_GRID_FILL_GAUSSIANS, N));
  sortBuckets(op, exec, gaussianLists(layout, a.grid));
}

void culledGaussianField(const char* op, const Exec& exec, const OpChecks& check, const GaussianFieldArgs& a) {
  ARM_CHECK(a.mahalanobis.empty(), "%s: the distances are a dense output; culled mode (a grid) has none", op);
  checkGrid(op, check, a.in, a.grid);
  if (a.in.points == 0) return;
  binPoints(op, exec, a.in, a.grid, false);
  run(op, exec, culledPass(GaussianGridPass::Kind::Forward, a.in, a.grid, {}, a.field));
}

CulledScratch culledScratch(uint32_t points, uint32_t gaussians, uint32_t channels) {
  CulledScratch s;
  s.points = bindableFloats(size_t(gaussians) * (GAUSSIAN_GAUSSIAN_GRADS + channels));
  s.grads = s.points + bindableFloats(size_t(points) * 4);
  s.floats = s.grads + size_t(points) * channels;
  return s;
}

void culledGaussianFieldBackward(const char* op, const Exec& exec, const OpChecks& check,
                                 const GaussianFieldBackwardArgs& a, uint32_t finishFlags) {
  checkGrid(op, check, a.in, a.grid);
  const uint32_t B = a.in.points, N = a.in.gaussians, C = a.in.channels;
  const bool pointSide = !a.gradPoints.empty() && B > 0, gaussianSide = finishFlags != 0 && N > 0;
  if (pointSide || gaussianSide) binPoints(op, exec, a.in, a.grid, gaussianSide);
  if (pointSide) run(op, exec, culledPass(GaussianGridPass::Kind::PointGrads, a.in, a.grid, a.gradField, a.gradPoints));
  if (!gaussianSide) return;
  // The binned points gathered in list order (with the field's gradient), each Gaussian's row from them, then the
  // rows turned into the outputs.
  const CulledScratch layout = culledScratch(B, N, C);
  const DeviceView rows = a.scratch.slice(0, size_t(N) * (GAUSSIAN_GAUSSIAN_GRADS + C));
  GaussianGridPass walk = culledPass(GaussianGridPass::Kind::GaussianGrads, a.in, a.grid, a.gradField, rows);
  if (B > 0) {
    GaussianGridPass gather = culledPass(GaussianGridPass::Kind::Gather, a.in, a.grid, a.gradField,
                                         a.scratch.slice(layout.points, layout.floats - layout.points));
    gather.push.gatheredGrads = uint32_t(layout.grads - layout.points);
    run(op, exec, gather);
    walk.points = a.scratch.slice(layout.points, size_t(B) * 4);
    walk.gradField = a.scratch.slice(layout.grads, size_t(B) * C);
  }
  run(op, exec, walk);
  finishGaussianGrads(op, exec, a, rows, 1, finishFlags);
}

}  // namespace armature
