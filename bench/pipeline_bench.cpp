// armature-bench pipeline: one step of fitting the avatar to images, the chain that tests/project_test.cpp checks.
// Render: skinning forward, project into B views, rasterize, interpolate 3 floats per vertex. Fit step: the render
// plus interpolate's, the rasteriser's and project's backward and the skinning's backward to the pose, shape,
// expression and translation. Default avatar, B cameras on a ring around it, 512² images. (interpolate's gradient
// to the colours, which a fit holds fixed, accumulates unread: it is never cleared.)
#include <cmath>
#include <memory>
#include <numbers>

#include "armature/cuda/project.h"
#include "armature/cuda/raster.h"
#include "armature/cuda/skinning.h"
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
      std::vector<double> ms;
      if (backend == Backend::Cuda) {
        // Without the blend matrix's L2 residency: its persisting lines would stay in L2 through the rasteriser's
        // passes, which would then run from DRAM (Skinning::setL2Residency).
        cuda::Skinning skin(model, S, E, 1, /*l2Residency=*/false);
        auto dPose = cuda::DeviceMemory::from(pose), dBetas = cuda::DeviceMemory::from(betas),
             dExpr = cuda::DeviceMemory::from(expr), dTransl = cuda::DeviceMemory::from(transl),
             dCameras = cuda::DeviceMemory::from(cameras), dFaces = cuda::DeviceMemory::from(model.faces),
             dColours = cuda::DeviceMemory::from(colours);
        std::vector<float> gradImage(pixels * C, 0.01f);
        auto dGradImage = cuda::DeviceMemory::from(gradImage);
        cuda::DeviceMemory verts(size_t(N) * 12), joints(size_t(model.jointCount) * 12), clip(project.clipFloats() * 4),
            scratch(rasterScratchBytes(raster), cuda::MemoryKind::Compressible),
            ids(pixels * 4, cuda::MemoryKind::Compressible), bary(pixels * 12, cuda::MemoryKind::Compressible),
            image(pixels * C * 4), gradColours(colours.size() * 4), gradBary(pixels * 12),
            gradClip(project.clipFloats() * 4), gradVerts(size_t(N) * 12), gPose(pose.size() * 4), gBetas(S * 4),
            gExpr(E * 4), gTransl(12);
        cuda::Stream s;
        auto placeBody = [&](const cuda::Stream& on) {  // the body's vertices and their clip positions
          skin.forward(1, {dPose.as<float>(), dBetas.as<float>(), dExpr.as<float>(), dTransl.as<float>()},
                       verts.as<float>(), joints.as<float>(), on);
          cuda::project(project, verts.as<float>(), dCameras.as<float>(), clip.as<float>(), on);
        };
        placeBody(s);  // for the rasteriser alone
        ms = timeCudaCalls(
            s,
            [&](const cuda::Stream& on) {
              if (chain) placeBody(on);
              cuda::rasterize(scratchState.next(raster), clip.as<float>(), N, dFaces.as<int32_t>(), M, nullptr,
                              scratch.data(), ids.as<int32_t>(), bary.as<float>(), on);
              if (chain)
                cuda::interpolate(uint32_t(pixels), C, N, dColours.as<float>(), ids.as<int32_t>(), bary.as<float>(),
                                  dFaces.as<int32_t>(), M, image.as<float>(), on);
              if (fit) {
                cuda::interpolateBackward(uint32_t(pixels), C, N, dColours.as<float>(), ids.as<int32_t>(),
                                          bary.as<float>(), dFaces.as<int32_t>(), M, dGradImage.as<float>(),
                                          gradColours.as<float>(), gradBary.as<float>(), on);
                cuda::rasterizeBackward(raster, clip.as<float>(), N, dFaces.as<int32_t>(), M, ids.as<int32_t>(),
                                        gradBary.as<float>(), gradClip.as<float>(), on);
                cuda::projectBackward(project, gradClip.as<float>(), dCameras.as<float>(), gradVerts.as<float>(), on);
                skin.backward(1, gradVerts.as<float>(), nullptr,
                              {gPose.as<float>(), gBetas.as<float>(), gExpr.as<float>(), gTransl.as<float>()}, on);
              }
            },
            iters);
      } else if (backend == Backend::Vulkan) {
        SkinningVk skin(*ctx, model, S, E, 1);
        auto bPose = vk::makeStorageBuffer<float>(*ctx, pose), bBetas = vk::makeStorageBuffer<float>(*ctx, betas),
             bExpr = vk::makeStorageBuffer<float>(*ctx, expr), bTransl = vk::makeStorageBuffer<float>(*ctx, transl),
             bCameras = vk::makeStorageBuffer<float>(*ctx, cameras),
             bFaces = vk::makeStorageBuffer<int32_t>(*ctx, model.faces),
             bColours = vk::makeStorageBuffer<float>(*ctx, colours);
        std::vector<float> gradImage(pixels * C, 0.01f);
        auto bGradImage = vk::makeStorageBuffer<float>(*ctx, gradImage);
        auto buffer = [&](size_t size) { return vk::Buffer(*ctx, size, vk::kStorageUsage); };
        vk::Buffer verts = buffer(size_t(N) * 12), joints = buffer(size_t(model.jointCount) * 12),
                   clip = buffer(project.clipFloats() * 4), scratch = buffer(rasterScratchBytes(raster)),
                   ids = buffer(pixels * 4), bary = buffer(pixels * 12), image = buffer(pixels * C * 4),
                   gradColours = buffer(colours.size() * 4), gradBary = buffer(pixels * 12),
                   gradClip = buffer(project.clipFloats() * 4), gradVerts = buffer(size_t(N) * 12),
                   gPose = buffer(pose.size() * 4), gBetas = buffer(S * 4), gExpr = buffer(E * 4), gTransl = buffer(12);
        const SkinningGradBuffers gradParams{gPose, gBetas, gExpr, gTransl};
        auto placeBody = [&](VkCommandBuffer cmd) {  // the body's vertices and their clip positions
          skin.forward(cmd, 1, bPose, bBetas, bExpr, bTransl, verts, joints);
          vk::computeBarrier(cmd);
          projectVk(*ctx, cmd, project, verts, bCameras, clip);
          vk::computeBarrier(cmd);
        };
        ctx->submitAndWait(placeBody);  // for the rasteriser alone
        ms = timeVulkanSubmissions(
            *ctx,
            [&](VkCommandBuffer cmd) {
              if (chain) placeBody(cmd);
              rasterizeVk(*ctx, cmd, scratchState.next(raster), clip, N, bFaces, M, nullptr, scratch, ids, bary);
              if (chain) {
                vk::computeBarrier(cmd);
                interpolateVk(*ctx, cmd, uint32_t(pixels), C, N, bColours, ids, bary, bFaces, M, image);
              }
              if (fit) {
                vk::computeBarrier(cmd);
                interpolateBackwardVk(*ctx, cmd, uint32_t(pixels), C, N, bColours, ids, bary, bFaces, M, bGradImage,
                                      gradColours, gradBary);
                vk::computeBarrier(cmd);
                rasterizeBackwardVk(*ctx, cmd, raster, clip, N, bFaces, M, ids, gradBary, gradClip);
                vk::computeBarrier(cmd);
                projectBackwardVk(*ctx, cmd, project, gradClip, bCameras, gradVerts);
                skin.backward(cmd, 1, bPose, gradVerts, nullptr, gradParams);  // (it begins with its barrier)
              }
            },
            iters);
      } else {
        throw Error("pipeline benchmark: cuda or vulkan");
      }
      r.medianMs = median(ms), r.minMs = minOf(ms);
      rows.push_back(r);
    }
}

}  // namespace armature::bench
