#include "armature/file_checks.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "armature/error.h"

namespace armature {

namespace fs = std::filesystem;

namespace {
const char* kindName(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::symlink:
      return "a dangling symbolic link";
    default:
      return "not a regular file";
  }
}
}  // namespace

void checkRegularFile(const std::string& path, const std::string& what, uint64_t maxBytes) {
  ARM_CHECK(!path.empty(), "%s: empty path", what.c_str());
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);  // follows symbolic links: a link to a regular file is fine
  if (ec || st.type() == fs::file_type::not_found) throw Error(what + " '" + path + "': no such file");
  if (st.type() != fs::file_type::regular)
    throw Error(what + " '" + path + "' is " + kindName(st.type()) + ", not a regular file");
  uint64_t bytes = fs::file_size(path, ec);
  ARM_CHECK(!ec, "%s '%s': cannot read its size (%s)", what.c_str(), path.c_str(), ec.message().c_str());
  ARM_CHECK(bytes <= maxBytes, "%s '%s' is %llu bytes, more than the %llu allowed", what.c_str(), path.c_str(),
            (unsigned long long)bytes, (unsigned long long)maxBytes);
  ARM_CHECK(access(path.c_str(), R_OK) == 0, "%s '%s': not readable", what.c_str(), path.c_str());
}

void checkWritableFile(const std::string& path, const std::string& what) {
  ARM_CHECK(!path.empty(), "%s: empty path", what.c_str());
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::directory) throw Error(what + " '" + path + "' is a directory, not a file");
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, ec))
    throw Error(what + " '" + path + "': folder '" + folder.string() + "' does not exist");
  if (access(folder.c_str(), W_OK | X_OK) != 0)
    throw Error(what + " '" + path + "': folder '" + folder.string() + "' is not writable");
  if (fs::exists(st) && access(path.c_str(), W_OK) != 0) throw Error(what + " '" + path + "': not writable");
}

void checkWritableDirectory(const std::string& path, const std::string& what) {
  ARM_CHECK(!path.empty(), "%s: empty path", what.c_str());
  std::error_code ec;
  if (!fs::is_directory(path, ec)) throw Error(what + " '" + path + "': no such directory");
  if (access(path.c_str(), W_OK | X_OK) != 0) throw Error(what + " '" + path + "': directory is not writable");
}

std::string numberedPath(const std::string& path, uint64_t number) {
  const std::filesystem::path p(path);
  char digits[32];
  std::snprintf(digits, sizeof digits, "_%05llu", static_cast<unsigned long long>(number));
  return (p.parent_path() / (p.stem().string() + digits + p.extension().string())).string();
}

std::string lowerExtension(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace armature
