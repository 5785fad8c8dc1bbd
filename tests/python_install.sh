#!/usr/bin/env bash
# The Python package as a user installs it: a wheel built from python/ with Debian's setuptools, installed into a
# fresh virtual environment that sees Debian's torch, then `python -m armature info` on the library just built.
# Usage: python_install.sh PYTHON SOURCE_DIR LIBRARY
set -euo pipefail
python=$1 source_dir=$2 library=$3
work=$(mktemp -d /tmp/armature-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$source_dir/python" "$work/src"  # the build writes beside the sources
"$python" -m pip wheel "$work/src" --no-deps --no-build-isolation -q -w "$work/wheel"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-deps "$work"/wheel/armature-*.whl
cd "$work"  # not the source tree: the installed package must be the one imported
out=$(ARMATURE_LIBRARY=$library "$work/venv/bin/python" -m armature info)
echo "$out"
grep -q "^cpu: the double reference" <<<"$out"
"$work/venv/bin/python" -c "import armature, sys; sys.exit(0 if '$work/venv' in armature.__file__ else 1)"
