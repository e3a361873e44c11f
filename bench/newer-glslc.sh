#!/bin/bash
# newer-glslc.sh - a current glslc and Vulkan headers for building ggml-vulkan as a user with a
# current Vulkan SDK would (KHR cooperative matrices, NV cooperative matrix 2, integer dot), on a
# Debian 12 machine whose glslc (shaderc 2023.2) has none of them.  Downloads Debian 13's
# glslc, libshaderc1, its C and C++ runtime and libvulkan-dev/spirv-headers (apt-get download
# with a private source list: the system's apt configuration is not touched), unpacks them under
# PREFIX and writes PREFIX/glslc, a wrapper that runs that glslc with its own loader and libc.
#
#   bench/newer-glslc.sh [PREFIX=/tmp/newer-glslc]
#   bench/device-llama-prep.sh with GLSLC=PREFIX/glslc VULKAN_INCLUDE=PREFIX/root/usr/include
#
# Only for the comparison builds outside this repository (ggmlc's own shaders are built with
# the system's glslc).  Needs the Debian archive (deb.debian.org).
set -eu
prefix=${1:-/tmp/newer-glslc}
mkdir -p "$prefix/apt/lists/partial" "$prefix/apt/cache/archives/partial" "$prefix/debs" "$prefix/root"
echo "deb http://deb.debian.org/debian trixie main" >"$prefix/apt/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$prefix/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$prefix/apt/lists" -o Dir::Cache="$prefix/apt/cache"
          -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq
(cd "$prefix/debs" && apt-get "${apt_opts[@]}" download -qq glslc libshaderc1 libc6 libstdc++6 libgcc-s1 \
    libvulkan-dev spirv-headers)
for f in "$prefix"/debs/*.deb; do dpkg -x "$f" "$prefix/root"; done
lib=$prefix/root/usr/lib/x86_64-linux-gnu
cat >"$prefix/glslc" <<SH
#!/bin/sh
exec $lib/ld-linux-x86-64.so.2 --library-path $lib $prefix/root/usr/bin/glslc "\$@"
SH
chmod +x "$prefix/glslc"
"$prefix/glslc" --version | head -1
echo "GLSLC=$prefix/glslc VULKAN_INCLUDE=$prefix/root/usr/include"
