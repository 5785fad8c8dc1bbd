// armature-bench pipeline: one step of fitting the avatar to images, the chain that tests/project_test.cpp checks.
// Render: skinning forward, project into B views, rasterize, interpolate 3 floats per vertex. Fit step: the render
// plus interpolate's, the rasteriser's and project's backward and the skinning's backward to the pose, shape,
// expression and translation. Default avatar, B cameras on a ring around it, 512² images. (interpolate's gradient
// to the colours, which a fit holds fixed, accumulates unread: it is never cleared.)
#include <cmath>
#include <memory>
#include <numbers>

#include "armature/ops/project.h"
#include "armature/ops/raster.h"
#include "armature/ops/skinning.h"
#include "armature/vk/timer.h"
#include "bench/bench.h"

namespace armature::bench {
namespace {

enum class Step {
  Rasterize,
  Render,
  Fit
};  // the rasteriser alone (the avatar's clip positions), the render, a fit step

// B pinholes looking down −z at the body turned by 360°·b/B about y (column-major 4×4 each).
std::vector<float> ringCameras(uint32_t views) {
  std::vector<float> m;
  for (uint32_t view = 0; view < views; ++view) {
    const double yaw = 2 * std::numbers::pi * view / views, c = std::cos(yaw), s = std::sin(yaw);
    const double rows[4][4] = {
        {2.2 * c, 0, 2.2 * s, 0}, {0, -2.2, 0, 0}, {1.02 * s, 0, -1.02 * c, 1.02 * 2.4}, {s, 0, -c, 2.5}};
    for (int column = 0; column < 4; ++column)
      for (int row = 0; row < 4; ++row) m.push_back(float(rows[row][column]));
  }
  return m;
}

}  // namespace

void runPipeline(std::vector<Row>& rows, Backend backend, int iters, const std::string& modelPath,
                 const std::vector<uint32_t>& viewCounts) {
  const BodyModel model = loadDefaultModel(modelPath);
  const uint32_t S = 10, E = 10, N = model.vertexCount, M = uint32_t(model.faces.size() / 3), C = 3;
  std::vector<float> pose(model.jointCount * 3, 0.1f), betas(S, 0.2f), expr(E, 0.1f), transl(3, 0.0f);
  std::vector<float> colours(size_t(N) * C);
  for (size_t i = 0; i < colours.size(); ++i) colours[i] = float(i % 11) * 0.09f;
  const auto tables = buildSkinningTables(model, S, E);
  const double blendBytes = double(tables.featureCount + tables.coefCount()) * N * 3 * 4;
  std::unique_ptr<vk::Context> ctx;
  if (backend == Backend::Vulkan) ctx = std::make_unique<vk::Context>();
  Device device(ctx.get(), Sharing::VulkanOnly);
  for (uint32_t views : viewCounts)
    for (Step step : {Step::Rasterize, Step::Render, Step::Fit}) {
      const bool fit = step == Step::Fit, chain = step != Step::Rasterize;
      RasterDesc raster{512, 512};
      raster.images = views;
      const ProjectDesc project{views, N, false};
      const std::vector<float> cameras = ringCameras(views);
      const size_t pixels = raster.pixels();
      RasterScratchState scratchState;  // every rasterize after the first skips the z-buffer's clear
      // Bytes that must move: the blend matrix (twice for a fit step: forward and backward), the clip positions, the
      // rasteriser's z-buffer (cleared, written, read) and outputs, interpolate's reads and output; a fit step adds
      // the image gradient and the barycentric gradients read and written and the clip gradients.
      double bytes =
          chain ? blendBytes + double(project.clipFloats()) * 4 + double(pixels) * (8 * 3 + 4 + 12 + 4 + 12 + 12)
                : double(project.clipFloats()) * 4 + double(M) * 12 + double(pixels) * (8 * 3 + 4 + 12);
      if (fit) bytes += blendBytes + double(pixels) * (12 + 12 + 12 + 4) + double(project.clipFloats()) * 8;
      Row r{"pipeline",
            backendName(backend),
            std::string(fit     ? "fit step"
                        : chain ? "render"
                                : "rasterize") +
                ", " + std::to_string(views) + " views 512^2",
            views,
            0,
            0,
            bytes,
            0};
      // Without the blend matrix's L2 residency on CUDA: its persisting lines would stay in L2 through the
      // rasteriser's passes, which would then run from DRAM (SkinningTuning::l2Residency). Scratch and the
      // visibility buffer in compressible memory where the GPU grants it.
      Skinning skin(device, backend, model, S, E, 1, {.l2Residency = false});
      DeviceBuffer dPose = device.upload(pose), dBetas = device.upload(betas), dExpr = device.upload(expr),
                   dTransl = device.upload(transl), dCameras = device.upload(cameras),
                   dFaces = device.upload(model.faces), dColours = device.upload(colours),
                   dGradImage = device.upload(std::vector<float>(pixels * C, 0.01f));
      auto floats = [&](size_t n) { return device.allocate(ElementType::Float32, n); };
      DeviceBuffer verts = floats(size_t(N) * 3), joints = floats(size_t(model.jointCount) * 3),
                   clip = floats(project.clipFloats()),
                   scratch = device.allocateCompressible(ElementType::Byte, rasterScratchBytes(raster)),
                   ids = device.allocateCompressible(ElementType::Int32, pixels),
                   bary = device.allocateCompressible(ElementType::Float32, pixels * 3), image = floats(pixels * C),
                   gradColours = floats(colours.size()), gradBary = floats(pixels * 3),
                   gradClip = floats(project.clipFloats()), gradVerts = floats(size_t(N) * 3),
                   gPose = floats(pose.size()), gBetas = floats(S), gExpr = floats(E), gTransl = floats(3);
      const InterpolateDesc interp{uint32_t(pixels), C, N, M};
      auto placeBody = [&](const Exec& exec) {  // the body's vertices and their clip positions
        skin.forward(exec, {.batch = 1,
                            .pose = dPose,
                            .betas = dBetas,
                            .expression = dExpr,
                            .transl = dTransl,
                            .vertices = verts,
                            .joints = joints});
        exec.barrier();
        armature::project(exec, {.desc = project, .points = verts, .matrices = dCameras, .clip = clip});
        exec.barrier();
      };
      device.run(backend, placeBody);  // for the rasteriser alone
      const auto times = device.time(
          backend,
          [&](const Exec& exec) {
            if (chain) placeBody(exec);
            rasterize(exec, {.desc = scratchState.next(raster),
                             .vertexCount = N,
                             .faceCount = M,
                             .positions = clip,
                             .faces = dFaces,
                             .scratch = scratch,
                             .findices = ids,
                             .barycentrics = bary});
            if (chain) {
              exec.barrier();
              interpolate(exec, {.desc = interp,
                                 .attr = dColours,
                                 .findices = ids,
                                 .barycentrics = bary,
                                 .faces = dFaces,
                                 .out = image});
            }
            if (fit) {
              exec.barrier();
              interpolateBackward(exec, {.desc = interp,
                                         .attr = dColours,
                                         .findices = ids,
                                         .barycentrics = bary,
                                         .faces = dFaces,
                                         .gradOut = dGradImage,
                                         .gradAttr = gradColours,
                                         .gradBarycentrics = gradBary});
              exec.barrier();
              rasterizeBackward(exec, {.desc = raster,
                                       .vertexCount = N,
                                       .faceCount = M,
                                       .positions = clip,
                                       .faces = dFaces,
                                       .findices = ids,
                                       .gradBarycentrics = gradBary,
                                       .gradPositions = gradClip});
              exec.barrier();
              projectBackward(exec,
                              {.desc = project, .gradClip = gradClip, .matrices = dCameras, .gradPoints = gradVerts});
              skin.backward(exec, {.batch = 1,
                                   .pose = dPose,
                                   .gradVertices = gradVerts,
                                   .gradPose = gPose,
                                   .gradBetas = gBetas,
                                   .gradExpression = gExpr,
                                   .gradTransl = gTransl});  // begins with its barrier
            }
          },
          iters, Device::Timing::Submitted);
      const std::vector<double>& ms = times.ms;
      r.medianMs = median(ms), r.minMs = minOf(ms);
      rows.push_back(r);
    }
}

}  // namespace armature::bench
