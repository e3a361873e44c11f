#!/bin/sh
# test-cmake-package.sh - `make install` ships ggml's CMake package (TAP): a small
# CMake project (tests/cmake-client) finds it with find_package(ggml) under a
# DESTDIR install, builds against ggml::ggml and runs on the CPU backend.

: "${GGMLC_BUILDDIR:?run through make check}"
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
command -v cmake >/dev/null 2>&1 || { echo "1..0 # SKIP cmake not found"; exit 0; }
. "$GGMLC_TEST_DATA/taplib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-cmake.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The parts of an install the package needs: the library, the headers, ggmlc.pc and the
# package files; not the plugins (the client computes through the test configuration's).
# Installing a plugin relinks its .libs/*.so in place (libtool), which another test loading
# it at that moment reads half-written; test-plugin-sdk.sh, which needs them, takes the same
# lock so two installs never run at once.  No recursion into make check's flags.
flock "$GGMLC_BUILDDIR/.install-lock" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$GGMLC_BUILDDIR" \
    install-libLTLIBRARIES install-pkgincludeHEADERS install-pkgconfigDATA install-cmakeDATA \
    DESTDIR="$tmp/root" > "$tmp/install.log" 2>&1
ok $? "make install-{lib,header,pkgconfig,cmake} DESTDIR=... succeeds"
pkgdir=$(find "$tmp/root" -path '*/cmake/ggml/ggml-config.cmake' | head -n 1 | xargs -r dirname)
libdir=$(dirname "$(dirname "$pkgdir")")
for f in ggml-config.cmake ggml-config-version.cmake ggml-version.cmake; do
    [ -n "$pkgdir" ] && [ -f "$pkgdir/$f" ]
    ok $? "$f is installed in \$(libdir)/cmake/ggml"
done

cmake -S "$srcdir/tests/cmake-client" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$(dirname "$libdir")" > "$tmp/cmake.log" 2>&1 &&
    cmake --build "$tmp/build" >> "$tmp/cmake.log" 2>&1
status=$?
ok $status "find_package(ggml 0.9) finds the DESTDIR install and the client builds against ggml::ggml"
[ $status -ne 0 ] && sed 's/^/# /' "$tmp/cmake.log" | tail -20
[ $status -eq 0 ] || { tap_done; }

out=$(LD_LIBRARY_PATH="$libdir" "$tmp/build/client" 2>&1)
[ "$out" = "11 22 33" ]
ok $? "the client runs on the CPU backend: $out"

cat > "$tmp/ver.cmake" <<CM
find_package(ggml 1.0 QUIET PATHS "$pkgdir" NO_DEFAULT_PATH)
if(ggml_FOUND)
  message(FATAL_ERROR "a request for ggml 1.0 was accepted")
endif()
CM
cmake -P "$tmp/ver.cmake" > "$tmp/ver.log" 2>&1
ok $? "a request for a newer major version (1.0) is refused"
tap_done
