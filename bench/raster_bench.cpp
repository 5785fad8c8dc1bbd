// armature-bench raster: the rasterizer issue's three scenes (a) 10k triangles at 1024², (b) 5k at 512²,
// (c) 1M at 2048², each four overlapping noise-displaced spheres; rasterize alone and + interpolate of 3 floats.
#include <chrono>
#include <cmath>
#include <memory>

#include "armature/device.h"
#include "armature/ops/grid_hierarchy.h"
#include "armature/ops/raster.h"
#include "armature/ops/raster_hardware.h"
#include "armature/vk/timer.h"
#include "bench/bench.h"

namespace armature::bench {

namespace {
// The scenes: four overlapping noise-displaced spheres (depth complexity about 3 where they overlap), about
// `triangles` faces in all, in front of a pinhole eye (w = distance).
void spheres(size_t triangles, std::vector<float>& pos, std::vector<int32_t>& faces) {
  int rings = std::max(2, int(std::sqrt(double(triangles) / 8.0))), segments = rings;
  const double centres[4][3] = {{-0.25, -0.2, 0.0}, {0.25, -0.15, 0.1}, {-0.1, 0.25, 0.2}, {0.2, 0.2, -0.1}};
  for (const auto& c : centres) {
    int32_t base = int32_t(pos.size() / 4);
    for (int r = 0; r <= rings; ++r)
      for (int s = 0; s <= segments; ++s) {
        double th = M_PI * r / rings, ph = 2 * M_PI * s / segments;
        double radius = 0.42 * (1 + 0.08 * std::sin(5 * th + 3 * c[0]) * std::cos(7 * ph + 2 * c[1]));  // smooth noise
        double x = c[0] + radius * std::sin(th) * std::cos(ph), y = c[1] + radius * std::cos(th);
        double z = c[2] + radius * std::sin(th) * std::sin(ph), w = 2.0 + z;  // perspective: w grows with depth
        pos.insert(pos.end(), {float(x * 2), float(y * 2), float(z * 0.9 * w), float(w)});
      }
    for (int r = 0; r < rings; ++r)
      for (int s = 0; s < segments; ++s) {
        int32_t a = base + r * (segments + 1) + s, b = a + 1, c2 = a + segments + 1, d = c2 + 1;
        faces.insert(faces.end(), {a, c2, b, b, c2, d});
      }
  }
}
// The GPU's own rasteriser writing the same visibility buffer through a graphics pipeline (the physical reference):
// the render pass alone (clears + draw), timed like the compute path.
Row hardwareRow(Device& device, const char* scene, const RasterDesc& d, const std::vector<float>& pos,
                const std::vector<int32_t>& faces, int iters) {
  vk::Context& ctx = *device.vulkan();
  auto bp = vk::makeStorageBuffer<float>(ctx, pos);
  auto bf = vk::makeStorageBuffer<int32_t>(ctx, faces);
  HardwareRasterVk hw(ctx, d.width, d.height);
  const std::vector<double> ms =
      device
          .time(
              Backend::Vulkan,
              [&](const Exec& exec) {
                hw.record(exec.commandBuffer(), bp, uint32_t(pos.size() / 4), bf, uint32_t(faces.size() / 3));
              },
              iters, Device::Timing::Submitted)
          .ms;
  // Bytes: the mesh, the depth buffer cleared, tested and written, the two colour targets (4 + 8 bytes) written.
  double bytes = double(pos.size() * 4 + faces.size() * 4 + d.pixels() * (4 * 3 + 12));
  Row r{"raster", "vulkan-hw", std::string(scene) + " hardware", uint32_t(faces.size() / 3), 0, 0, bytes, 0};
  r.medianMs = median(ms), r.minMs = minOf(ms);
  return r;
}
// The rasteriser's backward on the same scene: gradPositions from a gradient on every pixel's barycentrics, at the
// faces one rasterize found. Bytes: ids and barycentric gradients read, the mesh read, gradPositions cleared and
// written once (the atomics' traffic stays in L2).
Row backwardRow(Device& device, Backend backend, const char* scene, size_t tris, const RasterDesc& d, int iters) {
  std::vector<float> pos;
  std::vector<int32_t> faces;
  spheres(tris, pos, faces);
  const uint32_t N = uint32_t(pos.size() / 4), M = uint32_t(faces.size() / 3);
  const size_t pixels = d.pixels();
  std::vector<float> gradBary(pixels * 3);
  for (size_t i = 0; i < gradBary.size(); ++i) gradBary[i] = float(int(i % 5) - 2) * 0.25f;
  double bytes = double(pixels * 16 + pos.size() * 4 * 3 + faces.size() * 4);
  Row r{"raster", backendName(backend), std::string(scene) + " backward", M, 0, 0, bytes, 0};
  DeviceBuffer dp = device.upload(pos), df = device.upload(faces), dg = device.upload(gradBary);
  DeviceBuffer z = device.allocate(ElementType::Byte, rasterScratchBytes(d)),
               ids = device.allocate(ElementType::Int32, pixels),
               bary = device.allocate(ElementType::Float32, pixels * 3),
               grad = device.allocate(ElementType::Float32, pos.size());
  device.run(backend, [&](const Exec& exec) {
    rasterize(exec, {.desc = d,
                     .vertexCount = N,
                     .faceCount = M,
                     .positions = dp,
                     .faces = df,
                     .scratch = z,
                     .findices = ids,
                     .barycentrics = bary});
  });
  const auto ms = device
                      .time(
                          backend,
                          [&](const Exec& exec) {
                            rasterizeBackward(exec, {.desc = d,
                                                     .vertexCount = N,
                                                     .faceCount = M,
                                                     .positions = dp,
                                                     .faces = df,
                                                     .findices = ids,
                                                     .gradBarycentrics = dg,
                                                     .gradPositions = grad});
                          },
                          iters, Device::Timing::Submitted)
                      .ms;
  r.medianMs = median(ms), r.minMs = minOf(ms);
  return r;
}
}  // namespace

void runRaster(std::vector<Row>& rows, Backend backend, int iters, const std::string& scenes, bool floatOnly) {
  ARM_CHECK(!floatOnly || backend == Backend::Vulkan, "raster benchmark: --float-only is for the Vulkan path");
  const std::string variant = floatOnly ? " float-only" : "";
  struct Scene {
    const char* name;
    size_t tris;
    uint32_t size;
  };
  std::unique_ptr<vk::Context> ctx;
  if (backend == Backend::Vulkan) {
    vk::ContextOptions options;
    options.hide.float64 = floatOnly;  // the shaders of devices without doubles
    ctx = std::make_unique<vk::Context>(options);
  }
  Device device(ctx.get(), Sharing::VulkanOnly);
  device.require(backend);
  for (Scene sc : {Scene{"(a) 10k tris 1024^2", 10000, 1024}, Scene{"(b) 5k tris 512^2", 5000, 512},
                   Scene{"(c) 1M tris 2048^2", 1000000, 2048}}) {
    if (scenes.find(sc.name[1]) == std::string::npos) continue;
    for (bool withInterpolate : {false, true}) {
      std::vector<float> pos;
      std::vector<int32_t> faces;
      spheres(sc.tris, pos, faces);
      std::vector<float> attr(pos.size() / 4 * 3);
      for (size_t i = 0; i < attr.size(); ++i) attr[i] = float(i % 7) * 0.1f;
      RasterDesc d{sc.size, sc.size};
      const uint32_t N = uint32_t(pos.size() / 4), M = uint32_t(faces.size() / 3);
      const size_t pixels = d.pixels();
      // Bytes that must move: the mesh, the z-buffer cleared, written and read, the outputs; + interpolate's reads
      // of ids, barycentrics and three floats per pixel and its (H,W,3) output.
      double bytes = double(pos.size() * 4 + faces.size() * 4 + pixels * (8 * 3 + 4 + 12));
      if (withInterpolate) bytes += double(pixels * (4 + 12 + 12 + 12));
      Row r{"raster",
            backendName(backend),
            std::string(sc.name) + (withInterpolate ? " +interpolate" : "") + variant,
            M,
            0,
            0,
            bytes,
            0};
      // As a renderer calls it frame after frame: every call but the first on a scratch the previous one left clear
      // (RasterScratchState); rasterize alone also with the z-buffer cleared on every call, as a row.
      auto callDesc = [&](bool reuse, RasterScratchState& state) { return reuse ? state.next(d) : d; };
      std::vector<double> ms, plainMs, clearingMs;
      // Scratch and outputs in compressible memory where the GPU grants it (CUDA), as raster.h recommends; rasterize
      // alone then also in plain memory, as a row of its own. The inputs are uploaded once for all.
      DeviceBuffer dp = device.upload(pos), df = device.upload(faces), da = device.upload(attr);
      auto timeIn = [&](bool compressible, bool reuse) {
        auto allocate = [&](ElementType type, size_t count) {
          return compressible ? device.allocateCompressible(type, count) : device.allocate(type, count);
        };
        DeviceBuffer z = allocate(ElementType::Byte, rasterScratchBytes(d)), ids = allocate(ElementType::Int32, pixels),
                     bary = allocate(ElementType::Float32, pixels * 3),
                     out = allocate(ElementType::Float32, pixels * 3);
        RasterScratchState state;
        return device
            .time(
                backend,
                [&](const Exec& exec) {
                  rasterize(exec, {.desc = callDesc(reuse, state),
                                   .vertexCount = N,
                                   .faceCount = M,
                                   .positions = dp,
                                   .faces = df,
                                   .scratch = z,
                                   .findices = ids,
                                   .barycentrics = bary});
                  if (withInterpolate) {
                    exec.barrier();
                    interpolate(exec, {.desc = {uint32_t(pixels), 3, N, M},
                                       .attr = da,
                                       .findices = ids,
                                       .barycentrics = bary,
                                       .faces = df,
                                       .out = out});
                  }
                },
                iters, Device::Timing::Submitted)
            .ms;
      };
      const bool compresses = device.allocateCompressible(ElementType::Byte, 4).compressed();
      ms = timeIn(compresses, true);
      if (!withInterpolate && compresses) plainMs = timeIn(false, true);
      if (!withInterpolate && !floatOnly) clearingMs = timeIn(compresses, false);
      r.medianMs = median(ms), r.minMs = minOf(ms);
      rows.push_back(r);
      for (auto [suffix, times] :
           {std::pair{" plain memory", &plainMs}, std::pair{" z cleared each call", &clearingMs}})
        if (!times->empty()) {
          Row p = r;
          p.variant += suffix;
          p.medianMs = median(*times), p.minMs = minOf(*times);
          rows.push_back(p);
        }
      if (backend == Backend::Vulkan && !withInterpolate && !floatOnly)
        rows.push_back(hardwareRow(device, sc.name, d, pos, faces, iters));
    }
    RasterDesc backward{sc.size, sc.size};
    rows.push_back(backwardRow(device, backend, (sc.name + variant).c_str(), sc.tris, backward, iters));
  }
}

}  // namespace armature::bench

namespace armature::bench {

void runHierarchy(std::vector<Row>& rows, const std::vector<uint32_t>& sizes, int iters) {
  for (uint32_t size : sizes) {
    auto views = makeGridViews(size, 4, 3, 0.02, 7);
    const int levels = 4, resolution = int(size);
    size_t pixels = 0;
    for (const GridView& v : views) pixels += size_t(v.layers) * v.height * v.width;
    // The CUDA builder's time includes its uploads and downloads (host views in, host hierarchy out), after one
    // untimed call (context creation, first allocations).
    const bool withCuda = !cudaUnavailable();
    if (withCuda) buildGridHierarchy(Backend::Cuda, views, levels, resolution);
    for (const char* builder : {"cpu-ref", "cpu", "cuda"}) {
      const bool reference = builder == std::string("cpu-ref"), onCuda = builder == std::string("cuda");
      if (onCuda && !withCuda) continue;
      std::vector<double> ms;
      size_t cells = 0;
      for (int i = 0; i < (reference ? std::min(iters, 3) : std::min(iters, 10)); ++i) {
        auto t0 = std::chrono::steady_clock::now();
        GridHierarchy h = reference
                              ? buildGridHierarchyRef(views, levels, resolution)
                              : buildGridHierarchy(onCuda ? Backend::Cuda : Backend::Cpu, views, levels, resolution);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        cells = h.isOriginal.size();
      }
      // Bytes: the input positions and normals read once, the outputs written.
      Row r{"hierarchy",
            builder,
            "3 views x 4 layers x " + std::to_string(size) + "^2, R " + std::to_string(resolution) + ", " +
                std::to_string(levels) + " levels, " + std::to_string(cells) + " cells",
            0,
            0,
            0,
            double(pixels * 28 + cells * 12 * 8),
            0};
      r.medianMs = median(ms), r.minMs = minOf(ms);
      rows.push_back(r);
    }
  }
}

}  // namespace armature::bench
