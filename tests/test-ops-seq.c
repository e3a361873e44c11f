/* test-ops-seq.c - ssm_conv, ssm_scan (Mamba-1 and Mamba-2), rwkv_wkv6,
 * gated_linear_attn, rwkv_wkv7 and solve_tri (all variants) on the CPU backend
 * against PyTorch reference loops (tests/golden/gen_seq.py). */
#include <stdio.h>

#include "ggmlc.h"
#include "opstest.h"

static struct gold_set *G;

static struct ggml_tensor *in(struct ggml_context *ctx, const char *prefix, const char *name) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", prefix, name);
    return gold_new_tensor(ctx, gold_get(G, key));
}

static const struct gold_tensor *ref(const char *prefix, const char *name) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", prefix, name);
    return gold_get(G, key);
}

static void test_ssm_conv(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *sx = in(ctx, "ssm_conv", "sx"), *c = in(ctx, "ssm_conv", "c");
    struct ggml_tensor *r = ggml_ssm_conv(ctx, sx, c);
    if (ops_compute(ctx, r)) ops_check(r, ref("ssm_conv", "out"), 1e-12, "ssm_conv");
    ggmlc_clear_error();
    ops_check_rejected(ggml_ssm_conv(ctx, sx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5)), "ggml_ssm_conv",
                       "a kernel with another channel count");
    ggml_free(ctx);
}

static void test_ssm_scan(const char *p) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *s = in(ctx, p, "s"), *x = in(ctx, p, "x"), *dt = in(ctx, p, "dt"), *A = in(ctx, p, "A");
    struct ggml_tensor *B = in(ctx, p, "B"), *C = in(ctx, p, "C"), *ids = in(ctx, p, "ids");
    struct ggml_tensor *r = ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids);
    if (ops_compute(ctx, r)) ops_check(r, ref(p, "out"), 1e-10, p);
    ggmlc_clear_error();
    ops_check_rejected(ggml_ssm_scan(ctx, s, x, dt, A, B, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5), ids), "ggml_ssm_scan",
                       "C of another shape than B");
    ggml_free(ctx);
}

/* ggml's K argument: K = n_tokens (3) rollback slots, each the states after an earlier token. */
static void test_ssm_scan_slots(void) {
    const char *p = "ssm_scan_mamba2";
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *s = in(ctx, p, "s"), *x = in(ctx, p, "x"), *dt = in(ctx, p, "dt"),
                       *A = in(ctx, p, "A");
    struct ggml_tensor *B = in(ctx, p, "B"), *C = in(ctx, p, "C"), *ids = in(ctx, p, "ids");
    struct ggml_tensor *r = ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids, x->ne[2]);
    if (ops_compute(ctx, r))
        ops_check(r, ref(p, "out_slots"), 1e-10, "ssm_scan with K = 3 state slots");
    ggmlc_clear_error();
    ops_check_rejected(ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids, 0), "ggml_ssm_scan", "K = 0");
    const char *m1 = "ssm_scan_mamba1";
    ops_check_rejected(ggml_ssm_scan(ctx, in(ctx, m1, "s"), in(ctx, m1, "x"), in(ctx, m1, "dt"),
                                     in(ctx, m1, "A"), in(ctx, m1, "B"), in(ctx, m1, "C"),
                                     in(ctx, m1, "ids"), 2),
                       "ggml_ssm_scan", "K > 1 with Mamba-1's per-state decay");
    ggml_free(ctx);
}

static void test_recurrences(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *r6 = ggml_rwkv_wkv6(ctx, in(ctx, "wkv6", "k"), in(ctx, "wkv6", "v"), in(ctx, "wkv6", "r"),
                                            in(ctx, "wkv6", "tf"), in(ctx, "wkv6", "td"), in(ctx, "wkv6", "state"));
    if (ops_compute(ctx, r6)) ops_check(r6, ref("wkv6", "out"), 1e-10, "rwkv_wkv6: outputs then states, 2 sequences");
    struct ggml_tensor *gl = ggml_gated_linear_attn(ctx, in(ctx, "gla", "k"), in(ctx, "gla", "v"), in(ctx, "gla", "q"),
                                                    in(ctx, "gla", "g"), in(ctx, "gla", "state"), 0.5f);
    if (ops_compute(ctx, gl)) ops_check(gl, ref("gla", "out"), 1e-10, "gated_linear_attn with scale 0.5");
    struct ggml_tensor *r7 = ggml_rwkv_wkv7(ctx, in(ctx, "wkv7", "r"), in(ctx, "wkv7", "w"), in(ctx, "wkv7", "k"), in(ctx, "wkv7", "v"),
                                            in(ctx, "wkv7", "a"), in(ctx, "wkv7", "b"), in(ctx, "wkv7", "state"));
    if (ops_compute(ctx, r7)) ops_check(r7, ref("wkv7", "out"), 1e-10, "rwkv_wkv7");
    ggmlc_clear_error();
    struct ggml_tensor *k = in(ctx, "wkv6", "k");
    ops_check_rejected(ggml_rwkv_wkv6(ctx, k, k, k, in(ctx, "wkv6", "tf"), k, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 48, 4)),
                       "ggml_rwkv_wkv6", "4 sequences for 6 tokens");
    ggml_free(ctx);
}

static void test_solve_tri(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *A = in(ctx, "solve_tri", "A");
    for (int left = 1; left >= 0; left--)
        for (int lower = 1; lower >= 0; lower--)
            for (int uni = 0; uni < 2; uni++) {
                char name[64];
                snprintf(name, sizeof name, "%s_%s_%s", left ? "left" : "right", lower ? "lower" : "upper", uni ? "uni" : "diag");
                struct ggml_tensor *B = in(ctx, "solve_tri", left ? "B_left" : "B_right");
                struct ggml_tensor *X = ggml_solve_tri(ctx, A, B, left, lower, uni);
                if (ops_compute(ctx, X)) ops_check(X, ref("solve_tri", name), 1e-10, name);
            }
    ggmlc_clear_error();
    ops_check_rejected(ggml_solve_tri(ctx, A, in(ctx, "solve_tri", "B_right"), true, true, false), "ggml_solve_tri",
                       "B with n columns but not n rows for a left solve");
    ggml_free(ctx);
}

int main(void) {
    G = gold_load("seq.gold");
    if (!G) return tap_skip_all("golden data tests/golden/seq.gold missing");
    test_ssm_conv();
    test_ssm_scan("ssm_scan_mamba2");
    test_ssm_scan("ssm_scan_mamba1");
    test_ssm_scan_slots();
    test_recurrences();
    test_solve_tri();
    gold_free(G);
    return tap_done();
}
