// The synthetic avatar's mesh: polygonisation, reduction by edge collapse, an icosphere, normals (synth_geometry.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>

#include "armature/error.h"
#include "synth_geometry.h"

namespace armature::synth {

// ---- marching tetrahedra on a grid, with block culling ----------------------------------------------------

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

namespace {
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

}  // namespace

void reduceMesh(Mesh& m, const std::vector<Primitive>& prims, const std::vector<Vec3>& joints, size_t targetVertices) {
  Reducer(m, prims, joints).reduceTo(targetVertices);
}

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

}  // namespace armature::synth
