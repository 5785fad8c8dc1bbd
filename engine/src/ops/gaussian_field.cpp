// The Gaussian field's entry points: argument checks and the passes (gaussian_field_backend.h); the reference is
// gaussian_field_ref.cpp, the backends gaussian_field_vk.cpp and cuda/src/gaussian_field.cu.
#include <algorithm>

#include "dispatch.h"
#include "gaussian_field_backend.h"

namespace armature {

namespace {

// An invocation's rows: several when rows are many (the chunks make up the rest) and channels few (their registers
// allow it), else one; and the invocations `rows` need. `pointSide`: the rows are points (the field and the points'
// gradient), which take GAUSSIAN_MOST_ROWS with one channel.
uint32_t rowsPerInvocation(uint32_t rows, uint32_t channels, bool pointSide) {
  if (channels > 8 || rows < GAUSSIAN_MANY_ROWS_FROM) return 1;
  return pointSide && channels == 1 ? GAUSSIAN_MOST_ROWS : GAUSSIAN_MANY_ROWS;
}
uint32_t invocationsFor(uint32_t rows, uint32_t channels, bool pointSide) {
  const uint32_t each = rowsPerInvocation(rows, channels, pointSide);
  return (rows + each - 1) / each;
}
uint32_t groupsFor(uint32_t invocations) {
  return std::max(1u, (invocations + GAUSSIAN_THREADS - 1) / GAUSSIAN_THREADS);
}

// How one side's rows split the other side's columns: into chunks of whole tiles, enough of them that the
// invocations × chunks reach GAUSSIAN_TARGET_INVOCATIONS, or the points' side GAUSSIAN_TARGET_POINT_INVOCATIONS
// (at most GAUSSIAN_MAX_CHUNKS). A function of the sizes only (so of no timing): the sums keep their order from run
// to run.
struct Chunks {
  uint32_t chunk = GAUSSIAN_TILE, count = 1;
};
Chunks chunksFor(uint32_t rows, uint32_t columns, uint32_t channels, bool pointSide) {
  const uint32_t invocations = std::max(1u, invocationsFor(rows, channels, pointSide));
  const uint32_t tiles = std::max(1u, (columns + GAUSSIAN_TILE - 1) / GAUSSIAN_TILE);
  const uint32_t target = pointSide ? GAUSSIAN_TARGET_POINT_INVOCATIONS : GAUSSIAN_TARGET_INVOCATIONS;
  const uint32_t wanted =
      std::min({tiles, GAUSSIAN_MAX_CHUNKS, std::max(1u, (target + invocations - 1) / invocations)});
  const uint32_t tilesPerChunk = (tiles + wanted - 1) / wanted;
  return {tilesPerChunk * GAUSSIAN_TILE, (tiles + tilesPerChunk - 1) / tilesPerChunk};
}

// Floats of the point side's partials (when cut into more than one chunk) and of the Gaussian side's (always).
// (Bindable, so that the Gaussian side's partials may follow.)
size_t pointPartialFloats(uint32_t B, uint32_t N, uint32_t C, uint32_t width) {
  const Chunks c = chunksFor(B, N, C, true);
  return c.count > 1 ? bindableFloats(size_t(c.count) * B * width) : 0;
}
size_t gaussianPartialFloats(uint32_t B, uint32_t N, uint32_t C) {
  return size_t(chunksFor(N, B, C, false).count) * N * (GAUSSIAN_GAUSSIAN_GRADS + C);
}

}  // namespace

void checkGaussianInputs(const char* op, const OpChecks& check, const GaussianFieldInputs& in) {
  ARM_CHECK(in.channels >= 1 && in.channels <= kGaussianMaxChannels, "%s: %u channels, not 1 to %u", op, in.channels,
            kGaussianMaxChannels);
  const size_t B = in.points, N = in.gaussians;
  // A dispatch's workgroups along x are at most 65535 on some devices.
  ARM_CHECK(B <= 65535u * GAUSSIAN_THREADS && N <= 65535u * GAUSSIAN_THREADS,
            "%s: %zu points and %zu Gaussians: at most %u of each per call", op, B, N, 65535u * GAUSSIAN_THREADS);
  ARM_CHECK(B * (GAUSSIAN_GAUSSIAN_GRADS + kGaussianMaxChannels) <= UINT32_MAX &&
                N * (GAUSSIAN_GAUSSIAN_GRADS + kGaussianMaxChannels) <= UINT32_MAX,
            "%s: %zu points × %zu Gaussians: indices past 2^32", op, B, N);
  check.view("x", in.x, ElementType::Float32, B * 3);
  check.view("means", in.means, ElementType::Float32, N * 3);
  check.view("cholesky", in.cholesky, ElementType::Float32, N * gaussianParameterCount(in.shape));
  check.view("weights", in.weights, ElementType::Float32, N * in.channels);
}

namespace {

GaussianPass mainPass(GaussianPass::Kind kind, const GaussianFieldInputs& in, Chunks chunks, uint32_t rows) {
  GaussianPass p;
  p.kind = kind;
  p.push = {in.points,    in.gaussians, in.channels, in.shape == GaussianShape::Isotropic ? GAUSSIAN_ISOTROPIC : 0u,
            chunks.chunk, chunks.count, 0,           0};
  const bool pointSide = kind != GaussianPass::Kind::GaussianGrads;
  p.groupsX = groupsFor(invocationsFor(rows, in.channels, pointSide)), p.groupsY = chunks.count;
  p.maxChannels = gaussianChannelVariant(in.channels);
  p.rowsPerInvocation = rowsPerInvocation(rows, in.channels, pointSide);
  p.points = in.x, p.means = in.means, p.cholesky = in.cholesky, p.weights = in.weights;
  return p;
}

// Adds `chunks` partials of (rows, width) in order into `out`.
GaussianPass sumPass(const GaussianFieldInputs& in, DeviceView partials, uint32_t chunks, uint32_t rows, uint32_t width,
                     DeviceView out) {
  GaussianPass p;
  p.kind = GaussianPass::Kind::Finish;
  p.push = {in.points, in.gaussians, in.channels, GAUSSIAN_FINISH_SUM, 0, chunks, width, rows};
  p.groupsX = groupsFor(uint32_t(size_t(rows) * width));
  p.cholesky = in.cholesky, p.partials = partials, p.outA = out;
  return p;
}

}  // namespace

size_t gaussianFieldScratchFloats(uint32_t points, uint32_t gaussians, uint32_t channels, bool backward) {
  if (!backward) return pointPartialFloats(points, gaussians, channels, channels);
  const size_t dense =
      pointPartialFloats(points, gaussians, channels, 3) + gaussianPartialFloats(points, gaussians, channels);
  return std::max(dense, culledScratch(points, gaussians, channels).floats);
}

void gaussianField(const Exec& exec, const GaussianFieldArgs& a) {
  const char* op = "gaussianField";
  OpChecks check(op, exec);
  checkGaussianInputs(op, check, a.in);
  const uint32_t B = a.in.points, N = a.in.gaussians, C = a.in.channels;
  check.view("field", a.field, ElementType::Float32, size_t(B) * C);
  if (!a.grid.empty()) return culledGaussianField(op, exec, check, a);
  check.optionalView("mahalanobis", a.mahalanobis, ElementType::Float32, size_t(B) * N);
  ARM_CHECK(a.mahalanobis.empty() || size_t(B) * N <= UINT32_MAX,
            "%s: the distances of %u points × %u Gaussians are past 2^32 values", op, B, N);
  const size_t scratch = gaussianFieldScratchFloats(B, N, C, false);
  if (scratch) check.view("scratch", a.scratch, ElementType::Float32, scratch);
  if (B == 0) return;
  const Chunks chunks = chunksFor(B, N, C, true);
  GaussianPass pass = mainPass(GaussianPass::Kind::Forward, a.in, chunks, B);
  pass.out = chunks.count > 1 ? a.scratch : a.field;
  pass.mahalanobis = a.mahalanobis;
  if (!a.mahalanobis.empty()) pass.push.flags |= GAUSSIAN_MAHALANOBIS;
  dispatch(op, exec, pass, &vk::gaussianPass, ARM_CUDA_BACKEND(gaussianPass));
  if (chunks.count > 1)
    dispatch(op, exec, sumPass(a.in, a.scratch, chunks.count, B, C, a.field), &vk::gaussianPass,
             ARM_CUDA_BACKEND(gaussianPass));
}

void gaussianFieldBackward(const Exec& exec, const GaussianFieldBackwardArgs& a) {
  const char* op = "gaussianFieldBackward";
  OpChecks check(op, exec);
  checkGaussianInputs(op, check, a.in);
  const uint32_t B = a.in.points, N = a.in.gaussians, C = a.in.channels;
  check.view("gradField", a.gradField, ElementType::Float32, size_t(B) * C);
  check.optionalView("gradPoints", a.gradPoints, ElementType::Float32, size_t(B) * 3);
  check.optionalView("gradMeans", a.gradMeans, ElementType::Float32, size_t(N) * 3);
  check.optionalView("gradCholesky", a.gradCholesky, ElementType::Float32,
                     size_t(N) * gaussianParameterCount(a.in.shape));
  check.optionalView("gradWeights", a.gradWeights, ElementType::Float32, size_t(N) * C);
  const bool gaussianSide = !a.gradMeans.empty() || !a.gradCholesky.empty() || !a.gradWeights.empty();
  ARM_CHECK(gaussianSide || !a.gradPoints.empty(), "%s: no gradient asked for", op);
  check.view("scratch", a.scratch, ElementType::Float32, gaussianFieldScratchFloats(B, N, C, true));
  const uint32_t finishFlags = (a.in.shape == GaussianShape::Isotropic ? GAUSSIAN_ISOTROPIC : 0u) |
                               (a.gradMeans.empty() ? 0u : GAUSSIAN_GRAD_MEANS) |
                               (a.gradCholesky.empty() ? 0u : GAUSSIAN_GRAD_CHOLESKY) |
                               (a.gradWeights.empty() ? 0u : GAUSSIAN_GRAD_WEIGHTS);
  if (!a.grid.empty()) return culledGaussianFieldBackward(op, exec, check, a, gaussianSide ? finishFlags : 0u);
  auto run = [&](const GaussianPass& pass) {
    dispatch(op, exec, pass, &vk::gaussianPass, ARM_CUDA_BACKEND(gaussianPass));
  };
  const size_t pointFloats = pointPartialFloats(B, N, C, 3);
  if (!a.gradPoints.empty() && B > 0) {
    const Chunks chunks = chunksFor(B, N, C, true);
    GaussianPass pass = mainPass(GaussianPass::Kind::PointGrads, a.in, chunks, B);
    pass.gradField = a.gradField;
    pass.out = chunks.count > 1 ? a.scratch.slice(0, pointFloats) : a.gradPoints;
    run(pass);
    if (chunks.count > 1) run(sumPass(a.in, a.scratch.slice(0, pointFloats), chunks.count, B, 3, a.gradPoints));
  }
  if (!gaussianSide || N == 0) return;
  const Chunks chunks = chunksFor(N, B, C, false);
  const DeviceView partials = a.scratch.slice(pointFloats, gaussianPartialFloats(B, N, C));
  GaussianPass pass = mainPass(GaussianPass::Kind::GaussianGrads, a.in, chunks, N);
  pass.gradField = a.gradField;
  pass.out = partials;
  run(pass);
  finishGaussianGrads(op, exec, a, partials, chunks.count, finishFlags);
}

void finishGaussianGrads(const char* op, const Exec& exec, const GaussianFieldBackwardArgs& a, DeviceView partials,
                         uint32_t chunks, uint32_t finishFlags) {
  const uint32_t B = a.in.points, N = a.in.gaussians, C = a.in.channels;
  GaussianPass finish;
  finish.kind = GaussianPass::Kind::Finish;
  finish.push = {B, N, C, finishFlags, 0, chunks, GAUSSIAN_GAUSSIAN_GRADS + C, N};
  finish.groupsX = groupsFor(N);  // an invocation per Gaussian
  finish.cholesky = a.in.cholesky, finish.partials = partials;
  finish.outA = a.gradMeans, finish.outB = a.gradCholesky, finish.outC = a.gradWeights;
  dispatch(op, exec, finish, &vk::gaussianPass, ARM_CUDA_BACKEND(gaussianPass));
}

}  // namespace armature
