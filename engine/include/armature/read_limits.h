#pragma once
// What a file may make Armature allocate or do, in one place. Every size computed from what a file declares
// (dimensions, counts, strides, item sizes) goes through checkedProduct/checkedSum, which refuse a result that
// does not fit 64 bits, and is compared with a budget here before anything is allocated or indexed. Budgets count
// what is held in memory (decoded arrays are doubles: 8 bytes an element), not the file's bytes.
//
// The defaults fit a 24 GiB machine with room to spare. For larger real data, raise them in the environment:
//   ARMATURE_READ_BUDGET_MIB  bytes decoded from one file (an array may take half)      default 4096
//   ARMATURE_MAX_FRAMES       frames a motion or animation clip may hold or expand to   default 500000
//   ARMATURE_MAX_GAUSSIANS    Gaussians in a field file                                 default 1000000
// Commands that write one file per frame write at most kMaxUnrangedOutputFiles without an explicit --frames range.
#include <cstdint>
#include <initializer_list>
#include <string>

namespace armature {

struct ReadLimits {
  uint64_t totalBytes = uint64_t(4) << 30;  // everything decoded from one file
  uint64_t arrayBytes = uint64_t(2) << 30;  // one decoded array (a released model's largest: ~600 MB as doubles)
  uint64_t frames = 500000;                 // 69 minutes at 120 fps; an AMASS sequence has at most a few thousand
  uint64_t gaussians = 1000000;             // a field's Gaussians; attaching one to a body is linear in them
};

// The limits in force: the defaults above, or as raised by the environment (read once; a malformed value is an
// Error naming the variable).
const ReadLimits& readLimits();

// Files a command writes one per frame when no --frames range is given.
inline constexpr uint64_t kMaxUnrangedOutputFiles = 1000;

// a·b·…, or armature::Error "<what>: a × b × … does not fit 64 bits".
uint64_t checkedProduct(std::initializer_list<uint64_t> factors, const std::string& what);
// a + b, or armature::Error as above.
uint64_t checkedSum(uint64_t a, uint64_t b, const std::string& what);
// Throws armature::Error unless value <= limit: "<what>: <value> <unit>, over the limit of <limit> (<raise>)",
// where <raise> says how to ask for more (an environment variable or an option).
void checkLimit(uint64_t value, uint64_t limit, const std::string& what, const char* unit, const char* raise);
// The same for bytes, shown in MiB, against readLimits().arrayBytes.
void checkArrayBytes(uint64_t bytes, const std::string& what);

// `bytes` as "12.3 MiB", the unit every budget message uses.
std::string mebibytes(uint64_t bytes);

// Throws armature::Error naming `what` and the first element that is not finite or has |x| > maxMagnitude
// (NaN fails: the check is written !(|x| <= max)).
void checkFinite(const double* values, uint64_t count, double maxMagnitude, const std::string& what);

}  // namespace armature
