// Winding numbers' entry point, mesh checks and CPU reference; the backends are winding_numbers_vk.cpp and
// cuda/src/winding_numbers.cu.
#include "armature/ops/winding_numbers.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

namespace {
// |p − q|² for 3-vectors.
double distance2(const double* p, const double* q) {
  return (p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]);
}
// The squared distance from p to segment ab.
double segmentDistance2(const double* p, const double* a, const double* b) {
  const double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, ap[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
  const double length2 = ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2];
  const double t = length2 > 0 ? std::clamp((ab[0] * ap[0] + ab[1] * ap[1] + ab[2] * ap[2]) / length2, 0.0, 1.0) : 0.0;
  const double q[3] = {a[0] + t * ab[0], a[1] + t * ab[1], a[2] + t * ab[2]};
  return distance2(p, q);
}
}  // namespace

// Another way than the GPU's: the plane's foot when it falls inside the triangle (barycentric coordinates all ≥ 0),
// else the nearest of the three edges.
std::vector<double> meshDistancesRef(const std::vector<double>& points, const std::vector<double>& vertices,
                                     const std::vector<int32_t>& faces) {
  checkFaces(faces, vertices.size());
  ARM_CHECK(points.size() % 3 == 0, "meshDistances: %zu point coordinates, not (P,3)", points.size());
  std::vector<double> out(points.size() / 3, std::numeric_limits<double>::infinity());
  for (size_t q = 0; q < out.size(); ++q) {
    const double* p = &points[q * 3];
    double best = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < faces.size(); f += 3) {
      const double* a = &vertices[size_t(faces[f]) * 3];
      const double* b = &vertices[size_t(faces[f + 1]) * 3];
      const double* c = &vertices[size_t(faces[f + 2]) * 3];
      const double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
      const double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
      const double n2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
      double d2 = std::min({segmentDistance2(p, a, b), segmentDistance2(p, b, c), segmentDistance2(p, c, a)});
      if (n2 > 0) {
        const double h = ((p[0] - a[0]) * n[0] + (p[1] - a[1]) * n[1] + (p[2] - a[2]) * n[2]) / n2;
        const double foot[3] = {p[0] - h * n[0], p[1] - h * n[1], p[2] - h * n[2]};
        // The foot's barycentric coordinates: the signed areas of the sub-triangles against the whole's.
        auto area = [&](const double* x, const double* y) {
          const double e[3] = {x[0] - foot[0], x[1] - foot[1], x[2] - foot[2]},
                       g[3] = {y[0] - foot[0], y[1] - foot[1], y[2] - foot[2]};
          return ((e[1] * g[2] - e[2] * g[1]) * n[0] + (e[2] * g[0] - e[0] * g[2]) * n[1] +
                  (e[0] * g[1] - e[1] * g[0]) * n[2]);
        };
        if (area(b, c) >= 0 && area(c, a) >= 0 && area(a, b) >= 0) d2 = std::min(d2, h * h * n2);
      }
      best = std::min(best, d2);
    }
    out[q] = std::sqrt(best);
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
  check.optionalView("distances", a.distances, ElementType::Float32, a.points);
  if (a.points == 0) return;
  dispatch(op, exec, a, &vk::windingNumbers, ARM_CUDA_BACKEND(windingNumbers));
}

}  // namespace armature
