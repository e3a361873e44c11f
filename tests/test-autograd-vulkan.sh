#!/bin/sh
# test-autograd-vulkan.sh - test-autograd on the Vulkan device Vulkan0, named (lavapipe in CI):
# the same values, gradients, memory and error checks as on the CPU.  Skipped without the
# Vulkan plugin or a Vulkan device.
: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
export XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache"
GGMLC_CONFIG="$ini" exec "$GGMLC_BUILDDIR/tests/test-autograd" Vulkan0
