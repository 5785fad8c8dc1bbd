#include "armature/body/synth.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <array>
#include <cmath>
#include <functional>
#include <queue>
#include <unordered_map>

#include "armature/error.h"

namespace armature {

namespace {

struct Vec3 {
  double x = 0, y = 0, z = 0;
  Vec3 operator+(const Vec3& o) const { return {x + o.x, y + o.y, z + o.z}; }
  Vec3 operator-(const Vec3& o) const { return {x - o.x, y - o.y, z - o.z}; }
  Vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
  double& operator[](int i) { return i == 0 ? x : i == 1 ? y : z; }
};
double dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
double length(const Vec3& a) { return std::sqrt(dot(a, a)); }
Vec3 normalize(const Vec3& a) {
  double l = length(a);
  return l > 0 ? a * (1 / l) : Vec3{0, 1, 0};
}
double smoothstep(double e0, double e1, double x) {
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

// ---- the humanoid ---------------------------------------------------------------------------------------

std::vector<Vec3> restJoints() {
  std::vector<Vec3> j(55);
  auto both = [&](int left, int right, Vec3 p) {
    j[size_t(left)] = p;
    j[size_t(right)] = {-p.x, p.y, p.z};
  };
  j[0] = {0, 0, 0};
  both(1, 2, {0.085, -0.07, 0.0});
  j[3] = {0, 0.11, -0.01};
  both(4, 5, {0.095, -0.47, 0.005});
  j[6] = {0, 0.24, 0.0};
  both(7, 8, {0.10, -0.86, -0.03});
  j[9] = {0, 0.31, 0.005};
  both(10, 11, {0.11, -0.915, 0.10});
  j[12] = {0, 0.48, -0.01};
  both(13, 14, {0.07, 0.43, 0.0});
  j[15] = {0, 0.58, 0.005};
  both(16, 17, {0.175, 0.44, -0.01});
  both(18, 19, {0.43, 0.44, -0.02});
  both(20, 21, {0.68, 0.44, -0.01});
  j[22] = {0, 0.585, 0.025};
  both(23, 24, {0.032, 0.655, 0.088});
  // Fingers in SMPL-X order: index, middle, pinky, ring, thumb; three joints each, palm down, fingers along +x.
  struct Finger {
    Vec3 base, dir;
    double len[3];
  };
  const Finger fingers[5] = {
      {{0.775, 0.44, 0.026}, {1, 0, 0.08}, {0.040, 0.025, 0.022}},
      {{0.780, 0.44, 0.003}, {1, 0, 0}, {0.045, 0.030, 0.024}},
      {{0.765, 0.44, -0.043}, {1, 0, -0.12}, {0.030, 0.020, 0.018}},
      {{0.775, 0.44, -0.020}, {1, 0, -0.06}, {0.042, 0.028, 0.023}},
      {{0.705, 0.43, 0.030}, {0.7, -0.12, 0.7}, {0.035, 0.030, 0.025}},
  };
  for (int f = 0; f < 5; ++f) {
    Vec3 p = fingers[f].base, d = normalize(fingers[f].dir);
    for (int k = 0; k < 3; ++k) {
      both(25 + f * 3 + k, 40 + f * 3 + k, p);
      p = p + d * fingers[f].len[k];
    }
  }
  return j;
}

// Where the last segment of each finger ends (not a joint).
Vec3 fingerTip(const std::vector<Vec3>& j, int distal) {
  Vec3 d = j[size_t(distal)] - j[size_t(distal - 1)];
  return j[size_t(distal)] + normalize(d) * (length(d) * 0.85);
}

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

std::vector<Primitive> humanoid(const std::vector<Vec3>& j) {
  std::vector<Primitive> p;
  auto ell = [&](Vec3 c, Vec3 r, int joint, double blend = 0.03) {
    p.push_back({Primitive::Ellipsoid, c, r, 0, 0, blend, joint});
  };
  auto cap = [&](Vec3 a, Vec3 b, double ra, double rb, int joint, double blend = 0.025) {
    p.push_back({Primitive::Capsule, a, b, ra, rb, blend, joint});
  };
  ell({0, -0.03, -0.005}, {0.155, 0.115, 0.105}, 0);
  ell({0, 0.10, 0.0}, {0.14, 0.12, 0.095}, 3);
  ell({0, 0.25, 0.0}, {0.155, 0.13, 0.105}, 6);
  ell({0, 0.36, -0.01}, {0.165, 0.10, 0.095}, 9);
  cap({0, 0.43, -0.015}, {0, 0.60, 0.0}, 0.052, 0.048, 12, 0.03);
  ell({0, 0.675, 0.012}, {0.078, 0.102, 0.092}, 15, 0.03);
  ell({0, 0.606, 0.045}, {0.052, 0.038, 0.05}, 22, 0.025);  // jaw and chin
  ell({0, 0.652, 0.097}, {0.013, 0.022, 0.02}, 15, 0.01);   // nose
  for (int side = 0; side < 2; ++side) {
    double sx = side ? -1 : 1;
    int o = side;  // right-side joints are the left ones + 1 (body) or + 15 (hands)
    cap({sx * 0.03, 0.43, -0.012}, j[size_t(16 + o)], 0.058, 0.052, 13 + o, 0.03);
    cap(j[size_t(16 + o)], j[size_t(18 + o)], 0.05, 0.04, 16 + o, 0.02);
    cap(j[size_t(18 + o)], j[size_t(20 + o)], 0.039, 0.027, 18 + o, 0.015);
    Vec3 w = j[size_t(20 + o)];
    ell({w.x + sx * 0.052, w.y - 0.002, w.z - 0.006}, {0.056, 0.017, 0.046}, 20 + o, 0.012);
    for (int f = 0; f < 5; ++f) {
      int base = (side ? 40 : 25) + f * 3;
      double r = f == 4 ? 0.0115 : f == 2 ? 0.0082 : 0.0092;
      Vec3 tip = fingerTip(j, base + 2);
      Vec3 start = f == 4 ? j[size_t(base)] + (w - j[size_t(base)]) * 0.3 : j[size_t(base)];
      cap(start, j[size_t(base + 1)], r, r * 0.95, base, 0.004);
      cap(j[size_t(base + 1)], j[size_t(base + 2)], r * 0.95, r * 0.88, base + 1, 0.003);
      cap(j[size_t(base + 2)], tip, r * 0.88, r * 0.8, base + 2, 0.003);
    }
    cap(j[size_t(1 + o)] + Vec3{0, 0.03, 0}, j[size_t(4 + o)], 0.085, 0.055, 1 + o, 0.04);
    cap(j[size_t(4 + o)], j[size_t(7 + o)], 0.053, 0.037, 4 + o, 0.02);
    cap(j[size_t(7 + o)] + Vec3{0, -0.03, -0.035}, j[size_t(10 + o)], 0.035, 0.03, 7 + o, 0.02);
    cap(j[size_t(10 + o)], j[size_t(10 + o)] + Vec3{0, 0.002, 0.055}, 0.029, 0.022, 10 + o, 0.015);
  }
  return p;
}

double smin(double a, double b, double k) {
  double h = std::max(k - std::abs(a - b), 0.0) / k;
  return std::min(a, b) - h * h * k * 0.25;
}

double field(const std::vector<Primitive>& prims, const std::vector<int>& subset, const Vec3& q) {
  double d = 1e9;
  for (int i : subset) d = smin(d, prims[size_t(i)].eval(q), prims[size_t(i)].blend);
  return d;
}

// ---- marching tetrahedra on a grid, with block culling ----------------------------------------------------

struct Mesh {
  std::vector<Vec3> pos;
  std::vector<std::array<int, 3>> tris;
};

Mesh polygonise(const std::vector<Primitive>& prims, double h) {
  std::vector<int> all(prims.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  Vec3 lo{1e9, 1e9, 1e9}, hi{-1e9, -1e9, -1e9};
  for (auto& p : prims) {
    Vec3 c = p.centre();
    double r = p.boundRadius() + 2 * h;
    lo = {std::min(lo.x, c.x - r), std::min(lo.y, c.y - r), std::min(lo.z, c.z - r)};
    hi = {std::max(hi.x, c.x + r), std::max(hi.y, c.y + r), std::max(hi.z, c.z + r)};
  }
  int nx = int((hi.x - lo.x) / h) + 2, ny = int((hi.y - lo.y) / h) + 2, nz = int((hi.z - lo.z) / h) + 2;
  auto at = [&](int i, int j, int k) { return size_t(i) + size_t(nx) * (size_t(j) + size_t(ny) * size_t(k)); };
  auto point = [&](int i, int j, int k) { return Vec3{lo.x + i * h, lo.y + j * h, lo.z + k * h}; };
  std::vector<float> value(size_t(nx) * ny * nz);
  const int B = 8;
  double halfDiag = std::sqrt(3.0) * B * h * 0.5;
  for (int bk = 0; bk < nz; bk += B)
    for (int bj = 0; bj < ny; bj += B)
      for (int bi = 0; bi < nx; bi += B) {
        Vec3 c = point(bi, bj, bk) + Vec3{1, 1, 1} * (B * h * 0.5);
        double dmin = 1e9;
        std::vector<double> dc(prims.size());
        for (size_t i = 0; i < prims.size(); ++i) dmin = std::min(dmin, dc[i] = prims[i].eval(c));
        std::vector<int> near;
        for (size_t i = 0; i < prims.size(); ++i)
          if (dc[i] < dmin + 2 * halfDiag + 2 * prims[i].blend) near.push_back(int(i));
        bool far = dmin > halfDiag + 3 * h;
        for (int k = bk; k < std::min(bk + B, nz); ++k)
          for (int j = bj; j < std::min(bj + B, ny); ++j)
            for (int i = bi; i < std::min(bi + B, nx); ++i) {
              double v = far ? dmin - halfDiag : field(prims, near, point(i, j, k));
              value[at(i, j, k)] = float(v == 0 ? 1e-9 : v);  // no grid value exactly on the surface
            }
      }
  Mesh m;
  std::unordered_map<uint64_t, int> edgeVertex;
  auto vertexOn = [&](size_t a, size_t b, const Vec3& pa, const Vec3& pb) {
    uint64_t key = a < b ? (uint64_t(a) << 32 | b) : (uint64_t(b) << 32 | a);
    auto [it, inserted] = edgeVertex.try_emplace(key, int(m.pos.size()));
    if (inserted) {
      double va = value[a], vb = value[b], t = va / (va - vb);
      m.pos.push_back(pa + (pb - pa) * t);
    }
    return it->second;
  };
  // Kuhn subdivision: six tetrahedra around the cube diagonal, consistent across neighbouring cubes.
  static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int k = 0; k + 1 < nz; ++k)
    for (int j = 0; j + 1 < ny; ++j)
      for (int i = 0; i + 1 < nx; ++i) {
        bool anyIn = false, anyOut = false;
        for (int c = 0; c < 8; ++c) {
          bool in = value[at(i + (c & 1), j + (c >> 1 & 1), k + (c >> 2))] < 0;
          anyIn |= in;
          anyOut |= !in;
        }
        if (!anyIn || !anyOut) continue;
        for (auto& perm : perms) {
          int idx[4][3];
          int cur[3] = {i, j, k};
          for (int v = 0; v < 4; ++v) {
            if (v > 0) cur[perm[v - 1]]++;
            std::copy(cur, cur + 3, idx[v]);
          }
          size_t g[4];
          Vec3 p[4];
          bool in[4];
          for (int v = 0; v < 4; ++v) {
            g[v] = at(idx[v][0], idx[v][1], idx[v][2]);
            p[v] = point(idx[v][0], idx[v][1], idx[v][2]);
            in[v] = value[g[v]] < 0;
          }
          int inside[4], outside[4], ni = 0, no = 0;
          for (int v = 0; v < 4; ++v) (in[v] ? inside[ni++] : outside[no++]) = v;
          if (ni == 0 || no == 0) continue;
          auto emit = [&](int a, int b, int c, int vin, int vout) {
            Vec3 n = cross(m.pos[size_t(b)] - m.pos[size_t(a)], m.pos[size_t(c)] - m.pos[size_t(a)]);
            // Outward: from the inside corner towards the outside one.
            if (dot(n, p[vout] - p[vin]) < 0) std::swap(b, c);
            m.tris.push_back({a, b, c});
          };
          if (ni == 1 || no == 1) {
            int lone = ni == 1 ? inside[0] : outside[0];
            int others[3], n = 0;
            for (int v = 0; v < 4; ++v)
              if (v != lone) others[n++] = v;
            int e[3];
            for (int q = 0; q < 3; ++q) e[q] = vertexOn(g[lone], g[others[q]], p[lone], p[others[q]]);
            emit(e[0], e[1], e[2], ni == 1 ? lone : others[0], ni == 1 ? others[0] : lone);
          } else {
            int a0 = inside[0], a1 = inside[1], b0 = outside[0], b1 = outside[1];
            int e00 = vertexOn(g[a0], g[b0], p[a0], p[b0]), e01 = vertexOn(g[a0], g[b1], p[a0], p[b1]);
            int e10 = vertexOn(g[a1], g[b0], p[a1], p[b0]), e11 = vertexOn(g[a1], g[b1], p[a1], p[b1]);
            // Quad e00-e01-e11-e10 (a cycle around the tetrahedron), split in two.
            emit(e00, e01, e11, a0, b0);
            emit(e00, e11, e10, a0, b0);
          }
        }
      }
  return m;
}

// Keeps the largest connected component and drops unused vertices.
void keepLargestComponent(Mesh& m) {
  std::vector<int> parent(m.pos.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = int(i);
  auto find = [&](int x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  };
  for (auto& t : m.tris) {
    parent[size_t(find(t[1]))] = find(t[0]);
    parent[size_t(find(t[2]))] = find(t[0]);
  }
  std::unordered_map<int, int> count;
  for (auto& t : m.tris) count[find(t[0])]++;
  int best = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  std::vector<int> remap(m.pos.size(), -1);
  Mesh out;
  for (auto& t : m.tris) {
    if (find(t[0]) != best) continue;
    std::array<int, 3> nt;
    for (int c = 0; c < 3; ++c) {
      int& r = remap[size_t(t[c])];
      if (r < 0) {
        r = int(out.pos.size());
        out.pos.push_back(m.pos[size_t(t[c])]);
      }
      nt[c] = r;
    }
    out.tris.push_back(nt);
  }
  m = std::move(out);
}

// ---- reduction by edge collapse --------------------------------------------------------------------------

class Reducer {
 public:
  Reducer(Mesh& m, const std::vector<Primitive>& prims, const std::vector<Vec3>& joints)
      : m_mesh(m),
        m_prims(prims),
        m_joints(joints),
        m_alive(m.tris.size(), true),
        m_vtris(m.pos.size()),
        m_stamp(m.pos.size(), 0),
        m_vertexAlive(m.pos.size(), true) {
    for (size_t t = 0; t < m.tris.size(); ++t)
      for (int v : m.tris[t]) m_vtris[size_t(v)].push_back(int(t));
    for (int i = 0; i < int(prims.size()); ++i) m_all.push_back(i);
  }

  void reduceTo(size_t targetVertices) {
    size_t alive = m_mesh.pos.size();
    for (size_t t = 0; t < m_mesh.tris.size(); ++t)
      for (int c = 0; c < 3; ++c) push(m_mesh.tris[t][c], m_mesh.tris[t][(c + 1) % 3]);
    while (alive > targetVertices) {
      if (m_queue.empty())
        throw Error("synthetic avatar: edge collapse ran out of legal edges at " + std::to_string(alive) + " vertices");
      Entry e = m_queue.top();
      m_queue.pop();
      if (!m_vertexAlive[size_t(e.a)] || !m_vertexAlive[size_t(e.b)] || m_stamp[size_t(e.a)] != e.sa ||
          m_stamp[size_t(e.b)] != e.sb)
        continue;
      if (collapse(e.a, e.b)) --alive;
    }
    compact();
  }

 private:
  struct Entry {
    double cost;
    int a, b;
    uint32_t sa, sb;
    bool operator<(const Entry& o) const { return cost > o.cost; }
  };

  // Hands and face keep more detail: their edges cost more to remove.
  double density(const Vec3& p) const {
    double d = 1;
    for (int w : {20, 21}) {
      double r = length(p - (m_joints[size_t(w)] + Vec3{w == 20 ? 0.06 : -0.06, 0, 0}));
      d = std::max(d, 1 + 2.2 * (1 - smoothstep(0.07, 0.13, r)));
    }
    Vec3 face{0, 0.64, 0.07};
    d = std::max(d, 1 + 1.6 * (1 - smoothstep(0.05, 0.11, length(p - face))));
    return d;
  }
  void push(int a, int b) {
    Vec3 pa = m_mesh.pos[size_t(a)], pb = m_mesh.pos[size_t(b)];
    double cost = length(pa - pb) * density((pa + pb) * 0.5);
    m_queue.push({cost, a, b, m_stamp[size_t(a)], m_stamp[size_t(b)]});
  }
  std::vector<int> neighbours(int v) const {
    std::vector<int> n;
    for (int t : m_vtris[size_t(v)])
      for (int u : m_mesh.tris[size_t(t)])
        if (u != v) n.push_back(u);
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    return n;
  }
  Vec3 project(Vec3 p) const {
    for (int it = 0; it < 3; ++it) {
      double d = field(m_prims, m_all, p), e = 1e-4;
      Vec3 g = {field(m_prims, m_all, p + Vec3{e, 0, 0}) - field(m_prims, m_all, p - Vec3{e, 0, 0}),
                field(m_prims, m_all, p + Vec3{0, e, 0}) - field(m_prims, m_all, p - Vec3{0, e, 0}),
                field(m_prims, m_all, p + Vec3{0, 0, e}) - field(m_prims, m_all, p - Vec3{0, 0, e})};
      g = g * (1 / (2 * e));
      double gg = dot(g, g);
      if (gg < 1e-12) break;
      p = p - g * (d / gg);
    }
    return p;
  }
  // Whether moving a and b to `target` keeps every surviving triangle from flipping or becoming a sliver
  // (a triangle that was already a sliver, as marching tetrahedra leaves some, may stay one but not get worse).
  bool sound(int a, int b, const std::vector<int>& shared, const Vec3& target) {
    auto quality = [](const Vec3* x, double twiceArea) {
      double e2 =
          std::max({dot(x[1] - x[0], x[1] - x[0]), dot(x[2] - x[1], x[2] - x[1]), dot(x[0] - x[2], x[0] - x[2])});
      return e2 > 0 ? twiceArea / e2 : 0.0;
    };
    for (int v : {a, b})
      for (int t : m_vtris[size_t(v)]) {
        if (std::find(shared.begin(), shared.end(), t) != shared.end()) continue;
        auto tri = m_mesh.tris[size_t(t)];
        Vec3 p[3], q[3];
        for (int c = 0; c < 3; ++c) {
          p[c] = m_mesh.pos[size_t(tri[c])];
          q[c] = (tri[c] == a || tri[c] == b) ? target : p[c];
        }
        Vec3 n0 = cross(p[1] - p[0], p[2] - p[0]), n1 = cross(q[1] - q[0], q[2] - q[0]);
        double l0 = length(n0), l1 = length(n1);
        double q0 = quality(p, l0), q1 = quality(q, l1);
        if (l1 < 1e-14) return false;
        if (q0 > 0.05 && dot(n0, n1) < 0.3 * l0 * l1) return false;
        if (q1 < 0.03 && q1 < q0) return false;
      }
    return true;
  }
  bool collapse(int a, int b) {
    std::vector<int> shared;
    for (int t : m_vtris[size_t(a)]) {
      auto& tri = m_mesh.tris[size_t(t)];
      if (tri[0] == b || tri[1] == b || tri[2] == b) shared.push_back(t);
    }
    if (shared.size() != 2) return false;
    // Link condition: a and b share exactly the two opposite vertices, so the surface stays a 2-manifold.
    auto na = neighbours(a), nb = neighbours(b);
    std::vector<int> common;
    std::set_intersection(na.begin(), na.end(), nb.begin(), nb.end(), std::back_inserter(common));
    if (common.size() != 2) return false;
    // Try the midpoint on the surface, then either end point: the first that keeps every triangle sound wins.
    Vec3 candidates[3] = {project((m_mesh.pos[size_t(a)] + m_mesh.pos[size_t(b)]) * 0.5), m_mesh.pos[size_t(a)],
                          m_mesh.pos[size_t(b)]};
    Vec3 target;
    bool found = false;
    for (const Vec3& c : candidates)
      if (sound(a, b, shared, c)) {
        target = c;
        found = true;
        break;
      }
    if (!found) return false;
    for (int t : shared) {
      m_alive[size_t(t)] = false;
      for (int v : m_mesh.tris[size_t(t)]) {
        auto& l = m_vtris[size_t(v)];
        l.erase(std::remove(l.begin(), l.end(), t), l.end());
      }
    }
    for (int t : m_vtris[size_t(b)]) {
      for (int& v : m_mesh.tris[size_t(t)])
        if (v == b) v = a;
      m_vtris[size_t(a)].push_back(t);
    }
    m_vtris[size_t(b)].clear();
    m_vertexAlive[size_t(b)] = false;
    m_mesh.pos[size_t(a)] = target;
    // Edges around the changed fan may have become legal (or cheaper): queue them again.
    m_stamp[size_t(a)]++;
    auto ring = neighbours(a);
    for (int n : ring) m_stamp[size_t(n)]++;
    for (int n : ring)
      for (int u : neighbours(n)) push(n, u);
    return true;
  }
  void compact() {
    std::vector<int> remap(m_mesh.pos.size(), -1);
    Mesh out;
    for (size_t v = 0; v < m_mesh.pos.size(); ++v)
      if (m_vertexAlive[v] && !m_vtris[v].empty()) {
        remap[v] = int(out.pos.size());
        out.pos.push_back(m_mesh.pos[v]);
      }
    for (size_t t = 0; t < m_mesh.tris.size(); ++t)
      if (m_alive[t])
        out.tris.push_back(
            {remap[size_t(m_mesh.tris[t][0])], remap[size_t(m_mesh.tris[t][1])], remap[size_t(m_mesh.tris[t][2])]});
    m_mesh = std::move(out);
  }

  Mesh& m_mesh;
  const std::vector<Primitive>& m_prims;
  const std::vector<Vec3>& m_joints;
  std::vector<int> m_all;
  std::vector<bool> m_alive;
  std::vector<std::vector<int>> m_vtris;
  std::vector<uint32_t> m_stamp;
  std::vector<bool> m_vertexAlive;
  std::priority_queue<Entry> m_queue;
};

// A unit icosphere subdivided twice: 162 vertices, 320 faces, outward winding.
Mesh icosphere() {
  const double t = (1 + std::sqrt(5.0)) / 2;
  Mesh m;
  for (Vec3 v : {Vec3{-1, t, 0}, Vec3{1, t, 0}, Vec3{-1, -t, 0}, Vec3{1, -t, 0}, Vec3{0, -1, t}, Vec3{0, 1, t},
                 Vec3{0, -1, -t}, Vec3{0, 1, -t}, Vec3{t, 0, -1}, Vec3{t, 0, 1}, Vec3{-t, 0, -1}, Vec3{-t, 0, 1}})
    m.pos.push_back(normalize(v));
  m.tris = {{0, 11, 5},  {0, 5, 1},  {0, 1, 7},  {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
            {11, 10, 2}, {10, 7, 6}, {7, 1, 8},  {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
            {3, 8, 9},   {4, 9, 5},  {2, 4, 11}, {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
  for (int level = 0; level < 2; ++level) {
    std::unordered_map<uint64_t, int> mid;
    auto midpoint = [&](int a, int b) {
      uint64_t key = a < b ? (uint64_t(a) << 32 | uint64_t(b)) : (uint64_t(b) << 32 | uint64_t(a));
      auto [it, inserted] = mid.try_emplace(key, int(m.pos.size()));
      if (inserted) m.pos.push_back(normalize(m.pos[size_t(a)] + m.pos[size_t(b)]));
      return it->second;
    };
    std::vector<std::array<int, 3>> next;
    for (auto& tr : m.tris) {
      int ab = midpoint(tr[0], tr[1]), bc = midpoint(tr[1], tr[2]), ca = midpoint(tr[2], tr[0]);
      next.push_back({tr[0], ab, ca});
      next.push_back({tr[1], bc, ab});
      next.push_back({tr[2], ca, bc});
      next.push_back({ab, bc, ca});
    }
    m.tris = std::move(next);
  }
  return m;
}

std::vector<Vec3> vertexNormals(const std::vector<Vec3>& pos, const std::vector<int32_t>& faces) {
  std::vector<Vec3> n(pos.size());
  for (size_t f = 0; f + 2 < faces.size(); f += 3) {
    Vec3 a = pos[size_t(faces[f])], b = pos[size_t(faces[f + 1])], c = pos[size_t(faces[f + 2])];
    Vec3 fn = cross(b - a, c - a);
    for (int k = 0; k < 3; ++k) n[size_t(faces[f + size_t(k)])] = n[size_t(faces[f + size_t(k)])] + fn;
  }
  for (auto& v : n) v = normalize(v);
  return n;
}

}  // namespace

BodyModel synthesizeBodyModel(const SynthOptions& options) {
  Rng rng{options.seed * 0x2545f4914f6cdd1dull + 0x1234567ull};
  const auto joints = restJoints();
  const auto prims = humanoid(joints);
  const uint32_t J = 55;
  const uint32_t eyeVerts = kSynthEyeVertices;
  const uint32_t bodyVerts = kSynthVertices - kSynthMarkers - 2 * eyeVerts;

  auto clock = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    auto now = std::chrono::steady_clock::now();
    if (std::getenv("ARMATURE_SYNTH_VERBOSE"))
      std::fprintf(stderr, "synth: %s %.2f s\n", what, std::chrono::duration<double>(now - clock).count());
    clock = now;
  };
  Mesh body = polygonise(prims, options.gridStep);
  lap("polygonise");
  keepLargestComponent(body);
  {
    // Euler characteristic 2: one closed surface of genus 0, which edge collapses preserve (so F = 2V - 4).
    long chi = long(body.pos.size()) - long(body.tris.size()) * 3 / 2 + long(body.tris.size());
    if (chi != 2)
      throw Error("synthetic avatar: the polygonised body has Euler characteristic " + std::to_string(chi) +
                  ", expected 2");
  }
  if (body.pos.size() < bodyVerts) throw Error("synthetic avatar: polygonisation too coarse; lower gridStep");
  Reducer(body, prims, joints).reduceTo(bodyVerts);
  lap("reduce");

  BodyModel m;
  m.source = "synthetic(seed=" + std::to_string(options.seed) + ")";
  m.jointCount = J;
  m.vertexCount = kSynthVertices;
  m.parents = smplxParents();
  m.jointNames = smplxJointNames();
  std::vector<Vec3> pos(body.pos);
  std::vector<int32_t> faces;
  for (auto& t : body.tris) faces.insert(faces.end(), {t[0], t[1], t[2]});
  std::vector<int> owner(kSynthVertices, -1);  // eye joint for eyeball vertices, marker joint for markers
  Mesh sphere = icosphere();
  for (int eye : {23, 24}) {
    int32_t base = int32_t(pos.size());
    for (auto& p : sphere.pos) {
      pos.push_back(joints[size_t(eye)] + p * 0.0125);
      owner[pos.size() - 1] = eye;
    }
    for (auto& t : sphere.tris) faces.insert(faces.end(), {base + t[0], base + t[1], base + t[2]});
  }
  const int markerJoints[kSynthMarkers] = {0, 3, 6, 9, 12, 15, 1, 2, 4, 5, 16, 17, 18, 19, 22};
  for (int j : markerJoints) {
    pos.push_back(joints[size_t(j)]);
    owner[pos.size() - 1] = j;
  }
  if (pos.size() != kSynthVertices || faces.size() != size_t(kSynthFaces) * 3)
    throw Error("synthetic avatar: built " + std::to_string(pos.size()) + " vertices and " +
                std::to_string(faces.size() / 3) + " faces");
  m.faceCount = kSynthFaces;
  m.faces = faces;
  const size_t V = kSynthVertices;
  auto normals = vertexNormals(pos, faces);
  std::vector<std::vector<int>> adj(V);
  for (size_t f = 0; f < faces.size(); f += 3)
    for (int c = 0; c < 3; ++c) {
      adj[size_t(faces[f + size_t(c)])].push_back(faces[f + size_t((c + 1) % 3)]);
      adj[size_t(faces[f + size_t((c + 1) % 3)])].push_back(faces[f + size_t(c)]);
    }

  // Skinning weights: soft assignment to the parts' joints by signed distance, smoothed over the surface,
  // at most 4 joints per vertex.
  std::vector<double> W(V * J, 0);
  for (size_t v = 0; v < V; ++v) {
    if (owner[v] >= 0) {
      W[v * J + size_t(owner[v])] = 1;
      continue;
    }
    double dmin = 1e9;
    std::vector<double> d(prims.size());
    for (size_t i = 0; i < prims.size(); ++i) dmin = std::min(dmin, d[i] = prims[i].eval(pos[v]));
    for (size_t i = 0; i < prims.size(); ++i) {
      double tau = prims[i].kind == Primitive::Capsule ? 0.3 * std::max(prims[i].ra, prims[i].rb) : 0.012;
      W[v * J + size_t(prims[i].joint)] += std::exp(-(d[i] - dmin) / tau);
    }
  }
  auto topFour = [&](size_t v) {
    std::vector<std::pair<double, int>> w;
    for (uint32_t j = 0; j < J; ++j)
      if (W[v * J + j] > 0) w.push_back({W[v * J + j], int(j)});
    std::sort(w.rbegin(), w.rend());
    double sum = 0;
    for (size_t i = 0; i < w.size() && i < 4; ++i) sum += w[i].first;
    for (uint32_t j = 0; j < J; ++j) W[v * J + j] = 0;
    for (size_t i = 0; i < w.size() && i < 4; ++i) W[v * J + size_t(w[i].second)] = w[i].first / sum;
  };
  for (size_t v = 0; v < V; ++v) topFour(v);
  for (int it = 0; it < 3; ++it) {
    std::vector<double> next = W;
    for (size_t v = 0; v < bodyVerts; ++v) {
      if (adj[v].empty()) continue;
      for (uint32_t j = 0; j < J; ++j) {
        double avg = 0;
        for (int u : adj[v]) avg += W[size_t(u) * J + j];
        next[v * J + j] = 0.5 * W[v * J + j] + 0.5 * avg / double(adj[v].size());
      }
    }
    W = std::move(next);
    for (size_t v = 0; v < V; ++v) topFour(v);
  }
  m.weights = W;

  // Joint regressor: for each joint, nearby surface vertices with minimum-norm weights that reproduce the
  // designed joint exactly at rest (sum 1, weighted mean = joint); eyes: the eyeball's vertices.
  m.jRegressor.assign(J * V, 0);
  for (uint32_t j = 0; j < J; ++j) {
    std::vector<size_t> idx;
    if (j == 23 || j == 24) {
      for (size_t v = 0; v < V; ++v)
        if (owner[v] == int(j) && v < bodyVerts + 2 * eyeVerts) idx.push_back(v);
    } else {
      std::vector<std::pair<double, size_t>> byDist;
      for (size_t v = 0; v < bodyVerts; ++v) byDist.push_back({length(pos[v] - joints[j]), v});
      size_t K = 24;
      std::partial_sort(byDist.begin(), byDist.begin() + long(K), byDist.end());
      for (size_t i = 0; i < K; ++i) idx.push_back(byDist[i].second);
    }
    // Solve min |w - 1/K|² s.t. A w = c, A = [1; x; y; z] rows: w = 1/K + Aᵀ (A Aᵀ)⁻¹ (c - A/K).
    size_t K = idx.size();
    double AAt[4][4] = {}, r[4] = {1, joints[j].x, joints[j].y, joints[j].z};
    auto row = [&](size_t i, int q) {
      return q == 0 ? 1.0 : q == 1 ? pos[idx[i]].x : q == 2 ? pos[idx[i]].y : pos[idx[i]].z;
    };
    for (size_t i = 0; i < K; ++i)
      for (int a = 0; a < 4; ++a) {
        r[a] -= row(i, a) / double(K);
        for (int b = 0; b < 4; ++b) AAt[a][b] += row(i, a) * row(i, b);
      }
    // Gaussian elimination with partial pivoting (4x4).
    double M[4][5];
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) M[a][b] = AAt[a][b];
      M[a][4] = r[a];
    }
    for (int c = 0; c < 4; ++c) {
      int piv = c;
      for (int a = c + 1; a < 4; ++a)
        if (std::abs(M[a][c]) > std::abs(M[piv][c])) piv = a;
      std::swap(M[c], M[piv]);
      for (int a = 0; a < 4; ++a) {
        if (a == c || M[c][c] == 0) continue;
        double f = M[a][c] / M[c][c];
        for (int b = c; b < 5; ++b) M[a][b] -= f * M[c][b];
      }
    }
    double lambda[4];
    for (int a = 0; a < 4; ++a) lambda[a] = M[a][a] == 0 ? 0 : M[a][4] / M[a][a];
    for (size_t i = 0; i < K; ++i) {
      double w = 1.0 / double(K);
      for (int a = 0; a < 4; ++a) w += row(i, a) * lambda[a];
      m.jRegressor[j * V + idx[i]] = w;
    }
  }

  // Shape directions: ten semantic ones, then smooth random fields of decreasing size.
  const uint32_t S = 300, E = 100;
  m.shapeCount = S;
  m.exprCount = E;
  m.shapeDirs.assign(V * 3 * S, 0);
  m.exprDirs.assign(V * 3 * E, 0);
  auto setShape = [&](uint32_t s, size_t v, Vec3 d) {
    for (int k = 0; k < 3; ++k) m.shapeDirs[(v * 3 + size_t(k)) * S + s] = d[k];
  };
  const double floorY = -0.95;
  Vec3 headCentre{0, 0.66, 0.01};
  for (size_t v = 0; v < V; ++v) {
    Vec3 p = pos[v], n = normals[v];
    bool surface = v < bodyVerts;
    double sx = p.x >= 0 ? 1 : -1;
    double torso =
        (1 - smoothstep(0.16, 0.3, std::abs(p.x))) * smoothstep(-0.2, -0.05, p.y) * (1 - smoothstep(0.42, 0.52, p.y));
    double arm = smoothstep(0.16, 0.24, std::abs(p.x)) * smoothstep(0.3, 0.36, p.y);
    double head = 1 - smoothstep(0.09, 0.14, length(p - headCentre));
    setShape(0, v, {0, (p.y - floorY) * 0.04, 0});                                  // height
    setShape(1, v, surface ? n * (0.004 + 0.012 * torso) : Vec3{});                 // weight
    setShape(2, v, {sx * std::max(0.0, std::abs(p.x) - 0.17) * 0.06 * arm, 0, 0});  // arm length
    setShape(3, v, {0, (p.y < -0.07 ? (p.y + 0.07) * 0.06 : 0.0), 0});              // leg length
    setShape(4, v,
             {sx * 0.015 * smoothstep(0.04, 0.2, std::abs(p.x)) * smoothstep(0.28, 0.4, p.y) * (1 - head), 0,
              0});                                     // shoulders
    setShape(5, v, (p - headCentre) * (0.07 * head));  // head size
    double belly = std::exp(-dot(p - Vec3{0, 0.08, 0.08}, p - Vec3{0, 0.08, 0.08}) / (0.09 * 0.09));
    setShape(6, v, surface ? n * (0.02 * belly) : Vec3{});                             // belly
    setShape(7, v, {p.x * 0.08 * std::exp(-std::pow((p.y + 0.05) / 0.12, 2)), 0, 0});  // hips
    double chest = std::exp(-dot(p - Vec3{0, 0.3, 0.07}, p - Vec3{0, 0.3, 0.07}) / (0.1 * 0.1));
    setShape(8, v, surface ? n * (0.014 * chest) : Vec3{});                  // chest
    setShape(9, v, {0, 0.02 * smoothstep(0.44, 0.56, p.y) * (1 - arm), 0});  // neck length
  }
  auto randomFields = [&](std::vector<double>& dirs, uint32_t count, uint32_t first, uint32_t first0, double amp0,
                          double sigmaLo, double sigmaHi, const std::function<double(size_t)>& mask, Vec3 region,
                          double regionR) {
    for (uint32_t s = first; s < count; ++s) {
      double amp = amp0 / (1 + double(s - first0) / 15);
      for (int bump = 0; bump < 3; ++bump) {
        Vec3 c = region + rng.direction() * (regionR * std::cbrt(rng.uniform()));
        double sigma = rng.uniform(sigmaLo, sigmaHi), sign = rng.uniform() < 0.5 ? -1 : 1;
        Vec3 dir = rng.direction();
        double alongNormal = rng.uniform(0.3, 1);
        for (size_t v = 0; v < V; ++v) {
          double w = mask(v);
          if (w == 0) continue;
          double g = std::exp(-dot(pos[v] - c, pos[v] - c) / (2 * sigma * sigma)) * amp * sign * w;
          if (g == 0) continue;
          Vec3 d = normals[v] * (alongNormal * g) + dir * ((1 - alongNormal) * g);
          for (int k = 0; k < 3; ++k) dirs[(v * 3 + size_t(k)) * count + s] += d[k];
        }
      }
    }
  };
  auto onSurface = [&](size_t v) { return v < bodyVerts ? 1.0 : 0.0; };
  randomFields(m.shapeDirs, S, 10, 10, 0.01, 0.06, 0.25, onSurface, {0, -0.1, 0}, 0.8);

  // Expression: localised on the face; the eyeballs and the back of the head do not move.
  auto faceMask = [&](size_t v) {
    if (v >= bodyVerts) return 0.0;
    Vec3 p = pos[v];
    return smoothstep(0.03, 0.07, p.z) * (1 - smoothstep(0.09, 0.12, length(p - Vec3{0, 0.64, 0.04})));
  };
  auto setExpr = [&](uint32_t e, Vec3 centre, double sigma, Vec3 d, bool mirror) {
    for (size_t v = 0; v < V; ++v) {
      double w = faceMask(v);
      if (w == 0) continue;
      for (int side = 0; side < (mirror ? 2 : 1); ++side) {
        Vec3 c = side ? Vec3{-centre.x, centre.y, centre.z} : centre;
        Vec3 dd = side ? Vec3{-d.x, d.y, d.z} : d;
        double g = w * std::exp(-dot(pos[v] - c, pos[v] - c) / (2 * sigma * sigma));
        for (int k = 0; k < 3; ++k) m.exprDirs[(v * 3 + size_t(k)) * E + e] += dd[k] * g;
      }
    }
  };
  setExpr(0, {0, 0.595, 0.085}, 0.02, {0, -0.008, 0}, false);              // lower lip and chin down
  setExpr(1, {0.026, 0.615, 0.095}, 0.014, {0.004, 0.005, -0.001}, true);  // smile
  setExpr(2, {0.03, 0.695, 0.09}, 0.018, {0, 0.005, 0.001}, true);         // brows up
  setExpr(3, {0.045, 0.63, 0.08}, 0.018, {0.004, 0, 0.004}, true);         // cheeks puff
  setExpr(4, {0, 0.614, 0.1}, 0.013, {0, 0, 0.006}, false);                // lips pucker
  setExpr(5, {0.018, 0.69, 0.095}, 0.012, {-0.003, -0.004, 0}, true);      // frown
  randomFields(m.exprDirs, E, 6, 6, 0.004, 0.01, 0.03, faceMask, {0, 0.64, 0.08}, 0.05);

  // Pose correctives: small smooth offsets where a joint's influence blends with its neighbours'.
  const uint32_t P = (J - 1) * 9;
  m.poseDirs.assign(V * 3 * P, 0);
  for (uint32_t j = 1; j < J; ++j)
    for (uint32_t e = 0; e < 9; ++e) {
      double sign = rng.uniform() < 0.5 ? -1 : 1;
      Vec3 dir = rng.direction();
      for (size_t v = 0; v < bodyVerts; ++v) {
        double w = W[v * J + j];
        if (w == 0) continue;
        double g = 0.008 * 4 * w * (1 - w) * sign;
        Vec3 d = normals[v] * (0.7 * g) + dir * (0.3 * g);
        for (int k = 0; k < 3; ++k) m.poseDirs[(v * 3 + size_t(k)) * P + (j - 1) * 9 + e] = d[k];
      }
    }

  // Hand PCA: the first component curls every finger towards the palm; the rest complete an orthonormal basis.
  for (int side = 0; side < 2; ++side) {
    std::vector<double> C(45 * 45);
    for (int k = 0; k < 15; ++k) C[size_t(k) * 3 + 2] = (side ? 1.0 : -1.0) / std::sqrt(15.0);
    for (int c = 1; c < 45; ++c)
      for (int k = 0; k < 45; ++k) C[size_t(c) * 45 + size_t(k)] = rng.normal() * (1.0 / (1 + c * 0.2));
    for (int c = 0; c < 45; ++c) {  // Gram-Schmidt
      for (int q = 0; q < c; ++q) {
        double d = 0;
        for (int k = 0; k < 45; ++k) d += C[size_t(c) * 45 + size_t(k)] * C[size_t(q) * 45 + size_t(k)];
        for (int k = 0; k < 45; ++k) C[size_t(c) * 45 + size_t(k)] -= d * C[size_t(q) * 45 + size_t(k)];
      }
      double n = 0;
      for (int k = 0; k < 45; ++k) n += C[size_t(c) * 45 + size_t(k)] * C[size_t(c) * 45 + size_t(k)];
      for (int k = 0; k < 45; ++k) C[size_t(c) * 45 + size_t(k)] /= std::sqrt(n);
    }
    std::vector<double> mean(45);
    for (int k = 0; k < 45; ++k) mean[size_t(k)] = 0.6 * C[size_t(k)];
    (side ? m.handsComponentsR : m.handsComponentsL) = C;
    (side ? m.handsMeanR : m.handsMeanL) = mean;
  }

  // Landmarks: 51 faces on the front of the face, at their centroids; UVs: a cylindrical projection.
  for (int l = 0; l < 51; ++l) {
    Vec3 target{(l % 9 - 4) * 0.012, 0.6 + (l / 9) * 0.018, 0.12};
    size_t best = 0;
    double bestD = 1e9;
    for (size_t f = 0; f < size_t(kSynthFaces) && f < body.tris.size(); ++f) {
      Vec3 c = (pos[size_t(faces[f * 3])] + pos[size_t(faces[f * 3 + 1])] + pos[size_t(faces[f * 3 + 2])]) * (1.0 / 3);
      double d = length(Vec3{c.x - target.x, c.y - target.y, 0}) - 0.2 * c.z;
      if (d < bestD) bestD = d, best = f;
    }
    m.lmkFacesIdx.push_back(int32_t(best));
    m.lmkBaryCoords.insert(m.lmkBaryCoords.end(), {1.0 / 3, 1.0 / 3, 1.0 / 3});
  }
  for (size_t v = 0; v < V; ++v) {
    m.vt.push_back(0.5 + std::atan2(pos[v].x, pos[v].z) / (2 * 3.141592653589793));
    m.vt.push_back((pos[v].y - floorY) / 1.8);
  }
  m.ft = m.faces;
  lap("attributes");

  m.vTemplate.resize(V * 3);
  for (size_t v = 0; v < V; ++v)
    for (int k = 0; k < 3; ++k) m.vTemplate[v * 3 + size_t(k)] = pos[v][k];
  // The file stores float32: round now, so a saved and reloaded model is identical to this one.
  for (auto* a : {&m.vTemplate, &m.shapeDirs, &m.exprDirs, &m.poseDirs, &m.jRegressor, &m.weights, &m.handsComponentsL,
                  &m.handsComponentsR, &m.handsMeanL, &m.handsMeanR, &m.lmkBaryCoords, &m.vt})
    for (auto& x : *a) x = double(float(x));
  return m;
}

}  // namespace armature
