#pragma once
// Helpers for the archive tests (.npz and .pkl): small model entries, and loading in a forked child whose peak RSS
// (getrusage) bounds what a crafted file made the loader allocate.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <random>

#include "armature/body/body_model.h"
#include "armature/error.h"
#include "support/body_fixtures.h"

namespace armature::test {

inline std::vector<char> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
inline void writeFile(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// A small model's entries as .npy bytes.
inline std::map<std::string, std::vector<uint8_t>> modelEntries(const BodyModel& m) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& [key, array] : bodyModelToNpz(m)) out[key] = encodeNpy(array);
  return out;
}

inline BodyModel smallModel() {
  std::mt19937_64 rng(5);
  return randomBodyModel(60, 55, 10, 10, rng);
}

// Runs `work` in a forked child; returns its exit status (-1: no child) and its peak RSS in MiB.
inline std::pair<int, double> inChild(const std::function<int()>& work) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return {-1, 0.0};
  if (pid == 0) _exit(work());
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return {-1, 0.0};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), double(usage.ru_maxrss) / 1024.0};
}

// 0: the load threw armature::Error containing every part of `expected`; 1: it loaded; 2: another message; 3: another
// exception (std::bad_alloc: it allocated what the file claimed).
inline int loadExpectingError(const std::string& path, const std::vector<std::string>& expected,
                              const NpzLimits& limits) {
  try {
    NpzReader reader = openArrayFile(path, limits);
    bodyModelFromNpz(reader);
    reader.readAll();
    return 1;
  } catch (const Error& e) {
    for (const auto& part : expected)
      if (std::string(e.what()).find(part) == std::string::npos) {
        std::fprintf(stderr, "message: %s\n", e.what());
        return 2;
      }
    return 0;
  } catch (...) {
    return 3;
  }
}

// Well above this process's own footprint and far below what the crafted files claim (gigabytes).
constexpr double kMemoryBoundMiB = 400;

}  // namespace armature::test
