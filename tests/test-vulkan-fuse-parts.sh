#!/bin/sh
# test-vulkan-fuse-parts.sh - test-vulkan-fuse with GGMLC_VK_SUBMIT_EVERY=1: each dispatch
# submitted as a part of its segment (plugins/vulkan/vk-record.c, "submitting in parts"), the
# fused kernels, the index checks and the outputs read back spread over several submits; and
# with GGMLC_VK_WAIT_SPIN set, every wait for them polls the fence (vk-device.c), as on a GPU.
: "${GGMLC_BUILDDIR:?run through make check}"
GGMLC_VK_SUBMIT_EVERY=1 GGMLC_VK_WAIT_SPIN=10000000 exec "$GGMLC_BUILDDIR/tests/test-vulkan-fuse"
