/*
 * test-cpu-repack.c - the CPU device's CPU_REPACK buffer type (plugins/cpu/repack.h):
 * offered as ggml's extra buffer type; the Q4_0, IQ4_NL, MXFP4, Q4_K and Q2_K weights it
 * packs are stored in the documented interleaved layout and read back in ggml's
 * layout, for whole tensors, odd byte ranges, views, memsets and copies; supports_op
 * accepts only MUL_MAT of a packed weight (not rows that are no multiple of 8, other
 * types or other ops, as ggml's repack buffer type); a graph with an unsupported
 * node fails with an error; hostile sizes are refused.  The products' bits are
 * test-quant-match's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { K = 32 * 5, ROWS = 16 };

/* The packed types, a row length for each, and their blocks' fields (repack.h): byte j of
 * unit u of row r's field lies at 8 * at + 8 * unit * u + unit * r + j of the group's block. */
static const struct packed_case {
    enum ggml_type type;
    int64_t k;
    struct {
        int at, size, unit;
    } fields[4];
} cases[] = {
    {GGML_TYPE_Q4_0, K, {{0, 2, 2}, {2, 16, 4}}},
    {GGML_TYPE_IQ4_NL, K, {{0, 2, 2}, {2, 16, 4}}},
    {GGML_TYPE_MXFP4, K, {{0, 1, 1}, {1, 16, 4}}},
    {GGML_TYPE_Q4_K, 512, {{0, 2, 2}, {2, 2, 2}, {4, 12, 4}, {16, 128, 4}}},
    {GGML_TYPE_Q2_K,
     512,
     {{0, 16, 4}, {16, 64, 4}, {80, 2, 2}, {82, 2, 2}}}, /* CPUs with AVX-512 only */
};

static ggml_backend_dev_t cpu_dev(void) { return ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0); }

static ggml_backend_buffer_type_t *extra_bufts(void) {
    typedef ggml_backend_buffer_type_t *(*extra_bufts_fn)(ggml_backend_dev_t);
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    extra_bufts_fn fn = reg ? (extra_bufts_fn)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts") : NULL;
    return fn ? fn(cpu_dev()) : NULL;
}

/* rows x k bytes of random weights of a type. */
static uint8_t *quant_bytes(enum ggml_type type, int64_t k, int rows) {
    float *w = malloc(sizeof(float) * k * rows);
    for (int64_t i = 0; i < k * rows; i++) w[i] = test_normal();
    uint8_t *q = malloc(ggml_row_size(type, k) * rows);
    ggml_quantize_chunk(type, w, q, 0, rows, k, NULL);
    free(w);
    return q;
}

/* The bytes a whole-tensor get_tensor gives back. */
static bool reads_back(const struct ggml_tensor *t, const uint8_t *want) {
    const size_t n = ggml_nbytes(t);
    uint8_t *got = malloc(n);
    ggml_backend_tensor_get(t, got, 0, n);
    const bool same = memcmp(got, want, n) == 0;
    free(got);
    return same;
}

static void check_offer(ggml_backend_buffer_type_t buft) {
    ggml_backend_buffer_type_t *list = extra_bufts();
    tap_ok(list && list[0] && !list[1], "the CPU registry offers one extra buffer type");
    tap_ok(buft && strcmp(ggml_backend_buft_name(buft), "CPU_REPACK") == 0, "named CPU_REPACK, as ggml's");
    tap_ok(buft && !ggml_backend_buft_is_host(buft), "not a host buffer type (packed bytes are not ggml's layout)");
    tap_ok(buft && ggml_backend_dev_supports_buft(cpu_dev(), buft), "the CPU device computes on it");
}

/* The packed layout of repack.h, read through the buffer's base. */
static void check_layout(const struct packed_case *c, struct ggml_tensor *w, const uint8_t *q) {
    const size_t row = ggml_row_size(c->type, c->k), bs = ggml_type_size(c->type),
                 nb = c->k / ggml_blck_size(c->type);
    const uint8_t *packed = w->data;
    int bad = 0;
    for (size_t r = 0; r < ROWS; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = q + r * row + b * bs, *grp = packed + ((r / 8) * nb + b) * 8 * bs;
            for (int f = 0; f < 4 && c->fields[f].size; f++) {
                const int at = c->fields[f].at, unit = c->fields[f].unit;
                for (int u = 0; u < c->fields[f].size / unit; u++)
                    bad += memcmp(grp + 8 * at + 8 * unit * u + unit * (r % 8), blk + at + unit * u,
                                  unit) != 0;
            }
        }
    tap_ok(bad == 0, "%s %d x %d stored in the documented layout (%d runs differ)",
           ggml_type_name(c->type), ROWS, (int)c->k, bad);
}

static void check_transfers(ggml_backend_buffer_type_t buft, const struct packed_case *c) {
    const enum ggml_type type = c->type;
    const char *name = ggml_type_name(type);
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, type, c->k, ROWS);
    struct ggml_tensor *odd = ggml_new_tensor_2d(ctx, type, c->k, 12);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    uint8_t *q = quant_bytes(type, c->k, ROWS), *q2 = quant_bytes(type, c->k, ROWS);
    const size_t n = ggml_nbytes(w);

    ggml_backend_tensor_set(w, q, 0, n);
    check_layout(c, w, q);
    tap_ok(reads_back(w, q), "%s: get_tensor gives ggml's bytes back", name);

    for (size_t o = 0; o < n; o += 7) ggml_backend_tensor_set(w, q2 + o, o, o + 7 <= n ? 7 : n - o);
    uint8_t *got = malloc(n);
    for (size_t o = 0; o < n; o += 13) ggml_backend_tensor_get(w, got + o, o, o + 13 <= n ? 13 : n - o);
    tap_ok(memcmp(got, q2, n) == 0,
           "%s: 7-byte writes and 13-byte reads (ranges across blocks and rows)", name);

    struct ggml_tensor *view = ggml_view_2d(ctx, w, c->k, 3, w->nb[1], 5 * w->nb[1]);
    ggml_backend_view_init(view);
    const size_t vn = ggml_nbytes(view);
    ggml_backend_tensor_get(view, got, 0, vn);
    tap_ok(memcmp(got, q2 + 5 * w->nb[1], vn) == 0, "%s: a view of rows 5..7 reads those rows",
           name);

    ggml_backend_tensor_memset(w, 0x5a, 20, 40);
    memset(q2 + 20, 0x5a, 40);
    tap_ok(reads_back(w, q2), "%s: memset_tensor of bytes 20..59 changes those bytes only", name);

    struct ggml_context *hctx = ggml_init((struct ggml_init_params){ggml_tensor_overhead() + n + 64, NULL, false});
    struct ggml_tensor *h = ggml_new_tensor_2d(hctx, type, c->k, ROWS);
    memcpy(h->data, q, n);
    ggml_backend_tensor_copy(h, w);
    tap_ok(reads_back(w, q), "%s: ggml_backend_tensor_copy from host memory", name);
    memset(h->data, 0, n);
    ggml_backend_tensor_copy(w, h);
    tap_ok(memcmp(h->data, q, n) == 0,
           "%s: ggml_backend_tensor_copy to host memory gives ggml's bytes", name);

    uint8_t *q3 = quant_bytes(type, c->k, 12);
    ggml_backend_tensor_set(odd, q3, 0, ggml_nbytes(odd));
    tap_ok(reads_back(odd, q3) && memcmp(odd->data, q3, ggml_nbytes(odd)) == 0,
           "%s: 12 rows (not packed): ggml's layout, read back", name);

    ggmlc_clear_error();
    ggml_backend_tensor_set(w, q, n - 4, 8);
    tap_ok(ggmlc_last_status() != GGMLC_OK, "%s: a write past the tensor's end is refused: %s",
           name, ggmlc_last_error());
    ggmlc_clear_error();
    ggml_backend_tensor_get(w, got, SIZE_MAX - 2, 4);
    tap_ok(ggmlc_last_status() != GGMLC_OK, "%s: a read at offset SIZE_MAX - 2 is refused: %s",
           name, ggmlc_last_error());

    free(got), free(q), free(q2), free(q3);
    ggml_free(hctx);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

static void check_supports(ggml_backend_buffer_type_t buft) {
    struct ggml_context *wctx = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *w = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_0, K, ROWS);
    struct ggml_tensor *w12 = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_0, K, 12);
    struct ggml_tensor *w8 = ggml_new_tensor_2d(wctx, GGML_TYPE_Q8_0, K, ROWS);
    struct ggml_tensor *w3d = ggml_new_tensor_3d(wctx, GGML_TYPE_Q4_0, K, ROWS, 2);
    struct ggml_tensor *wk = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, 512, ROWS);
    struct ggml_tensor *wnl = ggml_new_tensor_2d(wctx, GGML_TYPE_IQ4_NL, K, ROWS);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);

    struct ggml_context *ctx = ggml_init((struct ggml_init_params){32 * ggml_tensor_overhead() + (1 << 20), NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, 3);
    struct ggml_tensor *x3d = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, 3, 2);
    struct ggml_tensor *x16 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, K, 3);
    struct ggml_tensor *idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    struct ggml_tensor *plain = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, K, ROWS);
    ggml_backend_dev_t dev = cpu_dev();
    tap_ok(ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w, x)), "MUL_MAT of a packed Q4_0 weight: supported");
    tap_ok(ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, plain, x)), "MUL_MAT of a plain Q4_0 weight: supported");
    tap_ok(ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, wnl, x)),
           "MUL_MAT of a packed IQ4_NL weight: supported");
    tap_ok(ggml_backend_dev_supports_op(
               dev, ggml_mul_mat(ctx, wk, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 512, 3))),
           "MUL_MAT of a packed Q4_K weight: supported");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w12, x)), "12 rows (not a multiple of 8) in CPU_REPACK: refused");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w8, x)), "Q8_0 in CPU_REPACK (not repacked here): refused");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w3d, x3d)),
           "MUL_MAT of a 3-D Q4_0 stack in CPU_REPACK: refused");
    struct ggml_tensor *ids2 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, 3);
    tap_ok(
        ggml_backend_dev_supports_op(
            dev, ggml_mul_mat_id(ctx, w3d, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, 1, 3), ids2)),
        "MUL_MAT_ID of a packed stack of 2 Q4_0 experts: supported (as ggml's buffer)");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w, x16)), "F16 activations: refused");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_get_rows(ctx, w, idx)), "GET_ROWS of a packed weight: refused");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, ggml_view_2d(ctx, w, K, 8, w->nb[1], 0), x)),
           "MUL_MAT of a view into a packed weight: refused");

    /* an unsupported node in a graph: an error, not garbage or a crash */
    struct ggml_tensor *rows = ggml_get_rows(ctx, w, idx);
    ((int32_t *)idx->data)[0] = 0, ((int32_t *)idx->data)[1] = 3;
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, rows);
    ggmlc_clear_error();
    tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS && ggmlc_last_status() != GGMLC_OK,
           "computing GET_ROWS of a packed weight fails: %s", ggmlc_last_error());
    ggml_free(ctx);
    ggml_backend_buffer_free(buf);
    ggml_free(wctx);
}

static void check_hostile(ggml_backend_buffer_type_t buft) {
    ggmlc_clear_error();
    tap_ok(ggml_backend_buft_alloc_buffer(buft, SIZE_MAX) == NULL && ggmlc_last_status() != GGMLC_OK,
           "a buffer of SIZE_MAX bytes is refused: %s", ggmlc_last_error());
    ggmlc_clear_error();
    tap_ok(ggml_backend_buft_alloc_buffer(buft, SIZE_MAX - 16) == NULL && ggmlc_last_status() != GGMLC_OK,
           "a buffer of SIZE_MAX - 16 bytes is refused: %s", ggmlc_last_error());
    ggml_backend_buffer_t empty = ggml_backend_buft_alloc_buffer(buft, 0);
    tap_ok(empty && ggml_backend_buffer_get_size(empty) == 0, "an empty buffer (llama.cpp's probe of supports_op)");
    if (empty) ggml_backend_buffer_free(empty);
}

int main(void) {
    test_seed(20);
    ggml_backend_buffer_type_t *list = extra_bufts();
    ggml_backend_buffer_type_t buft = list ? list[0] : NULL;
    check_offer(buft);
    if (!buft) return tap_done();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        if (cases[c].type != GGML_TYPE_Q2_K || ggml_cpu_has_avx512())
            check_transfers(buft, &cases[c]);
        else
            tap_skip("Q2_K is packed only on CPUs with AVX-512, as ggml repacks it",
                     "Q2_K layout and transfers");
    check_supports(buft);
    check_hostile(buft);
    return tap_done();
}
