// libFuzzer target for the volume files of armature/body/field_files.h (npz): any bytes must give a volume or an
// armature::Error, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>

#include "armature/body/field_files.h"
#include "armature/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    armature::NpzReader file(data, size, "fuzz.npz");
    armature::readVolumeFile(file);
  } catch (const armature::Error&) {
  }
  return 0;
}
