#pragma once
// Python pickles of a dict of arrays, as the .pkl releases of SMPL, SMPL+H, MANO and SMPL-X and SMPLify-X's result
// files store them, read by a restricted unpickler that runs no code.
//
// It knows exactly the classes these files use and builds each as data:
//   - numpy arrays (numpy.core / numpy._core multiarray._reconstruct with their dtype, numeric._frombuffer) and
//     numpy scalars;
//   - chumpy's Ch wrapper (its array 'x');
//   - scipy's csc and csr matrices (made dense);
//   - Python's basic types (None, bool, int, float, str, bytes, list, tuple, dict, set), and copy_reg's
//     _reconstructor and _codecs.encode as Python writes them for protocol 2.
// Any other class is refused with an error naming it; opcodes that would call out (persistent ids, extension
// registry, out-of-band buffers) are refused too. Protocols 0 to 5 are read.
#include <cstddef>
#include <string>
#include <vector>

#include "armature/body/npz.h"

namespace armature {

// The pickle's top-level dict as an archive: every numeric array, chumpy array, sparse matrix and number is a
// readable entry (decoded when read); strings and other values are listed (dtype "str" or "object") but not
// readable. Decoding stays within `limits` (maxEntryBytes per array, maxTotalBytes in all); the unpickler's own
// state is bounded by kMaxPickleValues. Throws armature::Error naming `name` and the key.
NpzReader readPickle(std::vector<char> bytes, const std::string& name, NpzLimits limits = {});

// Values one pickle may build (a released model file has a few hundred).
inline constexpr size_t kMaxPickleValues = size_t(1) << 20;

}  // namespace armature
