#include "armature/ops/joint_forest.h"

#include <algorithm>
#include <string>

#include "armature/error.h"

namespace armature {

void JointForest::checkParents(const std::vector<int32_t>& parents) {
  const size_t N = parents.size();
  ARM_CHECK(N < size_t(INT32_MAX), "joint forest: %zu joints, at most 2^31 - 2", N);
  for (size_t j = 0; j < N; ++j) {
    const int32_t p = parents[j];
    ARM_CHECK(p >= -1 && p < int64_t(N),
              "joint forest: joint %zu has parent %d, expected -1 (a root) or a joint in [0, %zu)", j, p, N);
    ARM_CHECK(p != int32_t(j), "joint forest: joint %zu is its own parent", j);
  }
}

JointForest::JointForest(std::vector<int32_t> parents) : m_parents(std::move(parents)) {
  checkParents(m_parents);
  const size_t N = m_parents.size();
  // Children as CSR, each joint's in increasing index order.
  std::vector<uint32_t>&childStart = m_childStart, &children = m_children;
  childStart.assign(N + 1, 0);
  children.resize(N);
  for (int32_t p : m_parents)
    if (p >= 0) ++childStart[size_t(p) + 1];
  for (size_t j = 0; j < N; ++j) childStart[j + 1] += childStart[j];
  {
    std::vector<uint32_t> fill(childStart.begin(), childStart.end() - 1);
    for (size_t j = 0; j < N; ++j)
      if (m_parents[j] >= 0) children[fill[size_t(m_parents[j])]++] = uint32_t(j);
  }
  children.resize(childStart[N]);
  // Breadth first from the roots (so by depth: the level order); a joint never reached hangs off a cycle.
  std::vector<uint32_t>& bfs = m_levelOrder;
  bfs.reserve(N);
  for (size_t j = 0; j < N; ++j)
    if (m_parents[j] < 0) bfs.push_back(uint32_t(j));
  m_roots = uint32_t(bfs.size());
  for (size_t i = 0; i < bfs.size(); ++i)
    for (uint32_t k = childStart[bfs[i]]; k < childStart[bfs[i] + 1]; ++k) bfs.push_back(children[k]);
  if (bfs.size() < N) {
    std::vector<uint8_t> reached(N, 0), walked(N, 0);
    for (uint32_t j : bfs) reached[j] = 1;
    size_t j = 0;
    while (reached[j]) ++j;
    while (!walked[j]) walked[j] = 1, j = size_t(m_parents[j]);  // parents from an unreached joint: into the cycle
    std::string cycle = std::to_string(j);
    size_t k = size_t(m_parents[j]), shown = 0;
    for (; k != j && shown < 8; k = size_t(m_parents[k]), ++shown) cycle += " -> " + std::to_string(k);
    cycle += k == j ? " -> " + std::to_string(j) : " -> ...";
    throw Error("joint forest: the parents form a cycle: " + cycle + " (each arrow goes to the parent)");
  }
  // Subtree sizes (children before parents: the breadth-first order reversed), depths, heavy children.
  std::vector<uint32_t> subtree(N, 1), depth(N, 1);
  for (size_t i = N; i-- > 0;)
    if (m_parents[bfs[i]] >= 0) subtree[size_t(m_parents[bfs[i]])] += subtree[bfs[i]];
  for (size_t i = 0; i < N; ++i) {
    const uint32_t j = bfs[i];
    if (m_parents[j] >= 0) depth[j] = depth[size_t(m_parents[j])] + 1;
    if (depth[j] > m_depth) m_levelStart.push_back(uint32_t(i));  // the first joint of a deeper level
    m_depth = std::max(m_depth, depth[j]);
  }
  m_levelStart.push_back(uint32_t(N));
  std::vector<int32_t> heavy(N, -1);
  for (size_t j = 0; j < N; ++j)
    for (uint32_t k = childStart[j]; k < childStart[j + 1]; ++k)
      if (heavy[j] < 0 || subtree[children[k]] > subtree[size_t(heavy[j])]) heavy[j] = int32_t(children[k]);
  // Paths, generation by generation: the tops of one generation are the light children met on the paths before.
  m_pathJoints.reserve(N);
  m_generationStart.push_back(0);
  std::vector<uint32_t> tops(bfs.begin(), bfs.begin() + m_roots), next;
  while (!tops.empty()) {
    next.clear();
    for (uint32_t top : tops) {
      m_pathStart.push_back(uint32_t(m_pathJoints.size()));
      for (int32_t j = int32_t(top); j >= 0; j = heavy[size_t(j)]) {
        m_pathJoints.push_back(uint32_t(j));
        for (uint32_t k = childStart[size_t(j)]; k < childStart[size_t(j) + 1]; ++k)
          if (int32_t(children[k]) != heavy[size_t(j)]) next.push_back(children[k]);
      }
    }
    m_generationStart.push_back(uint32_t(m_pathStart.size()));
    std::sort(next.begin(), next.end());
    tops.swap(next);
  }
  m_pathStart.push_back(uint32_t(N));
}

}  // namespace armature
