#!/bin/sh
# test-gguf-tool.sh - the ggmlc-gguf command-line tool (TAP): info, quantize
# with its per-tensor type rules, dequantize, and the exit status and message
# for bad input (missing and damaged files, unknown types, bad usage, a FIFO,
# /dev/zero, terminal escapes in names, a table of 100000 tensors).

: "${GGMLC_BUILDDIR:?run through make check}"
sample="$GGMLC_BUILDDIR/tests/gguf-sample"
tool="$GGMLC_BUILDDIR/tools/ggmlc-gguf"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-gguf-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
failed=0
ok() { # ok STATUS "description"
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
# type_of FILE NAME: the type column of a tensor in `info` output
type_of() { "$tool" info "$1" | awk -v name="$2" '$2 == name { print $3 }'; }

"$sample" "$tmp/in.gguf"
"$tool" info "$tmp/in.gguf" >"$tmp/info.txt" 2>&1
st=$?
[ $st -eq 0 ] && grep -q 'GGUF version 3, alignment 32' "$tmp/info.txt" && grep -q '^17 key-value pairs' "$tmp/info.txt" \
    && grep -q 'test.arr_str.*str\[3\].*"alpha", "beta"' "$tmp/info.txt" \
    && grep -Eq 'blk\.0\.ffn_up\.weight +q4_K +\[256, 48\] +6912' "$tmp/info.txt"
ok $? "info lists the pairs and a tensor table with type, shape and bytes"

"$tool" quantize "$tmp/in.gguf" "$tmp/q.gguf" q4_K >"$tmp/quant.txt" 2>&1
st=$?
[ $st -eq 0 ] && grep -q 'tensor data:.*MiB ->' "$tmp/quant.txt" && grep -q '\[   1/   8\]' "$tmp/quant.txt"
ok $? "quantize to q4_K reports progress and the size before and after"
[ "$(type_of "$tmp/q.gguf" blk.0.attn_q.weight)" = q4_K ] || [ "$(type_of "$tmp/q.gguf" blk.0.attn_q.weight)" = q5_0 ]
ok $? "an f16 weight matrix of rows of 64 falls back to q5_0 (64 is not a whole q4_K block)"
[ "$(type_of "$tmp/q.gguf" output_norm.weight)" = f32 ] && [ "$(type_of "$tmp/q.gguf" positions)" = i32 ] \
    && [ "$(type_of "$tmp/q.gguf" blk.0.attn_v.weight)" = q8_0 ]
ok $? "norms and 1-D tensors stay f32, integer and already quantized tensors are kept"
"$tool" quantize "$tmp/in.gguf" "$tmp/q0.gguf" q4_0 >/dev/null 2>&1 && [ "$(type_of "$tmp/q0.gguf" token_embd.weight)" = q4_0 ]
ok $? "quantize to q4_0 converts the f32 matrix"

"$tool" dequantize "$tmp/q.gguf" "$tmp/f.gguf" >/dev/null 2>&1
st=$?
types=$("$tool" info "$tmp/f.gguf" | awk '$2 ~ /\./ && $3 ~ /^(f|q|i|b)[0-9a-zK_]+$/ { print $3 }' | sort -u | tr '\n' ' ')
[ $st -eq 0 ] && [ "$types" = "f32 " ]
ok $? "dequantize leaves only f32 weight tensors (got: $types)"

"$tool" info "$tmp/missing.gguf" >"$tmp/err.txt" 2>&1
st=$?
[ $st -eq 1 ] && grep -q 'cannot open' "$tmp/err.txt"
ok $? "info on a missing file exits 1 with a message: $(head -c 120 "$tmp/err.txt")"

head -c 200 "$tmp/in.gguf" >"$tmp/cut.gguf"
"$tool" info "$tmp/cut.gguf" >"$tmp/err.txt" 2>&1
st=$?
[ $st -eq 1 ] && grep -q 'truncated' "$tmp/err.txt"
ok $? "info on a truncated file exits 1 naming the problem: $(head -c 160 "$tmp/err.txt")"

"$tool" quantize "$tmp/in.gguf" "$tmp/x.gguf" q9_9 >"$tmp/err.txt" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "unknown or unsupported type 'q9_9'" "$tmp/err.txt" && [ ! -e "$tmp/x.gguf" ]
ok $? "an unknown type exits 2 and writes nothing"

"$tool" frobnicate >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "an unknown command exits 2"

"$tool" quantize "$tmp/in.gguf" "$tmp/no-such-dir/out.gguf" q8_0 >"$tmp/err.txt" 2>&1
st=$?
[ $st -eq 1 ] && grep -q 'no-such-dir' "$tmp/err.txt" && ! grep -q 'token_embd' "$tmp/err.txt"
ok $? "an unwritable destination exits 1 with a message, before converting anything"

# Hostile input.  Names and strings from a file reach the terminal escaped: no ESC, BEL or
# C1 control, no bidirectional override, no byte that is not UTF-8 (LC_ALL=C grep -P on bytes).
"$sample" --hostile "$tmp/hostile.gguf"
"$tool" info "$tmp/hostile.gguf" >"$tmp/info.txt" 2>&1
st=$?
[ $st -eq 0 ] && ! LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]' "$tmp/info.txt" \
    && iconv -f UTF-8 -t UTF-8 "$tmp/info.txt" >/dev/null 2>&1 \
    && grep -qF 'evil.\x1b[31mred\x1b[0m' "$tmp/info.txt" && grep -qF '"value \x1b]0;title\x07 \x1b[2J"' "$tmp/info.txt" \
    && grep -qF 'evil.c1.\u{009b}31m' "$tmp/info.txt" && grep -qF 'evil.bidi.\u{202e}gpj' "$tmp/info.txt" \
    && grep -qF 'evil.bytes.\xff\xfe\xc3' "$tmp/info.txt" && grep -qF '"\x1b[1mbold"' "$tmp/info.txt" \
    && grep -qF 't.\x1b[5mblink' "$tmp/info.txt" && grep -qF '"ünïcode"' "$tmp/info.txt"
ok $? "info escapes control characters, bidi overrides and invalid UTF-8 in keys, strings and tensor names"

# A FIFO would block the reader forever and /dev/zero is endless: both are refused at once
# (the memory limit turns the old read-until-exhausted into a failure, not a stuck machine).
# AddressSanitizer reserves terabytes of address space for its shadow: no limit under it.
vlimit=1048576
[ -n "${ASAN_OPTIONS:-}" ] && vlimit=unlimited
mkfifo "$tmp/fifo.gguf"
for f in "$tmp/fifo.gguf" /dev/zero; do
    (ulimit -v $vlimit; timeout 10 "$tool" info "$f") >"$tmp/err.txt" 2>&1
    st=$?
    [ $st -eq 1 ] && grep -q 'not a regular file' "$tmp/err.txt"
    ok $? "info on $f exits 1 at once: $(head -c 160 "$tmp/err.txt")"
done

# A table of 100000 tensors: each looked up by name it took many seconds, walked in order well under one.
"$sample" --tensors 100000 "$tmp/many.gguf"
timeout 10 "$tool" info "$tmp/many.gguf" >"$tmp/info.txt" 2>&1
st=$?
[ $st -eq 0 ] && grep -q '^100000 tensors:' "$tmp/info.txt" && grep -Eq '99999  t\.0000099999 +f32 +\[8\] +32 +3199968' "$tmp/info.txt"
ok $? "info lists 100000 tensors within 10 s (status $st)"

echo "1..$n"
exit $failed
