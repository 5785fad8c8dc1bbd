// libFuzzer target for the rigged glTF reader, binary and text: any bytes must give a character or an
// armature::Error, never a crash, a hang, a sanitizer report or an allocation past the read budget. No folder is
// given, so the file-system callbacks refuse every external path; a few frames of each clip are sampled.
#include <cstddef>
#include <cstdint>

#include "armature/body/gltf_character.h"
#include "armature/error.h"
#include "armature/ops/linear_blend_skinning.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<unsigned char> bytes(data, data + size);
  for (bool binary : {true, false}) {
    try {
      const armature::GltfCharacter c = armature::readGltfCharacter(bytes, binary, "fuzz", /*folder=*/"");
      for (uint32_t clip = 0; clip < c.clips.size() && clip < 4; ++clip)
        for (double t : {-1.0, 0.0, 0.37, 1e9}) armature::sampleGltfLocals(c, clip, t);
    } catch (const armature::Error&) {
    }
  }
  return 0;
}

// poseGltfCharacterRef, in the reader's file, is not reached from here; the skinning reference is linked with its
// op, which this target leaves out.
std::vector<double> armature::linearBlendSkinningRef(const std::vector<double>&, const std::vector<uint32_t>&,
                                                     const std::vector<double>&, uint32_t, const std::vector<double>&,
                                                     uint32_t, uint32_t) {
  __builtin_trap();
}
