/*
 * test-cpu-repack.c - the CPU device's CPU_REPACK buffer type (plugins/cpu/repack.h):
 * offered as ggml's extra buffer type; Q4_0 weights it packs are stored in the
 * documented interleaved layout and read back in ggml's layout, for whole
 * tensors, odd byte ranges, views, memsets and copies; supports_op accepts
 * only MUL_MAT of a packed weight (not rows that are no multiple of 8, other
 * types or other ops, as ggml's repack buffer type); a graph with an
 * unsupported node fails with an error; hostile sizes are refused.  The
 * products' bits are test-quant-match's.
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

static ggml_backend_dev_t cpu_dev(void) { return ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0); }

static ggml_backend_buffer_type_t *extra_bufts(void) {
    typedef ggml_backend_buffer_type_t *(*extra_bufts_fn)(ggml_backend_dev_t);
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    extra_bufts_fn fn = reg ? (extra_bufts_fn)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts") : NULL;
    return fn ? fn(cpu_dev()) : NULL;
}

/* rows x K Q4_0 bytes of random weights. */
static uint8_t *q4_0_bytes(int rows) {
    float *w = malloc(sizeof(float) * K * rows);
    for (int i = 0; i < K * rows; i++) w[i] = test_normal();
    uint8_t *q = malloc(ggml_row_size(GGML_TYPE_Q4_0, K) * rows);
    ggml_quantize_chunk(GGML_TYPE_Q4_0, w, q, 0, rows, K, NULL);
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
static void check_layout(struct ggml_tensor *w, const uint8_t *q) {
    const size_t row = ggml_row_size(GGML_TYPE_Q4_0, K), nb = K / 32;
    const uint8_t *packed = w->data;
    int bad = 0;
    for (size_t r = 0; r < ROWS; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = q + r * row + b * 18, *grp = packed + ((r / 8) * nb + b) * 144;
            bad += memcmp(grp + 2 * (r % 8), blk, 2) != 0;
            for (int i = 0; i < 4; i++) bad += memcmp(grp + 16 + 32 * i + 4 * (r % 8), blk + 2 + 4 * i, 4) != 0;
        }
    tap_ok(bad == 0, "Q4_0 16 x %d stored in the documented layout (%d runs differ)", K, bad);
}

static void check_transfers(ggml_backend_buffer_type_t buft) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, K, ROWS);
    struct ggml_tensor *odd = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, K, 12);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    uint8_t *q = q4_0_bytes(ROWS), *q2 = q4_0_bytes(ROWS);
    const size_t n = ggml_nbytes(w);

    ggml_backend_tensor_set(w, q, 0, n);
    check_layout(w, q);
    tap_ok(reads_back(w, q), "get_tensor gives ggml's bytes back");

    for (size_t o = 0; o < n; o += 7) ggml_backend_tensor_set(w, q2 + o, o, o + 7 <= n ? 7 : n - o);
    uint8_t *got = malloc(n);
    for (size_t o = 0; o < n; o += 13) ggml_backend_tensor_get(w, got + o, o, o + 13 <= n ? 13 : n - o);
    tap_ok(memcmp(got, q2, n) == 0, "7-byte writes and 13-byte reads (ranges across blocks and rows)");

    struct ggml_tensor *view = ggml_view_2d(ctx, w, K, 3, w->nb[1], 5 * w->nb[1]);
    ggml_backend_view_init(view);
    const size_t vn = ggml_nbytes(view);
    ggml_backend_tensor_get(view, got, 0, vn);
    tap_ok(memcmp(got, q2 + 5 * w->nb[1], vn) == 0, "a view of rows 5..7 reads those rows");

    ggml_backend_tensor_memset(w, 0x5a, 20, 40);
    memset(q2 + 20, 0x5a, 40);
    tap_ok(reads_back(w, q2), "memset_tensor of bytes 20..59 changes those bytes only");

    struct ggml_context *hctx = ggml_init((struct ggml_init_params){ggml_tensor_overhead() + n + 64, NULL, false});
    struct ggml_tensor *h = ggml_new_tensor_2d(hctx, GGML_TYPE_Q4_0, K, ROWS);
    memcpy(h->data, q, n);
    ggml_backend_tensor_copy(h, w);
    tap_ok(reads_back(w, q), "ggml_backend_tensor_copy from host memory");
    memset(h->data, 0, n);
    ggml_backend_tensor_copy(w, h);
    tap_ok(memcmp(h->data, q, n) == 0, "ggml_backend_tensor_copy to host memory gives ggml's bytes");

    uint8_t *q3 = q4_0_bytes(12);
    ggml_backend_tensor_set(odd, q3, 0, ggml_nbytes(odd));
    tap_ok(reads_back(odd, q3) && memcmp(odd->data, q3, ggml_nbytes(odd)) == 0, "12 rows (not packed): ggml's layout, read back");

    ggmlc_clear_error();
    ggml_backend_tensor_set(w, q, n - 4, 8);
    tap_ok(ggmlc_last_status() != GGMLC_OK, "a write past the tensor's end is refused: %s", ggmlc_last_error());
    ggmlc_clear_error();
    ggml_backend_tensor_get(w, got, SIZE_MAX - 2, 4);
    tap_ok(ggmlc_last_status() != GGMLC_OK, "a read at offset SIZE_MAX - 2 is refused: %s", ggmlc_last_error());

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
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w12, x)), "12 rows (not a multiple of 8) in CPU_REPACK: refused");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w8, x)), "Q8_0 in CPU_REPACK (not repacked here): refused");
    tap_ok(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, w3d, x3d)), "a 3-D Q4_0 stack in CPU_REPACK: refused");
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
    check_transfers(buft);
    check_supports(buft);
    check_hostile(buft);
    return tap_done();
}
