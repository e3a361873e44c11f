#!/bin/sh
# test-vulkan-conv-exact.sh - test-vulkan-conv with GGMLC_VK_CONV_CM=0: the Vulkan plugin's
# convolutions take the f32 kernel (no f16 rounding) and must meet the f32 bounds.
: "${GGMLC_BUILDDIR:?run through make check}"
GGMLC_VK_CONV_CM=0 exec "$GGMLC_BUILDDIR/tests/test-vulkan-conv"
