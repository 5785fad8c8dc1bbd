#include "app/recorder.h"

#include <stb_image_write.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "armature/error.h"
#include "armature/file_checks.h"

namespace armature::app {

namespace {
// ffmpeg's path on PATH, or empty.
std::string findFfmpeg() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / "ffmpeg";
    std::error_code ec;
    if (end > start && std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    start = end + 1;
  }
  return {};
}

// The path quoted for the shell: inside single quotes, each ' written as '\''.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

VideoRecorder::VideoRecorder(const std::string& path, uint32_t width, uint32_t height, double fps)
    : m_path(path), m_width(width), m_height(height) {
  ARM_CHECK(!path.empty() && width > 0 && height > 0 && std::isfinite(fps) && fps > 0 && fps <= 1000,
            "record: a path, a size and 0 < fps ≤ 1000 (got %ux%u at %g)", width, height, fps);
  checkWritableFile(path, "record");
  const std::string ext = std::filesystem::path(path).extension().string();
  const std::string ffmpeg = ext == ".png" ? std::string() : findFfmpeg();
  if (ffmpeg.empty()) {
    m_description = "PNGs " + numberedPath(path.substr(0, path.size() - ext.size()) + ".png", 0) + ", ..." +
                    (ext == ".png" ? "" : " (no ffmpeg on PATH: apt install ffmpeg for a video)");
    m_path = path.substr(0, path.size() - ext.size()) + ".png";
    return;
  }
  ARM_CHECK(width % 2 == 0 && height % 2 == 0, "record: H.264 in yuv420p needs an even size, got %ux%u", width, height);
  const std::string command = quoted(ffmpeg) + " -loglevel error -y -f rawvideo -pix_fmt rgba -s " +
                              std::to_string(width) + "x" + std::to_string(height) + " -r " + std::to_string(fps) +
                              " -i - -c:v libx264 -pix_fmt yuv420p " + quoted(path);
  m_pipe = popen(command.c_str(), "w");
  ARM_CHECK(m_pipe, "record: cannot start ffmpeg (%s)", ffmpeg.c_str());
  m_description = "ffmpeg → " + path;
}

VideoRecorder::~VideoRecorder() {
  if (m_pipe) pclose(m_pipe);  // ffmpeg writes the container's index on end of input
}

void VideoRecorder::add(const std::vector<uint8_t>& rgba) {
  ARM_CHECK(rgba.size() == size_t(m_width) * m_height * 4, "record: a frame of %zu bytes, expected %ux%u RGBA",
            rgba.size(), m_width, m_height);
  if (m_pipe) {
    ARM_CHECK(std::fwrite(rgba.data(), 1, rgba.size(), m_pipe) == rgba.size(),
              "record: ffmpeg stopped taking frames (see its message above)");
  } else {
    const std::string file = numberedPath(m_path, m_frames);
    ARM_CHECK(stbi_write_png(file.c_str(), int(m_width), int(m_height), 4, rgba.data(), int(m_width) * 4),
              "%s: cannot write PNG", file.c_str());
  }
  ++m_frames;
}

}  // namespace armature::app
