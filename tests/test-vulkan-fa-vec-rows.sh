#!/bin/sh
# test-vulkan-fa-vec-rows.sh - test-vulkan's flash-attention cases with the decode kernel
# (flash-attn-vec.comp) giving each workgroup two rows of a K/V head group, which then share
# each read of K and V (GGMLC_VK_FA_VEC=256,2,8; by default each row has a workgroup of its own,
# plugins/vulkan/ops-nn.c): that shape, its last workgroup half empty where a group has three
# query heads, against the CPU backend.
: "${GGMLC_BUILDDIR:?run through make check}"
GGMLC_VK_FA_VEC=256,2,8 GGMLC_TEST_ONLY=flash_attn exec "$GGMLC_BUILDDIR/tests/test-vulkan"
