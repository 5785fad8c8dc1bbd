#include "armature/ops/raster.h"

#include "dispatch.h"

namespace armature {
namespace vk {
void rasterize(const Exec&, const RasterizeArgs&);
void rasterizeBackward(const Exec&, const RasterizeBackwardArgs&);
}  // namespace vk
namespace cuda {
void rasterize(const Exec&, const RasterizeArgs&);
void rasterizeBackward(const Exec&, const RasterizeBackwardArgs&);
}  // namespace cuda

void rasterize(const Exec& exec, const RasterizeArgs& a) {
  const RasterDesc& d = a.desc;
  checkRasterDesc(d);
  OpChecks check("rasterize", exec);
  check.view("positions", a.positions, ElementType::Float32, rasterPositionRows(d, a.vertexCount) * 4);
  check.view("faces", a.faces, ElementType::Int32, size_t(a.faceCount) * 3);
  if (d.useDepthPrior) check.view("depthPrior", a.depthPrior, ElementType::Float32, d.pixels());
  if (d.batch == RasterBatch::Ranges) check.view("ranges", a.ranges, ElementType::Int32, size_t(d.images) * 2);
  check.view("scratch", a.scratch, ElementType::Byte, rasterScratchBytes(d, a.tuning));
  check.view("findices", a.findices, ElementType::Int32, d.pixels());
  check.view("barycentrics", a.barycentrics, ElementType::Float32, d.pixels() * 3);
  dispatch("rasterize", exec, a, &vk::rasterize, ARM_CUDA_BACKEND(rasterize));
}

void rasterizeBackward(const Exec& exec, const RasterizeBackwardArgs& a) {
  const RasterDesc& d = a.desc;
  checkRasterDesc(d);
  OpChecks check("rasterize backward", exec);
  const size_t positionFloats = rasterPositionRows(d, a.vertexCount) * 4;
  check.view("positions", a.positions, ElementType::Float32, positionFloats);
  check.view("faces", a.faces, ElementType::Int32, size_t(a.faceCount) * 3);
  check.view("findices", a.findices, ElementType::Int32, d.pixels());
  check.view("gradBarycentrics", a.gradBarycentrics, ElementType::Float32, d.pixels() * 3);
  check.view("gradPositions", a.gradPositions, ElementType::Float32, positionFloats);
  dispatch("rasterize backward", exec, a, &vk::rasterizeBackward, ARM_CUDA_BACKEND(rasterizeBackward));
}

}  // namespace armature
