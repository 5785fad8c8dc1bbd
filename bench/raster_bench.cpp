// armature-bench raster: the rasterizer issue's three scenes (a) 10k triangles at 1024², (b) 5k at 512²,
// (c) 1M at 2048², as a sphere of small triangles filling most of the image.
#include <cmath>

#include "armature/cuda/raster.h"
#include "armature/ops/raster.h"
#include "armature/vk/timer.h"
#include "bench/bench.h"

namespace armature::bench {

namespace {
// A UV sphere with about `triangles` faces, radius 0.8 in NDC, in front of the eye (w = 2).
void sphere(size_t triangles, std::vector<float>& pos, std::vector<int32_t>& faces) {
  int rings = int(std::sqrt(double(triangles) / 2.0)), segments = rings;
  for (int r = 0; r <= rings; ++r)
    for (int s = 0; s <= segments; ++s) {
      double th = M_PI * r / rings, ph = 2 * M_PI * s / segments, w = 2.0;
      pos.insert(pos.end(), {float(0.8 * std::sin(th) * std::cos(ph) * w), float(0.8 * std::cos(th) * w),
                             float(0.5 * std::sin(th) * std::sin(ph) * w), float(w)});
    }
  for (int r = 0; r < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      int a = r * (segments + 1) + s, b = a + 1, c = a + segments + 1, d = c + 1;
      faces.insert(faces.end(), {a, c, b, b, c, d});
    }
}
}  // namespace

void runRaster(std::vector<Row>& rows, Backend backend, int iters) {
  struct Scene { const char* name; size_t tris; uint32_t size; };
  for (Scene sc : {Scene{"(a) 10k tris 1024^2", 10000, 1024}, Scene{"(b) 5k tris 512^2", 5000, 512},
                   Scene{"(c) 1M tris 2048^2", 1000000, 2048}}) {
    std::vector<float> pos;
    std::vector<int32_t> faces;
    sphere(sc.tris, pos, faces);
    RasterDesc d{sc.size, sc.size};
    size_t pixels = size_t(sc.size) * sc.size;
    Row r{"raster", backendName(backend), sc.name, uint32_t(faces.size() / 3), 0, 0,
          double(pos.size() * 4 + faces.size() * 4 + pixels * (8 * 3 + 4 + 12)), 0};
    if (backend == Backend::Cuda) {
      auto dp = cuda::DeviceMemory::from(pos);
      auto df = cuda::DeviceMemory::from(faces);
      cuda::DeviceMemory z(pixels * 8), ids(pixels * 4), bary(pixels * 12);
      std::vector<double> ms;
      cuda::Stream s;
      cuda::EventTimer t;
      for (int i = 0; i < iters + 5; ++i) {
        t.start(s);
        cuda::rasterize(d, dp.as<float>(), uint32_t(pos.size() / 4), df.as<int32_t>(), uint32_t(faces.size() / 3), nullptr,
                        z.as<uint64_t>(), ids.as<int32_t>(), bary.as<float>(), s);
        t.stop(s);
        double v = t.milliseconds();
        if (i >= 5) ms.push_back(v);
      }
      r.medianMs = median(ms), r.minMs = minOf(ms);
    } else if (backend == Backend::Vulkan) {
      vk::Context ctx;
      auto bp = vk::makeStorageBuffer<float>(ctx, pos);
      auto bf = vk::makeStorageBuffer<int32_t>(ctx, faces);
      vk::Buffer z(ctx, pixels * 8, vk::kStorageUsage), ids(ctx, pixels * 4, vk::kStorageUsage), bary(ctx, pixels * 12, vk::kStorageUsage);
      vk::GpuTimer timer(ctx, 2, 1);
      std::vector<double> ms;
      for (int i = 0; i < iters + 3; ++i) {
        ctx.submitAndWait([&](VkCommandBuffer cmd) {
          timer.beginFrame(cmd, uint64_t(i));
          uint32_t zone = timer.beginZone(cmd, "raster");
          rasterizeVk(ctx, cmd, d, bp, uint32_t(pos.size() / 4), bf, uint32_t(faces.size() / 3), nullptr, z, ids, bary);
          timer.endZone(cmd, zone);
        });
        double v = timer.waitFrame(uint64_t(i))[0].milliseconds;
        if (i >= 3) ms.push_back(v);
      }
      r.medianMs = median(ms), r.minMs = minOf(ms);
    } else {
      throw Error("raster benchmark: cuda or vulkan");
    }
    rows.push_back(r);
  }
}

}  // namespace armature::bench
