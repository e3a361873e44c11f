/* test-api-new.c - ggml's newer API in ggmlc: the gated delta rule against a
 * double-precision reference written from the recurrence's definition,
 * circular padding and argsort_top_k against hand-computed values, branch
 * selection, the size queries of the allocators, strided tensor copies,
 * gguf_get_tensor_ne, the meta device and the new types' block sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "gguf.h"
#include "opstest.h"

static struct ggml_tensor *random_tensor(struct ggml_context *ctx, int64_t n0, int64_t n1, int64_t n2, int64_t n3, float lo,
                                         float hi) {
    struct ggml_tensor *t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, n0, n1, n2, n3);
    test_fill_uniform((float *)t->data, (size_t)ggml_nelements(t), lo, hi);
    return t;
}

/* Element (i0, i1, i2, i3) of a contiguous F32 tensor, as double. */
static double at(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return ((const float *)t->data)[((i3 * t->ne[2] + i2) * t->ne[1] + i1) * t->ne[0] + i0];
}

/* The gated delta rule, per head h and sequence s, on a state St[i][j] (key i, value j):
 *   St *= exp(g) (row i by exp(g_i) with a per-key gate), u_j = sum_i St[i][j] k_i,
 *   St[i][j] += k_i beta (v_j - u_j), out_j = sum_i St[i][j] q_i / sqrt(S).
 * Writes outputs [S, H, T, n] then K snapshots (slot r = state after token T-1-r). */
static void delta_reference(const struct ggml_tensor *q, const struct ggml_tensor *k, const struct ggml_tensor *v,
                            const struct ggml_tensor *g, const struct ggml_tensor *beta, const struct ggml_tensor *st0,
                            int64_t K, double *out) {
    const int64_t S = v->ne[0], H = v->ne[1], T = v->ne[2], n = v->ne[3];
    double *St = malloc((size_t)(S * S) * sizeof *St), *u = malloc((size_t)S * sizeof *u);
    double *snaps = out + S * H * T * n;
    for (int64_t s = 0; s < n; s++)
        for (int64_t h = 0; h < H; h++) {
            const int64_t hq = h % q->ne[1], sq = s / (n / q->ne[3]), hk = h % k->ne[1], sk = s / (n / k->ne[3]);
            for (int64_t i = 0; i < S; i++)
                for (int64_t j = 0; j < S; j++) St[i * S + j] = at(st0, i, j, h, s); /* stored value-major */
            for (int64_t t = 0; t < T; t++) {
                for (int64_t i = 0; i < S; i++) {
                    const double decay = exp(at(g, g->ne[0] == 1 ? 0 : i, h, t, s));
                    for (int64_t j = 0; j < S; j++) St[i * S + j] *= decay;
                }
                for (int64_t j = 0; j < S; j++) {
                    u[j] = 0;
                    for (int64_t i = 0; i < S; i++) u[j] += St[i * S + j] * at(k, i, hk, t, sk);
                }
                const double b = at(beta, 0, h, t, s);
                for (int64_t i = 0; i < S; i++)
                    for (int64_t j = 0; j < S; j++) St[i * S + j] += at(k, i, hk, t, sk) * b * (at(v, j, h, t, s) - u[j]);
                for (int64_t j = 0; j < S; j++) {
                    double o = 0;
                    for (int64_t i = 0; i < S; i++) o += St[i * S + j] * at(q, i, hq, t, sq);
                    out[((s * T + t) * H + h) * S + j] = o / sqrt((double)S);
                }
                const int64_t slot = T - 1 - t;
                if (slot < K)
                    for (int64_t i = 0; i < S; i++)
                        for (int64_t j = 0; j < S; j++)
                            snaps[slot * S * S * H * n + ((s * H + h) * S + j) * S + i] = St[i * S + j];
            }
        }
    free(St);
    free(u);
}

static void check_delta(int64_t S, int64_t H_k, int64_t H, int64_t T, int64_t n, bool per_key_gate, int64_t K) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *q = random_tensor(ctx, S, H_k, T, n, -1, 1), *k = random_tensor(ctx, S, H_k, T, n, -0.5f, 0.5f);
    struct ggml_tensor *v = random_tensor(ctx, S, H, T, n, -1, 1);
    struct ggml_tensor *g = random_tensor(ctx, per_key_gate ? S : 1, H, T, n, -0.5f, 0.0f);
    struct ggml_tensor *beta = random_tensor(ctx, 1, H, T, n, 0, 1), *st = random_tensor(ctx, S, S, H, n, -0.3f, 0.3f);
    struct ggml_tensor *r = ggml_gated_delta_net(ctx, q, k, v, g, beta, st, K);
    char what[160];
    snprintf(what, sizeof what, "gated_delta_net S=%lld H_k=%lld H=%lld T=%lld n=%lld %s gate K=%lld", (long long)S,
             (long long)H_k, (long long)H, (long long)T, (long long)n, per_key_gate ? "per-key" : "scalar", (long long)K);
    if (r && ops_compute(ctx, r)) {
        const size_t n_out = (size_t)(S * H * T * n + K * S * S * H * n);
        tap_ok(r->ne[0] == S * H && r->ne[1] == T * n + K * S * n, "%s: shape [S*H, T*n + K*S*n]", what);
        double *ref = calloc(n_out, sizeof *ref);
        float *ref_f = malloc(n_out * sizeof *ref_f);
        delta_reference(q, k, v, g, beta, st, K, ref);
        const int64_t written = S * H * T * n + (T < K ? T : K) * S * S * H * n; /* slots past T are not written */
        for (size_t i = 0; i < n_out; i++) ref_f[i] = (float)ref[i];
        ok_nmse((const float *)r->data, ref_f, (size_t)written, 1e-10, "%s", what);
        free(ref);
        free(ref_f);
    } else if (!r) {
        tap_ok(false, "%s: built (%s)", what, ggmlc_last_error());
    }
    ggml_free(ctx);
}

static void test_delta_refusals(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *q = random_tensor(ctx, 4, 2, 3, 1, -1, 1), *v = random_tensor(ctx, 4, 2, 3, 1, -1, 1);
    struct ggml_tensor *g = random_tensor(ctx, 1, 2, 3, 1, -1, 0), *beta = random_tensor(ctx, 1, 2, 3, 1, 0, 1);
    struct ggml_tensor *st = random_tensor(ctx, 4, 4, 2, 1, -1, 1), *bad = random_tensor(ctx, 4, 4, 3, 1, -1, 1);
    ops_check_rejected(ggml_gated_delta_net(ctx, q, q, v, g, beta, bad, 1), "ggml_gated_delta_net", "a state for 3 heads of 2");
    ops_check_rejected(ggml_gated_delta_net(ctx, q, q, v, g, st, st, 1), "ggml_gated_delta_net", "beta of the state's shape");
    ggmlc_clear_error();
    tap_ok(!ggml_gated_delta_net(ctx, q, q, v, g, beta, st, 0) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "gated_delta_net refuses K = 0");
    ggml_free(ctx);
}

static void test_pad_circular(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2); /* rows [0 1 2], [3 4 5] */
    for (int i = 0; i < 6; i++) ((float *)a->data)[i] = (float)i;
    struct ggml_tensor *r = ggml_pad_ext_circular(ctx, a, 2, 1, 1, 0, 0, 0, 0, 0);
    /* dim 0: [1 2 | 0 1 2 | 0]; dim 1 gets row 1 first (wrapped), then rows 0, 1 */
    const float want[] = {4, 5, 3, 4, 5, 3, 1, 2, 0, 1, 2, 0, 4, 5, 3, 4, 5, 3};
    if (ops_compute(ctx, r)) {
        tap_ok(r->ne[0] == 6 && r->ne[1] == 3, "pad_ext_circular shape [6, 3]");
        tap_ok(memcmp(r->data, want, sizeof want) == 0, "pad_ext_circular takes the padding from the other end");
    }
    struct ggml_tensor *p = ggml_pad_circular(ctx, a, 1, 0, 0, 0);
    const float want_p[] = {0, 1, 2, 0, 3, 4, 5, 3};
    if (ops_compute(ctx, p)) tap_ok(memcmp(p->data, want_p, sizeof want_p) == 0, "pad_circular pads the end");
    ggmlc_clear_error();
    ops_check_rejected(ggml_pad_ext_circular(ctx, a, 4, 0, 0, 0, 0, 0, 0, 0), "ggml_pad_ext_circular", "more than one wrap");
    ggml_free(ctx);
}

static void test_argsort_top_k(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 2);
    const float x[] = {0.5f, 3, -1, 2, 7, 9, 8, 1, 0, 4};
    memcpy(a->data, x, sizeof x);
    struct ggml_tensor *r = ggml_cont(ctx, ggml_argsort_top_k(ctx, a, 3));
    const int32_t want[] = {4, 1, 3, 0, 1, 4};
    if (ops_compute(ctx, r))
        tap_ok(r->ne[0] == 3 && memcmp(r->data, want, sizeof want) == 0, "argsort_top_k: the 3 largest, largest first");
    ggmlc_clear_error();
    tap_ok(!ggml_argsort_top_k(ctx, a, 6), "argsort_top_k refuses k above the row length");
    ggml_free(ctx);
}

static void test_select(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    for (int i = 0; i < 4; i++) ((float *)a->data)[i] = (float)i;
    struct ggml_tensor *branches[2] = {ggml_scale(ctx, a, 2.0f), ggml_scale(ctx, a, -1.0f)};
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    struct ggml_tensor *out = ggml_build_forward_select(gf, branches, 2, 1);
    tap_ok(out == branches[1] && (out->flags & GGML_TENSOR_FLAG_COMPUTE), "build_forward_select returns the chosen branch");
    tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 1) == GGML_STATUS_SUCCESS && ((float *)out->data)[3] == -3.0f,
           "the chosen branch is computed");
    ggmlc_clear_error();
    tap_ok(!ggml_build_forward_select(gf, branches, 2, 2) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "build_forward_select refuses an index past the branches");
    ggml_free(ctx);
}

/* A graph of two products on a no_alloc context, for the size queries. */
static struct ggml_cgraph *size_graph(struct ggml_context *ctx) {
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 32), *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 16);
    ggml_set_input(a);
    ggml_set_input(b);
    struct ggml_tensor *c = ggml_relu(ctx, ggml_mul_mat(ctx, a, b));
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, c);
    return gf;
}

static void test_sizes(void) {
    struct ggml_init_params ip = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_cgraph *gf = size_graph(ctx);
    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
    ggml_gallocr_t ga = ggml_gallocr_new(buft);
    size_t predicted = 0;
    ggml_gallocr_reserve_n_size(ga, gf, NULL, NULL, &predicted);
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) == 0, "gallocr_reserve_n_size allocates nothing");
    tap_ok(ggml_gallocr_reserve(ga, gf) && predicted > 0 && predicted == ggml_gallocr_get_buffer_size(ga, 0),
           "gallocr_reserve_n_size predicts the reserved size (%zu)", predicted);
    ggml_gallocr_free(ga);

    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, 64, false, true);
    size_t sched_size = 0;
    ggml_backend_sched_reserve_size(sched, gf, &sched_size);
    tap_ok(sched_size > 0 && ggml_backend_sched_get_buffer_size(sched, cpu) == 0,
           "sched_reserve_size measures (%zu) without allocating", sched_size);
    tap_ok(ggml_backend_sched_reserve(sched, gf) && ggml_backend_sched_get_buffer_size(sched, cpu) == sched_size,
           "sched_reserve allocates what sched_reserve_size predicted");
    ggml_backend_sched_free(sched);

    const size_t want = ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, buft);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    tap_ok(buf && want >= 64 * 32 * 4 && ggml_backend_buffer_get_size(buf) == want,
           "alloc_ctx_tensors_from_buft_size is the size allocated (%zu)", want);

    /* strided copies: columns 1..2 of the 4 first rows of a */
    struct ggml_tensor *a = ggml_get_first_tensor(ctx);
    float rows[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}}, back[4][2] = {{0}};
    ggml_backend_tensor_set_2d(a, rows, sizeof(float), 2 * sizeof(float), 4, a->nb[1], sizeof rows[0]);
    ggml_backend_tensor_get_2d_async(cpu, a, back, sizeof(float), 2 * sizeof(float), 4, a->nb[1], sizeof back[0]);
    ggml_backend_synchronize(cpu);
    float probe = 0;
    ggml_backend_tensor_get(a, &probe, 2 * a->nb[1] + sizeof(float), sizeof probe);
    tap_ok(memcmp(rows, back, sizeof rows) == 0 && probe == 5.0f, "tensor_set_2d / get_2d_async copy strided chunks");
    ggml_backend_buffer_free(buf);
    ggml_backend_free(cpu);
    ggml_free(ctx);
}

static struct ggml_backend_meta_split_state mirror_all(const struct ggml_tensor *t, void *ud) {
    struct ggml_backend_meta_split_state st = {.axis = GGML_BACKEND_SPLIT_AXIS_MIRRORED, .n_segments = 1};
    return st;
}

static void test_misc(void) {
    tap_ok(ggml_blck_size(GGML_TYPE_Q1_0) == 128 && ggml_type_size(GGML_TYPE_Q1_0) == 18, "q1_0 blocks: 128 values in 18 bytes");
    tap_ok(ggml_blck_size(GGML_TYPE_Q2_0) == 64 && ggml_type_size(GGML_TYPE_Q2_0) == 18, "q2_0 blocks: 64 values in 18 bytes");
    tap_ok(ggml_blck_size(GGML_TYPE_NVFP4) == 64 && ggml_type_size(GGML_TYPE_NVFP4) == 36, "nvfp4 blocks: 64 values in 36 bytes");
    tap_ok(strcmp(ggml_type_name(GGML_TYPE_NVFP4), "nvfp4") == 0 && ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q2_0) == GGML_TYPE_Q2_0,
           "new type names and file types");
    tap_ok(GGML_MAX_NAME >= 128, "GGML_MAX_NAME is %d", GGML_MAX_NAME);

    ggml_backend_dev_t cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_dev_t two[2] = {cpu_dev, cpu_dev};
    tap_ok(cpu_dev && ggml_backend_meta_device(two, 1, NULL, NULL) == NULL, "meta device needs a split-state function");
    tap_ok(ggml_backend_meta_device(two, 1, mirror_all, NULL) == cpu_dev, "meta device over one device is that device");
    ggmlc_clear_error();
    tap_ok(!ggml_backend_meta_device(two, 2, mirror_all, NULL) &&
           ggmlc_last_status() == GGMLC_ERR_UNSUPPORTED, "meta device over 2 devices is refused clearly");
    tap_ok(strcmp(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_MIRRORED), "MIRRORED") == 0, "split axis names");

    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *m = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    struct ggml_tensor *cols = ggml_view_3d(ctx, m, 2, 3, 2, m->nb[1], m->nb[2], 0);
    tap_ok(ggml_is_view(cols) && !ggml_is_view(m), "is_view");
    tap_ok(ggml_is_contiguous_to_1(cols) && !ggml_is_contiguous_to_2(cols) && ggml_is_contiguous_to_3(m),
           "is_contiguous_to_N checks the low dimensions only");
    struct ggml_tensor *mm = ggml_mul_mat(ctx, m, m);
    ggml_mul_mat_set_hint(mm, GGML_HINT_SRC0_IS_HADAMARD);
    tap_ok(mm->op_params[1] == GGML_HINT_SRC0_IS_HADAMARD, "mul_mat_set_hint records the hint");
    ggmlc_clear_error();
    tap_ok(!ggml_dsv4_hc_pre(ctx, m, m) && ggmlc_last_status() == GGMLC_ERR_SHAPE,
           "dsv4 ops refuse mismatched shapes clearly (test-ops-hc computes them)");
    ggmlc_clear_error();
    tap_ok(!ggml_quantize_i8_convrot(ctx, m, 3) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "int8 convrot refuses a group that is no power of 4 clearly (test-ops-sd computes it)");
    ggmlc_clear_error();
    tap_ok(!ggml_interpolate(ctx, m, 2, 2, 2, 1, GGML_SCALE_MODE_NEAREST | GGML_SCALE_FLAG_ANTIALIAS) &&
           ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "interpolate refuses GGML_SCALE_FLAG_ANTIALIAS without bilinear, as ggml");
    ggml_free(ctx);

    struct gguf_context *gg = gguf_init_empty();
    struct ggml_context *tctx = ops_ctx();
    struct ggml_tensor *t = ggml_new_tensor_3d(tctx, GGML_TYPE_F32, 5, 3, 2);
    ggml_set_name(t, "w");
    gguf_add_tensor(gg, t);
    const int64_t *ne = gguf_get_tensor_ne(gg, 0);
    tap_ok(ne && ne[0] == 5 && ne[1] == 3 && ne[2] == 2 && ne[3] == 1, "gguf_get_tensor_ne");
    gguf_free(gg);
    ggml_free(tctx);
}

int main(void) {
    test_seed(20);
    check_delta(4, 2, 2, 5, 1, false, 1);
    check_delta(8, 2, 4, 6, 2, false, 1);   /* q/k heads repeat over the value heads */
    check_delta(8, 4, 4, 7, 2, true, 1);    /* per-key gate (KDA) */
    check_delta(4, 1, 2, 6, 2, false, 3);   /* state snapshots */
    check_delta(4, 2, 2, 2, 1, true, 4);    /* fewer tokens than snapshots */
    test_delta_refusals();
    test_pad_circular();
    test_argsort_top_k();
    test_select();
    test_sizes();
    test_misc();
    return tap_done();
}
