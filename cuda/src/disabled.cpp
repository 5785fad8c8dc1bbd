// The CUDA backend in a build without nvcc (ARMATURE_CUDA=OFF): every entry point reports that, so callers and
// tests see a clear reason instead of a link error or a silent pass.
#include "armature/cuda/runtime.h"
#include "armature/error.h"

namespace armature::cuda {
namespace {
[[noreturn]] void notBuilt() { throw Error("this build has no CUDA backend (configured with ARMATURE_CUDA=OFF)"); }
}  // namespace
bool compiled() { return false; }
std::optional<std::string> unavailableReason() {
  return std::string("this build has no CUDA backend (ARMATURE_CUDA=OFF)");
}
RuntimeInfo queryRuntime() { return RuntimeInfo{0, 0, {}, "this build has no CUDA backend (ARMATURE_CUDA=OFF)"}; }
void setDevice(int) { notBuilt(); }
std::pair<size_t, size_t> memoryInfo() { notBuilt(); }
Stream::Stream() { notBuilt(); }
Stream::~Stream() = default;
void Stream::synchronize() { notBuilt(); }
DeviceMemory::DeviceMemory(size_t, MemoryKind) { notBuilt(); }
void DeviceMemory::reset() {}
void DeviceMemory::upload(const void*, size_t, size_t) { notBuilt(); }
void DeviceMemory::download(void*, size_t, size_t) const { notBuilt(); }
void DeviceMemory::uploadAsync(const void*, size_t, const Stream&, size_t) { notBuilt(); }
void DeviceMemory::fill32(uint32_t) { notBuilt(); }
Graph::Graph(const Stream&, const std::function<void(const Stream&)>&) { notBuilt(); }
Graph::~Graph() = default;
void Graph::launch(const Stream&) { notBuilt(); }
EventTimer::EventTimer() { notBuilt(); }
EventTimer::~EventTimer() = default;
void EventTimer::start(const Stream&) { notBuilt(); }
void EventTimer::stop(const Stream&) { notBuilt(); }
float EventTimer::milliseconds() { notBuilt(); }
int64_t EventTimer::startHostNs() { notBuilt(); }
}  // namespace armature::cuda

#include "armature/cuda/skinning.h"
namespace armature::cuda {
struct Skinning::Impl {};
Skinning::Skinning(const BodyModel&, uint32_t, uint32_t, uint32_t, bool) { notBuilt(); }
Skinning::~Skinning() = default;
void Skinning::forward(uint32_t, const SkinningInputs&, float*, float*, const Stream&) { notBuilt(); }
void Skinning::backward(uint32_t, const float*, const float*, const SkinningGrads&, const Stream&) { notBuilt(); }
uint32_t Skinning::vertexCount() const { notBuilt(); }
uint32_t Skinning::jointCount() const { notBuilt(); }
size_t Skinning::deviceBytes() const { notBuilt(); }
void Skinning::setChainOverlap(bool) { notBuilt(); }
bool Skinning::setL2Residency(bool) { notBuilt(); }
bool Skinning::setTensorCores(bool) { notBuilt(); }
size_t Skinning::l2ResidentBytes() const { notBuilt(); }
}  // namespace armature::cuda

#include "armature/cuda/diagnostics.h"
namespace armature::cuda {
void fillPattern(void*, size_t, uint32_t, const Stream&) { notBuilt(); }
void countPatternMismatches(const void*, size_t, uint32_t, uint32_t*, const Stream&) { notBuilt(); }
void incrementCounter(uint32_t*, uint32_t, const Stream&) { notBuilt(); }
void emptyKernel(const Stream&) { notBuilt(); }
}  // namespace armature::cuda

#include "armature/cuda/raster.h"
namespace armature::cuda {
void rasterize(const RasterDesc&, const float*, uint32_t, const int32_t*, uint32_t, const float*, void*, int32_t*,
               float*, const Stream&, const int32_t*) {
  notBuilt();
}
void rasterizeBackward(const RasterDesc&, const float*, uint32_t, const int32_t*, uint32_t, const int32_t*,
                       const float*, float*, const Stream&) {
  notBuilt();
}
void interpolate(uint32_t, uint32_t, uint32_t, const float*, const int32_t*, const float*, const int32_t*, uint32_t,
                 float*, const Stream&, uint32_t) {
  notBuilt();
}
void interpolateBackward(uint32_t, uint32_t, uint32_t, const float*, const int32_t*, const float*, const int32_t*,
                         uint32_t, const float*, float*, float*, const Stream&, uint32_t) {
  notBuilt();
}
void transformToClip(const float*, uint32_t, const float*, float*, uint32_t, uint32_t, uint32_t*, const Stream&) {
  notBuilt();
}
void rasterSetupProbe(uint32_t, uint32_t, const float*, uint32_t, void*, const Stream&) { notBuilt(); }
}  // namespace armature::cuda

#include "armature/cuda/project.h"
namespace armature::cuda {
void project(const ProjectDesc&, const float*, const float*, float*, const Stream&) { notBuilt(); }
void projectBackward(const ProjectDesc&, const float*, const float*, float*, const Stream&) { notBuilt(); }
void projectMatrixGrad(const ProjectDesc&, const float*, const float*, float*, const Stream&) { notBuilt(); }
}  // namespace armature::cuda

#include "armature/cuda/grid_hierarchy.h"
namespace armature::cuda {
GridHierarchy buildGridHierarchy(const std::vector<GridView>&, int, int) { notBuilt(); }
}  // namespace armature::cuda
