#pragma once
// Linear blend skinning of any rigged mesh (a glTF character's, say): each posed vertex is Σ_k w_k · S_{j_k} ·
// [rest; 1] over its K influences (1 to 8), S the skinning matrices (global × inverse bind, 3×4 row-major, as
// propagateJoints writes them) of B skeletons. The influences (which joints, what weights) are uploaded and checked
// once per mesh (DeviceSkinWeights); the skinning matrices and rest positions are views per call. CUDA and Vulkan,
// float; the CPU reference in double.
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

// `joints` (V,K) in [0, jointCount), `weights` (V,K) finite; any other: armature::Error naming the vertex.
std::vector<double> linearBlendSkinningRef(const std::vector<double>& rest, const std::vector<uint32_t>& joints,
                                           const std::vector<double>& weights, uint32_t influences,
                                           const std::vector<double>& skinning, uint32_t jointCount, uint32_t batch);

// A mesh's influences on a device: checked (as the reference's) and uploaded once.
class DeviceSkinWeights {
 public:
  DeviceSkinWeights(Device& device, uint32_t jointCount, uint32_t influences, const std::vector<uint32_t>& joints,
                    const std::vector<float>& weights);
  uint32_t vertices() const { return m_vertices; }
  uint32_t jointCount() const { return m_jointCount; }
  uint32_t influences() const { return m_influences; }
  DeviceView joints() const { return m_joints.view(); }
  DeviceView weights() const { return m_weights.view(); }

 private:
  uint32_t m_vertices = 0, m_jointCount = 0, m_influences = 0;
  DeviceBuffer m_joints, m_weights;
};

struct LinearBlendSkinningArgs {
  const DeviceSkinWeights* weights = nullptr;
  uint32_t batch = 1;
  DeviceView rest;       // (V,3)
  DeviceView skinning;   // (B,J,12)
  DeviceView positions;  // out (B,V,3)
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void linearBlendSkinning(const Exec& exec, const LinearBlendSkinningArgs& args);

}  // namespace armature
