/*
 * test-index-bounds.c - indices out of range at compute time: get_rows (f32 and q8_0 tables),
 * set_rows (i32 and i64 indices, f32, f16 and q8_0 destinations), get_rows_back, mul_mat_id
 * (the few-token and the many-token kernels, f32 and q8_0 experts), add_id and ssm_scan, with
 * one bad index each, on the CPU backend (4 threads, so that a worker thread meets the index)
 * and on the Vulkan plugin when there is a device (lavapipe in CI).
 *
 * Each graph must fail with GGML_STATUS_FAILED and GGMLC_ERR_INVALID_ARG, one error logged,
 * whose message names the op, the node, the index, its position and its range; the Vulkan
 * plugin's message must be the CPU's, word for word.  Nothing outside the tensors may be
 * touched: set_rows' destination is followed by a canary tensor that the bad row would land
 * in, checked afterwards.  The same graph with the index repaired computes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

#define CANARY_FLOATS 4096
#define CANARY_VALUE 1234.5f

static int n_errors;

static void count_errors(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) n_errors++;
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

/* One case: the graph's output, its index tensor, the range of the indices, the bad one. */
struct graph_case {
    struct ggml_tensor *out, *idx, *canary;
    int64_t limit;
    int64_t bad_at; /* element of idx */
    int64_t bad; /* its value */
};

struct case_def {
    const char *name;
    void (*build)(struct ggml_context *ctx, struct graph_case *c);
    const char *expect; /* in the message, besides the index and range */
};

static struct ggml_tensor *named(struct ggml_tensor *t, const char *name) {
    ggml_set_name(t, name);
    return t;
}

static void build_get_rows(struct ggml_context *ctx, struct graph_case *c) {
    struct ggml_tensor *a = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 10), "table");
    c->idx = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 5), "idx");
    c->out = named(ggml_get_rows(ctx, a, c->idx), "out");
    *c = (struct graph_case){c->out, c->idx, NULL, 10, 3, 12};
}

static void build_get_rows_q8(struct ggml_context *ctx, struct graph_case *c) {
    struct ggml_tensor *a = named(ggml_new_tensor_3d(ctx, GGML_TYPE_Q8_0, 32, 6, 3), "table");
    c->idx = named(ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 3), "idx");
    c->out = named(ggml_get_rows(ctx, a, c->idx), "out");
    *c = (struct graph_case){c->out, c->idx, NULL, 6, 1 + 4 * 2, -1};
}

/* set_rows of b [8, 4] into dst of type t [8 or 32, 20], the canary right after dst. */
static void build_set_rows_into(struct ggml_context *ctx, struct graph_case *c, enum ggml_type t,
                                enum ggml_type it, int64_t bad) {
    const int64_t e = t == GGML_TYPE_Q8_0 ? 32 : 8;
    struct ggml_tensor *dst = named(ggml_new_tensor_2d(ctx, t, e, 20), "dst");
    c->canary = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, CANARY_FLOATS), "canary");
    struct ggml_tensor *b = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, e, 4), "rows");
    c->idx = named(ggml_new_tensor_1d(ctx, it, 4), "idx");
    c->out = named(ggml_set_rows(ctx, dst, b, c->idx), "out");
    c->limit = 20;
    c->bad_at = 2;
    c->bad = bad;
}

/* Row 40 of a 20-row f32 destination lies inside the canary at any alignment up to 512 bytes. */
static void build_set_rows_i32(struct ggml_context *ctx, struct graph_case *c) {
    build_set_rows_into(ctx, c, GGML_TYPE_F32, GGML_TYPE_I32, 40);
}
/* 2^32 + 1: its low word alone would be a valid row */
static void build_set_rows_i64(struct ggml_context *ctx, struct graph_case *c) {
    build_set_rows_into(ctx, c, GGML_TYPE_F16, GGML_TYPE_I64, ((int64_t)1 << 32) + 1);
}
static void build_set_rows_q8(struct ggml_context *ctx, struct graph_case *c) {
    build_set_rows_into(ctx, c, GGML_TYPE_Q8_0, GGML_TYPE_I32, 30);
}

static void build_get_rows_back(struct ggml_context *ctx, struct graph_case *c) {
    struct ggml_tensor *dy = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 5), "dy");
    struct ggml_tensor *shape = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 7), "shape");
    c->idx = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 5), "idx");
    c->out = named(ggml_get_rows_back(ctx, dy, c->idx, shape), "out");
    *c = (struct graph_case){c->out, c->idx, NULL, 7, 4, 7};
}

/* mul_mat_id of 4 experts [k, 8] with 2 of them used per token, n_tokens tokens. */
static void build_mul_mat_id_of(struct ggml_context *ctx, struct graph_case *c, enum ggml_type t,
                                int64_t n_tokens, int64_t bad_at, int64_t bad) {
    const int64_t k = t == GGML_TYPE_Q8_0 ? 64 : 16;
    struct ggml_tensor *as = named(ggml_new_tensor_3d(ctx, t, k, 8, 4), "experts");
    struct ggml_tensor *b = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, 2, n_tokens), "b");
    c->idx = named(ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, n_tokens), "ids");
    c->out = named(ggml_mul_mat_id(ctx, as, b, c->idx), "out");
    c->limit = 4;
    c->bad_at = bad_at;
    c->bad = bad;
}

static void build_mul_mat_id_few(struct ggml_context *ctx, struct graph_case *c) {
    build_mul_mat_id_of(ctx, c, GGML_TYPE_F32, 3, 5, 4);
}
static void build_mul_mat_id_many(struct ggml_context *ctx, struct graph_case *c) {
    build_mul_mat_id_of(ctx, c, GGML_TYPE_F32, 12, 20, -3);
}
static void build_mul_mat_id_q8(struct ggml_context *ctx, struct graph_case *c) {
    build_mul_mat_id_of(ctx, c, GGML_TYPE_Q8_0, 2, 1, 9);
}

static void build_add_id(struct ggml_context *ctx, struct graph_case *c) {
    struct ggml_tensor *a = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3), "a");
    struct ggml_tensor *b = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4), "bias");
    c->idx = named(ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 3), "ids");
    c->out = named(ggml_add_id(ctx, a, b, c->idx), "out");
    *c = (struct graph_case){c->out, c->idx, NULL, 4, 3, 4};
}

/* Mamba-2 shapes: d_state 16, head_dim 4, 2 heads, 3 tokens, 2 sequences, 3 state slots. */
static void build_ssm_scan(struct ggml_context *ctx, struct graph_case *c) {
    struct ggml_tensor *s = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 16, 4, 2, 3), "s");
    struct ggml_tensor *x = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 2, 3, 2), "x");
    struct ggml_tensor *dt = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 2, 3, 2), "dt");
    struct ggml_tensor *A = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, 2), "A");
    struct ggml_tensor *B = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 16, 1, 3, 2), "B");
    struct ggml_tensor *C = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 16, 1, 3, 2), "C");
    c->idx = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2), "ids");
    c->out = named(ggml_ssm_scan(ctx, s, x, dt, A, B, C, c->idx), "out");
    *c = (struct graph_case){c->out, c->idx, NULL, 3, 1, 3};
}

static const struct case_def cases[] = {
    {"get_rows", build_get_rows,
     "GET_ROWS (node 'out'): index 12 at [3, 0, 0] of 'idx' is out of range [0, 10)"},
    {"get_rows q8_0", build_get_rows_q8,
     "GET_ROWS (node 'out'): index -1 at [1, 2, 0] of 'idx' is out of range [0, 6)"},
    {"set_rows i32", build_set_rows_i32,
     "SET_ROWS (node 'out'): index 40 at [2, 0, 0] of 'idx' is out of range [0, 20)"},
    {"set_rows i64", build_set_rows_i64,
     "SET_ROWS (node 'out'): index 4294967297 at [2, 0, 0] of 'idx' is out of range [0, 20)"},
    {"set_rows q8_0", build_set_rows_q8,
     "SET_ROWS (node 'out'): index 30 at [2, 0, 0] of 'idx' is out of range [0, 20)"},
    {"get_rows_back", build_get_rows_back,
     "GET_ROWS_BACK (node 'out'): index 7 at [4, 0, 0] of 'idx' is out of range [0, 7)"},
    {"mul_mat_id, few tokens", build_mul_mat_id_few,
     "MUL_MAT_ID (node 'out'): index 4 at [1, 2, 0] of 'ids' is out of range [0, 4)"},
    {"mul_mat_id, many tokens", build_mul_mat_id_many,
     "MUL_MAT_ID (node 'out'): index -3 at [0, 10, 0] of 'ids' is out of range [0, 4)"},
    {"mul_mat_id q8_0", build_mul_mat_id_q8,
     "MUL_MAT_ID (node 'out'): index 9 at [1, 0, 0] of 'ids' is out of range [0, 4)"},
    {"add_id", build_add_id,
     "ADD_ID (node 'out'): index 4 at [1, 1, 0] of 'ids' is out of range [0, 4)"},
    {"ssm_scan", build_ssm_scan,
     "SSM_SCAN (node 'out'): index 3 at [1, 0, 0] of 'ids' is out of range [0, 3)"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* ------------------------------------------------------------ filling */

/* Valid indices (i % limit) into idx, with the bad one at bad_at when bad_at >= 0. */
static void set_indices(const struct graph_case *c, int64_t bad_at) {
    const int64_t n = ggml_nelements(c->idx);
    const bool i64 = c->idx->type == GGML_TYPE_I64;
    void *v = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        const int64_t x = i == bad_at ? c->bad : i % c->limit;
        if (i64)
            ((int64_t *)v)[i] = x;
        else
            ((int32_t *)v)[i] = (int32_t)x;
    }
    ggml_backend_tensor_set(c->idx, v, 0, ggml_nbytes(c->idx));
    free(v);
}

/* A leaf's contents: uniform values in [-1, 1) in its type (the canary: CANARY_VALUE). */
static void fill_leaf(struct ggml_tensor *t, bool canary) {
    const int64_t n = ggml_nelements(t);
    float *f = malloc((size_t)n * sizeof *f);
    void *bytes = malloc(ggml_nbytes(t));
    for (int64_t i = 0; i < n; i++) f[i] = canary ? CANARY_VALUE : test_uniform(-1.0f, 1.0f);
    if (t->type == GGML_TYPE_F32)
        memcpy(bytes, f, (size_t)n * sizeof *f);
    else if (t->type == GGML_TYPE_F16)
        ggml_fp32_to_fp16_row(f, bytes, n);
    else
        ggml_quantize_chunk(t->type, f, bytes, 0, ggml_nrows(t), t->ne[0], NULL);
    ggml_backend_tensor_set(t, bytes, 0, ggml_nbytes(t));
    free(bytes);
    free(f);
}

static bool canary_intact(const struct ggml_tensor *canary) {
    if (!canary) return true;
    float *v = malloc(CANARY_FLOATS * sizeof *v);
    ggml_backend_tensor_get(canary, v, 0, CANARY_FLOATS * sizeof *v);
    bool intact = true;
    for (int i = 0; i < CANARY_FLOATS; i++) intact = intact && v[i] == CANARY_VALUE;
    free(v);
    return intact;
}

/* --------------------------------------------------------------- runs */

struct outcome {
    bool built, supported;
    enum ggml_status bad_status, good_status;
    enum ggmlc_status error;
    char message[512];
    int n_errors;
    bool canary_intact;
};

static void run_case(ggml_backend_t backend, const struct case_def *def, struct outcome *o) {
    memset(o, 0, sizeof *o);
    struct ggml_context *ctx = ggml_init(
        (struct ggml_init_params){32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct graph_case c = {0};
    def->build(ctx, &c);
    ggml_backend_buffer_t buf = c.out ? ggml_backend_alloc_ctx_tensors(ctx, backend) : NULL;
    o->built = buf != NULL;
    o->supported = c.out && ggml_backend_supports_op(backend, c.out);
    if (o->built && o->supported) {
        test_seed(7);
        for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t;
             t = ggml_get_next_tensor(ctx, t))
            if (t->op == GGML_OP_NONE && t != c.idx) fill_leaf(t, t == c.canary);
        struct ggml_cgraph *g = ggml_new_graph(ctx);
        ggml_build_forward_expand(g, c.out);
        set_indices(&c, c.bad_at);
        ggmlc_clear_error();
        n_errors = 0;
        o->bad_status = ggml_backend_graph_compute(backend, g);
        o->n_errors = n_errors;
        o->error = ggmlc_last_status();
        snprintf(o->message, sizeof o->message, "%s", ggmlc_last_error());
        o->canary_intact = canary_intact(c.canary);
        set_indices(&c, -1);
        o->good_status = ggml_backend_graph_compute(backend, g);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

static void check_case(const char *backend, const struct case_def *def, const struct outcome *o) {
    tap_ok(
        o->bad_status == GGML_STATUS_FAILED && o->error == GGMLC_ERR_INVALID_ARG,
        "%s %s: an index out of range fails the graph with GGMLC_ERR_INVALID_ARG (status %d, %s)",
        backend, def->name, (int)o->bad_status, ggmlc_status_name(o->error));
    tap_ok(strstr(o->message, def->expect) != NULL,
           "%s %s: the message names op, node, index, position and range: %s", backend, def->name,
           o->message);
    tap_ok(o->n_errors == 1, "%s %s: one error is logged (%d)", backend, def->name, o->n_errors);
    tap_ok(o->canary_intact, "%s %s: no memory outside the tensors is written", backend, def->name);
    tap_ok(o->good_status == GGML_STATUS_SUCCESS,
           "%s %s: with the index repaired the graph computes", backend, def->name);
}

static ggml_backend_t vulkan_backend(void) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return NULL;
    return ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
}

/* With a build tree, the configuration that loads its Vulkan plugin too (tests/Makefile.inc). */

int main(void) {
    test_vulkan_env();
    ggml_log_set(count_errors, NULL);
    ggmlc_init();
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    if (!cpu) return tap_skip_all("no CPU backend");
    ggml_backend_cpu_set_n_threads(cpu, 4);
    struct outcome on_cpu[N_CASES], o;
    for (size_t i = 0; i < N_CASES; i++) {
        run_case(cpu, &cases[i], &on_cpu[i]);
        if (tap_ok(on_cpu[i].built && on_cpu[i].supported,
                   "CPU %s: the graph is built and supported", cases[i].name))
            check_case("CPU", &cases[i], &on_cpu[i]);
    }
    ggml_backend_free(cpu);
    ggml_backend_t vk = vulkan_backend();
    for (size_t i = 0; i < N_CASES; i++) {
        if (!vk) {
            tap_skip("no Vulkan device", "Vulkan %s", cases[i].name);
            continue;
        }
        run_case(vk, &cases[i], &o);
        if (!o.supported) {
            tap_skip("the device does not take this node", "Vulkan %s", cases[i].name);
            continue;
        }
        if (!tap_ok(o.built, "Vulkan %s: the graph is built", cases[i].name)) continue;
        check_case("Vulkan", &cases[i], &o);
        tap_ok(strcmp(o.message, on_cpu[i].message) == 0,
               "Vulkan %s: the CPU's message, word for word", cases[i].name);
    }
    ggml_backend_free(vk);
    ggmlc_shutdown();
    return tap_done();
}
