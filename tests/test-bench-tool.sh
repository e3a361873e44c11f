#!/bin/sh
# test-bench-tool.sh - ggmlc-bench given sizes too large to allocate (TAP): each ends
# with exit status 2 and a message naming what could not be allocated, never a crash.
# GGMLC_DEBUG=cpu-ops reports the CPU walker's time per kind of node at exit, tokens unchanged.
# decode-graph (a new decode graph per token through the scheduler, graphs rebuilt at the same
# addresses) decodes the same greedy tokens as ggml d99724f built from the same source
# (bench/decode-graph.c), as do its prompts of 8 and 32 tokens (--batch), and refuses a bad shape
# with its usage.

: "${GGMLC_BUILDDIR:?run through make check}"
tool="$GGMLC_BUILDDIR/tools/ggmlc-bench"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-bench-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
. "$GGMLC_TEST_DATA/taplib.sh"

# too_large DESCRIPTION PATTERN ARGS...: exit 2 with PATTERN on stderr
too_large() {
    desc=$1 pattern=$2
    shift 2
    "$tool" "$@" >"$tmp/out.txt" 2>"$tmp/err.txt"
    st=$?
    [ $st -eq 2 ] && grep -q -- "$pattern" "$tmp/err.txt"
    ok $? "$desc: exit 2 with a message (got $st: $(head -n 1 "$tmp/err.txt"))"
}
too_large "memcpy --size 10^18" "cannot allocate the memcpy source" memcpy --size 1000000000000000000
too_large "memcpy --size 2^62 (bytes overflow size_t)" "cannot allocate" memcpy --size 4611686018427387904
too_large "memread --size 10^18" "cannot allocate the memread data" memread --size 1000000000000000000
too_large "mul_mat --compare memcpy --size 10^18" "cannot allocate the memcpy source" \
    mul_mat --m 4 --n 4 --k 4 --reps 1 --compare memcpy --size 1000000000000000000
too_large "graph-overhead --nodes 10^18" "cannot allocate a graph" graph-overhead --nodes 1000000000000000000

# decode_tokens THREADS: the greedy tokens' checksum of a tiny F32 model equals ggml's
decode_tokens() {
    "$tool" decode-graph --layers 2 --embd 64 --heads 4 --kv-heads 2 --ff 128 --vocab 128 --ctx 32 \
        --tokens 40 --threads "$1" >"$tmp/out.txt" 2>"$tmp/err.txt"
    st=$?
    # recorded from bench/decode-graph.c built against ggml d99724f (docs/tools.md)
    [ $st -eq 0 ] && grep -q "tokens checksum 1b3878fa51697038" "$tmp/out.txt"
    same=$?
    got=$(tail -n 1 "$tmp/out.txt")
    ok $same "decode-graph, $1 thread(s): 40 greedy tokens as ggml's (got $st: $got)"
}
decode_tokens 1
decode_tokens 2
# prompt_tokens BATCH CHECKSUM: 20 prompts of BATCH tokens, each started by the last one's argmax
prompt_tokens() {
    "$tool" decode-graph --layers 2 --embd 64 --heads 4 --kv-heads 2 --ff 128 --vocab 128 --ctx 32 \
        --tokens 20 --batch "$1" --threads 2 >"$tmp/out.txt" 2>"$tmp/err.txt"
    st=$?
    [ $st -eq 0 ] && grep -q "tokens checksum $2" "$tmp/out.txt"
    ok $? "decode-graph --batch $1: 20 prompts' greedy tokens as ggml's (got $st: $(tail -n 1 "$tmp/out.txt"))"
}
prompt_tokens 8 f93b15c9975f9722  # recorded from ggml d99724f, as above
prompt_tokens 32 917f24fe623b1880
GGMLC_DEBUG=cpu-ops decode_tokens 2
grep -q "^ggmlc cpu-ops: [1-9][0-9]* graphs" "$tmp/err.txt" && grep -q "^  MUL_MAT  *f32  *f32  *1 row .* nodes" "$tmp/err.txt"
ok $? "GGMLC_DEBUG=cpu-ops: the walker's time per kind of node (got: $(head -n 2 "$tmp/err.txt" | tr '\n' ' '))"
"$tool" decode-graph --embd 63 >"$tmp/out.txt" 2>"$tmp/err.txt"
st=$?
[ $st -eq 2 ] && grep -q "usage: decode-graph" "$tmp/err.txt"
ok $? "decode-graph --embd 63 (not a multiple of 2 * heads): exit 2 with the usage (got $st)"
"$tool" decode-graph --ctx 32 --batch 33 >"$tmp/out.txt" 2>"$tmp/err.txt"
st=$?
[ $st -eq 2 ] && grep -q "usage: decode-graph" "$tmp/err.txt"
ok $? "decode-graph --batch 33 --ctx 32 (a prompt longer than the cache): exit 2 with the usage (got $st)"

tap_done
