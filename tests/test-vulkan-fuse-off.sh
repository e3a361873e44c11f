#!/bin/sh
# test-vulkan-fuse-off.sh - test-vulkan-fuse with GGMLC_VK_FUSE=0: the same values as the CPU
# with every node its own dispatch (plugins/vulkan/vk-fuse.c turned off).
: "${GGMLC_BUILDDIR:?run through make check}"
GGMLC_VK_FUSE=0 exec "$GGMLC_BUILDDIR/tests/test-vulkan-fuse"
