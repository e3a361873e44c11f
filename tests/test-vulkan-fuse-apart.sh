#!/bin/sh
# test-vulkan-fuse-apart.sh - test-vulkan-fuse on the integer-dot kernels with the activations
# quantized apart from the products (GGMLC_VK_MVQ_SELF=0, as for large weights): by a quantize-q8
# dispatch, or by the fused norm, the GLU or decode attention that makes them (rows_mul_q8_f32,
# glu_q8_f32, fattn_vec_*_q8).
: "${GGMLC_BUILDDIR:?run through make check}"
GGMLC_VK_MVQ_KERNEL=dot GGMLC_VK_MVQ_SELF=0 exec "$GGMLC_BUILDDIR/tests/test-vulkan-fuse"
