#pragma once
// Command-line checks shared by armature, armature-viewer and armature-bench: every value is validated while
// parsing, before any work starts. Exit codes: 0 success, 1 failure while working, 2 usage error (a bad option
// or value; CLI11's message names the option, the value and what is allowed).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace armature::cli {

inline constexpr int kFailure = 1;
inline constexpr int kUsageError = 2;

// Parses argv. Returns the exit code when the program should stop now: 0 after --help, kUsageError (message
// printed) for any parse or validation error; nothing when it should go on.
std::optional<int> parse(CLI::App& app, int argc, char** argv);

// An existing regular file (no FIFO, device or directory).
CLI::Validator regularFile();
// A file that can be written: its folder exists and is writable, and it is not a directory.
CLI::Validator writableFile();
// An existing, writable directory.
CLI::Validator writableDirectory();
// A finite number (no nan or inf) in [lo, hi].
CLI::Validator finiteRange(double lo, double hi);
// A decimal integer in [0, 2^64) (CLI11 alone would wrap "-1" into a uint64_t).
CLI::Validator unsignedInteger();

// "WxH", both decimal integers in [1, maxSide], nothing else in the string. Throws armature::Error.
std::pair<uint32_t, uint32_t> parseSize(const std::string& text, uint32_t maxSide);
CLI::Validator sizeWxH(uint32_t maxSide);

// A non-empty comma-separated list of decimal integers, each in [lo, hi]. Throws armature::Error.
std::vector<uint32_t> parseList(const std::string& text, uint32_t lo, uint32_t hi);
CLI::Validator uintList(uint32_t lo, uint32_t hi);

// "A:B", "A:" or ":B": frames [A, B) (A defaults to 0, B to the end), decimal, A < B. Throws armature::Error.
std::pair<uint32_t, uint32_t> parseFrameRange(const std::string& text);
CLI::Validator frameRange();

}  // namespace armature::cli
