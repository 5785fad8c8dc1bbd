#!/usr/bin/env bash
# Installs what is missing, builds (Release, with tests) and runs every test through ctest.
# Vulkan tests run on whatever device is chosen (lavapipe on a machine without a GPU); CUDA tests skip with the
# reason when no CUDA device is present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${BUILD_DIR:-$root/build}
export ARMATURE_REQUIRE_VULKAN=${ARMATURE_REQUIRE_VULKAN:-1}  # lavapipe is installed above: Vulkan tests must run
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/armature-xdg}; mkdir -p -m700 "$XDG_RUNTIME_DIR"
cd "$build"
status=0
ctest --output-on-failure -j "$(nproc)" --timeout 1500 || status=$?
python3 "$root/scripts/skip_reasons.py" Testing/Temporary/LastTest.log  # the summary names them; this says why
exit $status
