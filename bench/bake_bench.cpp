// armature-bench bake: a 1024² texture of the default avatar baked from 8 views of 1024² (the case), by
// stage: the views (project, rasterize, interpolate 4 channels), the samples, the aggregation, and the whole bake.
// Bytes are the stages' compulsory traffic: the views' visibility buffers and images written and read, the texel
// map read, each seen texel's four pixels per view read, the samples written and read, the texture written.
#include <random>

#include "app/box.h"
#include "armature/ops/texture_bake.h"
#include "bench/bench.h"

namespace armature::bench {

void runBake(std::vector<Row>& rows, Device& device, Backend backend, int iters, const std::string& modelPath) {
  const BodyModel model = loadDefaultModel(modelPath);
  const std::vector<float> positions(model.vTemplate.begin(), model.vTemplate.end());
  float lo[3], hi[3];
  app::boxOf(positions, lo, hi);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> colours(size_t(model.vertexCount) * 4);
  for (float& c : colours) c = u(rng);
  const uint32_t size = 1024, C = 4;
  TextureBaker::Settings settings;  // 8 views of 1024², 4 channels
  TextureBaker baker(device, backend, makeUvAtlas(positions, model.faces, size), model.faces, model.vertexCount,
                     settings);
  baker.setCameras(bakeRingCameras(settings.views, lo, hi));
  const BakeDesc& d = baker.desc();
  DeviceBuffer dPositions = device.upload(positions), dColours = device.upload(colours),
               texture = device.allocate(ElementType::Float32, size_t(d.texels) * C);
  device.run(backend, [&](const Exec& e) { baker.bake(e, dPositions, dColours, texture); });
  size_t onMesh = 0;
  for (int32_t f : baker.texelFaces().download<int32_t>()) onMesh += f != 0;

  const double pixels = double(d.views) * d.width * d.height, K = d.views, T = d.texels;
  const double viewBytes =
                   double(model.vertexCount) * (12 + K * 16) + pixels * (8 * 3 + 4 + 12) + pixels * (4 + 12 + C * 4),
               sampleBytes = T * 4 + double(onMesh) * (12 + K * (4 * 16 + 12 + 8)),
               aggregateBytes = double(onMesh) * K * (12 + 4 * C * 4) + T * K * 12 + T * C * 4;
  struct Stage {
    const char* name;
    double bytes;
    std::function<void(const Exec&)> work;
  };
  const std::string views =
      std::to_string(d.views) + " views " + std::to_string(d.width) + "^2, texture " + std::to_string(size) + "^2";
  for (const Stage& s : {Stage{"views", viewBytes, [&](const Exec& e) { baker.renderViews(e, dPositions, dColours); }},
                         Stage{"samples", sampleBytes, [&](const Exec& e) { baker.samples(e, dPositions); }},
                         Stage{"aggregate", aggregateBytes, [&](const Exec& e) { baker.aggregate(e, texture); }},
                         Stage{"bake", viewBytes + sampleBytes + aggregateBytes,
                               [&](const Exec& e) { baker.bake(e, dPositions, dColours, texture); }}}) {
    Row r{"bake", backendName(backend), std::string(s.name) + ", " + views, d.views, 0, 0, s.bytes, 0, {}};
    measure(r, device, backend, s.work, iters);
    rows.push_back(r);
  }
}

}  // namespace armature::bench
