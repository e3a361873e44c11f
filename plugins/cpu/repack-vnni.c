/*
 * repack-vnni.c - the kernel of repack-x86.c for AVX-512 VNNI CPUs: each
 * lane's four products summed by one vpdpbusd (the same exact integers, so
 * the same bits).
 */
#define REPACK_VNNI
#include "repack-x86.c"
