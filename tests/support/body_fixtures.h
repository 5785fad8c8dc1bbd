#pragma once
// Small random body models (any joint count, random trees) for gradient checks and GPU comparisons.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <random>

#include "armature/body/body_model.h"
#include "armature/body/synth.h"

namespace armature::test {

// A random forest-free tree over J joints (parents[0] = -1, every other parent an earlier joint unless
// `shuffled`, which permutes the labels so parents may come after children), random regressor and weights
// (each vertex on up to 4 joints, summing to 1), random directions of realistic size.
inline BodyModel randomBodyModel(uint32_t V, uint32_t J, uint32_t S, uint32_t E, std::mt19937_64& rng,
                                 bool shuffled = false) {
  std::uniform_real_distribution<double> u(-1, 1), pos(0, 1);
  BodyModel m;
  m.source = "random";
  m.vertexCount = V, m.jointCount = J, m.shapeCount = S, m.exprCount = E;
  m.vTemplate.resize(V * 3);
  for (auto& x : m.vTemplate) x = u(rng);
  m.faceCount = V / 3;
  for (uint32_t f = 0; f < m.faceCount * 3; ++f) m.faces.push_back(int32_t(f % V));
  m.shapeDirs.resize(V * 3 * S);
  for (auto& x : m.shapeDirs) x = 0.05 * u(rng);
  m.exprDirs.resize(V * 3 * E);
  for (auto& x : m.exprDirs) x = 0.02 * u(rng);
  m.poseDirs.resize(V * 3 * (J - 1) * 9);
  for (auto& x : m.poseDirs) x = 0.01 * u(rng);
  std::vector<int32_t> parents(J, -1);
  for (uint32_t j = 1; j < J; ++j) parents[j] = int32_t(rng() % j);
  std::vector<uint32_t> label(J);
  for (uint32_t j = 0; j < J; ++j) label[j] = j;
  if (shuffled) std::shuffle(label.begin(), label.end(), rng);
  m.parents.assign(J, -1);
  for (uint32_t j = 0; j < J; ++j) m.parents[label[j]] = parents[j] < 0 ? -1 : int32_t(label[size_t(parents[j])]);
  // Rows × cols, up to 4 positive entries per row summing to 1 (regressor rows, weight rows).
  auto sparseRows = [&](uint32_t rows, uint32_t cols, double floor) {
    std::vector<double> out(size_t(rows) * cols, 0);
    for (uint32_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        double w = pos(rng) + floor;
        out[size_t(r) * cols + rng() % cols] += w;
        sum += w;
      }
      for (uint32_t c = 0; c < cols; ++c) out[size_t(r) * cols + c] /= sum;
    }
    return out;
  };
  m.jRegressor = sparseRows(J, V, 0.1);
  m.weights = sparseRows(V, J, 0.05);
  for (uint32_t j = 0; j < J; ++j) m.jointNames.push_back("joint_" + std::to_string(j));
  return m;
}

inline BodyParams randomBodyParams(const BodyModel& m, uint32_t B, uint32_t S, uint32_t E, std::mt19937_64& rng,
                                   double poseScale = 0.8) {
  std::uniform_real_distribution<double> u(-1, 1);
  BodyParams p = BodyParams::zeros(m, B, S, E);
  for (auto& x : p.pose) x = poseScale * u(rng);
  for (auto& x : p.betas) x = 2 * u(rng);
  for (auto& x : p.expression) x = 2 * u(rng);
  for (auto& x : p.transl) x = 0.5 * u(rng);
  return p;
}

// The default avatar: the asset the build generated (ARMATURE_DEFAULT_MODEL), or the same model synthesised here.
inline const BodyModel& defaultAvatar() {
  static const BodyModel m = [] {
    const char* asset = std::getenv("ARMATURE_DEFAULT_MODEL");
    return asset && std::filesystem::exists(asset) ? loadBodyModel(asset) : synthesizeBodyModel({0});
  }();
  return m;
}

// An .npy of any dtype: numpy's header for `descr` and `shape`, then `data` as it is.
inline std::vector<uint8_t> rawNpy(const std::string& descr, const std::string& shape,
                                   const std::vector<uint8_t>& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out(10 + header.size());
  std::memcpy(out.data(), "\x93NUMPY\x01\x00", 8);
  out[8] = uint8_t(header.size() & 0xff), out[9] = uint8_t(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace armature::test
