#pragma once
// A joint forest: parents in any order (-1 for a root), validated once, with what propagation over it needs
// precomputed once per topology: a parent-first order, and the heavy-path decomposition the GPU scans walk.
//
// Heavy paths: from each path's top joint the path continues through the child with the most descendants (ties:
// the lower index) until a leaf; every other child starts a path of its own. A path's generation is 0 when its top
// is a root, else one more than the generation of the path holding the top's parent. Walking down a path crosses
// only heavy edges and each light edge at least halves the subtree, so there are at most floor(log2 N) + 1
// generations however deep the forest is: a chain of 100k joints is one path, a root with 100k children is 100k
// paths of generation 1. On the GPU the forward scans every path's products at once, then places each generation
// on the one before (one product a joint); the backward scans one generation after another, in reverse.
#include <cstdint>
#include <vector>

namespace armature {

class JointForest {
 public:
  // Throws armature::Error naming the joint for a parent out of [-1, N), a joint that is its own parent, or a
  // cycle (with the cycle's joints). N may be 0 (an empty forest).
  explicit JointForest(std::vector<int32_t> parents);
  // The constructor's first checks (a parent out of range, a joint its own parent), without the analysis.
  static void checkParents(const std::vector<int32_t>& parents);

  uint32_t size() const { return uint32_t(m_parents.size()); }
  const std::vector<int32_t>& parents() const { return m_parents; }
  uint32_t roots() const { return m_roots; }
  uint32_t depth() const { return m_depth; }  // joints on the longest root-to-leaf chain (0 for an empty forest)

  // Every joint once, each after its parent: the paths by generation, within one by their tops' indices, each from
  // its top down.
  const std::vector<uint32_t>& order() const { return m_pathJoints; }
  // The decomposition: path p holds order()[pathStart[p] .. pathStart[p+1]), top first; generation g holds the
  // paths [generationStart[g], generationStart[g+1]).
  const std::vector<uint32_t>& pathStart() const { return m_pathStart; }
  const std::vector<uint32_t>& generationStart() const { return m_generationStart; }
  uint32_t paths() const { return uint32_t(m_pathStart.size() - 1); }
  uint32_t generations() const { return uint32_t(m_generationStart.size() - 1); }
  // Joints [pathStart()[generationStart()[g]], pathStart()[generationStart()[g + 1]]) of order().
  uint32_t generationLength(uint32_t g) const {
    return m_pathStart[m_generationStart[g + 1]] - m_pathStart[m_generationStart[g]];
  }

  // Each joint's children as CSR (children()[childStart()[j] .. childStart()[j+1]), in increasing index order).
  const std::vector<uint32_t>& childStart() const { return m_childStart; }
  const std::vector<uint32_t>& children() const { return m_children; }
  // Every joint once, by depth (roots first): level d holds levelOrder()[levelStart()[d] .. levelStart()[d+1]).
  const std::vector<uint32_t>& levelOrder() const { return m_levelOrder; }
  const std::vector<uint32_t>& levelStart() const { return m_levelStart; }

 private:
  std::vector<int32_t> m_parents;
  uint32_t m_roots = 0, m_depth = 0;
  std::vector<uint32_t> m_pathJoints, m_pathStart, m_generationStart;
  std::vector<uint32_t> m_childStart, m_children, m_levelOrder, m_levelStart;
};

}  // namespace armature
