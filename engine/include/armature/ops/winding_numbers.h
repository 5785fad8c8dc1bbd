#pragma once
// Generalised winding numbers of points with respect to a triangle mesh: 1 inside a closed outward-wound mesh, 0
// outside, blending across holes (shaders/shared/winding_io.h); w > ½ is an inside test that tolerates a mesh's
// small openings. Optionally each point's distance to the mesh, from the same walk over the faces: with the inside
// test, a signed distance. CUDA and Vulkan (float), and the CPU reference in double.
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

// `faces` (F,3) index `vertices` (V,3); an index out of range is an armature::Error naming the face.
std::vector<double> windingNumbersRef(const std::vector<double>& points, const std::vector<double>& vertices,
                                      const std::vector<int32_t>& faces);
// Each point's distance to the nearest point of the mesh's triangles (unsigned; with w > ½ the sign of a signed
// distance, negative inside).
std::vector<double> meshDistancesRef(const std::vector<double>& points, const std::vector<double>& vertices,
                                     const std::vector<int32_t>& faces);

// A mesh on a device: faces checked as the reference checks them, then uploaded once.
class DeviceTriangleMesh {
 public:
  DeviceTriangleMesh(Device& device, const std::vector<float>& vertices, const std::vector<int32_t>& faces);
  uint32_t vertexCount() const { return m_vertexCount; }
  uint32_t faceCount() const { return m_faceCount; }
  DeviceView vertices() const { return m_vertices.view(); }
  DeviceView faces() const { return m_faces.view(); }

 private:
  uint32_t m_vertexCount = 0, m_faceCount = 0;
  DeviceBuffer m_vertices, m_faces;
};

struct WindingNumbersArgs {
  const DeviceTriangleMesh* mesh = nullptr;
  uint32_t points = 0;
  DeviceView x;          // (P,3)
  DeviceView windings;   // out (P)
  DeviceView distances;  // out (P), optional: as meshDistancesRef (the same walk over the faces)
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void windingNumbers(const Exec& exec, const WindingNumbersArgs& args);

}  // namespace armature
