#pragma once
// The Gaussian-field commands' two array files, read from an npz (a path, or bytes through NpzReader): a volume to
// fit (`armature fit-field --volume`) and a fitted field (fit-field's output, which the viewer poses with a body).
// Every array is checked for shape and finiteness, with the file and the key in the message; sizes stay within
// readLimits() (docs/readers.md).
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "armature/body/npz.h"

namespace armature {

// 'volume' (X,Y,Z), each at least 2, of finite values at the cells' centres of the box 'bounds' (2,3): lo then hi.
struct VolumeFile {
  std::array<size_t, 3> n{};
  std::vector<double> values;  // C order: x slowest
  std::array<float, 3> lo{}, hi{};
  double at(size_t i, size_t j, size_t k) const { return values[(i * n[1] + j) * n[2] + k]; }
};
VolumeFile readVolumeFile(NpzReader& file);
VolumeFile loadVolumeFile(const std::string& path);

// 'means' (N,3), 'cholesky' (N,6) anisotropic parameters, 'weights' (N,1); 1 ≤ N ≤ readLimits().gaussians, the
// count checked from the listing before anything is decoded.
struct FieldFile {
  std::vector<float> means, cholesky, weights;
  size_t size() const { return weights.size(); }
};
FieldFile readFieldFile(NpzReader& file);
FieldFile loadFieldFile(const std::string& path);

}  // namespace armature
