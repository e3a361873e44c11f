#!/bin/sh
# test-vulkan-fuse-dot.sh - test-vulkan-fuse with GGMLC_VK_MVQ_KERNEL=dot: the q4_0 mat-vec and
# its add fused in the integer-dot kernel (mvqd_q4_0_add), which lavapipe does not choose itself.
: "${GGMLC_BUILDDIR:?run through make check}"
GGMLC_VK_MVQ_KERNEL=dot exec "$GGMLC_BUILDDIR/tests/test-vulkan-fuse"
