#!/bin/bash
# device-llama.sh - llama.cpp on ggmlc against llama.cpp on its own ggml, on a borrowed GPU
# machine (the `device` tool): prompt processing (pp) and token generation (tg) of a random
# llama-layout model in F16, Q8_0 and Q4_0, on Vulkan0 (all layers offloaded) and on the CPU,
# one table with each tg beside its memory-bandwidth bound.  It builds nothing: prepare here
# with bench/device-llama-prep.sh (.gpu-prefix/llama.tar.xz, unpacked here into /tmp) and
# /work/shared/tools/device-vulkan-prep (.gl), then run there, carrying both:
#   bash bench/device-llama.sh
# Settings (environment): DIMS (100m; or tiny, or EMBD,FF,LAYERS,HEADS,KV_HEADS,CTX), TYPES
# ("f16 q8_0 q4_0"), WHERE ("vulkan cpu"), THREADS (16), PP (512), TG (128), REPS (3),
# LLAMA_PREFIX and GL_DIR (other places for the two folders), PYTHON (one with numpy), GGMLC_VK_SOFTWARE=1 (let ggmlc
# and ggml take a CPU-type Vulkan device such as lavapipe: for trying the script without a GPU).
# The models are made there (make-llama-model.py, then ggmlc-gguf quantize) in /tmp/llmodels.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
P=${LLAMA_PREFIX:-$top/.gpu-prefix/llama}
if [ ! -d "$P" ] && [ -f "$P.tar.xz" ]; then
    rm -rf /tmp/llbench && mkdir -p /tmp/llbench
    tar -C /tmp/llbench -xJf "$P.tar.xz" 2>/dev/null ||   # without xz: Python's tarfile
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$P.tar.xz" /tmp/llbench
    P=/tmp/llbench/llama
fi
GL=${GL_DIR:-$top/.gl}
DIMS=${DIMS:-100m} TYPES=${TYPES:-f16 q8_0 q4_0} WHERE=${WHERE:-vulkan cpu}
THREADS=${THREADS:-16} PP=${PP:-512} TG=${TG:-128} REPS=${REPS:-3}
log=${OUT:-/tmp}/device-llama.log
models=/tmp/llmodels
mkdir -p "$(dirname "$log")" "$models"
: >"$log"
say() { echo "$@" | tee -a "$log"; }
[ -x "$P/ggml/bin/llama-drive" ] && [ -x "$P/llama-ggmlc/bin/llama-drive" ] ||
    { say "device-llama: no builds under $P (run bench/device-llama-prep.sh here and carry .gpu-prefix/llama.tar.xz)"; exit 2; }

# The Vulkan loader (and libinih, which libggmlc links) from .gl, as device-train.sh does.
if [ -d "$GL" ]; then
    for f in "$GL"/root/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
    ldconfig 2>/dev/null
    mkdir -p /tmp/gl
    for f in "$GL"/lib/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/gl; done
fi
base_libs=/tmp/gl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH="/tmp/gl/usr/bin:$PATH"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! vulkaninfo --summary >/dev/null 2>&1 && [ -f $icd ]; then export VK_DRIVER_FILES=$icd; fi

say "== $(uname -n): $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverVersion" | head -4 | tee -a "$log"

# ggml was built for AVX2 + the AVX-512 of Zen 4 / Sapphire Rapids (device-llama-prep.sh);
# on a CPU without them its runs would die on an illegal instruction, so they are skipped.
ggml_ok=1
for flag in avx2 fma f16c bmi2 avx512f avx512bw avx512vl avx512dq avx512vbmi avx512_vnni avx512_bf16; do
    grep -qw $flag /proc/cpuinfo || { say "!! this CPU lacks $flag: ggml's runs are skipped"; ggml_ok=0; }
done

# ggmlc's configurations: the GPU first (its CPU backend for the rest), and the CPU alone.
vk_device=auto
[ "${GGMLC_VK_SOFTWARE:-0}" = 1 ] && vk_device=any && export GGML_VK_VISIBLE_DEVICES=0
cat >/tmp/ggmlc-llama-vulkan.ini <<INI
[ggmlc]
backends = vulkan, cpu
[backend.vulkan]
library = $P/ggmlc/lib/ggmlc/vulkan.so
device = $vk_device
[backend.cpu]
library = $P/ggmlc/lib/ggmlc/cpu.so
threads = $THREADS
INI
cat >/tmp/ggmlc-llama-cpu.ini <<INI
[ggmlc]
backends = cpu
[backend.cpu]
library = $P/ggmlc/lib/ggmlc/cpu.so
threads = $THREADS
INI

ggmlc_env() { env GGMLC_CONFIG="/tmp/ggmlc-llama-$1.ini" LD_LIBRARY_PATH="$P/llama-ggmlc/lib:$P/ggmlc/lib:$base_libs" "${@:2}"; }

say "== models: $DIMS, F32 made by make-llama-model.py, the rest by ggmlc-gguf quantize"
py=
for c in ${PYTHON:-} python3 /usr/bin/python3; do "$c" -c 'import numpy' 2>/dev/null && py=$c && break; done
[ -n "$py" ] || { say "device-llama: no python3 with numpy (set PYTHON)"; exit 1; }
if ! PYTHONPATH="$P/gguf-py" "$py" "$here/make-llama-model.py" "$models/m-f32.gguf" --dims "$DIMS" >>"$log" 2>&1; then
    say "device-llama: make-llama-model.py failed (see $log)"; exit 1
fi
for t in $TYPES; do
    ggmlc_env cpu "$P/ggmlc/bin/ggmlc-gguf" quantize "$models/m-f32.gguf" "$models/m-$t.gguf" "$t" >/dev/null 2>>"$log" ||
        { say "device-llama: ggmlc-gguf quantize to $t failed"; exit 1; }
done

# memory-bandwidth bound of the CPU runs: ggmlc-bench memread, 1 GiB, THREADS threads
memread=$(ggmlc_env cpu "$P/ggmlc/bin/ggmlc-bench" memread --size 268435456 --threads "$THREADS" --reps 5 2>&1 |
          sed -n 's/.*, \([0-9.]*\) GB\/s.*/\1/p' | tail -1)
say "== memread, $THREADS threads: ${memread:-?} GB/s (the CPU bound); the GPU bound takes the H200's 4800 GB/s"

# drive LIB WHERE MODEL: one llama-drive run ("pp X tg Y tokens ...", or "failed")
drive() {
    local ngl=0 out
    [ "$2" = vulkan ] && ngl=99
    if [ "$1" = ggml ]; then
        out=$(LD_LIBRARY_PATH="$P/ggml/lib:$base_libs" timeout 300 "$P/ggml/bin/llama-drive" "$3" "$THREADS" "$PP" "$TG" "$REPS" $ngl 2>>"$log")
    else
        out=$(ggmlc_env "$2" timeout 300 "$P/llama-ggmlc/bin/llama-drive" "$3" "$THREADS" "$PP" "$TG" "$REPS" $ngl 2>>"$log")
    fi
    echo "$1 $2 $(basename "$3"): $out" | tr '\n' ' ' >>"$log"; echo >>"$log"
    local pp tg
    pp=$(echo "$out" | sed -n 's/.* pp[0-9]* \([0-9.]*\) tok\/s.*/\1/p')
    tg=$(echo "$out" | sed -n 's/.* tg[0-9]* \([0-9.]*\) ms\/tok.*/\1/p')
    [ -n "$pp" ] && [ -n "$tg" ] && echo "$pp $tg $(echo "$out" | grep '^tokens' | md5sum | cut -c1-8)" || echo "failed"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }

say ""
say "pp$PP in tokens/s, tg$TG in ms/token (best of $REPS); x = ggmlc / ggml for pp, ggml / ggmlc for tg (> 1: ggmlc faster)"
say "| model | where | ggml pp | ggmlc pp | x | ggml tg | ggmlc tg | x | tg bound | ggmlc % of bound | tokens |"
say "|---|---|---|---|---|---|---|---|---|---|---|"
for t in $TYPES; do
    m=$models/m-$t.gguf
    bytes=$(stat -c %s "$m")
    for w in $WHERE; do
        a=failed
        [ $ggml_ok = 1 ] && a=$(drive ggml "$w" "$m")
        b=$(drive ggmlc "$w" "$m")
        read -r gpp gtg gtok <<<"$a"
        read -r cpp ctg ctok <<<"$b"
        [ "$a" = failed ] && gpp=- gtg=- gtok=x
        [ "$b" = failed ] && cpp=- ctg=- ctok=y
        gbs=${memread:-0}; [ "$w" = vulkan ] && gbs=4800
        bound=$(awk -v by="$bytes" -v g="$gbs" 'BEGIN { if (g > 0) printf "%.3f", by / g / 1e6; else printf "-" }')
        pct=$(awk -v b="$bound" -v t="$ctg" 'BEGIN { if (b + 0 > 0 && t + 0 > 0) printf "%.0f%%", 100 * b / t; else printf "-" }')
        same=$([ "$gtok" = "$ctok" ] && echo same || echo differ)
        [ "$a" = failed ] || [ "$b" = failed ] && same=-
        say "| $DIMS $t ($((bytes / 1048576)) MiB) | $w ${THREADS}t | $gpp | $cpp | $(ratio "$cpp" "$gpp") | $gtg | $ctg | $(ratio "$gtg" "$ctg") | $bound ms | $pct | $same |"
    done
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg); log: $log"
