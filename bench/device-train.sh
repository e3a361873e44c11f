#!/bin/bash
# device-train.sh - the training benchmarks of BENCHMARKS.md ("Training
# (Fashion-MNIST)") on a borrowed GPU machine (the `device` tool), from a build
# made elsewhere: it builds nothing.  Prepare in the checkout (both ignored by git):
#   ./configure --prefix=$PWD/.gpu-prefix/nntrain CFLAGS=-O2 && make install
#   cp /usr/share/datasets/fashion-mnist/*.gz .gpu-prefix/fashion-mnist/
#   .gl/: the Vulkan loader packages (/work/shared/tools/device-vulkan-prep)
# Run there, carrying .gpu-prefix and .gl:  bash bench/device-train.sh [mlp] [vulkan] [cnn] [epoch] [kernels]
# (epoch: `ggmlc-bench train-epoch` MLP and CNN on Vulkan with their round trips per step,
# the CNN's per-dispatch GPU times, and PyTorch on CUDA, batch 32, Fashion-MNIST;
# kernels: the same without PyTorch, 2 epochs each: a quick look at a kernel change.)
# (NN_PREFIX, FASHION_DIR and GL_DIR name other places for the three; PYTHON the one with torch,
# by default the `python3` on the PATH: the GPU machine's /usr/bin/python3 has no torch.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
P=${NN_PREFIX:-$top/.gpu-prefix/nntrain}       # the installed build
DATA=${FASHION_DIR:-$top/.gpu-prefix/fashion-mnist}
GL=${GL_DIR:-$top/.gl}                         # root/*.deb unpacked into /, lib/*.deb elsewhere
what=" ${*:-mlp vulkan cnn} "
log=${OUT:-/tmp}/device-train.log
mkdir -p "$(dirname "$log")"
: >"$log"
say() { echo "$@" | tee -a "$log"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$log"; }

for f in "$GL"/root/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/gl
for f in "$GL"/lib/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/gl; done
export LD_LIBRARY_PATH="$P/lib:/tmp/gl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="$P/bin:/tmp/gl/usr/bin:$PATH"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! vulkaninfo --summary >/dev/null 2>&1 && [ -f $icd ]; then export VK_DRIVER_FILES=$icd; fi

say "== $(uname -n): $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
run "${PYTHON:-python3}" -c 'import torch; print("torch", torch.__version__)'

if [[ $what == *" mlp "* ]]; then
    say "== MLP 784-256-128-10, batch 32, 2 threads: ggmlc 10 epochs, PyTorch 3 epochs (epoch time)"
    GGMLC_PREFIX=$P DATA_DIR=$DATA THREADS=2 PYTORCH_EPOCHS=3 timeout 180 bash "$here/compare-train.sh" mlp 10 32 2>&1 | tee -a "$log"
fi

# The configuration of the Vulkan runs: the H200 first, the CPU (16 threads) for the rest.
write_vulkan_ini() {
    cat >/tmp/ggmlc-vk.ini <<INI
[ggmlc]
backends = vulkan, cpu
[backend.vulkan]
library = $P/lib/ggmlc/vulkan.so
device = auto
[backend.cpu]
library = $P/lib/ggmlc/cpu.so
threads = 16
INI
}

if [[ $what == *" vulkan "* ]]; then
    write_vulkan_ini
    say "== MLP on Vulkan (H200), batch 32, 3 epochs"
    export GGMLC_CONFIG=/tmp/ggmlc-vk.ini
    run timeout 60 ggmlc-train --data "$DATA" --model mlp --epochs 3 --batch 32 --val 0 --backend vulkan
fi

if [[ $what == *" cnn "* ]]; then
    cat >/tmp/ggmlc-cpu16.ini <<INI
[ggmlc]
backends = cpu
[backend.cpu]
library = $P/lib/ggmlc/cpu.so
threads = 16
INI
    say "== CNN, batch 32, 10 epochs, 16 threads (accuracy goal)"
    export GGMLC_CONFIG=/tmp/ggmlc-cpu16.ini
    run timeout 150 ggmlc-train --data "$DATA" --model cnn --epochs 10 --batch 32 --val 0
fi

if [[ $what == *" epoch "* || $what == *" kernels "* ]]; then
    write_vulkan_ini
    export GGMLC_CONFIG=/tmp/ggmlc-vk.ini
    epochs=3
    [[ $what == *" kernels "* ]] && epochs=2
    for model in mlp cnn; do
        say "== ggmlc-bench train-epoch $model on Vulkan, batch 32, Fashion-MNIST, $epochs epochs"
        run timeout 240 ggmlc-bench train-epoch --model $model --batch 32 --epochs $epochs --data "$DATA" --backend vulkan
    done
    ops_models=cnn
    [[ $what == *" kernels "* ]] && ops_models="cnn mlp"
    for model in $ops_models; do
        say "== ${model^^} per-dispatch GPU times (GGMLC_DEBUG=vulkan-ops), 20 steps, summed per shader"
        GGMLC_DEBUG=vulkan-ops timeout 120 ggmlc-bench train-epoch --model $model --batch 32 --epochs 1 --samples 640 \
            --backend vulkan 2>&1 | awk '/dispatch [0-9]+ / { t[$(NF-2)] += $(NF-1); n[$(NF-2)]++ }
            /graph of/ { g += $(NF-4); ng++ }
            END { for (k in t) printf "%12.1f us %6d x %s\n", t[k], n[k], k;
                  printf "%12.1f us %6d x (whole graphs)\n", g, ng }' | sort -rn | head -25 | tee -a "$log"
    done
fi
if [[ $what == *" epoch "* ]]; then
    for model in mlp cnn; do
        say "== PyTorch $model on CUDA, batch 32, 3 epochs"
        run timeout 240 "${PYTHON:-python3}" "$here/pytorch_$model.py" --epochs 3 --batch 32 --device cuda --data-dir "$DATA"
    done
fi
