#pragma once
// Multi-view texture baking: what K views show of a mesh, gathered into a texture over its UV atlas through the
// deformable aggregation (armature/ops/deformable_aggregation.h): each texel is an anchor with one point seen by K
// cameras, each view one map of one level.
//
//   1. The atlas (once per topology): makeUvAtlas, rasterised by the project's rasteriser (atlasRaster) into the
//      texel map: each texel's face + 1 (0: none) and barycentrics.
//   2. The views (per bake): the posed mesh projected, rasterised and its attributes interpolated (project,
//      rasterize, interpolate): K images of C channels and their visibility buffers.
//   3. bakeSamples: per texel, its surface point p (barycentrics of its face in the posed mesh) and the face's
//      normal n; per view k, p's location l_k (clip x/w, y/w mapped to [0, 1]: the rasteriser's rows). View k counts
//      when p lies in front of the camera and inside the view, at each of the four pixels its bilinear sample reads
//      the view shows a face whose plane crosses p's view ray within `tolerance` of p (a z-buffer test at p's exact
//      location; otherwise something hides p, or an occluder's edge or the background would bleed in), and c_k = |cos
//      ∠(n, view ray)| ≥ minCosine, > 0; its weight is c_k^sharpness, normalised over the views. Locations of views
//      that do not count are (−1, −1), so the aggregation skips them; a texel no view sees gets weight 0 everywhere.
//   4. deformableAggregation: texture (T, C) = Σ_k w_k · bilinear(image_k, l_k), a weighted mean of the views.
//
// Non-finite positions and degenerate faces count for nothing; face ids past the faces (in the texel map or a view)
// read as no face.
#include <cstdint>
#include <memory>
#include <vector>

#include "armature/device.h"
#include "armature/ops/deformable_aggregation.h"
#include "armature/ops/raster.h"

struct BakePush;  // shaders/shared/bake_io.h: the GPU pass's push constants

namespace armature {

// ---- The atlas --------------------------------------------------------------------------------------------------

struct UvAtlas {
  uint32_t size = 0;         // texels per side
  std::vector<float> uvs;    // (F,3,2): face f's corner k at (u, v) in [0, 1], u right, v down (glTF's)
  double texelsPerUnit = 0;  // the scale, the same for every face: texels per unit of the mesh's length
};
// Cuts the mesh into charts of one face or two (a face and its neighbour across their longest shared edge), lays
// each flat without distortion (the pair hinged at the shared edge) and packs them on shelves at the largest common
// scale that fits size², with at least `gutter` texels between charts. Throws armature::Error for bad faces or a
// size the charts cannot fit.
UvAtlas makeUvAtlas(const std::vector<float>& positions, const std::vector<int32_t>& faces, uint32_t size,
                    uint32_t gutter = 2);

// The atlas as one rasterize call: clip positions (3F rows; corner k of face f is row 3f + k, at
// (2u − 1, 2v − 1, 0.5, 1)) and faces (f: 3f, 3f + 1, 3f + 2), so that its face ids are the mesh's and its
// barycentrics weigh the mesh face's corners. Row y of the texel map is v = (y + ½) / size.
struct AtlasRaster {
  std::vector<float> positions;
  std::vector<int32_t> faces;
  RasterDesc desc;  // one image of size × size
};
AtlasRaster atlasRaster(const UvAtlas& atlas);

// ---- Samples ----------------------------------------------------------------------------------------------------

struct BakeDesc {
  uint32_t texels = 0;                        // T
  uint32_t views = 0, width = 0, height = 0;  // K (1 … 64) views of H × W
  uint32_t vertexCount = 0, faceCount = 0;
  float tolerance = 0.01f;  // in the mesh's units, along the view ray
  float minCosine = 0.1f;   // views more oblique than ~84° count for nothing
  float sharpness = 2.0f;   // weight cos^sharpness: squarer views count more
};
// Throws armature::Error naming what is wrong.
void checkBakeDesc(const BakeDesc& desc);
// The push constants of the GPU pass, on CUDA and Vulkan; include shared/bake_io.h to call it.
BakePush bakePush(const BakeDesc& desc);

// The CPU reference in double (the matrices as the GPU reads them: float).
struct BakeSamplesRef {
  std::vector<double> locations;  // (T,K,2)
  std::vector<double> weights;    // (T,K)
};
BakeSamplesRef bakeSamplesRef(const BakeDesc& desc, const std::vector<double>& positions,
                              const std::vector<int32_t>& faces, const std::vector<int32_t>& texelFaces,
                              const std::vector<double>& texelBary, const std::vector<int32_t>& viewFaces,
                              const std::vector<double>& viewBary, const std::vector<float>& matrices);

struct BakeSamplesArgs {
  BakeDesc desc;
  DeviceView positions;   // float (N,3), posed
  DeviceView faces;       // int32 (F,3)
  DeviceView texelFaces;  // int32 (T): face + 1, the atlas's raster
  DeviceView texelBary;   // float (T,3)
  DeviceView viewFaces;   // int32 (K,H,W): the views' raster
  DeviceView viewBary;    // float (K,H,W,3)
  DeviceView matrices;    // float (K,16), column-major: the views' projections (project's)
  DeviceView locations;   // float (T,K,2), overwritten
  DeviceView weights;     // float (T,K), overwritten
};
// An invocation per texel, its views in order: the same bits on every run.
void bakeSamples(const Exec& exec, const BakeSamplesArgs& args);

// K views around a box for baking it: cameras evenly spaced in yaw about +y, their elevations alternating between
// +25° and −15° so that tops and undersides are seen, each framing the box's bounding sphere; (K,16), column-major
// (armature/camera.h), for images of width / height `aspect`.
std::vector<float> bakeRingCameras(uint32_t views, const float lo[3], const float hi[3], float aspect = 1.0f);

// How the aggregation sees the views: K cameras of one level each, H × W; the images (K,H,W,C) as its features.
FeatureMapLayout bakeViewLayout(const BakeDesc& desc);
DeformableAggregationSizes bakeAggregationSizes(const BakeDesc& desc, uint32_t channels);

// ---- The whole bake on one backend ------------------------------------------------------------------------------

// Owns the texel map, the views' buffers and the samples; renders and bakes per-vertex attributes (N,C) of a posed
// mesh. The stages are separate calls so that a renderer can time them; bake() runs all three.
class TextureBaker {
 public:
  struct Settings {
    uint32_t views = 8, width = 1024, height = 1024, channels = 4;
    float tolerance = 0.01f, minCosine = 0.1f, sharpness = 2.0f;
  };
  // For work on `backend` only (its buffers are allocated for it); rasterises the atlas into the texel map now.
  TextureBaker(Device& device, Backend backend, const UvAtlas& atlas, const std::vector<int32_t>& faces,
               uint32_t vertexCount, const Settings& settings);
  ~TextureBaker();
  TextureBaker(const TextureBaker&) = delete;
  TextureBaker& operator=(const TextureBaker&) = delete;

  const BakeDesc& desc() const { return m_desc; }
  uint32_t channels() const { return m_channels; }
  // The views' projections, (K,16) column-major.
  void setCameras(const std::vector<float>& matrices);

  // positions: float (N,3); attributes: float (N,C); texture: float (T,C), overwritten.
  void renderViews(const Exec& exec, DeviceView positions, DeviceView attributes);
  void samples(const Exec& exec, DeviceView positions);
  void aggregate(const Exec& exec, DeviceView texture);
  void bake(const Exec& exec, DeviceView positions, DeviceView attributes, DeviceView texture);

  // Intermediate results, for tests and viewers: the cameras, the texel map, the views (K,H,W,C) and their
  // visibility buffers, the samples.
  const DeviceBuffer& cameras() const;
  const DeviceBuffer& clip() const;  // (K,N,4): the views' clip positions
  const DeviceBuffer& texelFaces() const;
  const DeviceBuffer& texelBary() const;
  const DeviceBuffer& images() const;
  const DeviceBuffer& viewFaces() const;
  const DeviceBuffer& viewBary() const;
  const DeviceBuffer& locations() const;
  const DeviceBuffer& weights() const;

 private:
  struct Buffers;
  BakeDesc m_desc;
  uint32_t m_channels;
  std::unique_ptr<Buffers> m_buffers;
};

// What a texture needs before it is written: colours un-premultiplied by the coverage channel (the last: the
// views' backgrounds are 0, which bilinear samples at silhouettes mix in), and `passes` rounds of dilation that
// fill each empty texel (coverage 0) from the mean of its filled 8-neighbours, so that filtering across a chart's
// edge reads no background. texture (size², C) with C ≥ 2; returns the same shape, coverage 1 where filled.
std::vector<float> finishTexture(const std::vector<float>& texture, uint32_t size, uint32_t channels, uint32_t passes);

}  // namespace armature
