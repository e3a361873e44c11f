/*
 * quant-match-vnni.c - the kernels of quant-match-avx2.c for AVX-512 VNNI
 * CPUs: each lane's four products summed by one vpdpbusd (the same exact
 * integers, so the same bits).
 */
#define QMATCH_VNNI
#include "quant-match-avx2.c"
