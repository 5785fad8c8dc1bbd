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

#include "synth_geometry.h"

namespace armature {

using namespace synth;

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
  reduceMesh(body, prims, joints, bodyVerts);
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
