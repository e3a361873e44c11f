#!/bin/sh
# test-autograd-nn-vulkan.sh - test-autograd-nn on the Vulkan device Vulkan0, named (lavapipe in
# CI): modules, optimizers and schedulers give PyTorch's numbers there too.  Skipped without the
# Vulkan plugin or a Vulkan device.
: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
export XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache"
GGMLC_CONFIG="$ini" exec "$GGMLC_BUILDDIR/tests/test-autograd-nn" Vulkan0
