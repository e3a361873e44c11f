#!/bin/bash
# tools/lavapipe-next.sh - the Vulkan tests on the newest lavapipe Debian has (unstable).
#
# Debian 12's lavapipe (Mesa 22.3) has no cooperative matrices, so on it the
# plugin's tensor-core kernels never run.  Mesa 26's lavapipe offers
# VK_KHR_cooperative_matrix (8x8x8 f16 -> f32 fragments) and the flexible sizes
# of VK_NV_cooperative_matrix2, so there the KHR and FLEX variants of
# mm-coopmat-nv.comp run, from the SPIR-V that spv-coopmat-khr.py rewrote, on a
# second driver besides NVIDIA's.  The packages are unpacked, not installed:
# unstable's libc is newer than the system's, so programs run through its own
# dynamic loader with its libraries first.
#
#   tools/lavapipe-next.sh setup           download (Debian's archive only) and unpack
#   tools/lavapipe-next.sh run PROG [ARG]  run PROG with that lavapipe as the only Vulkan driver
#   tools/lavapipe-next.sh check           whether setup worked (status 0) and what it found
#
# env: LAVAPIPE_NEXT_DIR (default /tmp/ggmlc-lavapipe-next), LAVAPIPE_NEXT_SUITE (unstable),
#      LAVAPIPE_NEXT_LIBS (folders searched before unstable's libraries: a build tree's .libs)
set -uo pipefail
dir=${LAVAPIPE_NEXT_DIR:-/tmp/ggmlc-lavapipe-next}
suite=${LAVAPIPE_NEXT_SUITE:-unstable}
root=$dir/root
libdir=$root/usr/lib/x86_64-linux-gnu

die() { echo "lavapipe-next: $*" >&2; exit 1; }

setup() {
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/debs" || die "cannot create $dir"
    cat > "$dir/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # apt on its own lists and an empty package status: the whole dependency closure is fetched
    local apt=(-o Dir::Etc::SourceList="$dir/debian.sources" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$dir/lists"
               -o Dir::Cache="$dir/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
    apt-get "${apt[@]}" -qq update >"$dir/apt.log" 2>&1 || die "apt-get update failed (see $dir/apt.log)"
    local pkgs
    pkgs=$(apt-cache "${apt[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
               --no-enhances mesa-vulkan-drivers 2>>"$dir/apt.log" | grep -v '^ ' | grep -v '<' | sort -u)
    [ -n "$pkgs" ] || die "no dependency list for mesa-vulkan-drivers (see $dir/apt.log)"
    (cd "$dir/debs" && apt-get "${apt[@]}" -qq download $pkgs) >>"$dir/apt.log" 2>&1 || die "download failed (see $dir/apt.log)"
    rm -rf "$root"
    for f in "$dir"/debs/*.deb; do dpkg -x "$f" "$root" || die "cannot unpack $f"; done
    [ -f "$libdir/libvulkan_lvp.so" ] || die "no lavapipe in the packages"
    printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s/libvulkan_lvp.so", "api_version": "1.4.0"}}\n' \
        "$libdir" > "$dir/lvp.json"
    check
}

run() {
    [ -f "$dir/lvp.json" ] || die "not set up (tools/lavapipe-next.sh setup)"
    export VK_DRIVER_FILES=$dir/lvp.json VK_ICD_FILENAMES=$dir/lvp.json
    exec "$libdir/ld-linux-x86-64.so.2" --library-path \
        "${LAVAPIPE_NEXT_LIBS:+$LAVAPIPE_NEXT_LIBS:}$libdir:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu" "$@"
}

check() {
    [ -f "$dir/lvp.json" ] || die "not set up"
    local mesa
    mesa=$(ls "$dir"/debs/mesa-vulkan-drivers_*.deb 2>/dev/null | sed 's/.*drivers_\([^_]*\)_.*/\1/')
    echo "lavapipe-next: Mesa ${mesa:-?} in $root"
}

case "${1:-}" in
setup) setup ;;
run) shift; [ $# -gt 0 ] || die "run: which program?"; run "$@" ;;
check) check ;;
*) die "usage: tools/lavapipe-next.sh setup | run PROGRAM [ARGS] | check" ;;
esac
