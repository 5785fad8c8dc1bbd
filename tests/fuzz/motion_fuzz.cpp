// libFuzzer target for the motion readers (AMASS and smplx parameter files, .npz and .pkl; the viewer's pose files
// are the same format): any bytes must give a motion or an armature::Error, never a crash, a hang, a sanitizer
// report or an allocation past the read budget. Each input is read for an SMPL-X model with PCA hands and an
// SMPL+H model, and resampled, as `armature pose --fps` does.
#include <cstddef>
#include <cstdint>

#include "armature/body/motion.h"
#include "armature/body/pickle.h"
#include "armature/error.h"

namespace {

armature::BodyModel model(uint32_t joints, bool pcaHands) {
  armature::BodyModel m;  // readMotion uses only the joint layout and the hands
  m.jointCount = joints;
  if (pcaHands) {
    m.handsComponentsL.assign(45 * 45, 0.01), m.handsComponentsR = m.handsComponentsL;
    m.handsMeanL.assign(45, 0.1), m.handsMeanR = m.handsMeanL;
  }
  return m;
}

void readEach(armature::NpzReader& file) {
  static const armature::BodyModel smplx = model(55, true), smplh = model(52, false);
  for (const armature::BodyModel* m : {&smplx, &smplh}) {
    try {
      const armature::Motion motion = armature::readMotion(file, *m);
      armature::resampleMotion(motion, 30);
    } catch (const armature::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    armature::NpzReader npz(data, size, "fuzz.npz");
    readEach(npz);
  } catch (const armature::Error&) {
  }
  try {
    armature::NpzReader pickle = armature::readPickle(std::vector<char>(data, data + size), "fuzz.pkl");
    readEach(pickle);
  } catch (const armature::Error&) {
  }
  return 0;
}
