#!/bin/sh
# The installed tree has no test hooks (issue 58 item 7): `cmake --install` of this build into a
# scratch prefix, then neither the library, the CLI nor the worker holds a hook's variable name,
# and the installed CLI given both variables tunes nothing pretended: no fake device, no "ok".
# Usage: test_installed_hooks.sh CMAKE BUILD_DIR SCRATCH_DIR
set -u
cmake=$1 build=$2 work=$3/installed_hooks_$$
rm -rf "$work" && mkdir -p "$work" || exit 1
if ! "$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1; then
  echo "cmake --install failed:"; cat "$work/install.log"; exit 1
fi
fail=0
for f in $(find "$work/prefix" -type f \( -name 'libfusedtune.so*' -o -name fusedtune -o -name fusedtune-worker \)); do
  for hook in FUSEDTUNE_TEST_INJECT FT_TEST_BATCH_DEVICES FT_TEST_BATCH_DIE; do
    if grep -q "$hook" "$f"; then echo "installed $f holds the test hook $hook"; fail=1; fi
  done
done
[ -x "$work/prefix/bin/fusedtune" ] || { echo "no installed CLI"; exit 1; }
printf 'shape\n8x8x8\n' >"$work/p.csv"
# Ordinal 63 exists only on pretended devices: a real machine refuses it, or has no device.
out=$(cd "$work" && env -u FUSEDTUNE_DB FT_TEST_BATCH_DEVICES=64 FUSEDTUNE_TEST_INJECT=wrong,fault,hang \
      ./prefix/bin/fusedtune --db h.db tune --problems p.csv --devices 63 2>&1)
rc=$?
if [ $rc -eq 0 ] || echo "$out" | grep -q "fake"; then
  echo "the installed CLI honoured FT_TEST_BATCH_DEVICES (exit $rc):"; echo "$out"; fail=1
fi
[ $fail -eq 0 ] && rm -rf "$work"
exit $fail
