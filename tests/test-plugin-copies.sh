#!/bin/sh
# test-plugin-copies.sh - the tests load no plugin that `make install` rewrites (TAP).
# Installing relinks each plugin in place (libtool writes a new plugins/*/.libs/*.so), and
# test-plugin-sdk.sh stages an install while other tests run; so the test configurations
# name the copies in tests/plugin-copies/ (tests/Makefile.inc), each made after its plugin
# was last linked (compared with the plugin's .la, which relinking leaves alone).
. "${GGMLC_TEST_DATA:?run through make check}/taplib.sh"
: "${GGMLC_BUILDDIR:?run through make check}"

for ini in "$GGMLC_BUILDDIR"/tests/ggmlc-test*.ini; do
    [ -f "$ini" ] || continue
    name=$(basename "$ini")
    libs=$(sed -n 's/^library *= *//p' "$ini")
    [ -n "$libs" ]
    ok $? "$name names its plugins"
    for lib in $libs; do
        base=$(basename "$lib")
        case "$lib" in
        "$GGMLC_BUILDDIR/tests/plugin-copies/"*) st=0 ;;
        *) st=1 ;;
        esac
        ok $st "$name: $base is loaded from tests/plugin-copies/, not where make install relinks"
        la=$(ls "$GGMLC_BUILDDIR"/plugins/*/"${base%.so}.la" 2>/dev/null | head -n 1)
        [ -f "$lib" ] && [ -n "$la" ] && [ ! "$lib" -ot "$la" ]
        ok $? "$name: $base is a copy of the plugin as last built (${la#"$GGMLC_BUILDDIR"/})"
    done
done
tap_done
