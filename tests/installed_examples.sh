#!/usr/bin/env bash
# The examples as a user builds them: install this build into a fresh prefix, configure and build
# examples/host_renderer (C++) and examples/c_api (C) against that prefix alone, and run them on the test device. The
# host's picture must agree with `armature model render`'s (the CPU reference skinning and rasteriser, same
# projection): silhouettes differ only where a pixel centre lies on an edge within rounding, so IoU ≥ 0.99.
# Usage: installed_examples.sh SOURCE_DIR BUILD_DIR MODEL
set -euo pipefail
source_dir=$1 build_dir=$2 model=$3
work=$(mktemp -d /tmp/armature-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
for example in host_renderer c_api; do
  cmake -S "$source_dir/examples/$example" -B "$work/$example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/$example.configure.log" || { cat "$work/$example.configure.log"; exit 1; }
  cmake --build "$work/$example" > "$work/$example.build.log" || { cat "$work/$example.build.log"; exit 1; }
done
export LD_LIBRARY_PATH="$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$work/host_renderer/host_renderer" "$model" "$work/host.png" 512 --validation
"$build_dir/bin/armature" model render "$model" -o "$work/reference.png" --poses t-pose --height 512
"$build_dir/bin/silhouette_agreement" "$work/host.png" "$work/reference.png" 0.99
# CUDA skinning into the host's own (exportable) vertex buffer, where CUDA drives the GPU; exit 3 names why not.
rc=0; "$work/host_renderer/host_renderer" "$model" "$work/host_cuda.png" 512 --validation --cuda || rc=$?
if [ "$rc" = 3 ]; then
  echo "installed_examples: the --cuda run skipped (reason above)"
elif [ "$rc" = 0 ]; then
  "$build_dir/bin/silhouette_agreement" "$work/host_cuda.png" "$work/reference.png" 0.99
else
  exit "$rc"
fi
"$work/c_api/skin_c" "$model" vulkan
