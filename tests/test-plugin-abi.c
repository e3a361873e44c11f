/* test-plugin-abi.c - the installed plugin ABI beyond the vtables: the block layouts and
 * half-precision converters of ggmlc-blocks.h against hand-computed values and the core's
 * type table, the op-parameter readers of ggmlc-plugin.h against the arguments given to
 * ggml's constructors, and the CPU-role contract served by the in-tree CPU plugin.
 * Built with the public headers only, as a third-party plugin is. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc-blocks.h"
#include "ggmlc-plugin.h"
#include "ggmlc.h"
#include "testutil.h"

struct block_case {
    enum ggml_type type;
    size_t size; /* sizeof the block struct */
    int64_t qk;  /* its QK* constant */
};

static void test_block_layouts(void) {
    static const struct block_case cases[] = {
        {GGML_TYPE_Q4_0, sizeof(block_q4_0), QK4_0},
        {GGML_TYPE_Q4_1, sizeof(block_q4_1), QK4_1},
        {GGML_TYPE_Q5_0, sizeof(block_q5_0), QK5_0},
        {GGML_TYPE_Q5_1, sizeof(block_q5_1), QK5_1},
        {GGML_TYPE_Q8_0, sizeof(block_q8_0), QK8_0},
        {GGML_TYPE_Q8_1, sizeof(block_q8_1), QK8_1},
        {GGML_TYPE_Q2_K, sizeof(block_q2_K), QK_K},
        {GGML_TYPE_Q3_K, sizeof(block_q3_K), QK_K},
        {GGML_TYPE_Q4_K, sizeof(block_q4_K), QK_K},
        {GGML_TYPE_Q5_K, sizeof(block_q5_K), QK_K},
        {GGML_TYPE_Q6_K, sizeof(block_q6_K), QK_K},
        {GGML_TYPE_Q8_K, sizeof(block_q8_K), QK_K},
        {GGML_TYPE_IQ4_NL, sizeof(block_iq4_nl), QK4_NL},
        {GGML_TYPE_IQ4_XS, sizeof(block_iq4_xs), QK_K},
        {GGML_TYPE_MXFP4, sizeof(block_mxfp4), QK_MXFP4},
    };
    bool all = true;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct block_case *c = &cases[i];
        if (ggml_type_size(c->type) != c->size || ggml_blck_size(c->type) != c->qk) {
            tap_diag("%s: header %zu bytes / %lld values, core %zu / %lld", ggml_type_name(c->type),
                     c->size, (long long)c->qk, ggml_type_size(c->type),
                     (long long)ggml_blck_size(c->type));
            all = false;
        }
    }
    tap_ok(all,
           "the 15 block structs and QK constants of ggmlc-blocks.h match the core's type table");
    /* a q4_0 block: the scale first, then 16 bytes of nibble pairs (ggml's GGUF layout) */
    tap_ok(offsetof(block_q4_0, qs) == 2 && offsetof(block_q4_K, qs) == 16 &&
               offsetof(block_q6_K, d) == 208,
           "field offsets of q4_0, q4_K and q6_K are GGUF's");
}

static void test_half_converters(void) {
    /* hand-computed IEEE half and bfloat16 values */
    static const struct {
        uint16_t h;
        float f;
    } halves[] = {
        {0x3c00, 1.0f},     {0xc000, -2.0f},    {0x7bff, 65504.0f},
        {0x0001, 0x1p-24f}, {0x0400, 0x1p-14f}, {0x3555, 0.333251953125f},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++)
        ok = ok && ggmlc_fp16_to_fp32(halves[i].h) == halves[i].f &&
             ggmlc_fp32_to_fp16(halves[i].f) == halves[i].h;
    tap_ok(ok, "fp16 <-> f32 on 1, -2, 65504, the smallest subnormal and normal, 1/3 rounded");
    tap_ok(ggmlc_fp32_to_fp16(1.0f / 3.0f) == 0x3555 && ggmlc_fp32_to_fp16(1e6f) == 0x7c00 &&
               isinf(ggmlc_fp16_to_fp32(0x7c00)) &&
               isnan(ggmlc_fp16_to_fp32(ggmlc_fp32_to_fp16(NAN))),
           "fp16 rounds to nearest, overflows to infinity and keeps NaN");
    ggml_bf16_t b = ggmlc_fp32_to_bf16(1.00390625f); /* 1 + 2^-8: a tie, rounds to even (1.0) */
    tap_ok(b.bits == 0x3f80 && ggmlc_bf16_to_fp32(ggmlc_fp32_to_bf16(-3.5f)) == -3.5f,
           "bf16 rounds ties to even and is exact on -3.5");
    tap_ok(ggmlc_e8m0_to_fp32_half(127) == 0.5f && ggmlc_kvalues_mxfp4[7] == 12 &&
               ggmlc_kvalues_iq4nl[0] == -127,
           "E8M0 127 is 1 (halved: 0.5); the MXFP4 and IQ4_NL level tables");
}

static void test_rope_reader(struct ggml_context *ctx) {
    struct ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    struct ggml_tensor *pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor *r = ggml_rope_ext(ctx, a, pos, NULL, 6, GGML_ROPE_TYPE_NEOX, 4096, 10000.0f,
                                          0.5f, 0.25f, 1.5f, 32.0f, 1.0f);
    const struct ggmlc_rope_params p = ggmlc_rope_params_of(r);
    tap_ok(p.n_dims == 6 && p.mode == GGML_ROPE_TYPE_NEOX && p.n_ctx_orig == 4096 &&
               p.freq_base == 10000.0f && p.freq_scale == 0.5f && p.ext_factor == 0.25f &&
               p.attn_factor == 1.5f && p.beta_fast == 32.0f && p.beta_slow == 1.0f &&
               p.sections[0] == 0 && p.sections[3] == 0,
           "ggmlc_rope_params_of reads back every argument of ggml_rope_ext");
    struct ggml_tensor *pos4 = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 12);
    int sections[GGML_MROPE_SECTIONS] = {1, 1, 1, 0};
    struct ggml_tensor *m = ggml_rope_multi(ctx, a, pos4, NULL, 6, sections, GGML_ROPE_TYPE_MROPE,
                                            128, 500.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    const struct ggmlc_rope_params q = ggmlc_rope_params_of(m);
    tap_ok(q.mode == GGML_ROPE_TYPE_MROPE && q.freq_base == 500.0f && q.sections[0] == 1 &&
               q.sections[2] == 1 && q.sections[3] == 0,
           "ggmlc_rope_params_of reads the sections of ggml_rope_multi");
}

static void test_attn_reader(struct ggml_context *ctx) {
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 16, 4, 2, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 16, 8, 2, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 16, 8, 2, 1);
    struct ggml_tensor *r = ggml_flash_attn_ext(ctx, q, k, v, NULL, 0.125f, 8.0f, 30.0f);
    struct ggmlc_flash_attn_params p = ggmlc_flash_attn_params_of(r);
    tap_ok(
        p.scale == 0.125f && p.max_bias == 8.0f && p.logit_softcap == 30.0f &&
            p.prec == GGML_PREC_DEFAULT,
        "ggmlc_flash_attn_params_of reads scale, max_bias, logit_softcap and the default precision");
    ggml_flash_attn_ext_set_prec(r, GGML_PREC_F32);
    p = ggmlc_flash_attn_params_of(r);
    tap_ok(p.prec == GGML_PREC_F32, "... and the precision set by ggml_flash_attn_ext_set_prec");
}

static void test_softmax_conv_readers(struct ggml_context *ctx) {
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    const struct ggmlc_soft_max_params sm =
        ggmlc_soft_max_params_of(ggml_soft_max_ext(ctx, x, NULL, 0.25f, 8.0f));
    tap_ok(sm.scale == 0.25f && sm.max_bias == 8.0f,
           "ggmlc_soft_max_params_of reads scale and max_bias");
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 4);
    struct ggml_tensor *img = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 16, 12, 2, 1);
    struct ggml_tensor *cols = ggml_im2col(ctx, k, img, 2, 3, 1, 0, 1, 2, true, GGML_TYPE_F32);
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(cols);
    tap_ok(cols && g.s0 == 2 && g.s1 == 3 && g.p0 == 1 && g.p1 == 0 && g.d0 == 1 && g.d1 == 2 &&
               g.is_2d == 1,
           "ggmlc_conv2d_params_of reads ggml_im2col's strides, paddings, dilations and is_2D");
}

static void test_optimizer_readers(void) {
    /* ggml's order of the AdamW hyper-parameter tensor: alpha, beta1, beta2, eps, wd, beta1h, beta2h */
    const float adamw[7] = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 10.0f, 1000.0f},
                sgd[2] = {0.1f, 0.5f};
    const struct ggmlc_adamw_params a = ggmlc_adamw_params_read(adamw);
    const struct ggmlc_sgd_params s = ggmlc_sgd_params_read(sgd);
    tap_ok(GGMLC_ADAMW_N_PARAMS == 7 && a.alpha == 1e-3f && a.beta1 == 0.9f && a.beta2 == 0.999f &&
               a.eps == 1e-8f && a.wd == 0.01f && a.beta1h == 10.0f && a.beta2h == 1000.0f,
           "ggmlc_adamw_params_read: the 7 AdamW hyper-parameters in ggml's order");
    tap_ok(GGMLC_SGD_N_PARAMS == 2 && s.alpha == 0.1f && s.wd == 0.5f,
           "ggmlc_sgd_params_read: alpha, wd");
}

static void test_cpu_role(void) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name(GGMLC_CPU_ROLE_REG_NAME);
    if (!reg) {
        tap_skip("no CPU plugin configured", "the CPU plugin serves the CPU role");
        return;
    }
    const uint32_t *version = ggml_backend_reg_get_proc_address(reg, GGMLC_CPU_PROC_ROLE_VERSION);
    tap_ok(version && *version == GGMLC_CPU_ROLE_VERSION,
           "the CPU plugin serves CPU-role contract version %u", (unsigned)GGMLC_CPU_ROLE_VERSION);
    static const char *const names[] = {
        GGMLC_CPU_PROC_GRAPH_PLAN,        GGMLC_CPU_PROC_GRAPH_COMPUTE,
        GGMLC_CPU_PROC_THREADPOOL_NEW,    GGMLC_CPU_PROC_THREADPOOL_FREE,
        GGMLC_CPU_PROC_THREADPOOL_SIZE,   GGMLC_CPU_PROC_THREADPOOL_PAUSE,
        GGMLC_CPU_PROC_THREADPOOL_RESUME, GGMLC_CPU_PROC_SET_THREADPOOL,
        GGMLC_CPU_PROC_TYPE_TRAITS,       GGMLC_CPU_PROC_SET_N_THREADS,
        GGMLC_CPU_PROC_SET_ABORT,         GGMLC_CPU_PROC_GET_FEATURES,
    };
    int missing = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!ggml_backend_reg_get_proc_address(reg, names[i])) {
            tap_diag("missing: %s", names[i]);
            missing++;
        }
    }
    tap_ok(missing == 0, "it answers all 12 entry points of the contract");
}

int main(void) {
    if (ggmlc_init() != GGMLC_OK) return tap_skip_all("ggmlc_init failed");
    test_block_layouts();
    test_half_converters();
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    test_rope_reader(ctx);
    test_attn_reader(ctx);
    test_softmax_conv_readers(ctx);
    ggml_free(ctx);
    test_optimizer_readers();
    test_cpu_role();
    return tap_done();
}
