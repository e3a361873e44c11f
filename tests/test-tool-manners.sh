#!/bin/sh
# test-tool-manners.sh - every installed program answers --help and --version on stdout with
# exit status 0, and has a valid manual page in man/ (section 1), as have the configuration
# file (ggmlc.ini(5)) and the library (ggmlc(7)); pages are checked with groff's warnings
# when groff is installed (TAP).

: "${GGMLC_BUILDDIR:?run through make check}"
srcdir="${GGMLC_TEST_DATA:?run through make check}/.."
# The installed programs, as the generated Makefile lists them.
programs=$(awk '/^bin_PROGRAMS =/ { on = 1 } on { print; if ($0 !~ /\\$/) exit }' \
    "$GGMLC_BUILDDIR/Makefile" | sed 's/^bin_PROGRAMS =//; s/\$(EXEEXT)//g; s/\\//g')
pages="ggmlc.ini.5 ggmlc.7"
n_programs=$(echo $programs | wc -w)
echo "1..$((n_programs * 3 + 2))"
n=0
check() { # status, description
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
valid_page() { # file: exists, and groff (when present) finds nothing to warn about
    [ -s "$1" ] || return 1
    command -v groff >/dev/null 2>&1 || return 0
    warnings=$(groff -z -man -ww "$1" 2>&1)
    [ -z "$warnings" ] || { echo "$warnings" | sed 's/^/# /'; return 1; }
}
for p in $programs; do
    name=$(basename "$p")
    out=$("$GGMLC_BUILDDIR/$p" --help 2>/dev/null)
    st=$?
    [ $st -eq 0 ] && echo "$out" | grep -qi "usage"
    check $? "$name --help: exit 0 (got $st) and a usage on stdout"
    out=$("$GGMLC_BUILDDIR/$p" --version 2>/dev/null)
    st=$?
    [ $st -eq 0 ] && echo "$out" | grep -q "^$name (ggmlc) [0-9]"
    check $? "$name --version: exit 0 (got $st) and '$name (ggmlc) VERSION' ($out)"
    valid_page "$srcdir/man/$name.1"
    check $? "man/$name.1 exists and is valid"
done
for page in $pages; do
    valid_page "$srcdir/man/$page"
    check $? "man/$page exists and is valid"
done
