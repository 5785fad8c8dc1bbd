#!/usr/bin/env bash
# The Python examples at small sizes, as CI runs them (Debian's torch: the CPU reference, and Vulkan where asked).
# Usage: python_examples.sh PYTHON SOURCE_DIR MODEL   (ARMATURE_LIBRARY and PYTHONPATH set by ctest)
set -euo pipefail
python=$1 examples=$2/examples/python model=$3
out=$(mktemp -d /tmp/armature-pyex.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$python" "$examples/train_gaussian_field.py" --iterations 100
"$python" "$examples/train_gaussian_field.py" --iterations 30 --backend vulkan
"$python" "$examples/aggregation_head.py" --steps 10
"$python" "$examples/aggregation_head.py" --steps 10 --fallback
"$python" "$examples/render_avatar.py" "$model" "$out/avatar.pgm" --size 128
"$python" "$examples/fit_smplx_keypoints.py" "$model" --iterations 40 --min-drop 0.5
"$python" "$examples/fit_smplx_keypoints.py" "$model" --iterations 10 --backend vulkan --min-drop 0.9
