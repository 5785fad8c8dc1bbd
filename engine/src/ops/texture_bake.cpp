// Texture baking's GPU entry points: bakeSamples (its backends: texture_bake_vk.cpp, cuda/src/texture_bake.cu) and
// TextureBaker, which chains project, rasterize, interpolate, bakeSamples and deformableAggregation.
#include "armature/ops/texture_bake.h"

#include "armature/ops/project.h"
#include "dispatch.h"
#include "shared/bake_io.h"

namespace armature {
namespace vk {
void bakeSamples(const Exec&, const BakeSamplesArgs&);
}
namespace cuda {
void bakeSamples(const Exec&, const BakeSamplesArgs&);
}

BakePush bakePush(const BakeDesc& d) {
  return {d.texels,    d.views, d.width, d.height, d.vertexCount, d.faceCount, d.tolerance, d.minCosine,
          d.sharpness, 0,       0,       0};
}

void bakeSamples(const Exec& exec, const BakeSamplesArgs& a) {
  const BakeDesc& d = a.desc;
  checkBakeDesc(d);
  static_assert(BAKE_MAX_VIEWS == 64);
  const size_t pixels = size_t(d.views) * d.width * d.height, T = d.texels, K = d.views;
  OpChecks check("bakeSamples", exec);
  check.view("positions", a.positions, ElementType::Float32, size_t(d.vertexCount) * 3);
  check.view("faces", a.faces, ElementType::Int32, size_t(d.faceCount) * 3);
  check.view("texelFaces", a.texelFaces, ElementType::Int32, T);
  check.view("texelBary", a.texelBary, ElementType::Float32, T * 3);
  check.view("viewFaces", a.viewFaces, ElementType::Int32, pixels);
  check.view("viewBary", a.viewBary, ElementType::Float32, pixels * 3);
  check.view("matrices", a.matrices, ElementType::Float32, K * 16);
  check.view("locations", a.locations, ElementType::Float32, T * K * 2);
  check.view("weights", a.weights, ElementType::Float32, T * K);
  if (T) dispatch("bakeSamples", exec, a, &vk::bakeSamples, ARM_CUDA_BACKEND(bakeSamples));
}

struct TextureBaker::Buffers {
  DeviceBuffer faces, texelFaces, texelBary, cameras, clip, scratch, viewFaces, viewBary, images, locations, weights;
  DeviceFeatureMaps maps;
  RasterScratchState scratchState;
  RasterDesc raster;
};

TextureBaker::TextureBaker(Device& device, Backend backend, const UvAtlas& atlas, const std::vector<int32_t>& faces,
                           uint32_t vertexCount, const Settings& s)
    : m_channels(s.channels) {
  ARM_CHECK(atlas.uvs.size() == faces.size() * 2, "texture baker: the atlas has %zu uv floats for %zu faces",
            atlas.uvs.size(), faces.size() / 3);
  ARM_CHECK(s.channels >= 1, "texture baker: no channels");
  m_desc = {uint32_t(size_t(atlas.size) * atlas.size),
            s.views,
            s.width,
            s.height,
            vertexCount,
            uint32_t(faces.size() / 3),
            s.tolerance,
            s.minCosine,
            s.sharpness};
  checkBakeDesc(m_desc);
  RasterDesc raster{s.width, s.height};
  raster.images = s.views;
  checkRasterDesc(raster);
  const size_t pixels = raster.pixels(), T = m_desc.texels, K = s.views;
  auto floats = [&](size_t n) { return device.allocate(ElementType::Float32, n); };
  // The rasteriser's scratch and visibility buffers compress well (cleared runs, background), but compressible
  // memory is CUDA's alone.
  auto compressible = [&](ElementType type, size_t n) {
    return backend == Backend::Cuda ? device.allocateCompressible(type, n) : device.allocate(type, n);
  };
  m_buffers.reset(new Buffers{device.upload(faces),
                              device.allocate(ElementType::Int32, T),
                              floats(T * 3),
                              floats(K * 16),
                              floats(K * vertexCount * 4),
                              compressible(ElementType::Byte, rasterScratchBytes(raster)),
                              compressible(ElementType::Int32, pixels),
                              compressible(ElementType::Float32, pixels * 3),
                              floats(pixels * s.channels),
                              floats(T * K * 2),
                              floats(T * K),
                              DeviceFeatureMaps(device, bakeViewLayout(m_desc), uint32_t(pixels)),
                              {},
                              raster});
  // The texel map: the atlas through the same rasteriser, once.
  const AtlasRaster a = atlasRaster(atlas);
  DeviceBuffer positions = device.upload(a.positions), atlasFaces = device.upload(a.faces),
               scratch = device.allocate(ElementType::Byte, rasterScratchBytes(a.desc));
  device.run(backend, [&](const Exec& exec) {
    rasterize(exec, {.desc = a.desc,
                     .vertexCount = uint32_t(a.positions.size() / 4),
                     .faceCount = m_desc.faceCount,
                     .positions = positions,
                     .faces = atlasFaces,
                     .scratch = scratch,
                     .findices = m_buffers->texelFaces,
                     .barycentrics = m_buffers->texelBary});
  });
}

TextureBaker::~TextureBaker() = default;

void TextureBaker::setCameras(const std::vector<float>& matrices) {
  ARM_CHECK(matrices.size() == size_t(m_desc.views) * 16, "texture baker: %zu matrix floats for %u views",
            matrices.size(), m_desc.views);
  m_buffers->cameras.upload(std::span<const float>(matrices));
}

void TextureBaker::renderViews(const Exec& exec, DeviceView positions, DeviceView attributes) {
  Buffers& b = *m_buffers;
  const uint32_t N = m_desc.vertexCount, F = m_desc.faceCount;
  project(exec, {.desc = {m_desc.views, N, false}, .points = positions, .matrices = b.cameras, .clip = b.clip});
  exec.barrier();
  rasterize(exec, {.desc = b.scratchState.next(b.raster),
                   .vertexCount = N,
                   .faceCount = F,
                   .positions = b.clip,
                   .faces = b.faces,
                   .scratch = b.scratch,
                   .findices = b.viewFaces,
                   .barycentrics = b.viewBary});
  exec.barrier();
  interpolate(
      exec, {{uint32_t(b.raster.pixels()), m_channels, N, F}, attributes, b.viewFaces, b.viewBary, b.faces, b.images});
}

void TextureBaker::samples(const Exec& exec, DeviceView positions) {
  Buffers& b = *m_buffers;
  bakeSamples(exec, {.desc = m_desc,
                     .positions = positions,
                     .faces = b.faces,
                     .texelFaces = b.texelFaces,
                     .texelBary = b.texelBary,
                     .viewFaces = b.viewFaces,
                     .viewBary = b.viewBary,
                     .matrices = b.cameras,
                     .locations = b.locations,
                     .weights = b.weights});
}

void TextureBaker::aggregate(const Exec& exec, DeviceView texture) {
  Buffers& b = *m_buffers;
  deformableAggregation(
      exec, {{&b.maps, bakeAggregationSizes(m_desc, m_channels), b.images, b.locations, b.weights}, texture});
}

void TextureBaker::bake(const Exec& exec, DeviceView positions, DeviceView attributes, DeviceView texture) {
  renderViews(exec, positions, attributes);
  exec.barrier();
  samples(exec, positions);
  exec.barrier();
  aggregate(exec, texture);
}

const DeviceBuffer& TextureBaker::cameras() const { return m_buffers->cameras; }
const DeviceBuffer& TextureBaker::clip() const { return m_buffers->clip; }
const DeviceBuffer& TextureBaker::texelFaces() const { return m_buffers->texelFaces; }
const DeviceBuffer& TextureBaker::texelBary() const { return m_buffers->texelBary; }
const DeviceBuffer& TextureBaker::images() const { return m_buffers->images; }
const DeviceBuffer& TextureBaker::viewFaces() const { return m_buffers->viewFaces; }
const DeviceBuffer& TextureBaker::viewBary() const { return m_buffers->viewBary; }
const DeviceBuffer& TextureBaker::locations() const { return m_buffers->locations; }
const DeviceBuffer& TextureBaker::weights() const { return m_buffers->weights; }

}  // namespace armature
