#include <algorithm>

#include "armature/error.h"
#include "armature/ops/skinning.h"
#include "shared/skinning_io.h"

namespace armature {

size_t SkinningTables::deviceBytes() const {
  return (vTemplate.size() + blendMatrix.size() + jointTemplate.size() + jointDirs.size() + weightValue.size() +
          jointWeight.size()) *
             4 +
         (weightStart.size() + weightJoint.size() + jointStart.size() + jointVertex.size() + parents.size() +
          order.size()) *
             4;
}

SkinningTables buildSkinningTables(const BodyModel& m, uint32_t S, uint32_t E) {
  ARM_CHECK(m.jointCount >= 1 && m.jointCount <= SKIN_MAX_JOINTS, "GPU skinning supports up to %d joints; %s has %u",
            SKIN_MAX_JOINTS, m.source.c_str(), m.jointCount);
  ARM_CHECK(S <= m.shapeCount && E <= m.exprCount,
            "GPU skinning: %u shape / %u expression components requested, "
            "the model has %u / %u",
            S, E, m.shapeCount, m.exprCount);
  SkinningTables t;
  size_t V = m.vertexCount, J = m.jointCount, P = m.poseFeatureCount(), K = S + E, V3 = V * 3;
  t.vertexCount = uint32_t(V), t.jointCount = uint32_t(J), t.featureCount = uint32_t(P), t.shapeCount = S,
  t.exprCount = E;
  t.vTemplate.assign(m.vTemplate.begin(), m.vTemplate.end());
  t.blendMatrix.resize((P + K) * V3);
  for (size_t vk = 0; vk < V3; ++vk) {
    for (size_t q = 0; q < P; ++q) t.blendMatrix[q * V3 + vk] = float(m.poseDirs[vk * P + q]);
    for (size_t k = 0; k < S; ++k) t.blendMatrix[(P + k) * V3 + vk] = float(m.shapeDirs[vk * m.shapeCount + k]);
    for (size_t k = 0; k < E; ++k) t.blendMatrix[(P + S + k) * V3 + vk] = float(m.exprDirs[vk * m.exprCount + k]);
  }
  // Joint regression folded into the model: J_rest = J_reg·v_template + Σ_k c_k J_reg·dir_k (computed in double).
  t.jointTemplate.assign(J * 3, 0);
  t.jointDirs.assign(K * J * 3, 0);
  for (size_t j = 0; j < J; ++j)
    for (int c = 0; c < 3; ++c) {
      double acc = 0;
      std::vector<double> dirs(K, 0);
      for (size_t v = 0; v < V; ++v) {
        double w = m.jRegressor[j * V + v];
        if (w == 0) continue;
        acc += w * m.vTemplate[v * 3 + size_t(c)];
        for (size_t k = 0; k < S; ++k) dirs[k] += w * m.shapeDirs[(v * 3 + size_t(c)) * m.shapeCount + k];
        for (size_t k = 0; k < E; ++k) dirs[S + k] += w * m.exprDirs[(v * 3 + size_t(c)) * m.exprCount + k];
      }
      t.jointTemplate[j * 3 + size_t(c)] = float(acc);
      for (size_t k = 0; k < K; ++k) t.jointDirs[(k * J + j) * 3 + size_t(c)] = float(dirs[k]);
    }
  t.weightStart.push_back(0);
  std::vector<std::vector<std::pair<uint32_t, float>>> byJoint(J);
  for (size_t v = 0; v < V; ++v) {
    for (size_t j = 0; j < J; ++j) {
      double w = m.weights[v * J + j];
      if (w == 0) continue;
      t.weightJoint.push_back(uint32_t(j));
      t.weightValue.push_back(float(w));
      byJoint[j].push_back({uint32_t(v), float(w)});
    }
    t.weightStart.push_back(uint32_t(t.weightJoint.size()));
  }
  t.jointStart.push_back(0);
  for (size_t j = 0; j < J; ++j) {
    for (auto& [v, w] : byJoint[j]) t.jointVertex.push_back(v), t.jointWeight.push_back(w);
    t.jointStart.push_back(uint32_t(t.jointVertex.size()));
  }
  t.parents = m.parents;
  t.order = m.topologicalOrder();
  return t;
}

}  // namespace armature
