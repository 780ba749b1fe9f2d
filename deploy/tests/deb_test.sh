#!/usr/bin/env bash
# Builds the Debian package from an already built tree (no recompilation:
# cpack only runs the install rules), unpacks it into a throw-away root with
# dpkg -x and runs both daemons' --help from there, with the root's own
# layout (the executor looks for pkforge-worker and candidate.h relative to
# itself). Also checks the control fields a clean system needs to install it.
# Usage: deb_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$1"
SRC="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "deb_test: FAIL: $*" >&2; exit 1; }

# Stage with the install rules (stripped, prefix /usr as in the package),
# then let cpack package that directory: cpack's own project mode would first
# build the 'preinstall' target, i.e. everything; this never recompiles (CI
# builds first).
DESTDIR="$tmp/stage" cmake --install "$BUILD" --prefix /usr --strip >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; fail "cmake --install"; }
cpack --config "$BUILD/CPackConfig.cmake" -B "$tmp/out" -G DEB \
      -D CPACK_INSTALL_CMAKE_PROJECTS= -D "CPACK_INSTALLED_DIRECTORIES=$tmp/stage;/" \
      >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail "cpack"; }
grep -q 'Run preinstall target' "$tmp/cpack.log" && fail "cpack rebuilt the project (preinstall ran)"
deb="$(ls "$tmp"/out/pkforge_*.deb 2>/dev/null | head -n 1)"
[[ -n "$deb" ]] || { cat "$tmp/cpack.log"; fail "no pkforge_*.deb produced"; }
echo "deb_test: built $(basename "$deb") ($(du -h "$deb" | cut -f1))"

info="$(dpkg-deb --info "$deb")"
echo "$info" | grep -E '^ (Package|Version|Architecture|Depends):' || true
echo "$info" | grep -q '^ Package: pkforge$' || fail "Package field"
deps="$(echo "$info" | sed -n 's/^ Depends: //p')"
for want in bubblewrap libgrpc++ libsqlite3 libc6; do
  [[ "$deps" == *"$want"* ]] || fail "Depends lacks $want: '$deps'"
done

contents="$(dpkg-deb --contents "$deb" | awk '{print $6}')"
for want in ./usr/bin/pkforge ./usr/bin/pkforge-orchestrator ./usr/bin/pkforge-executor \
            ./usr/bin/pkforge-worker ./usr/bin/pkforge-sandbox ./usr/include/pkforge/candidate.h \
            ./usr/share/pkforge/config/orchestrator.json ./usr/share/pkforge/config/executor.json \
            ./usr/lib/systemd/system/pkforge-orchestrator.service \
            ./usr/lib/systemd/system/pkforge-executor@.service ./usr/share/doc/pkforge/deploy.md; do
  grep -qxF "$want" <<<"$contents" || fail "package lacks $want"
done

root="$tmp/root"
dpkg -x "$deb" "$root"
cmp -s "$root/usr/include/pkforge/candidate.h" "$SRC/kernels/include/pkforge/candidate.h" \
  || fail "installed candidate.h differs from the source"
# Stripped: a package of debug builds would be ~250 MB.
file -b "$root/usr/bin/pkforge-executor" | grep -q 'not stripped' && fail "binaries not stripped"
for d in pkforge-orchestrator pkforge-executor; do
  out="$("$root/usr/bin/$d" --help)" || fail "$d --help exited $?"
  grep -q -- '--listen' <<<"$out" || fail "$d --help printed no --listen: $out"
  echo "deb_test: $root/usr/bin/$d --help: $(head -n 1 <<<"$out")"
done
"$root/usr/bin/pkforge" --help >/dev/null || fail "pkforge --help"
echo "deb_test: PASS"
