#include "app/cli.h"

#include <charconv>
#include <cmath>

#include "armature/error.h"
#include "armature/file_checks.h"

namespace armature::cli {

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message (and a hint to --help)
    return kUsageError;
  }
  return std::nullopt;
}

namespace {
// A validator from a check that throws armature::Error: its message (without the value, which CLI11 adds) becomes
// the validation error.
template <typename Check>
CLI::Validator fromCheck(std::string description, Check check) {
  return CLI::Validator(
      [check](std::string& value) -> std::string {
        try {
          check(value);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      std::move(description));
}

uint32_t parseUInt(std::string_view s, uint32_t lo, uint32_t hi, const std::string& whole) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw Error("'" + whole + "': '" + std::string(s) + "' is not a decimal integer");
  if (v < lo || v > hi)
    throw Error("'" + whole + "': " + std::string(s) + " is outside [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  return uint32_t(v);
}
}  // namespace

CLI::Validator regularFile() {
  return fromCheck("FILE", [](const std::string& p) { checkRegularFile(p, "path"); });
}
CLI::Validator writableFile() {
  return fromCheck("PATH", [](const std::string& p) { checkWritableFile(p, "path"); });
}
CLI::Validator writableDirectory() {
  return fromCheck("DIR", [](const std::string& p) { checkWritableDirectory(p, "path"); });
}

CLI::Validator finiteRange(double lo, double hi) {
  const std::string range = "[" + detail::format("%g", lo) + ", " + detail::format("%g", hi) + "]";
  return fromCheck("FLOAT in " + range, [range, lo, hi](const std::string& s) {
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) throw Error("'" + s + "' is not a number");
    if (!std::isfinite(v) || v < lo || v > hi) throw Error("'" + s + "' is outside " + range);
  });
}

CLI::Validator unsignedInteger() {
  return fromCheck("UINT64", [](const std::string& s) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      throw Error("'" + s + "' is not a decimal integer in [0, 2^64)");
  });
}

std::pair<uint32_t, uint32_t> parseSize(const std::string& text, uint32_t maxSide) {
  size_t x = text.find('x');
  if (x == std::string::npos) throw Error("'" + text + "' is not WxH (e.g. 1280x720)");
  return {parseUInt(std::string_view(text).substr(0, x), 1, maxSide, text),
          parseUInt(std::string_view(text).substr(x + 1), 1, maxSide, text)};
}
CLI::Validator sizeWxH(uint32_t maxSide) {
  return fromCheck("WxH (1-" + std::to_string(maxSide) + " each)",
                   [maxSide](const std::string& s) { parseSize(s, maxSide); });
}

std::vector<uint32_t> parseList(const std::string& text, uint32_t lo, uint32_t hi) {
  std::vector<uint32_t> out;
  size_t begin = 0;
  while (true) {
    size_t comma = text.find(',', begin);
    out.push_back(parseUInt(std::string_view(text).substr(begin, comma - begin), lo, hi, text));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}
CLI::Validator uintList(uint32_t lo, uint32_t hi) {
  return fromCheck("LIST of " + std::to_string(lo) + "-" + std::to_string(hi),
                   [lo, hi](const std::string& s) { parseList(s, lo, hi); });
}

std::pair<uint32_t, uint32_t> parseFrameRange(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw Error("'" + text + "' is not a frame range A:B (either may be left out)");
  const std::string_view a = std::string_view(text).substr(0, colon), b = std::string_view(text).substr(colon + 1);
  const uint32_t first = a.empty() ? 0 : parseUInt(a, 0, UINT32_MAX - 1, text);
  const uint32_t end = b.empty() ? UINT32_MAX : parseUInt(b, 1, UINT32_MAX, text);
  if (first >= end) throw Error("frame range '" + text + "' is empty (A must be below B)");
  return {first, end};
}
CLI::Validator frameRange() {
  return fromCheck("A:B", [](const std::string& s) { parseFrameRange(s); });
}

}  // namespace armature::cli
