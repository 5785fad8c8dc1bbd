#!/usr/bin/env bash
# Builds Armature with AddressSanitizer + UndefinedBehaviorSanitizer (RelWithDebInfo, no CUDA: sanitizers cannot
# see into CUDA kernels, and this is also the build a machine without nvcc makes) into build-asan/, and runs every
# test under them except the soak tests (the regular build runs those; 5,000 sanitized frames add nothing).
# What it covers: the CPU references, the model loader, the command-line tools (cli_test runs them sanitized),
# the viewer's headless and window modes, and every Vulkan path on lavapipe; the CUDA tests skip with the reason.
# Any sanitizer report fails its test (-fno-sanitize-recover; LeakSanitizer at exit).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-asan}
"$root/scripts/install-deps.sh"
BUILD_DIR=$build BUILD_TYPE=RelWithDebInfo \
  CMAKE_ARGS="-DARMATURE_CUDA=OFF -DARMATURE_SANITIZE=ON ${CMAKE_ARGS:-}" "$root/scripts/build.sh"
export ARMATURE_REQUIRE_VULKAN=${ARMATURE_REQUIRE_VULKAN:-1}
export ARMATURE_GUARD_BUFFERS=1  # every Device allocation gets a guard band: shaders past their buffers fail
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/armature-xdg}; mkdir -p -m700 "$XDG_RUNTIME_DIR"
export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$root/.ci/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 1500 -E 'Soak'
