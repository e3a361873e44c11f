/*
 * type-traits.c - per-type CPU kernels (see cpu-impl.h): the activation
 * conversion (from_float) and dot product (vec_dot) of each weight type,
 * with the dot product taken from the best path this CPU runs
 * (quant-dot.h).  The path follows cpu_simd_level(), so GGMLC_CPU_PATH
 * also selects the quantized kernels.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "ops-ew.h"
#include "quant-dot.h"
#include "quant-match.h"
#include "simd.h"

static struct cpu_type_traits traits[CPU_QUANT_PATHS][GGML_TYPE_COUNT];
static cpu_vec_dot_rows_table rows_kernels[CPU_QUANT_PATHS];
static cpu_vec_dot_wrows_table wrows_kernels[CPU_QUANT_PATHS]; /* the K-quants' mat-vecs */
static pthread_once_t traits_once = PTHREAD_ONCE_INIT;

/* F16C where the CPU has it (the bits of ggmlc_fp32_to_fp16, NaN included): a decode step
 * stores its keys and values into an F16 cache through this, one value at a time 2% of a
 * single-threaded Q4_0 token. */
static void fp32_to_fp16_row(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t n) {
    ew_f32_to_f16_row(n, y, x);
}

static void fp32_to_bf16_row(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t n) {
    for (int64_t i = 0; i < n; i++) ((ggml_bf16_t *)y)[i] = ggmlc_fp32_to_bf16(x[i]);
}

static void fp32_copy_row(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t n) {
    memcpy(y, x, (size_t)n * sizeof *x);
}

/* As in ggml, f32 to i32 truncates toward zero (saturating here; NaN gives 0). */
static void fp32_to_i32_row(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t n) {
    int32_t *out = y;
    for (int64_t i = 0; i < n; i++) out[i] = ew_f32_to_i32(x[i]);
}

/* f32 rows to Q8_0 as ggml's CPU backend quantizes them (the activations of Q4_0, Q5_0, Q8_0,
 * IQ4_NL and MXFP4 products, and rows stored into a Q8_0 KV cache): per block of 32,
 * d = amax / 127 (stored as f16) and q = x * id rounded half to even, with id = 127 / amax on
 * x86 (ggml's AVX kernels) and 1 / d elsewhere (its NEON and scalar kernels).  The core's
 * reference quantizer (for files) multiplies by 1 / d and rounds halves away from zero, as
 * ggml's reference does; on x86 the two differ in the last bit of id and at exact halves,
 * enough for a quantized model's greedy tokens to part from ggml's after a few tokens. */
/* Sixteen lanes of float bits, as GCC's vector extension: elementwise code that every clone
 * compiles to its own vectors (the scalar loops it replaces did not vectorize). */
typedef uint32_t bits16 __attribute__((vector_size(64)));

/* Of n floats (n a multiple of 16), NaNs passed over: the largest magnitude among the
 * non-negative ones (*pos) and among the negative ones (*neg), as float bits, which for
 * non-negative floats order as unsigned integers. */
static inline __attribute__((always_inline)) void max_magnitudes(const float *x, int n,
                                                                 uint32_t *pos, uint32_t *neg) {
    bits16 p = {0}, q = {0};
    for (int j = 0; j < n; j += 16) {
        bits16 b;
        memcpy(&b, x + j, sizeof b);
        const bits16 m = b & 0x7fffffffu, finite = (bits16)(m <= 0x7f800000u),
                     negative = (bits16)(b >> 31 != 0);
        const bits16 mp = m & finite & ~negative, mq = m & finite & negative;
        const bits16 gp = (bits16)(mp > p), gq = (bits16)(mq > q); /* all ones where greater */
        p = (mp & gp) | (p & ~gp);
        q = (mq & gq) | (q & ~gq);
    }
    *pos = *neg = 0;
    for (int l = 0; l < 16; l++) {
        *pos = p[l] > *pos ? p[l] : *pos;
        *neg = q[l] > *neg ? q[l] : *neg;
    }
}

static inline float float_of_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The largest magnitude of n floats (what `a > amax ? a : amax` from 0 gives). */
static inline __attribute__((always_inline)) float max_magnitude(const float *x, int n) {
    uint32_t pos, neg;
    max_magnitudes(x, n, &pos, &neg);
    return float_of_bits(pos > neg ? pos : neg);
}

/* The first of n floats of largest magnitude, NaNs passed over; 0 when all are 0. */
static inline __attribute__((always_inline)) float first_max_magnitude(const float *x, int n) {
    uint32_t pos, neg;
    max_magnitudes(x, n, &pos, &neg);
    if (pos != neg) return pos > neg ? float_of_bits(pos) : -float_of_bits(neg);
    int first = 0; /* +a and -a both (or all zero): the first decides */
    while (first < n - 1 && fabsf(x[first]) != float_of_bits(pos)) first++;
    return pos ? x[first] : 0.0f;
}

static EW_CLONES void fp32_to_q8_0_row(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / QK8_0; b++, x += QK8_0) {
        const float amax = max_magnitude(x, QK8_0);
        const float d = amax / 127.0f;
        y[b].d = ggmlc_fp32_to_fp16(d);
#if defined(__x86_64__) || defined(__i386__)
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
#else
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
#endif
        for (int j = 0; j < QK8_0; j++) y[b].qs[j] = (int8_t)rintf(x[j] * id); /* default mode: half to even */
    }
}

/* Q8_K rows with the bytes of the core's reference quantizer (ggml's x86 quantize_row_q8_K
 * is its generic code), in loops that vectorize: the scale from the first value of largest
 * magnitude, each value rounded half to even and capped at 127 as there. */
static EW_CLONES void fp32_to_q8_K_row(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy,
                                       int64_t k) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        const float max = first_max_magnitude(x, QK_K);
        if (max == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = (int)rintf(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

/* The format activations are quantized to before the dot product (ggml's choice). */
static enum ggml_type vec_dot_type_of(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16: return type;
    case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_1: return GGML_TYPE_Q8_1;
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q8_0:
    case GGML_TYPE_IQ4_NL: case GGML_TYPE_MXFP4:                 return GGML_TYPE_Q8_0;
    case GGML_TYPE_Q1_0: case GGML_TYPE_Q2_0: case GGML_TYPE_NVFP4: return GGML_TYPE_Q8_0;
    default:                                                     return GGML_TYPE_Q8_K;
    }
}

/* Conversion of f32 rows to a type: ggml's CPU rounding for Q8_0 and f16/bf16, the core's
 * reference quantizers for the others (Q8_K: the reference's bytes, vectorized). */
static ggml_from_float_t from_float_of(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F32:  return fp32_copy_row;
    case GGML_TYPE_F16:  return fp32_to_fp16_row;
    case GGML_TYPE_BF16: return fp32_to_bf16_row;
    case GGML_TYPE_I32:  return fp32_to_i32_row;
    case GGML_TYPE_Q8_0: return fp32_to_q8_0_row;
    case GGML_TYPE_Q8_K: return fp32_to_q8_K_row;
    default:             return ggml_get_type_traits(type)->from_float_ref;
    }
}

static void build_tables(void) {
    cpu_vec_dot_table dots[CPU_QUANT_PATHS] = {{0}};
    cpu_quant_dot_fill_generic(dots[CPU_QUANT_GENERIC]);
    cpu_quant_dot_fill_lowbit(dots[CPU_QUANT_GENERIC]);
    cpu_quant_dot_fill_avx2(dots[CPU_QUANT_AVX2]);
    /* The AVX-512 fills are compiled for AVX-512 (their table copies use zmm registers): only
     * where the CPU has it; elsewhere that path's tables fall back to the lower paths. */
    const bool vnni = cpu_quant_path_available(CPU_QUANT_AVX512VNNI);
    if (vnni) cpu_quant_dot_fill_avx512vnni(dots[CPU_QUANT_AVX512VNNI]);
    cpu_vec_dot_rows_table rows[CPU_QUANT_PATHS] = {{0}};
    cpu_quant_rows_fill_generic(rows[CPU_QUANT_GENERIC]);
    cpu_quant_rows_fill_avx2(rows[CPU_QUANT_AVX2]);
    if (vnni) cpu_quant_rows_fill_avx512vnni(rows[CPU_QUANT_AVX512VNNI]);
    cpu_quant_rows_k_fill_generic(rows[CPU_QUANT_GENERIC]);
    cpu_quant_rows_k_fill_avx2(rows[CPU_QUANT_AVX2]);
    if (vnni) cpu_quant_rows_k_fill_avx512vnni(rows[CPU_QUANT_AVX512VNNI]);
    /* Q8_0 and Q4_0 sum in ggml's order on every path (quant-match.h) */
    cpu_qmatch_fill_generic(dots[CPU_QUANT_GENERIC], rows[CPU_QUANT_GENERIC]);
    cpu_qmatch_fill_avx2(dots[CPU_QUANT_AVX2], rows[CPU_QUANT_AVX2]);
    if (vnni) cpu_qmatch_fill_avx512vnni(dots[CPU_QUANT_AVX512VNNI], rows[CPU_QUANT_AVX512VNNI]);
    for (int p = 0; p < CPU_QUANT_PATHS; p++) {
        for (int t = 0; t < GGML_TYPE_COUNT; t++) {
            ggml_vec_dot_t dot = NULL;
            for (int q = p; q >= 0 && !dot; q--) dot = dots[q][t]; /* fall back to a lower path */
            const bool usable = dot && ggml_type_size((enum ggml_type)t) != 0;
            traits[p][t] = usable ? (struct cpu_type_traits){from_float_of((enum ggml_type)t), dot, vec_dot_type_of((enum ggml_type)t)}
                                  : (struct cpu_type_traits){from_float_of((enum ggml_type)t), NULL, GGML_TYPE_COUNT};
        }
    }
    cpu_vec_dot_wrows_table wrows[CPU_QUANT_PATHS] = {{0}};
    cpu_quant_wrows_fill_avx2(wrows[CPU_QUANT_AVX2]);
    if (vnni) cpu_quant_wrows_fill_avx512vnni(wrows[CPU_QUANT_AVX512VNNI]);
    for (int p = 0; p < CPU_QUANT_PATHS; p++)
        for (int t = 0; t < GGML_TYPE_COUNT; t++) {
            for (int q = p; q >= 0 && !rows_kernels[p][t]; q--) rows_kernels[p][t] = rows[q][t];
            for (int q = p; q >= 0 && !wrows_kernels[p][t]; q--) wrows_kernels[p][t] = wrows[q][t];
        }
}

bool cpu_quant_path_available(enum cpu_quant_path path) {
    const struct cpu_simd_features *f = cpu_simd_features();
    switch (path) {
    case CPU_QUANT_GENERIC:    return true;
    case CPU_QUANT_AVX2:       return f->avx2 && f->fma && f->f16c;
    case CPU_QUANT_AVX512VNNI: return cpu_quant_path_available(CPU_QUANT_AVX2) && f->avx512f && f->avx512bw &&
                                      f->avx512vl && f->avx512vnni;
    default:                   return false;
    }
}

const struct cpu_type_traits *cpu_type_traits_on_path(enum ggml_type type, enum cpu_quant_path path) {
    static const struct cpu_type_traits none = {NULL, NULL, GGML_TYPE_COUNT};
    pthread_once(&traits_once, build_tables);
    if ((unsigned)type >= GGML_TYPE_COUNT || (unsigned)path >= CPU_QUANT_PATHS) return &none;
    return &traits[path][type];
}

cpu_vec_dot_rows_t cpu_vec_dot_rows_on_path(enum ggml_type type, enum cpu_quant_path path) {
    pthread_once(&traits_once, build_tables);
    if ((unsigned)type >= GGML_TYPE_COUNT || (unsigned)path >= CPU_QUANT_PATHS) return NULL;
    return rows_kernels[path][type];
}

static enum cpu_quant_path quant_path_of(enum cpu_simd_level level) {
    enum cpu_quant_path path = CPU_QUANT_GENERIC;
    switch (level) {
    case CPU_SIMD_AVX512: path = cpu_quant_path_available(CPU_QUANT_AVX512VNNI) ? CPU_QUANT_AVX512VNNI : CPU_QUANT_AVX2; break;
    case CPU_SIMD_AVX2:   path = CPU_QUANT_AVX2; break;
    default:              break;
    }
    return cpu_quant_path_available(path) ? path : CPU_QUANT_GENERIC;
}

enum cpu_quant_path cpu_current_quant_path(void) {
    /* each level's path plus one (0: not worked out yet), worked out once: every kernel table
     * lookup asks, row by row */
    static atomic_int path_of_level[CPU_SIMD_COUNT];
    const enum cpu_simd_level level = cpu_simd_level();
    int known = atomic_load_explicit(&path_of_level[level], memory_order_relaxed);
    if (!known)
        atomic_store_explicit(&path_of_level[level], known = 1 + (int)quant_path_of(level),
                              memory_order_relaxed);
    return (enum cpu_quant_path)(known - 1);
}

const struct cpu_type_traits *cpu_get_type_traits(enum ggml_type type) {
    return cpu_type_traits_on_path(type, cpu_current_quant_path());
}

cpu_vec_dot_rows_t cpu_get_vec_dot_rows(enum ggml_type type) {
    return cpu_vec_dot_rows_on_path(type, cpu_current_quant_path());
}

cpu_vec_dot_wrows_t cpu_get_vec_dot_wrows(enum ggml_type type) {
    if (cpu_qmatch_type(type)) return cpu_qmatch_wrows(type);
    pthread_once(&traits_once, build_tables);
    return wrows_kernels[cpu_current_quant_path()][type];
}
