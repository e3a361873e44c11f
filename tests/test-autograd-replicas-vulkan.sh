#!/bin/sh
# test-autograd-replicas-vulkan.sh - test-autograd-replicas with one replica on the CPU and one
# on Vulkan0 (lavapipe in CI): the same weights as one model on the whole batch.
: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
export XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache"
GGMLC_CONFIG="$ini" exec "$GGMLC_BUILDDIR/tests/test-autograd-replicas" CPU Vulkan0
