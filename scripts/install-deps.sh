#!/usr/bin/env bash
# Installs the Debian 12 packages Armature builds and tests with. Idempotent: only what is missing is installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libvulkan-dev libvulkan-volk-dev vulkan-tools vulkan-validationlayers mesa-vulkan-drivers
  libshaderc-dev glslc glslang-tools glslang-dev spirv-tools
  libglfw3-dev libimgui-dev libglm-dev libstb-dev
  libzip-dev zlib1g-dev zipcmp zipmerge ziptool
  libtinygltf-dev libcli11-dev nlohmann-json3-dev libbenchmark-dev libgtest-dev libgmock-dev
  xvfb xauth clang patchelf
  python3-torch python3-numpy python3-pytest python3-pip python3-venv python3-setuptools  # the Python package
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
