#pragma once
// Keyframes of one body (the viewer's "keys"): poses at times, played back by spherical interpolation of each
// joint's rotation (the shorter arc) and linear interpolation of the translation and expression, and written out as
// a motion: smplx parameters (.npz, read back by `armature pose --motion` and the viewer) or a skinned, animated glb.
#include <map>
#include <string>

#include "armature/body/body_model.h"
#include "armature/body/motion.h"

namespace armature::app {

class Keyframes {
 public:
  // A key at `seconds` (≥ 0) of `body` (batch 1); it replaces a key within 1 ms of it.
  void set(double seconds, const BodyParams& body);
  bool remove(double seconds);  // the key within 1 ms; false if none
  void clear() { m_keys.clear(); }
  const std::map<double, BodyParams>& keys() const { return m_keys; }
  bool empty() const { return m_keys.empty(); }
  double last() const { return m_keys.empty() ? 0 : m_keys.rbegin()->first; }
  // The pose at `seconds`: a key's, or between two keys interpolated; before the first key the first's, after
  // the last the last's. Shape comes from the first key.
  BodyParams sample(double seconds) const;
  // Frames at `fps` from time 0 to the last key (at least one), y-up in the model's frame, betas of the first key.
  Motion motion(const BodyModel& model, double fps) const;

 private:
  std::map<double, BodyParams> m_keys;
};

// Writes the keys' motion at `fps`: smplx parameters for a .npz path, a skinned glb (4 influences) for .glb.
// Throws armature::Error for another extension, no keys, or a file that cannot be written.
void writeKeyframes(const std::string& path, const BodyModel& model, const Keyframes& keys, double fps);

}  // namespace armature::app
