// The README's example: load a model, skin it on either backend, project it and rasterise it.
// Usage: armature-example MODEL.npz [vulkan|cuda]
#include <algorithm>
#include <cstdio>

#include "armature/ops/project.h"
#include "armature/ops/raster.h"
#include "armature/ops/skinning.h"

using namespace armature;

int main(int argc, char** argv) try {
  const BodyModel model = loadBodyModel(argc > 1 ? argv[1] : "model.npz");  // an SMPL-X .npz
  vk::Context vulkan;                                                       // lavapipe where there is no GPU
  Device gpu(&vulkan);                                                      // CUDA shares it where it can
  const Backend backend = parseBackend(argc > 2 ? argv[2] : "vulkan");
  Skinning skin(gpu, backend, model, 10, 10, /*maxBatch=*/1);
  const uint32_t V = model.vertexCount, F = uint32_t(model.faces.size() / 3);
  const std::vector<float> pose(model.jointCount * 3, 0.f), coefs(10, 0.f), transl(3, 0.f),
      camera{2.2f, 0, 0, 0, 0, -2.2f, 0, 0, 0, 0, -1.02f, -1, 0, 0, 2.448f, 2.5f};  // column-major
  const RasterDesc image{512, 512};
  auto floats = [&](size_t n) { return gpu.allocate(ElementType::Float32, n); };
  DeviceBuffer p = gpu.upload(pose), betas = gpu.upload(coefs), expr = gpu.upload(coefs), t = gpu.upload(transl),
               cam = gpu.upload(camera), faces = gpu.upload(model.faces), vertices = floats(V * 3),
               joints = floats(model.jointCount * 3), clip = floats(V * 4), bary = floats(image.pixels() * 3),
               scratch = gpu.allocate(ElementType::Byte, rasterScratchBytes(image)),
               ids = gpu.allocate(ElementType::Int32, image.pixels());
  gpu.run(backend, [&](const Exec& exec) {
    skin.forward(exec, {.batch = 1,
                        .pose = p,
                        .betas = betas,
                        .expression = expr,
                        .transl = t,
                        .vertices = vertices,
                        .joints = joints});
    exec.barrier();
    project(exec, {.desc = {1, V}, .points = vertices, .matrices = cam, .clip = clip});
    exec.barrier();
    rasterize(exec, {.desc = image,
                     .vertexCount = V,
                     .faceCount = F,
                     .positions = clip,
                     .faces = faces,
                     .scratch = scratch,
                     .findices = ids,
                     .barycentrics = bary});
  });
  const auto faceIds = ids.download<int32_t>();
  std::printf("%s: %td of %zu pixels show the body\n", backendName(backend),
              std::count_if(faceIds.begin(), faceIds.end(), [](int32_t id) { return id > 0; }), faceIds.size());
} catch (const std::exception& e) {
  std::fprintf(stderr, "armature-example: %s\n", e.what());
  return 1;
}
