// Winding numbers' entry point, mesh checks and CPU reference; the backends are winding_numbers_vk.cpp and
// cuda/src/winding_numbers.cu.
#include "armature/ops/winding_numbers.h"

#include <cmath>

#include "dispatch.h"
#include "shared/winding_io.h"

namespace armature {
namespace vk {
void windingNumbers(const Exec& exec, const WindingNumbersArgs& args);
}  // namespace vk
namespace cuda {
void windingNumbers(const Exec& exec, const WindingNumbersArgs& args);
}  // namespace cuda

namespace {

uint32_t checkFaces(const std::vector<int32_t>& faces, size_t vertexCoordinates) {
  ARM_CHECK(faces.size() % 3 == 0, "windingNumbers: %zu face indices, not (F,3)", faces.size());
  ARM_CHECK(vertexCoordinates % 3 == 0, "windingNumbers: %zu vertex coordinates, not (V,3)", vertexCoordinates);
  const size_t V = vertexCoordinates / 3;
  for (size_t i = 0; i < faces.size(); ++i)
    ARM_CHECK(faces[i] >= 0 && size_t(faces[i]) < V,
              "windingNumbers: face %zu's corner %zu is vertex %d, not in [0, %zu)", i / 3, i % 3, faces[i], V);
  return uint32_t(faces.size() / 3);
}

}  // namespace

std::vector<double> windingNumbersRef(const std::vector<double>& points, const std::vector<double>& vertices,
                                      const std::vector<int32_t>& faces) {
  checkFaces(faces, vertices.size());
  ARM_CHECK(points.size() % 3 == 0, "windingNumbers: %zu point coordinates, not (P,3)", points.size());
  std::vector<double> out(points.size() / 3, 0.0);
  for (size_t q = 0; q < out.size(); ++q) {
    double sum = 0;
    for (size_t f = 0; f < faces.size(); f += 3) {
      double c[3][3];
      for (int k = 0; k < 3; ++k)
        for (int d = 0; d < 3; ++d)
          c[k][d] = vertices[size_t(faces[f + size_t(k)]) * 3 + size_t(d)] - points[q * 3 + size_t(d)];
      const double la = std::hypot(c[0][0], c[0][1], c[0][2]), lb = std::hypot(c[1][0], c[1][1], c[1][2]),
                   lc = std::hypot(c[2][0], c[2][1], c[2][2]);
      const double det = c[0][0] * (c[1][1] * c[2][2] - c[1][2] * c[2][1]) -
                         c[0][1] * (c[1][0] * c[2][2] - c[1][2] * c[2][0]) +
                         c[0][2] * (c[1][0] * c[2][1] - c[1][1] * c[2][0]);
      auto dot = [&](int i, int j) { return c[i][0] * c[j][0] + c[i][1] * c[j][1] + c[i][2] * c[j][2]; };
      sum += 2 * std::atan2(det, la * lb * lc + dot(0, 1) * lc + dot(0, 2) * lb + dot(1, 2) * la);
    }
    out[q] = sum / (4 * M_PI);
  }
  return out;
}

DeviceTriangleMesh::DeviceTriangleMesh(Device& device, const std::vector<float>& vertices,
                                       const std::vector<int32_t>& faces)
    : m_vertexCount(uint32_t(vertices.size() / 3)), m_faceCount(checkFaces(faces, vertices.size())) {
  m_vertices = device.upload(vertices);
  m_faces = device.upload(faces);
}

void windingNumbers(const Exec& exec, const WindingNumbersArgs& a) {
  const char* op = "windingNumbers";
  OpChecks check(op, exec);
  ARM_CHECK(a.mesh, "%s: the mesh is missing", op);
  ARM_CHECK(a.points <= 65535u * WINDING_WORKGROUP_SIZE, "%s: %u points: at most %u per call", op, a.points,
            65535u * WINDING_WORKGROUP_SIZE);
  check.view("x", a.x, ElementType::Float32, size_t(a.points) * 3);
  check.view("windings", a.windings, ElementType::Float32, a.points);
  if (a.points == 0) return;
  dispatch(op, exec, a, &vk::windingNumbers, ARM_CUDA_BACKEND(windingNumbers));
}

}  // namespace armature
