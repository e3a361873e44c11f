#!/bin/sh
# test-nn-attn-vulkan.sh - tests/test-nn-attn (attention, Transformer and Stable-Diffusion blocks
# against PyTorch golden data, forward and one training step) run again with the Vulkan plugin
# first, through test-nn-vulkan.sh.  Splits on the CPU are allowed: rotary positions are cast to
# I32, which the Vulkan plugin does not do (one node of a few bytes per graph).  The training run
# to an accuracy bound is left out (minutes on lavapipe; the CPU run has it).
: "${GGMLC_TEST_DATA:?run through make check}"
GGMLC_NN_ATTN_NO_TRAINING=1 GGMLC_NN_VULKAN_TEST=test-nn-attn GGMLC_NN_VULKAN_CPU_SPLITS=1 \
    exec "$GGMLC_TEST_DATA/test-nn-vulkan.sh"
