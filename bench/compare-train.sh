#!/bin/sh
# compare-train.sh - ggmlc-train and PyTorch 1.13 side by side on Fashion-MNIST:
# the same model, batch size, epochs, learning rate and thread count, all 60000
# training images (no validation hold-out), test accuracy on the 10000 test images.
# Prints both runs, then the mean epoch times and their ratio.
#
# Usage: bench/compare-train.sh [mlp|cnn] [EPOCHS] [BATCH]     (default: mlp 10 32)
#   GGMLC_BUILDDIR  build tree with tools/ggmlc-train and plugins/cpu/.libs/cpu.so (default: .)
#   GGMLC_PREFIX    or an installed prefix (bin/ggmlc-train, lib/ggmlc/cpu.so)
#   THREADS         threads of both programs (default 2)
#   DATA_DIR        Fashion-MNIST folder (default /usr/share/datasets/fashion-mnist)
#   PYTORCH_EPOCHS  epochs of the PyTorch run (default: EPOCHS; fewer still time an epoch)
set -u
model=${1:-mlp} epochs=${2:-10} batch=${3:-32}
threads=${THREADS:-2}
data=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${GGMLC_PREFIX:-}" ]; then
    train="$GGMLC_PREFIX/bin/ggmlc-train" cpu="$GGMLC_PREFIX/lib/ggmlc/cpu.so"
else
    build=${GGMLC_BUILDDIR:-.}
    train="$build/tools/ggmlc-train" cpu="$build/plugins/cpu/.libs/cpu.so"
fi
[ -x "$train" ] && [ -f "$cpu" ] || { echo "compare-train.sh: $train or $cpu missing (set GGMLC_BUILDDIR or GGMLC_PREFIX)" >&2; exit 2; }
case $model in mlp | cnn) ;; *) echo "compare-train.sh: model mlp or cnn" >&2; exit 2 ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare-train.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/ggmlc.ini" <<INI
[ggmlc]
backends = cpu
[backend.cpu]
library = $cpu
threads = $threads
INI
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads

echo "== ggmlc-train --model $model --epochs $epochs --batch $batch, $threads threads ($(uname -n), load: $(cut -d' ' -f1-3 /proc/loadavg))"
GGMLC_CONFIG="$tmp/ggmlc.ini" "$train" --data "$data" --model "$model" --epochs "$epochs" --batch "$batch" --val 0 \
    --backend cpu | grep -v '^ ' | tee "$tmp/ggmlc.txt"
echo "== PyTorch, bench/pytorch_$model.py, $threads threads"
/usr/bin/python3 "$here/pytorch_$model.py" --epochs "${PYTORCH_EPOCHS:-$epochs}" --batch "$batch" --threads "$threads" \
    --data-dir "$data" | tee "$tmp/torch.txt"

ours=$(sed -n 's/^epoch time \([0-9.]*\) s.*/\1/p' "$tmp/ggmlc.txt")
theirs=$(sed -n 's/^epoch time \([0-9.]*\) s.*/\1/p' "$tmp/torch.txt")
echo "== $model, batch $batch, $threads threads: ggmlc $(sed -n 's/^test accuracy \([0-9.]*\).*/\1/p' "$tmp/ggmlc.txt") test accuracy," \
    "PyTorch $(sed -n 's/^test accuracy \([0-9.]*\).*/\1/p' "$tmp/torch.txt")"
awk -v a="$ours" -v b="$theirs" 'BEGIN { if (a > 0 && b > 0) printf "== mean epoch time: ggmlc %.2f s, PyTorch %.2f s: ggmlc %.2fx faster\n", a, b, b / a }'
