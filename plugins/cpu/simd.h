/*
 * simd.h - run-time CPU feature detection and the choice of SIMD code path.
 *
 * One build runs on any x86-64: kernels for AVX-512, AVX2 (+FMA, F16C) and
 * portable C are compiled side by side (per-file target pragmas) and chosen
 * once, from cpuid and the state the OS saves (xgetbv).  The environment
 * variable GGMLC_CPU_PATH=generic|avx2|avx512 forces a lower path (tests,
 * benchmarks); a path the CPU cannot run is never chosen.
 */
#ifndef GGMLC_CPU_SIMD_H
#define GGMLC_CPU_SIMD_H

#include <stdbool.h>

#include "cpu-impl.h"

/* Code paths, from the most portable up. */
enum cpu_simd_level {
    CPU_SIMD_GENERIC = 0,
    CPU_SIMD_AVX2    = 1, /* AVX2 + FMA + F16C */
    CPU_SIMD_AVX512  = 2, /* AVX-512 F, BW, DQ, VL */
    CPU_SIMD_COUNT
};

/* What the CPU and the OS together support (all false off x86-64). */
struct cpu_simd_features {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512dq, avx512vl;
    bool avx512vnni, avx512bf16;
};

/* The detected features (detection runs once, thread-safely). */
CPU_HIDDEN const struct cpu_simd_features *cpu_simd_features(void);
/* The best level this CPU runs, ignoring GGMLC_CPU_PATH. */
CPU_HIDDEN enum cpu_simd_level cpu_simd_best_level(void);
/* The level in use: the best one, or the lower one GGMLC_CPU_PATH asks for. */
CPU_HIDDEN enum cpu_simd_level cpu_simd_level(void);
/* Name of the path in use: "avx512", "avx2" or "generic". */
CPU_HIDDEN const char *cpu_simd_path(void);
/* Name of a level ("generic", "avx2", "avx512"). */
CPU_HIDDEN const char *cpu_simd_level_name(enum cpu_simd_level level);
/* Test hook: use `level` from now on (clamped to the best one); returns the level set. */
CPU_HIDDEN enum cpu_simd_level cpu_simd_force_level(enum cpu_simd_level level);

#endif /* GGMLC_CPU_SIMD_H */
