/*
 * types.c - the element type table (names, block geometry, conversions)
 * and f16/bf16 conversion.
 *
 * Block sizes and byte sizes are those of ggml's formats, so that files
 * and tensors are interchangeable.  Quantized types get their to_float /
 * from_float_ref from core/quants.c.
 */
#include "ggml-impl.h"
#include "quants.h"

#define QK_K 256

static void f16_to_float(const void *x, float *y, int64_t n) { ggml_fp16_to_fp32_row(x, y, n); }
static void f16_from_float(const float *x, void *y, int64_t n) { ggml_fp32_to_fp16_row(x, y, n); }
static void bf16_to_float(const void *x, float *y, int64_t n) { ggml_bf16_to_fp32_row(x, y, n); }
static void bf16_from_float(const float *x, void *y, int64_t n) { ggml_fp32_to_bf16_row_ref(x, y, n); }

#define TRAITS(name_, blck_, size_, quant_, to_, from_) \
    { .type_name = name_, .blck_size = blck_, .blck_size_interleave = 0, .type_size = size_, \
      .is_quantized = quant_, .to_float = to_, .from_float_ref = from_ }

static const struct ggml_type_traits type_traits[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32]     = TRAITS("f32", 1, 4, false, NULL, NULL),
    [GGML_TYPE_F16]     = TRAITS("f16", 1, 2, false, f16_to_float, f16_from_float),
    [GGML_TYPE_BF16]    = TRAITS("bf16", 1, 2, false, bf16_to_float, bf16_from_float),
    [GGML_TYPE_F64]     = TRAITS("f64", 1, 8, false, NULL, NULL),
    [GGML_TYPE_I8]      = TRAITS("i8", 1, 1, false, NULL, NULL),
    [GGML_TYPE_I16]     = TRAITS("i16", 1, 2, false, NULL, NULL),
    [GGML_TYPE_I32]     = TRAITS("i32", 1, 4, false, NULL, NULL),
    [GGML_TYPE_I64]     = TRAITS("i64", 1, 8, false, NULL, NULL),
    [GGML_TYPE_Q4_0]    = TRAITS("q4_0", 32, 2 + 16, true, GGMLC_QUANT_TO_FLOAT(q4_0), GGMLC_QUANT_FROM_FLOAT(q4_0)),
    [GGML_TYPE_Q4_1]    = TRAITS("q4_1", 32, 4 + 16, true, GGMLC_QUANT_TO_FLOAT(q4_1), GGMLC_QUANT_FROM_FLOAT(q4_1)),
    [GGML_TYPE_Q5_0]    = TRAITS("q5_0", 32, 2 + 4 + 16, true, GGMLC_QUANT_TO_FLOAT(q5_0), GGMLC_QUANT_FROM_FLOAT(q5_0)),
    [GGML_TYPE_Q5_1]    = TRAITS("q5_1", 32, 4 + 4 + 16, true, GGMLC_QUANT_TO_FLOAT(q5_1), GGMLC_QUANT_FROM_FLOAT(q5_1)),
    [GGML_TYPE_Q8_0]    = TRAITS("q8_0", 32, 2 + 32, true, GGMLC_QUANT_TO_FLOAT(q8_0), GGMLC_QUANT_FROM_FLOAT(q8_0)),
    [GGML_TYPE_Q8_1]    = TRAITS("q8_1", 32, 4 + 32, true, GGMLC_QUANT_TO_FLOAT(q8_1), GGMLC_QUANT_FROM_FLOAT(q8_1)),
    [GGML_TYPE_Q2_K]    = TRAITS("q2_K", QK_K, 2 * 2 + QK_K / 16 + QK_K / 4, true, GGMLC_QUANT_TO_FLOAT(q2_K), GGMLC_QUANT_FROM_FLOAT(q2_K)),
    [GGML_TYPE_Q3_K]    = TRAITS("q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, true, GGMLC_QUANT_TO_FLOAT(q3_K), GGMLC_QUANT_FROM_FLOAT(q3_K)),
    [GGML_TYPE_Q4_K]    = TRAITS("q4_K", QK_K, 2 * 2 + 12 + QK_K / 2, true, GGMLC_QUANT_TO_FLOAT(q4_K), GGMLC_QUANT_FROM_FLOAT(q4_K)),
    [GGML_TYPE_Q5_K]    = TRAITS("q5_K", QK_K, 2 * 2 + 12 + QK_K / 8 + QK_K / 2, true, GGMLC_QUANT_TO_FLOAT(q5_K), GGMLC_QUANT_FROM_FLOAT(q5_K)),
    [GGML_TYPE_Q6_K]    = TRAITS("q6_K", QK_K, 2 + QK_K / 16 + 3 * QK_K / 4, true, GGMLC_QUANT_TO_FLOAT(q6_K), GGMLC_QUANT_FROM_FLOAT(q6_K)),
    [GGML_TYPE_Q8_K]    = TRAITS("q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2, true, GGMLC_QUANT_TO_FLOAT(q8_K), GGMLC_QUANT_FROM_FLOAT(q8_K)),
    [GGML_TYPE_IQ2_XXS] = TRAITS("iq2_xxs", QK_K, 2 + QK_K / 8 * 2, true, NULL, NULL),
    [GGML_TYPE_IQ2_XS]  = TRAITS("iq2_xs", QK_K, 2 + QK_K / 8 * 2 + QK_K / 32, true, NULL, NULL),
    [GGML_TYPE_IQ3_XXS] = TRAITS("iq3_xxs", QK_K, 2 + 3 * (QK_K / 8), true, NULL, NULL),
    [GGML_TYPE_IQ1_S]   = TRAITS("iq1_s", QK_K, 2 + QK_K / 8 + QK_K / 16, true, NULL, NULL),
    [GGML_TYPE_IQ4_NL]  = TRAITS("iq4_nl", 32, 2 + 16, true, GGMLC_QUANT_TO_FLOAT(iq4_nl), GGMLC_QUANT_FROM_FLOAT(iq4_nl)),
    [GGML_TYPE_IQ3_S]   = TRAITS("iq3_s", QK_K, 2 + 13 * (QK_K / 32) + QK_K / 64, true, NULL, NULL),
    [GGML_TYPE_IQ2_S]   = TRAITS("iq2_s", QK_K, 2 + QK_K / 4 + QK_K / 16, true, NULL, NULL),
    [GGML_TYPE_IQ4_XS]  = TRAITS("iq4_xs", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2, true, GGMLC_QUANT_TO_FLOAT(iq4_xs), GGMLC_QUANT_FROM_FLOAT(iq4_xs)),
    [GGML_TYPE_IQ1_M]   = TRAITS("iq1_m", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, true, NULL, NULL),
    [GGML_TYPE_TQ1_0]   = TRAITS("tq1_0", QK_K, 2 + (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64, true, NULL, NULL),
    [GGML_TYPE_TQ2_0]   = TRAITS("tq2_0", QK_K, 2 + QK_K / 4, true, NULL, NULL),
    [GGML_TYPE_MXFP4]   = TRAITS("mxfp4", 32, 1 + 16, true, GGMLC_QUANT_TO_FLOAT(mxfp4), GGMLC_QUANT_FROM_FLOAT(mxfp4)),
    /* ggml's block sizes (so files holding them load and size right); no conversions yet */
    [GGML_TYPE_NVFP4]   = TRAITS("nvfp4", QK_NVFP4, sizeof(block_nvfp4), true, GGMLC_QUANT_TO_FLOAT(nvfp4), GGMLC_QUANT_FROM_FLOAT(nvfp4)),
    [GGML_TYPE_Q1_0]    = TRAITS("q1_0", QK1_0, sizeof(block_q1_0), true, GGMLC_QUANT_TO_FLOAT(q1_0), GGMLC_QUANT_FROM_FLOAT(q1_0)),
    [GGML_TYPE_Q2_0]    = TRAITS("q2_0", QK2_0, sizeof(block_q2_0), true, GGMLC_QUANT_TO_FLOAT(q2_0), GGMLC_QUANT_FROM_FLOAT(q2_0)),
};

bool ggmlc__type_is_valid(enum ggml_type type) {
    return (unsigned)type < GGML_TYPE_COUNT && type_traits[type].type_size != 0;
}

bool ggmlc__is_float_type(enum ggml_type type) {
    return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
}

const struct ggml_type_traits *ggml_get_type_traits(enum ggml_type type) {
    /* removed type slots and ids past the table: no block, no bytes (ggml reports block size 0) */
    static const struct ggml_type_traits invalid = TRAITS("invalid", 0, 0, false, NULL, NULL);
    return ggmlc__type_is_valid(type) ? &type_traits[type] : &invalid;
}

int64_t ggml_blck_size(enum ggml_type type) { return ggml_get_type_traits(type)->blck_size; }
size_t ggml_type_size(enum ggml_type type) { return ggml_get_type_traits(type)->type_size; }
const char *ggml_type_name(enum ggml_type type) { return ggml_get_type_traits(type)->type_name; }
bool ggml_is_quantized(enum ggml_type type) { return ggml_get_type_traits(type)->is_quantized; }

size_t ggml_row_size(enum ggml_type type, int64_t ne) {
    const int64_t blck = ggml_blck_size(type);
    return blck > 0 ? ggml_type_size(type) * (size_t)(ne / blck) : 0;
}

double ggml_type_sizef(enum ggml_type type) {
    const int64_t blck = ggml_blck_size(type);
    return blck > 0 ? (double)ggml_type_size(type) / (double)blck : 0.0;
}

enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype) {
    switch (ftype) {
    case GGML_FTYPE_ALL_F32:              return GGML_TYPE_F32;
    case GGML_FTYPE_MOSTLY_F16:           return GGML_TYPE_F16;
    case GGML_FTYPE_MOSTLY_BF16:          return GGML_TYPE_BF16;
    case GGML_FTYPE_MOSTLY_Q4_0:          return GGML_TYPE_Q4_0;
    case GGML_FTYPE_MOSTLY_Q4_1:          return GGML_TYPE_Q4_1;
    case GGML_FTYPE_MOSTLY_Q5_0:          return GGML_TYPE_Q5_0;
    case GGML_FTYPE_MOSTLY_Q5_1:          return GGML_TYPE_Q5_1;
    case GGML_FTYPE_MOSTLY_Q8_0:          return GGML_TYPE_Q8_0;
    case GGML_FTYPE_MOSTLY_Q2_K:          return GGML_TYPE_Q2_K;
    case GGML_FTYPE_MOSTLY_Q3_K:          return GGML_TYPE_Q3_K;
    case GGML_FTYPE_MOSTLY_Q4_K:          return GGML_TYPE_Q4_K;
    case GGML_FTYPE_MOSTLY_Q5_K:          return GGML_TYPE_Q5_K;
    case GGML_FTYPE_MOSTLY_Q6_K:          return GGML_TYPE_Q6_K;
    case GGML_FTYPE_MOSTLY_IQ2_XXS:       return GGML_TYPE_IQ2_XXS;
    case GGML_FTYPE_MOSTLY_IQ2_XS:        return GGML_TYPE_IQ2_XS;
    case GGML_FTYPE_MOSTLY_IQ3_XXS:       return GGML_TYPE_IQ3_XXS;
    case GGML_FTYPE_MOSTLY_IQ1_S:         return GGML_TYPE_IQ1_S;
    case GGML_FTYPE_MOSTLY_IQ1_M:         return GGML_TYPE_IQ1_M;
    case GGML_FTYPE_MOSTLY_IQ4_NL:        return GGML_TYPE_IQ4_NL;
    case GGML_FTYPE_MOSTLY_IQ4_XS:        return GGML_TYPE_IQ4_XS;
    case GGML_FTYPE_MOSTLY_IQ3_S:         return GGML_TYPE_IQ3_S;
    case GGML_FTYPE_MOSTLY_IQ2_S:         return GGML_TYPE_IQ2_S;
    case GGML_FTYPE_MOSTLY_MXFP4:         return GGML_TYPE_MXFP4;
    case GGML_FTYPE_MOSTLY_NVFP4:         return GGML_TYPE_NVFP4;
    case GGML_FTYPE_MOSTLY_Q1_0:          return GGML_TYPE_Q1_0;
    case GGML_FTYPE_MOSTLY_Q2_0:          return GGML_TYPE_Q2_0;
    case GGML_FTYPE_MOSTLY_Q4_1_SOME_F16: return GGML_TYPE_Q4_1;
    default:                              return GGML_TYPE_COUNT;
    }
}

/* ---------------------------------------------------------- f16 / bf16 */

float ggml_fp16_to_fp32(ggml_fp16_t x) { return ggmlc_fp16_to_fp32(x); }
ggml_fp16_t ggml_fp32_to_fp16(float x) { return ggmlc_fp32_to_fp16(x); }
float ggml_bf16_to_fp32(ggml_bf16_t x) { return ggmlc_bf16_to_fp32(x); }
ggml_bf16_t ggml_fp32_to_bf16(float x) { return ggmlc_fp32_to_bf16(x); }

void ggml_fp16_to_fp32_row(const ggml_fp16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_fp16_to_fp32(x[i]);
}

void ggml_fp32_to_fp16_row(const float *x, ggml_fp16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_fp32_to_fp16(x[i]);
}

void ggml_bf16_to_fp32_row(const ggml_bf16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_bf16_to_fp32(x[i]);
}

void ggml_fp32_to_bf16_row_ref(const float *x, ggml_bf16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_fp32_to_bf16(x[i]);
}

void ggml_fp32_to_bf16_row(const float *x, ggml_bf16_t *y, int64_t n) { ggml_fp32_to_bf16_row_ref(x, y, n); }
