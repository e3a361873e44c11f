/*
 * quant-dot.h - dot products of quantized weight rows with activation rows
 * quantized on the fly (Q8_0, Q8_1 or Q8_K, as in ggml), in portable C
 * (quant-dot.c), AVX2 (quant-dot-avx2.c) and AVX-512 VNNI
 * (quant-dot-avx512.c).  type-traits.c picks a path at run time.
 *
 * Every kernel has ggml's vec_dot signature and computes one dot product
 * (nrc == 1; the strides bs, bx, by are unused): *s = sum_i x_i * y_i over
 * n values, x of the weight type, y of its vec_dot_type.
 */
#ifndef GGMLC_CPU_QUANT_DOT_H
#define GGMLC_CPU_QUANT_DOT_H

#include "cpu-impl.h"
#include "ggml-impl.h"
#include "quants.h"

/* The code paths, from the most portable up. */
enum cpu_quant_path {
    CPU_QUANT_GENERIC = 0,
    CPU_QUANT_AVX2,        /* AVX2 + FMA: maddubs/madd integer dots */
    CPU_QUANT_AVX512VNNI,  /* AVX-512 BW/VL + VNNI: vpdpbusd integer dots */
    CPU_QUANT_PATHS
};

/* One kernel per weight type; a path leaves NULL where it has no kernel of its own. */
typedef ggml_vec_dot_t cpu_vec_dot_table[GGML_TYPE_COUNT];

CPU_HIDDEN void cpu_quant_dot_fill_generic(cpu_vec_dot_table table);
CPU_HIDDEN void cpu_quant_dot_fill_avx2(cpu_vec_dot_table table);
CPU_HIDDEN void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table table);

/* Whether this CPU can run a path, and the traits of a type on that path (a path
 * falls back to the next lower one for types it has no kernel for). */
CPU_HIDDEN bool cpu_quant_path_available(enum cpu_quant_path path);
CPU_HIDDEN const struct cpu_type_traits *cpu_type_traits_on_path(enum ggml_type type, enum cpu_quant_path path);

#endif /* GGMLC_CPU_QUANT_DOT_H */
