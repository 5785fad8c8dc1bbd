#!/usr/bin/env bash
# Turns a build into a self-contained folder that runs on another x86-64 Linux machine with only an NVIDIA
# driver: executables and test binaries in bin/, the shared libraries such a machine lacks in lib/ (RPATH
# $ORIGIN/../lib), the Vulkan validation layer, the generated assets, and run-tests.sh, which runs every test
# binary and prints one line `N passed, N failed, N skipped` — packed into one .bundle/bundle.tar.xz.
# Usage: scripts/bundle.sh [BUILD_DIR] [OUT_DIR]   (defaults: build .bundle)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/.bundle}
rm -rf "$out"; mkdir -p "$out/bin" "$out/lib" "$out/layers" "$out/assets"
command -v patchelf >/dev/null || { apt-get install -y -qq patchelf >/dev/null; }

cp "$build"/bin/* "$out/bin/"
# The default avatar (~110 MB) is regenerated where the bundle runs (run-tests.sh), not carried.
# Libraries every Linux machine has (glibc, libstdc++, libgcc) stay out; the rest travels.
keep_out='linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+|libgcc_s'
for f in "$out"/bin/*; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' | grep -Ev "$keep_out" || true
done | sort -u | while read -r lib; do cp -L "$lib" "$out/lib/"; done
# Loaded at run time (dlopen), so ldd does not see them: the Vulkan loader (volk opens it) and GLVND's EGL,
# which NVIDIA's Vulkan driver needs to create an instance.
for lib in libvulkan.so.1 libEGL.so.1 libGLdispatch.so.0; do
  p=$(ldconfig -p | awk -v l="$lib" '$1==l && /x86-64/ && !found {print $NF; found=1}')  # no early exit: ldconfig would get SIGPIPE
  if [ -n "$p" ]; then cp -L "$p" "$out/lib/"; else echo "bundle: $lib not found here; the target machine must provide it"; fi
done
cp -L /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so "$out/layers/"
# A bare library name would be looked up on the system paths; "./" makes it relative to the JSON file.
sed 's#"library_path": "libVkLayer_khronos_validation.so"#"library_path": "./libVkLayer_khronos_validation.so"#' \
  /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >"$out/layers/VkLayer_khronos_validation.json"
# Symbols stay here (the build folder); the bundle must fit the device tool's 64 MiB carry.
strip --strip-unneeded "$out"/bin/* 2>/dev/null || true
for f in "$out"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f" 2>/dev/null || true; done

cat > "$out/run-tests.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every test binary of the bundle and prints `N passed, N failed, N skipped` last.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_LAYER_PATH=$here/layers
export ARMATURE_ASSETS=$here/assets
export ARMATURE_DEFAULT_MODEL=$here/assets/armature_default_smplx.npz
[ -f "$ARMATURE_DEFAULT_MODEL" ] || "$here/bin/armature" model synth -o "$ARMATURE_DEFAULT_MODEL" --seed 0
# Where the bundle runs, a Vulkan device is expected: a missing one fails the Vulkan tests instead of skipping.
export ARMATURE_REQUIRE_VULKAN=${ARMATURE_REQUIRE_VULKAN:-1}
logdir=${LOG_DIR:-$here/logs}; mkdir -p "$logdir"
passed=0; failed=0; skipped=0; crashed=""
for t in "$here"/bin/*_test; do
  name=$(basename "$t")
  "$t" --gtest_color=no "$@" >"$logdir/$name.log" 2>&1; rc=$?
  p=$(grep -oP '^\[  PASSED  \] \K[0-9]+' "$logdir/$name.log" | tail -1)
  f=$(grep -oP '^\[  FAILED  \] \K[0-9]+(?= tests?, listed)' "$logdir/$name.log" | tail -1)
  s=$(grep -oP '^\[  SKIPPED \] \K[0-9]+(?= tests?, listed)' "$logdir/$name.log" | tail -1)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
  if [ $rc -ne 0 ] && [ -z "$f" ]; then failed=$((failed + 1)); crashed="$crashed $name(rc=$rc)"; fi
  printf '%-28s rc=%d passed=%s failed=%s skipped=%s\n' "$name" $rc "${p:-0}" "${f:-0}" "${s:-0}"
  grep -E '^\[  (FAILED|SKIPPED) \] [A-Za-z][^ ]*$' "$logdir/$name.log" | sort -u | sed 's/^/    /'
done
[ -n "$crashed" ] && echo "crashed:$crashed"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
RUN
chmod +x "$out/run-tests.sh"
# The device tool carries at most 64 MiB with the tree; unpacked the bundle is ~60 MB (every binary links the CUDA
# code, the validation layer is 22 MB), packed ~12. Where it runs: tar -xJf .bundle/bundle.tar.xz -C .bundle
# (scripts/device-run.sh does it).
tar -C "$out" -cf - bin lib layers assets run-tests.sh | xz -T0 -6 >"$out.tar.xz"
rm -rf "${out:?}"/*
mv "$out.tar.xz" "$out/bundle.tar.xz"
du -sh "$out"
