/*
 * ops-attn-match-avx512.c - the loops of ops-attn-match-x86.c on 16-lane
 * AVX-512 registers (ggml's own width), the tails masked.
 */
#define ATTN_AVX512
#include "ops-attn-match-x86.c"
