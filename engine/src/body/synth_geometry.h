#pragma once
// The synthetic avatar's building blocks (engine/src/body/synth*.cpp): the humanoid's joints and shape primitives
// (synth_shape.cpp), and the mesh made from them: polygonisation, reduction by edge collapse, an icosphere for the
// eyes, normals (synth_mesh.cpp). synth.cpp assembles the model from them.
#include <array>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <vector>

namespace armature::synth {

struct Vec3 {
  double x = 0, y = 0, z = 0;
  Vec3 operator+(const Vec3& o) const { return {x + o.x, y + o.y, z + o.z}; }
  Vec3 operator-(const Vec3& o) const { return {x - o.x, y - o.y, z - o.z}; }
  Vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
  double& operator[](int i) { return i == 0 ? x : i == 1 ? y : z; }
};
inline double dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline double length(const Vec3& a) { return std::sqrt(dot(a, a)); }
inline Vec3 normalize(const Vec3& a) {
  double l = length(a);
  return l > 0 ? a * (1 / l) : Vec3{0, 1, 0};
}
inline double smoothstep(double e0, double e1, double x) {
  double t = std::clamp((x - e0) / (e1 - e0), 0.0, 1.0);
  return t * t * (3 - 2 * t);
}

// splitmix64: the same numbers on every platform for a given seed.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo = 0, double hi = 1) {
    return lo + (hi - lo) * double(next() >> 11) * (1.0 / 9007199254740992.0);
  }
  double normal() {
    double u = uniform(1e-12, 1), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  Vec3 direction() { return normalize({normal(), normal(), normal()}); }
};

struct Primitive {
  enum Kind { Capsule, Ellipsoid } kind;
  Vec3 a, b;      // capsule end points, or ellipsoid centre (a) and radii (b)
  double ra, rb;  // capsule radii at a and b
  double blend;   // smooth-union radius
  int joint;      // the joint this part follows (skinning)
  double eval(const Vec3& p) const {
    if (kind == Ellipsoid) {
      // Scaled-sphere distance bound: exact on the axes, smooth everywhere.
      Vec3 q = p - a;
      Vec3 s = {q.x / b.x, q.y / b.y, q.z / b.z};
      double k = length(s);
      double rmin = std::min({b.x, b.y, b.z});
      return (k - 1) * rmin;
    }
    Vec3 ab = b - a;
    double t = std::clamp(dot(p - a, ab) / dot(ab, ab), 0.0, 1.0);
    return length(p - (a + ab * t)) - (ra + (rb - ra) * t);
  }
  double boundRadius() const {
    return kind == Ellipsoid ? std::max({b.x, b.y, b.z}) : length(b - a) * 0.5 + std::max(ra, rb);
  }
  Vec3 centre() const { return kind == Ellipsoid ? a : (a + b) * 0.5; }
};

struct Mesh {
  std::vector<Vec3> pos;
  std::vector<std::array<int, 3>> tris;
};

// The 55 rest joints of the SMPL-X skeleton, in metres.
std::vector<Vec3> restJoints();
// The body as smoothly blended capsules and ellipsoids around those joints.
std::vector<Primitive> humanoid(const std::vector<Vec3>& joints);
// The blended signed distance of `subset` of the primitives at q.
double field(const std::vector<Primitive>& prims, const std::vector<int>& subset, const Vec3& q);

// Marching tetrahedra on a grid of step h, with block culling.
Mesh polygonise(const std::vector<Primitive>& prims, double h);
void keepLargestComponent(Mesh& m);
// Edge collapse down to `targetVertices`, keeping detail where the joints and the face need it.
void reduceMesh(Mesh& m, const std::vector<Primitive>& prims, const std::vector<Vec3>& joints, size_t targetVertices);
// A unit icosphere subdivided twice: 162 vertices, 320 faces, outward winding.
Mesh icosphere();
std::vector<Vec3> vertexNormals(const std::vector<Vec3>& pos, const std::vector<int32_t>& faces);

}  // namespace armature::synth
