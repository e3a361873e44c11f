#!/bin/bash
# device-llama-prep.sh - builds, here, what bench/device-llama.sh runs on the GPU machine (which
# has no compilers' inputs: no glslc, no Vulkan headers, no internet), into the git-ignored
# folder .gpu-prefix/llama of this checkout, packed as .gpu-prefix/llama.tar.xz (carry that, with
# .gl, to the device):
#   ggmlc/      this checkout's ggmlc, `make install DESTDIR=` (CPU and Vulkan plugins, tools)
#   ggml/       llama.cpp with its bundled ggml, CPU + Vulkan (GGML_VULKAN=ON): lib/, bin/
#   llama-ggmlc/  the same llama.cpp on the installed ggmlc (LLAMA_USE_SYSTEM_GGML=ON)
#   gguf-py/    llama.cpp's gguf Python package (bench/make-llama-model.py makes the models there)
# Each llama.cpp gets bench/llama-drive.cpp as bin/llama-drive.
#
#   bench/device-llama-prep.sh [LLAMA_SRC=/work/ext/llama.cpp] [BUILD=/tmp/llbench-build]
#
# GLSLC=PATH and VULKAN_INCLUDE=DIR build ggml-vulkan with that glslc and those Vulkan headers:
# bench/newer-glslc.sh fetches Debian 13's, which give ggml-vulkan its cooperative-matrix and
# integer-dot shaders (Debian 12's glslc gives it only its plain kernels); the comparison in
# BENCHMARKS.md ("llama.cpp on Vulkan against ggml-vulkan") is against such a build.
# Needs: a configured and built checkout with the Vulkan plugin (./configure found glslc),
# cmake, g++, glslc and spirv-headers (apt-get install spirv-headers) for ggml-vulkan.  The
# ggml build is portable, not -march=native: AVX2 and the AVX-512 subset of Zen 4 and Sapphire
# Rapids (device-llama.sh checks the device's CPU flags before running it).  Build folders under
# BUILD are reused when present, so a second run only copies; compilers run through ccache.
# Each libllama takes long on a loaded 2-core machine (tens of minutes): GGML_LLAMA_LIB or
# GGMLC_LLAMA_LIB name an existing libllama.so.0 of the same llama.cpp sources built against
# ggml's headers (any ggml backend set: the backends are separate libraries) or against the
# ggmlc headers installed here, and skip that build.
set -eu
top=$(git rev-parse --show-toplevel)
src=${1:-/work/ext/llama.cpp}
build=${2:-/tmp/llbench-build}
dest=$top/.gpu-prefix/llama
jobs=${JOBS:-2}
[ -f "$src/include/llama.h" ] || { echo "device-llama-prep: no llama.cpp sources at $src" >&2; exit 2; }
[ -f "$top/plugins/vulkan/.libs/vulkan.so" ] || { echo "device-llama-prep: build ggmlc with Vulkan first" >&2; exit 2; }
rm -rf "$dest"
mkdir -p "$dest" "$build"

echo "== ggmlc: make install DESTDIR=$build/ggmlc-stage"
prefix=$(sed -n 's/^prefix = //p' "$top/Makefile")
rm -rf "$build/ggmlc-stage"
nice make -C "$top" -s install DESTDIR="$build/ggmlc-stage" >/dev/null
cp -a "$build/ggmlc-stage$prefix" "$dest/ggmlc"
rm -rf "$dest/ggmlc/share/doc"

# cmake_build DIR ARGS...: configure (once) and build libllama in BUILD/DIR
cmake_build() {
    local dir=$build/$1; shift
    [ -f "$dir/CMakeCache.txt" ] || nice cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_TOOLS=OFF "$@" >"$dir.cmake.log"
    nice cmake --build "$dir" -j"$jobs" --target "${target:-llama}" >"$dir.build.log"
}

# driver OUT INCLUDES... : bench/llama-drive.cpp against the libllama of OUT/lib
driver() {
    local out=$1; shift
    g++ -O2 -std=c++17 "$top/bench/llama-drive.cpp" -I"$src/include" "$@" -L"$out/lib" -lllama \
        -Wl,-rpath,'$ORIGIN/../lib' -o "$out/bin/llama-drive"
}

# ggml-vulkan of c198af4d names VK_EXT_layer_settings (Vulkan headers 1.3.261); with older
# headers (Debian 12 has 1.3.239) a wrapper of vulkan.hpp adds those three declarations.
vk_include=()
shim=$build/vkshim
if ! grep -qs LayerSettingEXT /usr/include/vulkan/vulkan_structs.hpp && [ ! -f "$shim/vulkan/vulkan.hpp" ]; then
    mkdir -p "$shim/vulkan"
    for f in /usr/include/vulkan/*; do ln -s "$f" "$shim/vulkan/"; done
    rm "$shim/vulkan/vulkan.hpp"
    cat >"$shim/vulkan/vulkan.hpp" <<'HPP'
// vulkan.hpp of this system plus VK_EXT_layer_settings (Vulkan 1.3.261), which these
// headers (1.3.239) predate and ggml-vulkan names (device-llama-prep.sh writes this file).
#include_next <vulkan/vulkan.hpp>
#ifndef VK_EXT_layer_settings
#include <vector>
namespace vk {
enum class LayerSettingTypeEXT : int32_t { eBool32 = 0, eInt32 = 1, eInt64 = 2, eUint32 = 3, eUint64 = 4,
                                           eFloat32 = 5, eFloat64 = 6, eString = 7 };
struct LayerSettingEXT {
    const char *pLayerName, *pSettingName;
    LayerSettingTypeEXT type;
    uint32_t valueCount;
    const void *pValues;
};
struct LayerSettingsCreateInfoEXT {
    VkStructureType sType = static_cast<VkStructureType>(1000496000);
    const void *pNext = nullptr;
    uint32_t settingCount;
    const LayerSettingEXT *pSettings;
    LayerSettingsCreateInfoEXT(const std::vector<LayerSettingEXT> &s)
        : settingCount(static_cast<uint32_t>(s.size())), pSettings(s.data()) {}
};
}  // namespace vk
#endif
HPP
fi
[ -f "$shim/vulkan/vulkan.hpp" ] && vk_include=(-DVulkan_INCLUDE_DIR="$shim")
[ -n "${VULKAN_INCLUDE:-}" ] && vk_include=(-DVulkan_INCLUDE_DIR="$VULKAN_INCLUDE")
[ -n "${GLSLC:-}" ] && vk_include+=(-DVulkan_GLSLC_EXECUTABLE="$GLSLC")

echo "== llama.cpp on its ggml, CPU + Vulkan ($build/vk; ggml-vulkan's shaders take a while)"
target=$([ -n "${GGML_LLAMA_LIB:-}" ] && echo ggml || echo llama) cmake_build vk -DGGML_VULKAN=ON -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
    -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON \
    -DGGML_AVX512_BF16=ON "${vk_include[@]}"
mkdir -p "$dest/ggml/lib" "$dest/ggml/bin"
cp -L "$build"/vk/bin/libggml*.so.0 "${GGML_LLAMA_LIB:-$build/vk/bin/libllama.so.0}" "$dest/ggml/lib/"
for f in "$dest"/ggml/lib/*.so.0; do ln -s "$(basename "$f")" "${f%.0}"; done
cp -L /lib/x86_64-linux-gnu/libgomp.so.1 "$dest/ggml/lib/"   # ggml's OpenMP threads
driver "$dest/ggml" -I"$src/ggml/include" -lggml-base   # llama-drive calls ggml_backend_* itself

echo "== llama.cpp on ggmlc ($build/ggmlc)"
mkdir -p "$dest/llama-ggmlc/lib" "$dest/llama-ggmlc/bin"
if [ -n "${GGMLC_LLAMA_LIB:-}" ]; then
    cp -L "$GGMLC_LLAMA_LIB" "$dest/llama-ggmlc/lib/libllama.so.0"
else
    rm -rf "$build/ggmlc"   # ggmlc's headers may have changed since the last build
    cmake_build ggmlc -DLLAMA_USE_SYSTEM_GGML=ON -DCMAKE_PREFIX_PATH="$dest/ggmlc"
    cp -L "$build"/ggmlc/bin/libllama.so.0 "$dest/llama-ggmlc/lib/"
fi
ln -s libllama.so.0 "$dest/llama-ggmlc/lib/libllama.so"
driver "$dest/llama-ggmlc" -I"$dest/ggmlc/include/ggmlc" -I"$top/include" -L"$dest/ggmlc/lib" -lggmlc

cp -r "$src/gguf-py" "$dest/gguf-py"
rm -rf "$dest/ggmlc/include"   # headers were for the build only
find "$dest" -name '*.so*' -type f -exec strip --strip-unneeded {} +
strip "$dest"/*/bin/llama-drive
du -sh "$dest"/*
# ggml-vulkan's SPIR-V alone is over 30 MiB: the carried form is one xz archive (about a
# quarter of that), which device-llama.sh unpacks into /tmp
tar -C "$top/.gpu-prefix" -cf - llama | xz -T2 -6 >"$dest.tar.xz"
ls -la "$dest.tar.xz"
echo "Carry .gpu-prefix/llama.tar.xz and .gl (/work/shared/tools/device-vulkan-prep); run bench/device-llama.sh."
