/*
 * quantize.c - public quantization entry points: ggml_quantize_chunk,
 * ggml_quantize_requires_imatrix, ggml_quantize_init/free and
 * ggml_validate_row_data.
 */
#include "ggml-impl.h"
#include "quants.h"

static ggmlc_quantize_fn quantizer_of(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q4_0:   return ggmlc__quantize_q4_0;
    case GGML_TYPE_Q4_1:   return ggmlc__quantize_q4_1;
    case GGML_TYPE_Q5_0:   return ggmlc__quantize_q5_0;
    case GGML_TYPE_Q5_1:   return ggmlc__quantize_q5_1;
    case GGML_TYPE_Q2_K:   return ggmlc__quantize_q2_K;
    case GGML_TYPE_Q3_K:   return ggmlc__quantize_q3_K;
    case GGML_TYPE_Q4_K:   return ggmlc__quantize_q4_K;
    case GGML_TYPE_Q5_K:   return ggmlc__quantize_q5_K;
    case GGML_TYPE_Q6_K:   return ggmlc__quantize_q6_K;
    case GGML_TYPE_IQ4_NL: return ggmlc__quantize_iq4_nl;
    case GGML_TYPE_IQ4_XS: return ggmlc__quantize_iq4_xs;
    default:               return NULL;
    }
}

/* The implemented quantizers need no lookup tables, so there is nothing to prepare. */
void ggml_quantize_init(enum ggml_type type) { (void)type; }
void ggml_quantize_free(void) {}

/* ggml's grid-based 1-2 bit formats need an importance matrix; ggmlc does not quantize them. */
bool ggml_quantize_requires_imatrix(enum ggml_type type) {
    return type == GGML_TYPE_IQ2_XXS || type == GGML_TYPE_IQ2_XS || type == GGML_TYPE_IQ1_S;
}

size_t ggml_quantize_chunk(enum ggml_type type, const float *src, void *dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float *imatrix) {
    if (!ggmlc__type_is_valid(type) || !src || !dst || start < 0 || nrows < 0 || n_per_row <= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_quantize_chunk: invalid arguments (type %d)", (int)type);
        return 0;
    }
    const int64_t blck = ggml_blck_size(type);
    if (n_per_row % blck != 0 || start % n_per_row != 0) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggml_quantize_chunk: %s rows of %lld values (start %lld) are not whole blocks of %lld",
                        ggml_type_name(type), (long long)n_per_row, (long long)start, (long long)blck);
        return 0;
    }
    const size_t row_size = ggml_row_size(type, n_per_row);
    char *out = (char *)dst + (size_t)(start / n_per_row) * row_size;
    const float *in = src + start;
    const ggmlc_quantize_fn fn = quantizer_of(type);
    if (fn) return fn(in, out, nrows, n_per_row, imatrix);
    if (type == GGML_TYPE_F32) {
        memcpy(out, in, (size_t)(nrows * n_per_row) * sizeof(float));
        return (size_t)nrows * row_size;
    }
    const ggml_from_float_t from_float = ggml_get_type_traits(type)->from_float_ref;
    if (!from_float) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "ggml_quantize_chunk: cannot quantize to %s", ggml_type_name(type));
        return 0;
    }
    from_float(in, out, nrows * n_per_row);
    return (size_t)nrows * row_size;
}

/* ------------------------------------------------------- validation */

static bool finite_f16(ggml_fp16_t h) { return (h & 0x7c00) != 0x7c00; }

/* Check the f16 fields at the given byte offsets of every block. */
static bool check_f16_fields(const uint8_t *data, size_t nblocks, size_t block_size, size_t off0, size_t off1,
                             enum ggml_type type) {
    for (size_t i = 0; i < nblocks; i++) {
        const size_t offs[2] = {off0, off1};
        for (int f = 0; f < 2; f++) {
            if (offs[f] == SIZE_MAX) continue;
            ggml_fp16_t h;
            memcpy(&h, data + i * block_size + offs[f], sizeof h);
            if (!finite_f16(h)) {
                ggmlc_set_error(GGMLC_ERR_FORMAT, "ggml_validate_row_data: %s block %zu has a NaN/Inf scale",
                                ggml_type_name(type), i);
                return false;
            }
        }
    }
    return true;
}

static bool check_float_values(const uint8_t *data, size_t n, enum ggml_type type) {
    for (size_t i = 0; i < n; i++) {
        double v;
        if (type == GGML_TYPE_F32) { float f; memcpy(&f, data + 4 * i, 4); v = f; }
        else if (type == GGML_TYPE_F64) memcpy(&v, data + 8 * i, 8);
        else if (type == GGML_TYPE_F16) { ggml_fp16_t h; memcpy(&h, data + 2 * i, 2); v = ggmlc_fp16_to_fp32(h); }
        else { ggml_bf16_t b; memcpy(&b, data + 2 * i, 2); v = ggmlc_bf16_to_fp32(b); }
        if (!isfinite(v)) {
            ggmlc_set_error(GGMLC_ERR_FORMAT, "ggml_validate_row_data: %s value %zu is %s", ggml_type_name(type), i,
                            isnan(v) ? "NaN" : "Inf");
            return false;
        }
    }
    return true;
}

bool ggml_validate_row_data(enum ggml_type type, const void *data, size_t nbytes) {
    if (!ggmlc__type_is_valid(type)) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggml_validate_row_data: invalid type %d", (int)type);
        return false;
    }
    const size_t bs = ggml_type_size(type);
    if (nbytes % bs != 0) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggml_validate_row_data: %zu bytes are not whole %s blocks of %zu bytes",
                        nbytes, ggml_type_name(type), bs);
        return false;
    }
    const uint8_t *p = data;
    const size_t nb = nbytes / bs;
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_F64: case GGML_TYPE_F16: case GGML_TYPE_BF16:
        return check_float_values(p, nb, type);
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q8_0: case GGML_TYPE_IQ4_NL: case GGML_TYPE_IQ4_XS:
        return check_f16_fields(p, nb, bs, 0, SIZE_MAX, type);
    case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_1: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K:
        return check_f16_fields(p, nb, bs, 0, 2, type);
    case GGML_TYPE_Q2_K:
        return check_f16_fields(p, nb, bs, offsetof(block_q2_K, d), offsetof(block_q2_K, dmin), type);
    case GGML_TYPE_Q3_K:
        return check_f16_fields(p, nb, bs, offsetof(block_q3_K, d), SIZE_MAX, type);
    case GGML_TYPE_Q6_K:
        return check_f16_fields(p, nb, bs, offsetof(block_q6_K, d), SIZE_MAX, type);
    case GGML_TYPE_Q8_K:
        for (size_t i = 0; i < nb; i++) {
            float d;
            memcpy(&d, p + i * bs, sizeof d);
            if (!isfinite(d)) {
                ggmlc_set_error(GGMLC_ERR_FORMAT, "ggml_validate_row_data: q8_K block %zu has a NaN/Inf scale", i);
                return false;
            }
        }
        return true;
    case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ3_XXS: case GGML_TYPE_IQ3_S:
    case GGML_TYPE_IQ2_S: case GGML_TYPE_IQ1_S:
        return check_f16_fields(p, nb, bs, 0, SIZE_MAX, type);
    case GGML_TYPE_TQ1_0: case GGML_TYPE_TQ2_0: /* the scale is the last field */
        return check_f16_fields(p, nb, bs, bs - 2, SIZE_MAX, type);
    default: /* integer types, MXFP4 (every exponent byte is a valid power of two), IQ1_M */
        return true;
    }
}
