#!/bin/sh
# test-progress.sh - ggmlc-gguf quantize shows its progress bar on a terminal (stderr; run under
# script(1) for a pseudo-terminal) and writes nothing to stderr on a pipe (TAP).

: "${GGMLC_BUILDDIR:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-progress.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
gguf="$GGMLC_BUILDDIR/tools/ggmlc-gguf"
if ! "$GGMLC_BUILDDIR/tools/ggmlc-train" --epochs 1 --quiet --save "$tmp/model.gguf" >/dev/null 2>&1; then
    echo "1..0 # SKIP no model could be trained to quantize"
    exit 0
fi
echo "1..3"
"$gguf" quantize "$tmp/model.gguf" "$tmp/pipe.gguf" q8_0 >"$tmp/out.txt" 2>"$tmp/err.txt"
st=$?
if [ $st -eq 0 ] && [ ! -s "$tmp/err.txt" ] && grep -q "written to" "$tmp/out.txt"; then
    echo "ok 1 - on a pipe: no progress, nothing on stderr"
else
    echo "not ok 1 - on a pipe: status $st, stderr:"; sed 's/^/# /' "$tmp/err.txt"
fi
if ! command -v script >/dev/null 2>&1; then
    echo "ok 2 # SKIP script(1) is not installed"
    echo "ok 3 # SKIP script(1) is not installed"
    exit 0
fi
script -qec "'$gguf' quantize '$tmp/model.gguf' '$tmp/tty.gguf' q8_0" /dev/null >"$tmp/tty.txt" 2>&1
if grep -q "quantizing  0\.0/0\.0 MiB \[=*>*\.*\] ETA" "$tmp/tty.txt"; then
    echo "ok 2 - on a terminal: the bar is drawn"
else
    echo "not ok 2 - on a terminal: no bar"; sed 's/^/# /' "$tmp/tty.txt" | head -5
fi
# the bar is cleared before each line of the table and at the end, so no line carries it
if ! tr '\r' '\n' <"$tmp/tty.txt" | grep -q "ETA.*written to\|ETA.*Dense" && grep -q "written to" "$tmp/tty.txt" &&
    cmp -s "$tmp/pipe.gguf" "$tmp/tty.gguf"; then
    echo "ok 3 - on a terminal: the bar never mixes with the table, and the same file is written"
else
    echo "not ok 3 - on a terminal: the bar mixes with the table or the files differ"
fi
