#!/bin/sh
# test-internal-names.sh - the internal symbols of libggmlc carry their mark (TAP).  A global
# symbol of libggmlc's objects is either public API (a name of include/*.h) or internal: hidden,
# shared between files of core/ and nn/, and named ggmlc__* so that a reader sees at the call
# site that it is no API (docs/plugins.md, "The boundary").  Internal names never leave the
# library, and no plugin source uses one.

. "${GGMLC_TEST_DATA:?run through make check}/taplib.sh"
: "${GGMLC_BUILDDIR:?run through make check}" "${GGMLC_LIBGGMLC_OBJECTS:?run through make check}"
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
if ! command -v nm >/dev/null 2>&1; then
    echo "1..0 # SKIP no nm"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-names.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The position-independent object of each libtool object (what libggmlc.so is linked from).
: >"$tmp/objects"
for lo in $GGMLC_LIBGGMLC_OBJECTS; do
    pic=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$GGMLC_BUILDDIR/$lo")
    echo "$GGMLC_BUILDDIR/$(dirname "$lo")/$pic" >>"$tmp/objects"
done
# (symbols a sanitizer build adds, such as ASan's __odr_asan.NAME, are the compiler's, not ours)
xargs nm -g --defined-only <"$tmp/objects" | awk 'NF == 3 { print $3 }' |
    grep -v '^__\(odr_\)\?\(asan\|tsan\|ubsan\|sanitizer\)' | sort -u >"$tmp/defined"
cat "$srcdir"/include/*.h | grep -oE '[A-Za-z_][A-Za-z0-9_]*' | sort -u >"$tmp/public"
comm -23 "$tmp/defined" "$tmp/public" >"$tmp/internal"
grep -v '^ggmlc__' "$tmp/internal" >"$tmp/unmarked"
ok "$(test -s "$tmp/unmarked"; echo $((1 - $?)))" \
    "every global symbol of the $(wc -l <"$tmp/objects") objects is public or named ggmlc__*"
sed 's/^/# unmarked: /' "$tmp/unmarked"

grep -c '^ggmlc__' "$tmp/internal" >"$tmp/count"
ok "$(test "$(cat "$tmp/count")" -gt 50; echo $?)" \
    "control: the objects define $(cat "$tmp/count") internal symbols"

nm -D --defined-only "$GGMLC_BUILDDIR/.libs/libggmlc.so" | grep ' ggmlc__' >"$tmp/exported"
ok "$(test -s "$tmp/exported"; echo $((1 - $?)))" "libggmlc.so exports no ggmlc__ symbol"
sed 's/^/# exported: /' "$tmp/exported"

grep -rlw 'ggmlc__[A-Za-z0-9_]*' "$srcdir/plugins" "$srcdir/include" >"$tmp/users"
ok "$(test -s "$tmp/users"; echo $((1 - $?)))" "no plugin source or public header names a ggmlc__ symbol"
sed 's/^/# uses: /' "$tmp/users"
tap_done
