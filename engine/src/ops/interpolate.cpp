#include "armature/ops/interpolate.h"

#include "dispatch.h"

namespace armature {
namespace vk {
void interpolate(const Exec&, const InterpolateArgs&);
void interpolateBackward(const Exec&, const InterpolateBackwardArgs&);
}  // namespace vk
namespace cuda {
void interpolate(const Exec&, const InterpolateArgs&);
void interpolateBackward(const Exec&, const InterpolateBackwardArgs&);
}  // namespace cuda

size_t InterpolateDesc::attrFloats() const { return interpolateAttrCount(pixels, channels, vertexCount, imagePixels); }

namespace {
void checkInputs(const OpChecks& check, const InterpolateDesc& d, const DeviceView& attr, const DeviceView& findices,
                 const DeviceView& barycentrics, const DeviceView& faces) {
  ARM_CHECK(d.channels >= 1, "interpolate: channels must be >= 1");
  check.view("attr", attr, ElementType::Float32, d.attrFloats());
  check.view("findices", findices, ElementType::Int32, d.pixels);
  check.view("barycentrics", barycentrics, ElementType::Float32, size_t(d.pixels) * 3);
  check.view("faces", faces, ElementType::Int32, size_t(d.faceCount) * 3);
}
}  // namespace

void interpolate(const Exec& exec, const InterpolateArgs& a) {
  OpChecks check("interpolate", exec);
  checkInputs(check, a.desc, a.attr, a.findices, a.barycentrics, a.faces);
  check.view("out", a.out, ElementType::Float32, size_t(a.desc.pixels) * a.desc.channels);
  if (a.desc.pixels) dispatch("interpolate", exec, a, &vk::interpolate, ARM_CUDA_BACKEND(interpolate));
}

void interpolateBackward(const Exec& exec, const InterpolateBackwardArgs& a) {
  OpChecks check("interpolate backward", exec);
  checkInputs(check, a.desc, a.attr, a.findices, a.barycentrics, a.faces);
  check.view("gradOut", a.gradOut, ElementType::Float32, size_t(a.desc.pixels) * a.desc.channels);
  check.view("gradAttr", a.gradAttr, ElementType::Float32, a.desc.attrFloats());
  check.view("gradBarycentrics", a.gradBarycentrics, ElementType::Float32, size_t(a.desc.pixels) * 3);
  if (a.desc.pixels)
    dispatch("interpolate backward", exec, a, &vk::interpolateBackward, ARM_CUDA_BACKEND(interpolateBackward));
}

}  // namespace armature
