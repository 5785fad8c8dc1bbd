#pragma once
// Recording the view: frames piped to ffmpeg (Debian's `ffmpeg` package, when it is on PATH) as H.264 in the
// container the path's extension names, else written as numbered PNGs beside the path (OUT_00000.png, ...).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace armature::app {

class VideoRecorder {
 public:
  // Starts a recording of width × height frames at `fps`; throws armature::Error when it cannot (a path ffmpeg
  // cannot be given safely, an odd size for H.264, ffmpeg failing to start).
  VideoRecorder(const std::string& path, uint32_t width, uint32_t height, double fps);
  ~VideoRecorder();  // ends the recording: ffmpeg finishes the file
  VideoRecorder(const VideoRecorder&) = delete;
  VideoRecorder& operator=(const VideoRecorder&) = delete;

  // One frame, width × height RGBA bytes, rows top first.
  void add(const std::vector<uint8_t>& rgba);
  uint32_t width() const { return m_width; }
  uint32_t height() const { return m_height; }
  uint64_t frames() const { return m_frames; }
  // Where the frames go, for the user: "ffmpeg → out.mp4" or "PNGs out_00000.png, ... (no ffmpeg on PATH)".
  const std::string& description() const { return m_description; }

 private:
  std::string m_path, m_description;
  uint32_t m_width, m_height;
  uint64_t m_frames = 0;
  FILE* m_pipe = nullptr;  // ffmpeg's stdin; null: PNGs
};

}  // namespace armature::app
