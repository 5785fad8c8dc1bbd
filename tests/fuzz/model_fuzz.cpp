// libFuzzer target for the model loaders (.npz and .pkl): any bytes must give a model or an armature::Error, never
// a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>

#include "armature/body/body_model.h"
#include "armature/body/pickle.h"
#include "armature/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    armature::NpzReader lazy(data, size, "fuzz.npz");
    armature::bodyModelFromNpz(lazy);
  } catch (const armature::Error&) {
  }
  try {
    auto npz = armature::readNpzFromMemory(data, size, "fuzz.npz");
    armature::bodyModelFromNpz(npz, "fuzz.npz");
  } catch (const armature::Error&) {
  }
  try {
    armature::NpzReader pickle = armature::readPickle(std::vector<char>(data, data + size), "fuzz.pkl");
    armature::bodyModelFromNpz(pickle);
    pickle.readAll();
  } catch (const armature::Error&) {
  }
  return 0;
}
