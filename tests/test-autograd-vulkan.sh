#!/bin/sh
# test-autograd-vulkan.sh - test-autograd (or the test program named by $1, such as
# test-autograd-golden) on the Vulkan device Vulkan0, named (lavapipe in CI): the same checks
# as on the CPU.  Skipped without the Vulkan plugin or a Vulkan device.
: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
export XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache"
GGMLC_CONFIG="$ini" exec "$GGMLC_BUILDDIR/tests/${1:-test-autograd}" Vulkan0
