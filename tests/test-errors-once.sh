#!/bin/sh
# test-errors-once.sh - a tool prints each failure once: the library's log line and the tool's
# message used to repeat it (up to three lines); now stderr holds the tool's one line.  An
# error that no failure reports (a backend that did not load while the CPU did) is still
# printed (TAP).

: "${GGMLC_BUILDDIR:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-errors-once.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
train="$GGMLC_BUILDDIR/tools/ggmlc-train"
gguf="$GGMLC_BUILDDIR/tools/ggmlc-gguf"
echo "not a gguf file" >"$tmp/bad.gguf"
echo "1..8"
n=0
once() { # expected status, text the line must hold, command...
    want=$1 text=$2
    shift 2
    "$@" >/dev/null 2>"$tmp/err.txt"
    st=$?
    n=$((n + 1))
    lines=$(wc -l <"$tmp/err.txt")
    if [ "$st" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -q "$text" "$tmp/err.txt"; then
        echo "ok $n - $(basename "$1") ${2:-} ${3:-}: one line ($(cat "$tmp/err.txt"))"
    else
        echo "not ok $n - $(basename "$1") ${2:-} ${3:-}: status $st (want $want), $lines lines:"
        sed 's/^/# /' "$tmp/err.txt"
    fi
}
once 3 "^ggmlc-train: cannot load the model: .*nothere.gguf" "$train" --load "$tmp/nothere.gguf"
once 3 "^ggmlc-train: cannot load the model: .*bad.gguf" "$train" --load "$tmp/bad.gguf"
once 3 "^ggmlc-train: cannot load the data" "$train" --data "$tmp/none.csv" --epochs 1
once 2 "^ggmlc-train: .*cannot write" "$train" --save "$tmp/no/dir/m.gguf" --epochs 1 --quiet
once 1 "^ggmlc-gguf: .*not a GGUF file" "$gguf" info "$tmp/bad.gguf"
once 1 "^ggmlc-gguf: .*not a GGUF file" "$gguf" quantize "$tmp/bad.gguf" "$tmp/out.gguf" q8_0
once 1 "^ggmlc-bench: no backend 'nope'" "$GGMLC_BUILDDIR/tools/ggmlc-bench" mul_mat --backend nope

# A configured backend that fails to load: said once, and training goes on on the CPU.
cpu_lib=$(sed -n 's/^library = \(.*cpu.so\)$/\1/p' "$GGMLC_CONFIG" | head -1)
printf '[ggmlc]\nbackends = other, cpu\n[backend.other]\nlibrary = %s\n[backend.cpu]\nlibrary = %s\n' \
    "$tmp/none.so" "$cpu_lib" >"$tmp/two.ini"
GGMLC_CONFIG="$tmp/two.ini" "$train" --epochs 1 --limit 64 --quiet >/dev/null 2>"$tmp/err.txt"
st=$?
if [ $st -eq 0 ] && [ "$(grep -c "backend 'other'" "$tmp/err.txt")" -eq 1 ]; then
    echo "ok 8 - a backend that did not load is reported once, training goes on"
else
    echo "not ok 8 - a backend that did not load: status $st"; sed 's/^/# /' "$tmp/err.txt"
fi
