/*
 * test-sched.c - the multi-backend scheduler, with in-process test backends:
 *   "cpu"  (CPU type, host buffers): ADD, MUL, SQR on f32 and f16
 *   "acc"  (GPU type, its own non-host buffers): ADD, MUL on f32 only
 *   "acc2" (GPU type, host buffers, so the same buffer type as "cpu"): MUL only
 * Every kernel checks that the tensors it touches live in memory its device
 * can use (counted in `misplaced`) and logs which device ran which node.
 * Results are compared with a run of the whole graph on "cpu" alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc-plugin.h"
#include "host-buffer.h"
#include "testutil.h"

/* ------------------------------------------------------- test devices */

enum { DEV_CPU, DEV_ACC, DEV_ACC2, N_DEVS };
static const char *const dev_names[N_DEVS] = {"cpu", "acc", "acc2"};
static int misplaced;
static char ran_on[256][GGML_MAX_NAME + 16]; /* "node@device" per executed node */
static int n_ran;

static ggml_backend_buffer_type_t acc_buft;

static bool host_ok(const struct ggml_tensor *t) {
    const struct ggml_tensor *st = t->view_src ? t->view_src : t;
    return !st->buffer || ggml_backend_buffer_is_host(st->buffer);
}
static bool acc_ok(const struct ggml_tensor *t) {
    const struct ggml_tensor *st = t->view_src ? t->view_src : t;
    return st->buffer && ggml_backend_buffer_get_type(st->buffer) == acc_buft;
}

/* Address of element i (in logical order) of a possibly strided tensor. */
static char *elem(const struct ggml_tensor *t, int64_t i) {
    const int64_t i0 = i % t->ne[0], i1 = i / t->ne[0] % t->ne[1], i2 = i / t->ne[0] / t->ne[1] % t->ne[2],
                  i3 = i / t->ne[0] / t->ne[1] / t->ne[2];
    return (char *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}
static float get_f(const struct ggml_tensor *t, int64_t i) {
    return t->type == GGML_TYPE_F16 ? ggml_fp16_to_fp32(*(const ggml_fp16_t *)elem(t, i)) : *(const float *)elem(t, i);
}
static void set_f(struct ggml_tensor *t, int64_t i, float v) {
    if (t->type == GGML_TYPE_F16) *(ggml_fp16_t *)elem(t, i) = ggml_fp32_to_fp16(v);
    else *(float *)elem(t, i) = v;
}

static enum ggml_status run(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const int dev = *(const int *)call->backend_ctx;
    bool (*ok)(const struct ggml_tensor *) = dev == DEV_ACC ? acc_ok : host_ok;
    for (int s = 0; s < 2; s++) misplaced += dst->src[s] && !ok(dst->src[s]);
    misplaced += !ok(dst);
    if (n_ran < 256) snprintf(ran_on[n_ran++], sizeof ran_on[0], "%s@%s", dst->name, dev_names[dev]);
    const int64_t n = ggml_nelements(dst);
    for (int64_t i = 0; i < n; i++) {
        const float a = get_f(dst->src[0], i);
        const float b = dst->src[1] ? get_f(dst->src[1], i % ggml_nelements(dst->src[1])) : 0.0f;
        set_f(dst, i, dst->op == GGML_OP_ADD ? a + b : dst->op == GGML_OP_MUL ? a * b : dst->op == GGML_OP_CONT ? a : a * a);
    }
    return GGML_STATUS_SUCCESS;
}

static ggmlc_op_fn cpu_ops[GGML_OP_COUNT], acc_ops[GGML_OP_COUNT], acc2_ops[GGML_OP_COUNT];

static bool acc_supports(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    for (int s = 0; s < 2; s++) {
        if (op->src[s] && op->src[s]->type != GGML_TYPE_F32) return false; /* f32 only */
    }
    return op->type == GGML_TYPE_F32;
}

/* acc asks to take over ADD from the CPU even when its weights are in host memory */
static bool acc_offload(ggml_backend_dev_t dev, const struct ggml_tensor *op) { return op->op == GGML_OP_ADD; }

static int dev_index(ggml_backend_dev_t dev) { return *(int *)ggmlc_device_context(dev); }
static const char *dev_name(ggml_backend_dev_t dev) { return dev_names[dev_index(dev)]; }
static void dev_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total) { *free_mem = *total = 1u << 30; }
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t dev) {
    return dev_index(dev) == DEV_CPU ? GGML_BACKEND_DEVICE_TYPE_CPU : GGML_BACKEND_DEVICE_TYPE_GPU;
}
static const char *backend_name(ggml_backend_t b) { return dev_names[*(int *)ggmlc_backend_context(b)]; }
static ggml_backend_t dev_init(ggml_backend_dev_t dev, const char *params) {
    static const struct ggmlc_backend_iface iface = {.struct_size = sizeof iface, .get_name = backend_name};
    return ggmlc_backend_new(dev, &iface, ggmlc_device_context(dev));
}

/* acc's buffers: plain memory the device pretends the host cannot address */
static const char *acc_buft_name(ggml_backend_buffer_type_t t) { return "acc"; }
static size_t acc_align(ggml_backend_buffer_type_t t) { return 32; }
static ggml_backend_buffer_t acc_alloc(ggml_backend_buffer_type_t t, size_t size) {
    return host_buffer_new(t, size, 32, 0xff); /* NaN-poisoned: reading unwritten memory shows */
}
static ggml_backend_buffer_type_t dev_buft(ggml_backend_dev_t dev) {
    return dev_index(dev) == DEV_ACC ? acc_buft : ggml_backend_cpu_buffer_type();
}
static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return dev_index(dev) == DEV_ACC ? buft == acc_buft : ggml_backend_buft_is_host(buft);
}

static ggml_backend_t backends[N_DEVS];
static ggml_backend_reg_t test_reg;

static void make_devices(void) {
    static int ids[N_DEVS] = {DEV_CPU, DEV_ACC, DEV_ACC2};
    static const struct ggmlc_reg_iface reg_iface = {.struct_size = sizeof reg_iface};
    cpu_ops[GGML_OP_ADD] = cpu_ops[GGML_OP_MUL] = cpu_ops[GGML_OP_SQR] = cpu_ops[GGML_OP_CONT] = run;
    acc_ops[GGML_OP_ADD] = acc_ops[GGML_OP_MUL] = run;
    acc2_ops[GGML_OP_MUL] = run;
    const ggmlc_op_fn *tables[N_DEVS] = {cpu_ops, acc_ops, acc2_ops};
    test_reg = ggmlc_reg_new("schedtest", &reg_iface, NULL);
    for (int d = 0; d < N_DEVS; d++) {
        const struct ggmlc_device_iface iface = {
            .struct_size = sizeof iface, .get_name = dev_name, .get_description = dev_name, .get_memory = dev_memory,
            .get_type = dev_type, .init_backend = dev_init, .get_buffer_type = dev_buft, .ops = tables[d],
            .n_ops = GGML_OP_COUNT, .supports_op = d == DEV_ACC ? acc_supports : NULL, .supports_buft = dev_supports_buft,
            .offload_op = d == DEV_ACC ? acc_offload : NULL,
        };
        ggml_backend_dev_t dev = ggmlc_device_new(test_reg, &iface, &ids[d]);
        if (d == DEV_ACC) {
            static const struct ggmlc_buft_iface biface = {
                .struct_size = sizeof biface, .get_name = acc_buft_name, .alloc_buffer = acc_alloc, .get_alignment = acc_align,
            };
            acc_buft = ggmlc_buft_new(dev, &biface, NULL);
        }
        backends[d] = ggml_backend_dev_init(dev, NULL);
    }
}

static bool ran(const char *node, const char *dev) {
    char want[GGML_MAX_NAME + 16];
    snprintf(want, sizeof want, "%s@%s", node, dev);
    for (int i = 0; i < n_ran; i++) {
        if (strcmp(ran_on[i], want) == 0) return true;
    }
    return false;
}

/* ------------------------------------------------------------- graphs */

struct model {
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    struct ggml_tensor *x, *y, *out;
};

static struct ggml_tensor *node(struct ggml_context *ctx, enum ggml_op op, struct ggml_tensor *a, struct ggml_tensor *b,
                                const char *name) {
    struct ggml_tensor *t = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, a->ne);
    t->op = op;
    t->src[0] = a;
    t->src[1] = b;
    ggml_set_name(t, name);
    return t;
}

#define MODEL_MEM_SIZE (64 * ggml_tensor_overhead() + ggml_graph_overhead())

/* x (input) and y: a = x+y, b = a^2, c = b+y, d = c^2, e = d*x: ADD/MUL on acc, SQR on cpu;
 * in mem (MODEL_MEM_SIZE bytes) when not NULL, as llama.cpp builds each graph in the same
 * memory. */
static struct model alternating_in(enum ggml_type xtype, void *mem) {
    struct model m;
    m.ctx = ggml_init((struct ggml_init_params){.mem_size = MODEL_MEM_SIZE, .mem_buffer = mem,
                                                .no_alloc = true});
    m.x = ggml_new_tensor_2d(m.ctx, xtype, 7, 3);
    m.y = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, 7, 3);
    ggml_set_name(m.x, "x");
    ggml_set_name(m.y, "y");
    ggml_set_input(m.x);
    struct ggml_tensor *a = node(m.ctx, GGML_OP_ADD, m.x, m.y, "a");
    struct ggml_tensor *b = node(m.ctx, GGML_OP_SQR, a, NULL, "b");
    struct ggml_tensor *c = node(m.ctx, GGML_OP_ADD, b, m.y, "c");
    struct ggml_tensor *d = node(m.ctx, GGML_OP_SQR, c, NULL, "d");
    m.out = node(m.ctx, GGML_OP_MUL, d, m.x, "e");
    ggml_set_output(m.out);
    m.graph = ggml_new_graph(m.ctx);
    ggml_build_forward_expand(m.graph, m.out);
    return m;
}

static struct model alternating(enum ggml_type xtype) { return alternating_in(xtype, NULL); }

static void set_inputs(struct model *m) {
    float xv[21], yv[21];
    for (int i = 0; i < 21; i++) {
        xv[i] = 0.25f * (float)i - 2.5f;
        yv[i] = 1.5f - 0.125f * (float)(i * i % 11);
    }
    tensor_set_f32(m->x, xv);
    tensor_set_f32(m->y, yv);
}

/* The whole graph on the test CPU alone. */
static void reference(enum ggml_type xtype, float *out) {
    struct model m = alternating(xtype);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_alloc_graph(ga, m.graph);
    set_inputs(&m);
    ggml_backend_graph_compute(backends[DEV_CPU], m.graph);
    tensor_get_f32(m.out, out);
    ggml_gallocr_free(ga);
    ggml_free(m.ctx);
}

static int plan_lines; /* "sched: N nodes in K splits" lines logged */
static char fallback_reason[256];
static void log_cb(enum ggml_log_level level, const char *text, void *data) {
    if (strstr(text, "splits,")) plan_lines++;
    if ((strstr(text, "falls back") && strstr(text, "'a'")) || (strstr(text, "'hsum'") && strstr(text, "runs on")))
        snprintf(fallback_reason, sizeof fallback_reason, "%s", text);
}

/* ---------------------------------------------------------------- tests */

static void test_alternating(void) {
    float ref[21], out[21];
    reference(GGML_TYPE_F32, ref);
    struct model m = alternating(GGML_TYPE_F32);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    misplaced = n_ran = 0;
    plan_lines = 0;
    tap_ok(ggml_backend_sched_alloc_graph(sched, m.graph), "alternating graph allocated");
    set_inputs(&m);
    tap_ok(ggml_backend_sched_graph_compute(sched, m.graph) == GGML_STATUS_SUCCESS, "alternating graph computed");
    tensor_get_f32(m.out, out);
    tap_ok(max_abs_diff(out, ref, 21) == 0.0, "results equal a CPU-only run");
    tap_ok(ggml_backend_sched_get_n_splits(sched) == 5, "5 splits: acc, cpu, acc, cpu, acc (got %d)",
           ggml_backend_sched_get_n_splits(sched));
    /* x into acc (a), a, b, c, d across, x again into acc (e): 6 */
    tap_ok(ggml_backend_sched_get_n_copies(sched) == 6, "6 copies (got %d)", ggml_backend_sched_get_n_copies(sched));
    tap_ok(ran("a", "acc") && ran("b", "cpu") && ran("c", "acc") && ran("d", "cpu") && ran("e", "acc"),
           "ADD/MUL ran on acc, SQR on cpu");
    tap_ok(misplaced == 0, "no kernel touched memory its device cannot use");
    tap_ok(ggml_backend_sched_get_tensor_backend(sched, ggml_graph_get_tensor(m.graph, "b")) == backends[DEV_CPU],
           "get_tensor_backend reports the CPU for SQR");
    tap_ok(ggml_backend_sched_get_buffer_size(sched, backends[DEV_ACC]) > 0 &&
           ggml_backend_sched_get_buffer_size(sched, backends[DEV_CPU]) > 0, "both backends got compute buffers");

    /* the same graph again: the plan is reused, new inputs give new results */
    for (int i = 0; i < 21; i++) ref[i] = out[i];
    float xv[21];
    tensor_get_f32(m.x, xv);
    for (int i = 0; i < 21; i++) xv[i] *= 2.0f;
    tensor_set_f32(m.x, xv);
    ggml_backend_sched_graph_compute(sched, m.graph);
    tensor_get_f32(m.out, out);
    bool changed = false;
    for (int i = 0; i < 21; i++) changed |= out[i] != ref[i];
    tap_ok(changed && plan_lines <= 1 && ggml_backend_sched_get_n_splits(sched) == 5,
           "a second evaluation reuses the plan (%d plans logged) with the new input", plan_lines);

    /* pinning: the first ADD on the CPU; as in ggml, the CPU's run then spreads to the nodes
     * after it that nothing else places (no weights here): one split */
    ggml_backend_sched_reset(sched);
    ggml_backend_sched_set_tensor_backend(sched, ggml_graph_get_tensor(m.graph, "a"), backends[DEV_CPU]);
    n_ran = 0;
    ggml_backend_sched_alloc_graph(sched, m.graph); /* planned anew: the inputs are placed again */
    set_inputs(&m);
    ggml_backend_sched_graph_compute(sched, m.graph);
    float again[21];
    tensor_get_f32(m.out, again);
    reference(GGML_TYPE_F32, out);
    tap_ok(ran("a", "cpu") && ran("c", "cpu") && ran("e", "cpu") && ggml_backend_sched_get_n_splits(sched) == 1 &&
               max_abs_diff(again, out, 21) == 0.0,
           "a pinned node runs where it was pinned, its neighbours with it (%d splits), same results",
           ggml_backend_sched_get_n_splits(sched));

    ggml_backend_sched_free(sched);
    ggml_free(m.ctx);
}

/* Evaluate a graph built in mem after a reset, as llama.cpp's decode loop does; *out gets e. */
static void rebuild_and_run(ggml_backend_sched_t sched, void *mem, enum ggml_type xtype,
                            float *out) {
    struct model m = alternating_in(xtype, mem);
    ggml_backend_sched_reset(sched);
    misplaced = 0;
    if (ggml_backend_sched_alloc_graph(sched, m.graph)) {
        set_inputs(&m);
        ggml_backend_sched_graph_compute(sched, m.graph);
    }
    tensor_get_f32(m.out, out);
    ggml_free(m.ctx);
}

/* A new graph per call at the same addresses keeps the plan only while its tensors are the same. */
static void test_rebuilt_graph(void) {
    float ref32[21], ref16[21], out[21];
    reference(GGML_TYPE_F32, ref32);
    reference(GGML_TYPE_F16, ref16);
    void *mem = malloc(MODEL_MEM_SIZE);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    rebuild_and_run(sched, mem, GGML_TYPE_F32, out);
    plan_lines = 0;
    bool same = true;
    for (int round = 0; round < 3; round++) {
        memset(out, 0, sizeof out);
        rebuild_and_run(sched, mem, GGML_TYPE_F32, out);
        same = same && max_abs_diff(out, ref32, 21) == 0.0 && misplaced == 0;
    }
    tap_ok(same && plan_lines == 0 && ggml_backend_sched_get_n_splits(sched) == 5,
           "a graph rebuilt after a reset at the same addresses reuses the plan (%d new plans) "
           "and computes right", plan_lines);
    /* same addresses, x now f16: acc refuses the ADD/MUL of x: the old plan must not be reused */
    rebuild_and_run(sched, mem, GGML_TYPE_F16, out);
    tap_ok(plan_lines == 1 && ggml_backend_sched_get_n_splits(sched) == 3 && misplaced == 0 &&
           max_abs_diff(out, ref16, 21) == 0.0,
           "one of another type at the same addresses is planned anew (3 splits), computes right");
    rebuild_and_run(sched, mem, GGML_TYPE_F32, out);
    tap_ok(plan_lines == 2 && ggml_backend_sched_get_n_splits(sched) == 5 &&
               max_abs_diff(out, ref32, 21) == 0.0,
           "and the first graph again gets its own plan back");
    ggml_backend_sched_free(sched);
    free(mem);
}

static void test_type_refusal(void) {
    float ref[21], out[21];
    reference(GGML_TYPE_F16, ref);
    struct model m = alternating(GGML_TYPE_F16);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    misplaced = n_ran = 0;
    fallback_reason[0] = '\0';
    ggml_backend_sched_alloc_graph(sched, m.graph);
    set_inputs(&m);
    ggml_backend_sched_graph_compute(sched, m.graph);
    tensor_get_f32(m.out, out);
    tap_ok(ran("a", "cpu") && ran("e", "cpu") && ran("c", "acc"), "acc refuses ADD/MUL of an f16 operand: they run on the CPU");
    tap_ok(max_abs_diff(out, ref, 21) == 0.0 && misplaced == 0, "and the results equal a CPU-only run");
    tap_ok(ggml_backend_sched_get_n_splits(sched) == 3, "cpu (a, b), acc (c), cpu (d, e): 3 splits (got %d)",
           ggml_backend_sched_get_n_splits(sched));
    tap_ok(strstr(fallback_reason, "supports_op refused") != NULL, "GGMLC_DEBUG=sched names the reason: %s", fallback_reason);
    ggml_backend_sched_free(sched);
    ggml_free(m.ctx);
}

static void test_same_buffer_type(void) {
    /* acc2 computes only MUL and reads host memory: no copies between it and the CPU */
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){.mem_size = 64 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 33);
    ggml_set_name(x, "x");
    ggml_set_input(x);
    struct ggml_tensor *cur = x;
    char name[16];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "n%d", i);
        cur = node(ctx, i % 2 ? GGML_OP_ADD : GGML_OP_MUL, cur, x, name);
    }
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, cur);
    ggml_backend_t bk[2] = {backends[DEV_ACC2], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    misplaced = n_ran = 0;
    ggml_backend_sched_alloc_graph(sched, g);
    float xv[33], out[33], want[33];
    for (int i = 0; i < 33; i++) xv[i] = 0.5f + 0.03125f * (float)i;
    tensor_set_f32(x, xv);
    ggml_backend_sched_graph_compute(sched, g);
    tensor_get_f32(cur, out);
    for (int i = 0; i < 33; i++) {
        float v = xv[i];
        for (int k = 0; k < 6; k++) v = k % 2 ? v + xv[i] : v * xv[i];
        want[i] = v;
    }
    tap_ok(max_abs_diff(out, want, 33) == 0.0, "alternating acc2/cpu graph computes x*x+x ... correctly");
    tap_ok(ggml_backend_sched_get_n_splits(sched) == 6 && ggml_backend_sched_get_n_copies(sched) == 0,
           "6 splits and no copies between backends sharing a buffer type (%d, %d)", ggml_backend_sched_get_n_splits(sched),
           ggml_backend_sched_get_n_copies(sched));
    tap_ok(ran("n0", "acc2") && ran("n1", "cpu") && misplaced == 0, "MUL on acc2, ADD on cpu");
    tap_ok(ggml_backend_sched_get_buffer_size(sched, backends[DEV_ACC2]) > 0 &&
           ggml_backend_sched_get_buffer_size(sched, backends[DEV_CPU]) == 0, "one compute buffer serves both");
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
}

static void test_weights_and_fallback(void) {
    /* w lives in an acc buffer: MUL(w, x) stays on acc, SQR(w) runs on the CPU from a copy of w */
    struct ggml_context *wctx = ggml_init((struct ggml_init_params){.mem_size = 4 * ggml_tensor_overhead(), .no_alloc = true});
    struct ggml_tensor *w = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, 9);
    ggml_set_name(w, "w");
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, backends[DEV_ACC]);
    const float wv[9] = {-3, -2, -1, 0, 1, 2, 3, 4, 1e10f};
    ggml_backend_tensor_set(w, wv, 0, sizeof wv);
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){.mem_size = 16 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 9);
    ggml_set_input(x);
    struct ggml_tensor *sq = node(ctx, GGML_OP_SQR, w, NULL, "sq");
    struct ggml_tensor *out = node(ctx, GGML_OP_MUL, w, sq, "out");
    out = node(ctx, GGML_OP_ADD, out, x, "sum");
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    misplaced = n_ran = 0;
    ggml_backend_sched_alloc_graph(sched, g);
    const float xv[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tensor_set_f32(x, xv);
    ggml_backend_sched_graph_compute(sched, g);
    float got[9];
    tensor_get_f32(out, got);
    bool right = true;
    for (int i = 0; i < 9; i++) right &= got[i] == wv[i] * wv[i] * wv[i] + 1.0f;
    tap_ok(right && misplaced == 0 && ran("sq", "cpu") && ran("out", "acc"), "weights in an acc buffer: w^3+1 computed across backends");
    ggml_backend_sched_free(sched);

    /* host memory: a buffer marked for weights pins ADD to the CPU, any other host buffer does not */
    for (int usage = 0; usage < 3; usage++) { /* 0: ANY, 1: WEIGHTS, 2: WEIGHTS with op_offload */
        struct ggml_context *hctx =
            ggml_init((struct ggml_init_params){.mem_size = 8 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
        struct ggml_tensor *h = ggml_new_tensor_1d(hctx, GGML_TYPE_F32, 9);
        ggml_backend_buffer_t hbuf = ggml_backend_alloc_ctx_tensors(hctx, backends[DEV_CPU]);
        ggml_backend_buffer_set_usage(hbuf, usage ? GGML_BACKEND_BUFFER_USAGE_WEIGHTS : GGML_BACKEND_BUFFER_USAGE_ANY);
        ggml_backend_tensor_set(h, wv, 0, sizeof wv);
        struct ggml_tensor *hsum = node(hctx, GGML_OP_ADD, h, h, "hsum");
        struct ggml_cgraph *hg = ggml_new_graph(hctx);
        ggml_build_forward_expand(hg, hsum);
        sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, usage == 2);
        n_ran = 0;
        fallback_reason[0] = '\0';
        ggml_backend_sched_graph_compute(sched, hg);
        tensor_get_f32(hsum, got);
        static const char *const what[3] = {"a node reading an ordinary host buffer runs on acc, from a copy",
                                            "a node reading host weights (usage WEIGHTS) stays on the CPU, without copies",
                                            "with op_offload, acc takes it over anyway (offload_op), from a copy"};
        tap_ok(got[2] == -2.0f && ran("hsum", usage == 1 ? "cpu" : "acc") &&
                   ggml_backend_sched_get_n_copies(sched) == (usage == 1 ? 0 : 1), "%s", what[usage]);
        if (usage == 1) tap_ok(strstr(fallback_reason, "buffer") != NULL, "GGMLC_DEBUG=sched names the buffer: %s", fallback_reason);
        ggml_backend_sched_free(sched);
        ggml_backend_buffer_free(hbuf);
        ggml_free(hctx);
    }

    /* plain ggml_backend_graph_compute on acc: the graph's SQR runs on a CPU backend transparently */
    struct ggml_context *actx =
        ggml_init((struct ggml_init_params){.mem_size = 16 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    struct ggml_tensor *p = ggml_new_tensor_1d(actx, GGML_TYPE_F32, 9);
    struct ggml_tensor *q = node(actx, GGML_OP_SQR, p, NULL, "q");
    struct ggml_tensor *r = node(actx, GGML_OP_ADD, q, p, "r");
    struct ggml_cgraph *ag = ggml_new_graph(actx);
    ggml_build_forward_expand(ag, r);
    ggml_backend_buffer_t abuf = ggml_backend_alloc_ctx_tensors(actx, backends[DEV_ACC]);
    ggml_backend_tensor_set(p, wv, 0, sizeof wv);
    ggml_backend_register(test_reg); /* so that the fallback finds a CPU device */
    misplaced = n_ran = 0;
    const enum ggml_status st = ggml_backend_graph_compute(backends[DEV_ACC], ag);
    ggml_backend_tensor_get(r, got, 0, sizeof got);
    right = st == GGML_STATUS_SUCCESS;
    for (int i = 0; i < 8; i++) right &= got[i] == wv[i] * wv[i] + wv[i];
    tap_ok(right && ran("r", "acc") && misplaced == 0, "ggml_backend_graph_compute falls back to a CPU backend for SQR (%s)",
           st == GGML_STATUS_SUCCESS ? "ok" : ggmlc_last_error());
    ggml_backend_buffer_free(abuf);
    ggml_free(actx);
    ggml_backend_buffer_free(wbuf);
    ggml_free(ctx);
    ggml_free(wctx);
}

/* t = x + y on acc, u = t^2 in place (SQR: CPU only), v = u * y on acc */
static void test_inplace_across_backends(void) {
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){.mem_size = 16 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 11), *y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 11);
    ggml_set_input(x);
    struct ggml_tensor *t = node(ctx, GGML_OP_ADD, x, y, "t");
    struct ggml_tensor *u = ggml_view_tensor(ctx, t); /* an in-place result: a view that computes */
    u->op = GGML_OP_SQR;
    u->src[0] = t;
    ggml_set_name(u, "u");
    struct ggml_tensor *v = node(ctx, GGML_OP_MUL, u, y, "v");
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, v);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    misplaced = n_ran = 0;
    ggml_backend_sched_alloc_graph(sched, g);
    float xv[11], yv[11], out[11], want[11];
    for (int i = 0; i < 11; i++) {
        xv[i] = (float)i - 5.0f;
        yv[i] = 0.5f * (float)i + 0.25f;
        want[i] = (xv[i] + yv[i]) * (xv[i] + yv[i]) * yv[i];
    }
    tensor_set_f32(x, xv);
    tensor_set_f32(y, yv);
    ggml_backend_sched_graph_compute(sched, g);
    tensor_get_f32(v, out);
    tap_ok(max_abs_diff(out, want, 11) == 0.0 && misplaced == 0 && ran("u", "cpu") && ran("v", "acc"),
           "an in-place node the CPU computes into acc memory is computed aside and copied back");
    tap_ok(ggml_backend_sched_get_n_splits(sched) == 3 && ggml_backend_sched_get_n_copies(sched) == 3,
           "3 splits, 3 copies: x in, t in, u back (%d, %d)", ggml_backend_sched_get_n_splits(sched),
           ggml_backend_sched_get_n_copies(sched));
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
}

/* reserve sizes the compute buffers from a measure graph; later graphs of that shape fit */
static void test_reserve(void) {
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    struct model measure = alternating(GGML_TYPE_F32);
    tap_ok(ggml_backend_sched_reserve(sched, measure.graph) && measure.out->data == NULL, "reserve places no tensor");
    const size_t acc = ggml_backend_sched_get_buffer_size(sched, backends[DEV_ACC]);
    const size_t cpu = ggml_backend_sched_get_buffer_size(sched, backends[DEV_CPU]);
    ggml_free(measure.ctx);
    struct model m = alternating(GGML_TYPE_F32);
    float ref[21], out[21];
    reference(GGML_TYPE_F32, ref);
    ggml_backend_sched_alloc_graph(sched, m.graph);
    set_inputs(&m);
    ggml_backend_sched_graph_compute(sched, m.graph);
    tensor_get_f32(m.out, out);
    tap_ok(acc > 0 && cpu > 0 && ggml_backend_sched_get_buffer_size(sched, backends[DEV_ACC]) == acc &&
               ggml_backend_sched_get_buffer_size(sched, backends[DEV_CPU]) == cpu && max_abs_diff(out, ref, 21) == 0.0,
           "the real graph fits the reserved buffers (%zu + %zu bytes) and computes right", acc, cpu);
    ggml_backend_sched_free(sched);
    ggml_free(m.ctx);
}

/* t = x + y (4x3) on acc; op (SQR, or CONT: identity here) applied in place to the middle two
 * columns of t on the CPU; w = t * y on acc.  CONT cannot reuse its input's memory, so the
 * computed-aside result lands in fresh memory: only its elements may be copied back. */
static void test_strided_inplace(enum ggml_op op) {
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){.mem_size = 16 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3), *y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    ggml_set_input(x);
    struct ggml_tensor *t = node(ctx, GGML_OP_ADD, x, y, "t");
    struct ggml_tensor *cols = ggml_view_2d(ctx, t, 2, 3, t->nb[1], sizeof(float));
    struct ggml_tensor *sq = ggml_view_tensor(ctx, cols); /* what an in-place op on a strided view builds */
    sq->op = op;
    sq->src[0] = cols;
    ggml_set_name(sq, "sq");
    struct ggml_tensor *w = node(ctx, GGML_OP_MUL, t, y, "w");
    w->src[2] = sq; /* w also waits for sq (ggml orders through a dependency the same way) */
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, w);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    misplaced = n_ran = 0;
    ggml_backend_sched_alloc_graph(sched, g);
    float xv[12], yv[12], out[12], want[12];
    for (int i = 0; i < 12; i++) {
        xv[i] = (float)i - 6.0f;
        yv[i] = 0.5f + 0.25f * (float)i;
        const float ti = xv[i] + yv[i];
        want[i] = (op == GGML_OP_SQR && (i % 4 == 1 || i % 4 == 2) ? ti * ti : ti) * yv[i];
    }
    tensor_set_f32(x, xv);
    tensor_set_f32(y, yv);
    ggml_backend_sched_graph_compute(sched, g);
    tensor_get_f32(w, out);
    tap_ok(max_abs_diff(out, want, 12) == 0.0 && misplaced == 0 && ran("sq", "cpu"),
           "an in-place %s on a strided view, computed aside, leaves the bytes between its rows intact", ggml_op_name(op));
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
}

static int observed;
static bool observe(struct ggml_tensor *t, bool ask, void *data) {
    if (ask) return strcmp(t->name, "c") == 0;
    float v[21];
    tensor_get_f32(t, v);
    observed = isfinite(v[0]) ? observed + 1 : -100;
    return true;
}

static void test_callback_and_errors(void) {
    struct model m = alternating(GGML_TYPE_F32);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    ggml_backend_sched_set_eval_callback(sched, observe, NULL);
    ggml_backend_sched_alloc_graph(sched, m.graph);
    set_inputs(&m);
    float ref[21], out[21];
    reference(GGML_TYPE_F32, ref);
    ggml_backend_sched_graph_compute(sched, m.graph);
    tensor_get_f32(m.out, out);
    tap_ok(observed == 1 && max_abs_diff(out, ref, 21) == 0.0, "the eval callback sees node c once, results unchanged");
    ggml_backend_sched_free(sched);
    ggml_free(m.ctx);
    ggml_backend_t wrong[2] = {backends[DEV_CPU], backends[DEV_ACC]};
    tap_ok(ggml_backend_sched_new(wrong, NULL, 2, 64, false, true) == NULL && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "a scheduler whose last backend is not the CPU is refused: %s", ggmlc_last_error());
}

/* A node no backend computes: the computation fails with an error, no crash. */
static void test_unsupported_everywhere(void) {
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){.mem_size = 8 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    ggml_set_input(x);
    struct ggml_tensor *a = node(ctx, GGML_OP_ADD, x, x, "a2");
    struct ggml_tensor *n = node(ctx, GGML_OP_SQRT, a, NULL, "root"); /* no test device has SQRT */
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, n);
    ggml_backend_t bk[2] = {backends[DEV_ACC], backends[DEV_CPU]};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 64, false, true);
    const enum ggml_status st = ggml_backend_sched_graph_compute(sched, g);
    tap_ok(st != GGML_STATUS_SUCCESS && ggmlc_last_status() == GGMLC_ERR_UNSUPPORTED,
           "a node no backend computes fails the computation: %s", ggmlc_last_error());
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
}

int main(void) {
    setenv("GGMLC_DEBUG", "sched", 1);
    if (!getenv("SCHED_TEST_LOG")) ggml_log_set(log_cb, NULL);
    make_devices();
    test_alternating();
    test_type_refusal();
    test_rebuilt_graph();
    test_same_buffer_type();
    test_weights_and_fallback();
    test_inplace_across_backends();
    test_reserve();
    test_strided_inplace(GGML_OP_SQR);
    test_strided_inplace(GGML_OP_CONT);
    test_callback_and_errors();
    test_unsupported_everywhere();
    for (int d = 0; d < N_DEVS; d++) ggml_backend_free(backends[d]);
    return tap_done();
}
