#!/usr/bin/env bash
# Formats the C++ and CUDA sources with .clang-format (clang-format from Debian's clang-format package). shaders/
# is left out: GLSL, and headers GLSL includes, which clang-format would misread.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z -- '*.cpp' '*.h' '*.cu' '*.cuh' ':!:shaders/*' | xargs -0 clang-format -i
