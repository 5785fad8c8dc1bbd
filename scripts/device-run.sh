#!/usr/bin/env bash
# Run on the GPU machine from the repository root with .gl and .bundle carried (see ../shared/DEVICE.md):
# the bundle's tests, compute-sanitizer on the tests that reach CUDA, and the benchmarks. Logs go to $OUT.
# Each part fits the device tool's 10-minute call when run on its own: TESTS=0 skips the tests, SANITIZE=0 the
# compute-sanitizer runs, BENCH=none the benchmarks (BENCH=raster: only the rasteriser's rows; BENCH=ops: the ops'
# rows without the interop and viewer runs). PYTHON=0 skips the Python package's tests (pytest, with the machine's
# torch) and PYBENCH=0 its benchmark (bench/python_bench.py → $OUT/python_ops.json). BUNDLE=.bundle-old runs another
# carried bundle (a before/after pair).
set -uo pipefail
final=${OUT:-/tmp/armature-out}; out=$(mktemp -d); mkdir -p "$final"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
b=$PWD/${BUNDLE:-.bundle}
[ -d "$b/bin" ] || tar -xJf "$b/bundle.tar.xz" -C "$b"
export LD_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ARMATURE_DEFAULT_MODEL=$b/assets/armature_default_smplx.npz
[ -f "$ARMATURE_DEFAULT_MODEL" ] || "$b/bin/armature" model synth -o "$ARMATURE_DEFAULT_MODEL" --seed 0 >/dev/null
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  "$b/bin/armature" info
} >"$out/info.log" 2>&1
tests_rc=0
if [ "${TESTS:-1}" = 1 ]; then LOG_DIR=$out/tests "$b/run-tests.sh" >"$out/tests.log" 2>&1; tests_rc=$?; else : >"$out/tests.log"; fi
# The Python package over the bundle's library, with this machine's Python and torch (CUDA tensors included).
py_env=(env ARMATURE_LIBRARY="$(ls "$b"/lib/libarmature.so.* | head -1)" PYTHONPATH="$PWD/python:$PWD/bench"
        VK_LAYER_PATH="$b/layers" ARMATURE_REQUIRE_VULKAN=1)
if [ "${PYTHON:-1}" = 1 ]; then
  "${py_env[@]}" python3 -m pytest -q -rs -p no:cacheprovider python/tests >"$out/pytest.log" 2>&1 || tests_rc=1
  cp "$out/pytest.log" "$final/"
fi
if [ "${PYBENCH:-1}" = 1 ]; then
  "${py_env[@]}" python3 bench/python_bench.py "$final/python_ops.json" >"$out/python_bench.log" 2>&1
fi
# compute-sanitizer's four tools side by side over every test that reaches CUDA: the ops' CUDA instances (*/cuda)
# and *Cuda* tests, and all of
# the interop and viewer tests (the Vulkan-only and reference tests reach no CUDA). Soak tests are left out (they
# repeat what the tools already saw), the profile-placement tests (instrumented kernels and events shift device
# time by up to milliseconds, so their timing assertions say nothing there), the create/destroy leak check
# (memcheck and initcheck keep device memory of their own per tracked allocation, so free memory falls) and
# cli_test (its child processes would each be sanitized).
san=""
if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  # binary:gtest-filter pairs; SANITIZE_TESTS overrides the list (a re-check of one binary).
  ops=*/cuda:*Cuda*:*CUDA*
  cuda_tests=${SANITIZE_TESTS:-"axpy_test:$ops skinning_test:$ops raster_test:$ops interpolate_test:$ops
              project_test:$ops grid_hierarchy_test:$ops joint_propagation_test:$ops linear_blend_skinning_test:$ops
              gaussian_field_test:$ops gaussian_pose_test:$ops deformable_aggregation_test:$ops texture_bake_test:$ops interop_test:* viewer_test:*"}
  for tool in memcheck racecheck synccheck initcheck; do
    (
      for entry in $cuda_tests; do
        t=${entry%%:*} filter=${entry#*:}
        log=$out/sanitizer_${tool}_$t.log
        VK_LAYER_PATH=$b/layers timeout 480 compute-sanitizer --tool $tool --error-exitcode 9 "$b/bin/$t" \
          --gtest_filter="$filter-*Soak*:*ProfileSpans*:*CreateDestroyLeaksNothing*" >"$log" 2>&1
        rc=$?
        summary=$(grep -oE '(ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\))' "$log" | tail -1)
        tests=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | tail -1)
        printf '%-10s %-22s rc=%d %s; %s\n' "$tool" "$t" "$rc" "${tests:-no PASSED line}" "${summary:-no summary}" |
          tee -a "$final/sanitizers.txt"  # as each finishes: a run cut short still reports what it ran
      done >"$out/sanitizer_$tool.txt"
    ) &
  done
  wait
  san=$(cat "$out"/sanitizer_{memcheck,racecheck,synccheck,initcheck}.txt)
fi
bench=$b/bin/armature-bench
# Floors are bytes over the bandwidth this GPU measures (axpy, CUDA, read + write), not a datasheet number.
peak=$("$bench" axpy --backend cuda --iters 20 2>/dev/null | awk '$1 == "axpy" {printf "%.0f", $7 * 1e9}')
[ -n "$peak" ] && bench="$bench --peak-bandwidth $peak"
# BENCH=raster: only the rasteriser and hierarchy rows (a quick iteration on that code).
if [ "${BENCH:-all}" = none ]; then
  : >"$out/bench.log"
elif [ "${BENCH:-all}" = ops ]; then
{
  $bench axpy --backend cuda --json "$out/bench_axpy_cuda.json"
  $bench axpy --backend vulkan --json "$out/bench_axpy_vulkan.json"
  $bench skinning --backend cuda --batch 1,32,512,4096 --json "$out/bench_skin_cuda_fwd.json"
  $bench skinning --backend cuda --batch 1,32,512,4096 --backward --json "$out/bench_skin_cuda_bwd.json"
  $bench skinning --backend vulkan --batch 1,8,32,512 --json "$out/bench_skin_vk_fwd.json"
  $bench skinning --backend vulkan --batch 1,8,32,512 --backward --json "$out/bench_skin_vk_bwd.json"
  $bench raster --backend cuda --iters 20 --json "$out/bench_raster_cuda.json"
  $bench raster --backend vulkan --iters 20 --json "$out/bench_raster_vulkan.json"
  $bench pipeline --backend cuda --views 1,8 --json "$out/bench_pipeline_cuda.json"
  $bench pipeline --backend vulkan --views 1,8 --json "$out/bench_pipeline_vulkan.json"
  $bench hierarchy --sizes 128,512 --json "$out/bench_hierarchy.json"
  $bench bake --backend cuda --json "$out/bench_bake_cuda.json"
  $bench bake --backend vulkan --json "$out/bench_bake_vulkan.json"
} >"$out/bench.log" 2>&1
elif [ "${BENCH:-all}" = raster ]; then
{
  $bench raster --backend cuda --iters 20 --json "$out/bench_raster_cuda.json"
  $bench raster --backend vulkan --iters 20 --json "$out/bench_raster_vulkan.json"
  $bench raster --backend vulkan --float-only --iters 20 --json "$out/bench_raster_vulkan_float.json"
  $bench pipeline --backend cuda --views 1,8 --json "$out/bench_pipeline_cuda.json"
  $bench pipeline --backend vulkan --views 1,8 --json "$out/bench_pipeline_vulkan.json"
  $bench hierarchy --sizes 128,512 --json "$out/bench_hierarchy.json"
  ${EXTRA_BENCH:-true}
} >"$out/bench.log" 2>&1
else
{
  $bench axpy --backend cuda --json "$out/bench_axpy_cuda.json"
  $bench axpy --backend vulkan --json "$out/bench_axpy_vulkan.json"
  $bench skinning --backend cuda --batch 1,32,512,4096 --json "$out/bench_skin_cuda_fwd.json"
  $bench skinning --backend cuda --batch 1,32,512,4096 --backward --json "$out/bench_skin_cuda_bwd.json"
  # The same without the blend matrix's L2 residency: every call streams it from DRAM.
  $bench skinning --backend cuda --batch 1,32,512 --no-l2-residency --json "$out/bench_skin_cuda_fwd_nol2.json"
  $bench skinning --backend cuda --batch 1,32,512 --backward --no-l2-residency --json "$out/bench_skin_cuda_bwd_nol2.json"
  $bench skinning --backend vulkan --batch 1,8,32,512 --json "$out/bench_skin_vk_fwd.json"
  $bench skinning --backend vulkan --batch 1,8,32,512 --backward --json "$out/bench_skin_vk_bwd.json"
  $bench interop --iters 200 --json "$out/bench_interop.json"
  $bench raster --backend cuda --iters 20 --json "$out/bench_raster_cuda.json"
  $bench raster --backend vulkan --iters 20 --json "$out/bench_raster_vulkan.json"
  $bench raster --backend vulkan --float-only --iters 20 --json "$out/bench_raster_vulkan_float.json"
  $bench pipeline --backend cuda --views 1,8 --json "$out/bench_pipeline_cuda.json"
  $bench pipeline --backend vulkan --views 1,8 --json "$out/bench_pipeline_vulkan.json"
  v=$b/bin/armature-viewer
  $v --headless --frames 300 --backend cuda --size 1920x1080 --animate --skeleton --profile "$out/viewer_cuda_1.json" --screenshot "$out/viewer_cuda_1.png"
  $v --headless --frames 100 --backend cuda --avatars 1024 --size 1920x1080 --animate --profile "$out/viewer_cuda_1024.json" --screenshot "$out/viewer_cuda_1024.png"
  $v --headless --frames 300 --backend vulkan --size 1920x1080 --animate --profile "$out/viewer_vulkan_1.json"
  $v --headless --frames 300 --backend cuda --size 1920x1080 --animate --no-ground --profile "$out/viewer_cuda_1_noground.json"
  $v --headless --frames 300 --backend cuda --size 1920x1080 --animate --raster compute --profile "$out/viewer_cuda_1_compute.json" --screenshot "$out/viewer_cuda_1_compute.png"
  $v --headless --frames 300 --backend vulkan --size 1920x1080 --animate --raster compute --profile "$out/viewer_vulkan_1_compute.json"
  $v --headless --frames 100 --backend cuda --avatars 1024 --size 1920x1080 --animate --raster compute --profile "$out/viewer_cuda_1024_compute.json"
  # The overlay's own cost: the same frames with the GPU frame-time overlay drawn ("ui" and "ui (cpu)" stages).
  $v --headless --frames 300 --backend cuda --size 1920x1080 --animate --ui --profile "$out/viewer_cuda_1_ui.json" --screenshot "$out/viewer_cuda_1_ui.png"
  $v --headless --frames 300 --backend cuda --size 1920x1080 --animate --raster compute --ui --profile "$out/viewer_cuda_1_compute_ui.json"
  $v --headless --frames 100 --backend cuda --avatars 1024 --size 1920x1080 --animate --raster compute --ui --profile "$out/viewer_cuda_1024_compute_ui.json"
  $bench hierarchy --sizes 128,512 --json "$out/bench_hierarchy.json"
  $bench bake --backend cuda --json "$out/bench_bake_cuda.json"
  $bench bake --backend vulkan --json "$out/bench_bake_vulkan.json"
  ${EXTRA_BENCH:-true}
} >"$out/bench.log" 2>&1
fi
# At most 8 files come back: the summaries, and everything else in one archive.
cp "$out/info.log" "$out/tests.log" "$out/bench.log" "$final/"
tar czf "$final/logs.tgz" -C "$out" .
cat "$out/info.log" | head -20
cat "$out/tests.log" | tail -15
[ -f "$out/pytest.log" ] && tail -12 "$out/pytest.log"
[ -f "$out/python_bench.log" ] && cat "$out/python_bench.log"
echo "compute-sanitizer, one line per tool and binary:"; echo "$san"
grep -E "^(op|axpy|skinning|interop|raster|pipeline|hierarchy|device:|stage|cpu frame|draw|gpu total|skinning)" "$out/bench.log"
exit $tests_rc
