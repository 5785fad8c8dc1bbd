#!/usr/bin/env bash
# Configures and builds Armature into build/ (Release by default; BUILD_TYPE overrides).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cuda_args=()
if [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc); fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "${cuda_args[@]}" ${CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
