#!/bin/sh
# test-default-device.sh - which device computes when none is named (TAP).  A CPU-type Vulkan
# device (lavapipe) is never chosen ahead of the CPU backend unless the configuration names it
# (device = any, a name or an index; or $GGMLC_VK_DEVICE); ggml_backend_init_best (through
# ggmlc-example-matmul), ggmlc-train and ggmlc-info agree on the choice.  Skipped without the
# Vulkan plugin or a Vulkan device.

: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-default-device.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache"
sed 's/^device = .*/device = auto/' "$ini" >"$tmp/auto.ini"
sed 's/^device = .*/device = any/' "$ini" >"$tmp/any.ini"

info_default() { "$GGMLC_BUILDDIR/tools/ggmlc-info" 2>/dev/null | sed -n 's/^Default device ([^)]*): //p'; }
train_device() {
    "$GGMLC_BUILDDIR/tools/ggmlc-train" --epochs 1 --limit 64 2>/dev/null | sed -n 's/^Device: \([^ ]*\).*/\1/p'
}
best_backend() { "$GGMLC_BUILDDIR/examples/ggmlc-example-matmul" 2>/dev/null | sed -n 's/^backend: //p'; }

if ! GGMLC_CONFIG="$tmp/any.ini" "$GGMLC_BUILDDIR/tools/ggmlc-info" 2>/dev/null | grep -q "^  [0-9].*vulkan"; then
    echo "1..0 # SKIP no Vulkan device"
    exit 0
fi
# Whether every Vulkan device is CPU-type (a machine without a GPU, as in CI).
only_cpu_type=yes
GGMLC_CONFIG="$tmp/any.ini" "$GGMLC_BUILDDIR/tools/ggmlc-info" 2>/dev/null | grep "caps: type=" |
    grep -qv "caps: type=cpu" && only_cpu_type=no

echo "1..8"
n=0
check() { # description, condition status
    n=$((n + 1))
    if [ "$2" -eq 0 ]; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
for mode in auto any named; do
    case $mode in
    named) export GGMLC_CONFIG="$tmp/auto.ini" GGMLC_VK_DEVICE=0 ;;
    *) export GGMLC_CONFIG="$tmp/$mode.ini" ;;
    esac
    a=$(info_default) b=$(train_device) c=$(best_backend)
    [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]
    check "device = $mode: ggmlc-info ($a), ggmlc-train ($b) and init_best ($c) agree" $?
    eval "choice_$mode=\$a"
    unset GGMLC_VK_DEVICE
done
if [ "$only_cpu_type" = yes ]; then
    [ "$choice_auto" = CPU ]
    check "device = auto: the CPU backend, not the CPU-type Vulkan device ($choice_auto)" $?
    [ "$choice_any" = Vulkan0 ] && [ "$choice_named" = Vulkan0 ]
    check "named (any, GGMLC_VK_DEVICE=0): the CPU-type Vulkan device ($choice_any, $choice_named)" $?
else
    [ "$choice_auto" != CPU ]
    check "device = auto with a GPU: the GPU ($choice_auto)" $?
    [ "$choice_any" != CPU ]
    check "device = any with a GPU: a Vulkan device ($choice_any)" $?
fi
out=$(GGMLC_CONFIG="$tmp/auto.ini" "$GGMLC_BUILDDIR/tools/ggmlc-info" 2>/dev/null)
echo "$out" | grep -q "rank: default choice: the CPU backend"
check "ggmlc-info says why the CPU ranks where it does" $?
if [ "$only_cpu_type" = yes ]; then
    echo "$out" | grep -q "rank: only when named: a CPU-type Vulkan device"
else
    echo "$out" | grep -q "rank: default choice: a GPU"
fi
check "ggmlc-info says why the Vulkan device ranks where it does" $?
out=$(GGMLC_CONFIG="$tmp/auto.ini" "$GGMLC_BUILDDIR/tools/ggmlc-train" --epochs 1 --limit 64 \
    --backend Vulkan0 2>/dev/null)
echo "$out" | grep -q "^Device: Vulkan0"
check "--backend Vulkan0 uses it under device = auto" $?
