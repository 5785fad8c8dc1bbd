// `armature bake`: bakes what K views show of the posed avatar into a texture over a generated UV atlas, on the GPU
// (armature/ops/texture_bake.h). The views show the avatar painted per body part (each vertex coloured by the joint
// that moves it most) and lit by a key light; the texture is written as a PNG, un-premultiplied and dilated into the
// charts' gutters. --views-png writes the views side by side; --preview renders the avatar from a view between the
// baking cameras twice, with its vertex colours and with the baked texture, side by side.
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/box.h"
#include "app/commands.h"
#include "app/poses.h"
#include "armature/camera.h"
#include "armature/device.h"
#include "armature/ops/project.h"
#include "armature/ops/texture_bake.h"
#include "armature/vk/context.h"

namespace armature::app {

namespace {

// The body-part colours (bodyPartColours) times Lambert shading of the posed normal under a key light over an
// ambient floor.
std::vector<float> paint(const BodyModel& model, const std::vector<double>& posed) {
  const uint32_t V = model.vertexCount;
  std::vector<double> normals(size_t(V) * 3, 0.0);
  for (size_t f = 0; f < model.faceCount; ++f) {
    const int32_t* c = &model.faces[f * 3];
    double e[2][3];
    for (int k = 0; k < 3; ++k)
      e[0][k] = posed[size_t(c[1]) * 3 + size_t(k)] - posed[size_t(c[0]) * 3 + size_t(k)],
      e[1][k] = posed[size_t(c[2]) * 3 + size_t(k)] - posed[size_t(c[0]) * 3 + size_t(k)];
    const double n[3] = {e[0][1] * e[1][2] - e[0][2] * e[1][1], e[0][2] * e[1][0] - e[0][0] * e[1][2],
                         e[0][0] * e[1][1] - e[0][1] * e[1][0]};
    for (int corner = 0; corner < 3; ++corner)
      for (int k = 0; k < 3; ++k) normals[size_t(c[corner]) * 3 + size_t(k)] += n[k];
  }
  const double light[3] = {0.37, 0.74, 0.56};
  std::vector<float> colours = bodyPartColours(model);
  for (uint32_t v = 0; v < V; ++v) {
    const double* n = &normals[size_t(v) * 3];
    const double length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    const double lambert =
        length > 0 ? std::max(0.0, (n[0] * light[0] + n[1] * light[1] + n[2] * light[2]) / length) : 0.0;
    for (int c = 0; c < 3; ++c) colours[size_t(v) * 4 + size_t(c)] *= float(0.35 + 0.65 * lambert);
  }
  return colours;
}

uint8_t byte(float x) { return uint8_t(std::lround(std::clamp(x, 0.0f, 1.0f) * 255)); }

// RGBA float images side by side (each W × H, rows top first) into one 8-bit PNG.
void writeStrip(const std::string& path, const std::vector<const float*>& images, uint32_t W, uint32_t H) {
  const size_t columns = images.size() * W;
  std::vector<uint8_t> rgba(columns * H * 4);
  for (size_t i = 0; i < images.size(); ++i)
    for (uint32_t y = 0; y < H; ++y)
      for (uint32_t x = 0; x < W; ++x)
        for (int c = 0; c < 4; ++c)
          rgba[((size_t(y) * columns) + i * W + x) * 4 + size_t(c)] =
              byte(images[i][(size_t(y) * W + x) * 4 + size_t(c)]);
  if (!stbi_write_png(path.c_str(), int(columns), int(H), 4, rgba.data(), int(columns * 4)))
    throw Error(path + ": cannot write PNG");
}

// The texture (size², 4) sampled bilinearly at (u, v), texel centres at (i + ½) / size, clamped at the border.
void sampleTexture(const std::vector<float>& texture, uint32_t size, double u, double v, float* out) {
  const double x = u * size - 0.5, y = v * size - 0.5, fx = std::floor(x), fy = std::floor(y);
  for (int c = 0; c < 4; ++c) out[c] = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t tx = std::clamp<int64_t>(int64_t(fx) + k % 2, 0, size - 1),
                  ty = std::clamp<int64_t>(int64_t(fy) + k / 2, 0, size - 1);
    const double w = (k % 2 ? x - fx : 1 - (x - fx)) * (k / 2 ? y - fy : 1 - (y - fy));
    for (int c = 0; c < 4; ++c) out[c] += float(w * texture[(size_t(ty) * size + size_t(tx)) * 4 + size_t(c)]);
  }
}

}  // namespace

int runBake(const BakeOptions& o) {
  const Backend backend = chooseBackend(o.backend);
  ARM_CHECK(backend != Backend::Cpu, "bake runs on the GPU: --backend cuda or vulkan");
  const BodyModel model = loadModelOrDefault(o.model);
  const BodyParams params = posePreset(model, o.pose);
  const std::vector<double> posed = bodyForwardRef(model, params).vertices;
  const std::vector<float> positions(posed.begin(), posed.end()), colours = paint(model, posed);
  float lo[3], hi[3];
  boxOf(positions, lo, hi);

  // The atlas follows the rest shape (topology and proportions), not the pose.
  const std::vector<float> rest(model.vTemplate.begin(), model.vTemplate.end());
  const UvAtlas atlas = makeUvAtlas(rest, model.faces, o.size);
  std::unique_ptr<vk::Context> ctx;
  if (backend == Backend::Vulkan) ctx = std::make_unique<vk::Context>();
  Device device(ctx.get(), Sharing::VulkanOnly);
  device.require(backend);
  TextureBaker::Settings settings;
  settings.views = o.views, settings.width = settings.height = o.viewSize, settings.channels = 4;
  TextureBaker baker(device, backend, atlas, model.faces, model.vertexCount, settings);
  baker.setCameras(bakeRingCameras(o.views, lo, hi));
  const BakeDesc& d = baker.desc();
  DeviceBuffer dPositions = device.upload(positions), dColours = device.upload(colours),
               texture = device.allocate(ElementType::Float32, size_t(d.texels) * 4);
  auto bake = [&](const Exec& e) { baker.bake(e, dPositions, dColours, texture); };
  device.run(backend, bake);
  const Device::Timings times = device.time(backend, bake, int(o.timingRuns));
  std::vector<double> ms = times.ms;
  std::sort(ms.begin(), ms.end());
  std::printf(
      "baked %u² texels from %u views of %u² on %s: %.3f ms median GPU time (%zu runs; views rendered "
      "included)\n",
      o.size, o.views, o.viewSize, backendName(backend), ms[ms.size() / 2], ms.size());

  const std::vector<float> raw = texture.download<float>();
  const std::vector<float> finished = finishTexture(raw, o.size, 4, 4);
  size_t onMesh = 0, seen = 0;
  const std::vector<int32_t> texelFaces = baker.texelFaces().download<int32_t>();
  for (size_t t = 0; t < d.texels; ++t) onMesh += texelFaces[t] != 0, seen += texelFaces[t] && raw[t * 4 + 3] > 1e-3f;
  std::printf("%zu texels on the avatar's charts, %.1f%% of them seen by a view\n", onMesh,
              100.0 * double(seen) / double(std::max<size_t>(onMesh, 1)));
  writeStrip(o.output, {finished.data()}, o.size, o.size);
  std::printf("wrote %s\n", o.output.c_str());

  if (!o.viewsPng.empty()) {
    const std::vector<float> images = baker.images().download<float>();
    std::vector<const float*> views;
    for (uint32_t k = 0; k < o.views; ++k) views.push_back(&images[size_t(k) * o.viewSize * o.viewSize * 4]);
    writeStrip(o.viewsPng, views, o.viewSize, o.viewSize);
    std::printf("wrote %s\n", o.viewsPng.c_str());
  }
  if (!o.preview.empty()) {
    // A view halfway between the first two baking cameras, rendered on the CPU: vertex colours, then the texture.
    const uint32_t S = 640;
    const float centre[3] = {0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2])};
    const float yaw = float(M_PI) / float(o.views), distance = 1.6f * (hi[1] - lo[1]) + 0.5f;
    const auto m = lookAtPerspective(
        {centre[0] + distance * std::sin(yaw), centre[1] + 0.15f * distance, centre[2] + distance * std::cos(yaw)},
        {centre[0], centre[1], centre[2]}, 0.6f, 1.0f);
    const std::vector<float> matrix(m.begin(), m.end());
    const std::vector<double> clip =
        projectRef({1, model.vertexCount, false}, std::vector<double>(posed.begin(), posed.end()), matrix);
    RasterDesc raster{S, S};
    const RasterResult r = rasterizeRef(std::vector<float>(clip.begin(), clip.end()), model.faces, raster);
    std::vector<float> painted(size_t(S) * S * 4, 0.0f), textured(size_t(S) * S * 4, 0.0f);
    for (size_t pixel = 0; pixel < size_t(S) * S; ++pixel) {
      const int32_t face = r.findices[pixel] - 1;
      if (face < 0) continue;
      const float* b = &r.barycentrics[pixel * 3];
      double u = 0, v = 0;
      for (int k = 0; k < 3; ++k) {
        u += b[k] * atlas.uvs[size_t(face) * 6 + size_t(k) * 2],
            v += b[k] * atlas.uvs[size_t(face) * 6 + size_t(k) * 2 + 1];
        for (int c = 0; c < 4; ++c)
          painted[pixel * 4 + size_t(c)] +=
              b[k] * colours[size_t(model.faces[size_t(face) * 3 + size_t(k)]) * 4 + size_t(c)];
      }
      sampleTexture(finished, o.size, u, v, &textured[pixel * 4]);
      textured[pixel * 4 + 3] = 1.0f;
    }
    writeStrip(o.preview, {painted.data(), textured.data()}, S, S);
    std::printf("wrote %s (left: the vertex colours; right: the baked texture)\n", o.preview.c_str());
  }
  return 0;
}

}  // namespace armature::app
