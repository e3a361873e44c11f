#!/bin/sh
# test-plugin-boundary.sh - the in-tree plugins stay on the public side of the plugin
# boundary (TAP).  Every source of plugins/cpu and plugins/vulkan must compile with the
# flags a third-party plugin gets from pkg-config: a folder holding only the installed
# headers (the list make install copies, GGMLC_PUBLIC_HEADERS) plus the plugin's own
# folders and the build's autoconf config.h (the plugins' own build configuration, e.g.
# PACKAGE_VERSION, as a third-party plugin has its own); and no source may reach into core/
# or nn/ by a relative path.

n=0
failed=0
ok() { # ok COND-STATUS "description"
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
diag() { sed 's/^/# /' "$@"; }

: "${GGMLC_BUILDDIR:?run through make check}" "${GGMLC_PUBLIC_HEADERS:?run through make check}"
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
cc=${GGMLC_CC:-cc}
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
    echo "1..0 # SKIP no C compiler"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-boundary.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# 1. the installed header set, alone in one folder (as ${includedir}/ggmlc is)
mkdir "$tmp/include"
for h in $GGMLC_PUBLIC_HEADERS; do cp "$srcdir/$h" "$tmp/include/" || failed=1; done
ok $failed "the $(ls "$tmp/include" | wc -l) public headers staged"

# compile_all DIR EXTRA-FLAGS: -fsyntax-only on every DIR/*.c; the failures in $tmp/errors
compile_all() {
    : >"$tmp/errors"
    st=0
    for f in "$srcdir/$1"/*.c; do
        # shellcheck disable=SC2086 # the flags are words
        if ! $cc -std=c11 -D_GNU_SOURCE -fsyntax-only -include "$GGMLC_BUILDDIR/config.h" \
            -I"$tmp/include" -I"$srcdir/$1" $2 "$f" \
            >>"$tmp/errors" 2>&1; then
            st=1
        fi
    done
    return $st
}

# 2. the CPU plugin: public headers and plugins/cpu only
compile_all plugins/cpu ""
st=$?
ok $st "plugins/cpu/*.c compile with the installed headers and their own folder only"
[ $st -eq 0 ] || head -n 40 "$tmp/errors" | diag

# 3. the Vulkan plugin, when this tree built it: also its generated shader table and shaders/
vkgen="$GGMLC_BUILDDIR/plugins/vulkan"
if [ -f "$vkgen/vk-shaders.h" ]; then
    compile_all plugins/vulkan "-I$vkgen -I$srcdir/shaders ${GGMLC_VULKAN_CFLAGS:-}"
    st=$?
    ok $st "plugins/vulkan/*.c compile with the installed headers, their folder and shaders/ only"
    [ $st -eq 0 ] || head -n 40 "$tmp/errors" | diag
else
    echo "ok $((n += 1)) - # SKIP the Vulkan plugin is not built here"
fi

# 4. no include reaches the core or the model API by a path
grep -n '#[[:space:]]*include[[:space:]]*"[^"]*\(core\|nn\)/' "$srcdir"/plugins/*/*.[ch] >"$tmp/paths"
[ ! -s "$tmp/paths" ]
st=$?
ok $st "no plugin source includes a file of core/ or nn/ by a path"
[ $st -eq 0 ] || diag "$tmp/paths"

echo "1..$n"
exit $failed
