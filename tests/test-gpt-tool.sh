#!/bin/sh
# test-gpt-tool.sh - the ggmlc-gpt command-line tool (TAP): a short training run on the shipped
# Sherlock Holmes text reaches a validation loss well below ln 256 (uniform bytes) with
# Keras-style epoch lines, a plot and a checkpoint; generation from it is reproducible with a
# seed, runs past the context and takes a prompt longer than it; bad options, missing, damaged
# or foreign checkpoints and missing text each end with one message and a non-zero status.

: "${GGMLC_BUILDDIR:?run through make check}"
. "$GGMLC_TEST_DATA/taplib.sh"
tool="$GGMLC_BUILDDIR/tools/ggmlc-gpt"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-gpt-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# The text of this source tree, not an installed copy.
GGMLC_DATA_DIR="$GGMLC_TEST_DATA/../data"
export GGMLC_DATA_DIR

# below VALUE BOUND: VALUE < BOUND (decimals)
below() { awk -v v="$1" -v b="$2" 'BEGIN { exit !(v != "" && v + 0 < b + 0) }'; }

# A CI-sized run: 120 steps of 16 x 64 bytes (about 20 s on two cores).  A byte-level model
# that learned nothing scores ln 256 = 5.545 nats; letter frequencies alone about 3.1.
"$tool" train --layers 2 --heads 4 --width 64 --context 64 --batch 16 --steps 120 --eval-every 40 \
    --lr 0.003 --seed 1 --model "$tmp/m.gguf" --plot "$tmp/curves.svg" >"$tmp/train.txt" 2>"$tmp/train.err"
st=$?
val=$(sed -n 's/^final loss [0-9.]* val_loss \([0-9.]*\) .*/\1/p' "$tmp/train.txt")
[ $st -eq 0 ] && below "$val" 3.0
ok $? "120 training steps on the shipped text reach a validation loss < 3.0 nats/byte ($val; ln 256 = 5.545)"
[ "$(grep -c '^Epoch [1-3]/3$' "$tmp/train.txt")" -eq 3 ] &&
    [ "$(grep -c '^40/40 - [0-9]*s - loss: [0-9.]* - val_loss: [0-9.]* - lr: ' "$tmp/train.txt")" -eq 3 ]
ok $? "three Keras-style epochs: 'Epoch N/3', then steps, time, loss and val_loss"
grep -q '<svg' "$tmp/curves.svg" 2>/dev/null && grep -q 'validation' "$tmp/curves.svg"
ok $? "--plot writes the learning curves as SVG"
[ -s "$tmp/m.gguf" ] && "$GGMLC_BUILDDIR/tools/ggmlc-gguf" info "$tmp/m.gguf" 2>/dev/null | grep -q 'ggmlc-gpt'
ok $? "the checkpoint is a GGUF file of architecture ggmlc-gpt"

gen() { "$tool" generate --model "$tmp/m.gguf" "$@"; }
gen --prompt "Holmes" --tokens 80 --seed 7 >"$tmp/a.txt" 2>&1 && gen --prompt "Holmes" --tokens 80 --seed 7 >"$tmp/b.txt" 2>&1 &&
    cmp -s "$tmp/a.txt" "$tmp/b.txt"
ok $? "the same seed generates the same text"
gen --prompt "Holmes" --tokens 80 --seed 8 >"$tmp/c.txt" 2>&1 && ! cmp -s "$tmp/a.txt" "$tmp/c.txt"
ok $? "another seed generates other text"
[ "$(head -c 6 "$tmp/a.txt")" = "Holmes" ] && [ "$(wc -c <"$tmp/a.txt")" -eq 87 ]
ok $? "the output is the prompt, then 80 bytes and a new line"
gen --prompt "Holmes" --tokens 150 --temperature 0 >"$tmp/g1.txt" 2>&1 &&
    gen --prompt "Holmes" --tokens 150 --temperature 0 --seed 9 >"$tmp/g2.txt" 2>&1 && cmp -s "$tmp/g1.txt" "$tmp/g2.txt" &&
    [ "$(wc -c <"$tmp/g1.txt")" -eq 157 ]
ok $? "greedy generation past the 64-byte context ignores the seed"
long=$(awk 'BEGIN { for (i = 0; i < 30; i++) printf "the case of "; }')
gen --prompt "$long" --tokens 20 --stats >"$tmp/long.txt" 2>"$tmp/long.err" && grep -q 'tokens/s' "$tmp/long.err"
ok $? "a prompt longer than the context is cut to its tail; --stats prints the speed"
gen --prompt "Holmes" --tokens 20 --weights q8_0 --stats >"$tmp/q8.txt" 2>"$tmp/q8.err" &&
    grep -q 'q8_0 projections' "$tmp/q8.err" && [ "$(wc -c <"$tmp/q8.txt")" -eq 27 ]
ok $? "--weights q8_0 generates with Q8_0 projections"

# On a Vulkan device (lavapipe in CI) greedy generation gives the CPU's bytes.
vk_ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ -r "$vk_ini" ] && GGMLC_CONFIG="$vk_ini" XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache" \
    "$tool" generate --model "$tmp/m.gguf" --device Vulkan0 --prompt "Holmes" --tokens 40 \
    --temperature 0 >"$tmp/vk.txt" 2>"$tmp/vk.err"; then
    gen --prompt "Holmes" --tokens 40 --temperature 0 >"$tmp/cpu.txt" 2>&1 && cmp -s "$tmp/vk.txt" "$tmp/cpu.txt"
    ok $? "greedy generation on Vulkan0 gives the CPU's 40 bytes"
else
    n=$((n + 1))
    echo "ok $n # SKIP no Vulkan device ($(head -n 1 "$tmp/vk.err" 2>/dev/null))"
fi

# fails EXPECTED_STATUS "description" ARGS...: that status and one message on stderr (a usage
# error may add the line "Try 'ggmlc-gpt --help'.")
fails() {
    want=$1 desc=$2
    shift 2
    "$tool" "$@" >"$tmp/out.txt" 2>"$tmp/err.txt"
    st=$?
    [ $st -eq "$want" ] && [ "$(grep -cv '^Try ' "$tmp/err.txt")" -eq 1 ]
    ok $? "$desc: status $st, $(head -n 1 "$tmp/err.txt")"
}
head -c 2000 "$tmp/m.gguf" >"$tmp/cut.gguf"
echo "not a model" >"$tmp/text.gguf"
fails 4 "a missing checkpoint" generate --model "$tmp/absent.gguf"
fails 4 "a truncated checkpoint" generate --model "$tmp/cut.gguf"
fails 4 "a file that is not GGUF" generate --model "$tmp/text.gguf"
fails 2 "generate without --model" generate --tokens 5
fails 2 "a width that is no multiple of the heads" train --width 30 --heads 4
fails 2 "an unknown option" train --bogus 1
fails 2 "a training option given to generate" generate --model "$tmp/m.gguf" --layers 3
fails 2 "top-p 0" generate --model "$tmp/m.gguf" --top-p 0
fails 2 "an unknown weight type" generate --model "$tmp/m.gguf" --weights q9_9
fails 2 "--weights given to train" train --weights f16
fails 4 "weights of a type that needs an importance matrix" generate --model "$tmp/m.gguf" --weights iq2_xxs
fails 2 "a negative temperature" generate --model "$tmp/m.gguf" --temperature -1
fails 2 "an unknown command" fit
fails 2 "no command" --seed 3
fails 2 "an unknown device" generate --model "$tmp/m.gguf" --device NoSuchDevice
fails 3 "a missing text" train --data "$tmp/absent.txt" --model "$tmp/x.gguf"
fails 2 "a checkpoint path in a missing folder" train --model "$tmp/no/such/m.gguf"
"$tool" --help | grep -q '^Usage: ggmlc-gpt train'
ok $? "--help shows the usage"
tap_done
