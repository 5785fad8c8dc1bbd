#pragma once
// What Skinning (armature/ops/skinning.h) holds on each backend: the model's tables on the device and the forward's
// saved state. The arguments arrive checked; the host tables are built once, by Skinning, and dropped after the
// upload.
#include <memory>

#include "armature/ops/skinning.h"

namespace armature {

class SkinningBackend {
 public:
  virtual ~SkinningBackend() = default;
  virtual void forward(const Exec& exec, const SkinningForwardArgs& args) = 0;
  virtual void backward(const Exec& exec, const SkinningBackwardArgs& args) = 0;
  virtual SkinningTuning setTuning(const SkinningTuning& tuning) = 0;  // returns what it granted
  virtual size_t deviceBytes() const = 0;
  virtual size_t l2ResidentBytes() const { return 0; }
};

namespace vk {
std::unique_ptr<SkinningBackend> makeSkinning(Device& device, const SkinningTables& tables, uint32_t maxBatch,
                                              const SkinningTuning& tuning);
}
namespace cuda {
std::unique_ptr<SkinningBackend> makeSkinning(Device& device, const SkinningTables& tables, uint32_t maxBatch,
                                              const SkinningTuning& tuning);
}

}  // namespace armature
