#pragma once
// Checks on user-named paths, made before any work starts: a bad path is reported by name, up front, instead of
// blocking on a FIFO, reading a device until memory runs out, or failing after minutes of rendering.
#include <cstdint>
#include <string>

namespace armature {

// Throws armature::Error unless `path` names an existing regular file (not a FIFO, device, socket or directory)
// of at most `maxBytes`. `what` names the argument in the message ("--model", "model file").
void checkRegularFile(const std::string& path, const std::string& what, uint64_t maxBytes = UINT64_MAX);

// Throws armature::Error unless `path` can be created or overwritten: not a directory, its folder exists and is
// writable, and an existing file there is writable. Nothing is created.
void checkWritableFile(const std::string& path, const std::string& what);

// Throws armature::Error unless `path` is an existing, writable directory.
void checkWritableDirectory(const std::string& path, const std::string& what);

// `path`'s extension in lower case with its dot ("x/Walk.GLB" -> ".glb"), or "" without one.
std::string lowerExtension(const std::string& path);

// `path` with a frame number before its extension: "out/walk.obj", 12 -> "out/walk_00012.obj" (one file per frame).
std::string numberedPath(const std::string& path, uint64_t number);

}  // namespace armature
