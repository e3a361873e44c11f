/*
 * test-vulkan-train.c - training on the Vulkan plugin matches training on the
 * CPU: a small MLP (rms_norm, gelu) and a small CNN (conv via im2col, relu,
 * max-pool) trained with ggml-opt (AdamW, cross-entropy) for a few epochs from
 * the same initial weights on the same batches, once through a scheduler over
 * {Vulkan, CPU} and once on the CPU alone.  The epoch losses and the final
 * weights must agree, and every node of the training graphs (forward,
 * backward, optimizer step) must run on Vulkan: no CPU fallback hides a
 * missing backward kernel.  Skipped, visibly, when there is no Vulkan device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-opt.h"
#include "ggmlc.h"
#include "testutil.h"

enum { SIDE = 8, N_IN = SIDE * SIDE, N_CLASSES = 4, N_DATA = 192, BATCH = 32, N_EPOCHS = 4, MAX_PARAMS = 8 };

/* Four classes of 8x8 images: a bright bar in one of four places, plus noise. */
static void make_data(ggml_opt_dataset_t ds) {
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds)), *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    test_seed(7);
    for (int64_t i = 0; i < N_DATA; i++) {
        const int k = (int)(i % N_CLASSES);
        for (int p = 0; p < N_IN; p++) {
            const int r = p / SIDE, c = p % SIDE;
            const bool bar = k == 0 ? r == 2 : k == 1 ? r == 5 : k == 2 ? c == 2 : c == 5;
            x[i * N_IN + p] = (bar ? 1.0f : 0.0f) + 0.3f * test_normal();
        }
        for (int c = 0; c < N_CLASSES; c++) y[i * N_CLASSES + c] = c == k ? 1.0f : 0.0f;
    }
}

struct model {
    struct ggml_context *ctx_static, *ctx_compute;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *inputs, *logits;
    struct ggml_tensor *params[MAX_PARAMS];
    int n_params;
};

static struct ggml_tensor *add_param(struct model *m, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    struct ggml_tensor *t = ggml_new_tensor_4d(m->ctx_static, GGML_TYPE_F32, n0, n1, n2, n3);
    m->params[m->n_params++] = t;
    return t;
}

/* MLP: 64 -> 48 (rms_norm, gelu) -> 4. */
static void build_mlp(struct model *m) {
    struct ggml_tensor *w1 = add_param(m, N_IN, 48, 1, 1), *b1 = add_param(m, 48, 1, 1, 1);
    struct ggml_tensor *w2 = add_param(m, 48, N_CLASSES, 1, 1), *b2 = add_param(m, N_CLASSES, 1, 1, 1);
    struct ggml_context *c = m->ctx_compute;
    struct ggml_tensor *h = ggml_add(c, ggml_mul_mat(c, w1, m->inputs), b1);
    h = ggml_gelu(c, ggml_rms_norm(c, h, 1e-6f));
    m->logits = ggml_add(c, ggml_mul_mat(c, w2, h), b2);
}

/* CNN: conv 3x3 (6 filters, same padding) + bias, relu, max-pool 2 -> dense 4. */
static void build_cnn(struct model *m) {
    struct ggml_tensor *k = add_param(m, 3, 3, 1, 6), *kb = add_param(m, 1, 1, 6, 1);
    struct ggml_tensor *w = add_param(m, 4 * 4 * 6, N_CLASSES, 1, 1), *b = add_param(m, N_CLASSES, 1, 1, 1);
    struct ggml_context *c = m->ctx_compute;
    struct ggml_tensor *img = ggml_reshape_4d(c, m->inputs, SIDE, SIDE, 1, BATCH);
    struct ggml_tensor *h = ggml_relu(c, ggml_add(c, ggml_conv_2d(c, k, img, 1, 1, 1, 1, 1, 1), kb)); /* [8, 8, 6, N] */
    h = ggml_pool_2d(c, h, GGML_OP_POOL_MAX, 2, 2, 2, 2, 0, 0);                                     /* [4, 4, 6, N] */
    h = ggml_reshape_2d(c, ggml_cont(c, h), 4 * 4 * 6, BATCH);
    m->logits = ggml_add(c, ggml_mul_mat(c, w, h), b);
}

static void model_init(struct model *m, ggml_backend_t backend, void (*build)(struct model *)) {
    memset(m, 0, sizeof *m);
    m->ctx_static = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead(), NULL, true});
    m->ctx_compute = ggml_init((struct ggml_init_params){64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    m->inputs = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_IN, BATCH);
    build(m);
    m->buf = ggml_backend_alloc_ctx_tensors(m->ctx_static, backend);
    test_seed(1234);
    for (int i = 0; i < m->n_params; i++) {
        struct ggml_tensor *p = m->params[i];
        const size_t n = (size_t)ggml_nelements(p);
        float *v = malloc(n * sizeof *v);
        const float scale = 1.0f / sqrtf((float)(p->ne[0] * p->ne[1] * p->ne[2] > 64 ? p->ne[0] : 9));
        for (size_t j = 0; j < n; j++) v[j] = scale * test_uniform(-1.0f, 1.0f);
        ggml_backend_tensor_set(p, v, 0, n * sizeof *v);
        free(v);
        ggml_set_param(p);
    }
}

static void model_free(struct model *m) {
    ggml_backend_buffer_free(m->buf);
    ggml_free(m->ctx_static);
    ggml_free(m->ctx_compute);
}

/* Nodes the scheduler gave to the CPU (the callback sees every node, asks for none). */
struct placement {
    ggml_backend_sched_t sched;
    ggml_backend_t cpu;
    int on_cpu;
    char first[128];
};

static bool computes(enum ggml_op op) {
    return op != GGML_OP_NONE && op != GGML_OP_VIEW && op != GGML_OP_RESHAPE && op != GGML_OP_PERMUTE && op != GGML_OP_TRANSPOSE;
}

static bool watch_placement(struct ggml_tensor *t, bool ask, void *user_data) {
    struct placement *pl = user_data;
    if (ask && computes(t->op) && ggml_backend_sched_get_tensor_backend(pl->sched, t) == pl->cpu) {
        if (pl->on_cpu++ == 0) snprintf(pl->first, sizeof pl->first, "%s (%s)", t->name, ggml_op_desc(t));
    }
    return false;
}

static struct ggml_opt_optimizer_params quick_adamw(void *userdata) {
    struct ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(userdata);
    p.adamw.alpha = 0.01f;
    p.adamw.wd = 0.01f;
    return p;
}

struct run {
    double loss[N_EPOCHS];
    float *weights; /* every parameter, concatenated */
    size_t n_weights;
    int on_cpu;
    char first_on_cpu[128];
};

/* Train on backends[0..n) (the CPU last); the losses per epoch and the final weights. */
static bool train(ggml_backend_t *backends, int n, void (*build)(struct model *), struct run *out) {
    struct model m;
    model_init(&m, backends[0], build);
    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, NULL, n, 2048, false, true);
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_CLASSES, N_DATA, 1);
    bool ok = m.buf && sched && ds && m.logits;
    struct placement pl = {.sched = sched, .cpu = backends[n - 1]};
    if (ok) {
        make_data(ds);
        if (n > 1) ggml_backend_sched_set_eval_callback(sched, watch_placement, &pl);
        struct ggml_opt_params params = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
        params.ctx_compute = m.ctx_compute;
        params.inputs = m.inputs;
        params.outputs = m.logits;
        params.get_opt_pars = quick_adamw;
        ggml_opt_context_t opt = ggml_opt_init(params);
        ggml_opt_result_t result = ggml_opt_result_init();
        for (int e = 0; ok && opt && e < N_EPOCHS; e++) {
            ggml_opt_result_reset(result);
            ggml_opt_epoch(opt, ds, result, NULL, N_DATA, NULL, NULL);
            ggml_opt_result_loss(result, &out->loss[e], NULL);
            ok = isfinite(out->loss[e]) && ggmlc_last_status() == GGMLC_OK;
        }
        ok = ok && opt;
        ggml_opt_result_free(result);
        ggml_opt_free(opt);
    }
    out->n_weights = 0;
    for (int i = 0; i < m.n_params; i++) out->n_weights += (size_t)ggml_nelements(m.params[i]);
    out->weights = malloc(out->n_weights * sizeof *out->weights);
    for (size_t i = 0, at = 0; ok && i < (size_t)m.n_params; at += (size_t)ggml_nelements(m.params[i]), i++)
        tensor_get_f32(m.params[i], out->weights + at);
    out->on_cpu = pl.on_cpu;
    snprintf(out->first_on_cpu, sizeof out->first_on_cpu, "%s", pl.first);
    ggml_opt_dataset_free(ds);
    ggml_backend_sched_free(sched);
    model_free(&m);
    return ok;
}

static void check_model(const char *name, void (*build)(struct model *), ggml_backend_t vk, ggml_backend_t cpu) {
    ggml_backend_t both[2] = {vk, cpu}, cpu_only[1] = {cpu};
    struct run gpu = {0}, ref = {0};
    const bool ok_gpu = train(both, 2, build, &gpu), ok_cpu = train(cpu_only, 1, build, &ref);
    if (tap_ok(ok_gpu && ok_cpu, "%s: trains on %s and on the CPU (%s)", name, ggml_backend_name(vk), ok_gpu && ok_cpu ? "yes" : ggmlc_last_error())) {
        double worst = 0.0;
        for (int e = 0; e < N_EPOCHS; e++) worst = fmax(worst, fabs(gpu.loss[e] - ref.loss[e]) / fabs(ref.loss[e]));
        tap_ok(worst < 1e-3, "%s: epoch losses agree (%.4f -> %.4f on %s, %.4f -> %.4f on the CPU; worst relative gap %.2g)", name,
               gpu.loss[0], gpu.loss[N_EPOCHS - 1], ggml_backend_name(vk), ref.loss[0], ref.loss[N_EPOCHS - 1], worst);
        tap_ok(ref.loss[N_EPOCHS - 1] < 0.5 * ref.loss[0], "%s: the loss falls (it is a real training run)", name);
        ok_nmse(gpu.weights, ref.weights, gpu.n_weights, 1e-6, "%s: the trained weights agree", name);
        tap_ok(gpu.on_cpu == 0, "%s: every node of the training graphs ran on %s (%d on the CPU%s%s)", name, ggml_backend_name(vk),
               gpu.on_cpu, gpu.on_cpu ? ", first " : "", gpu.first_on_cpu);
    }
    free(gpu.weights);
    free(ref.weights);
}

int main(void) {
    test_vulkan_env();
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    ggml_backend_t vk = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    if (tap_ok(vk && cpu, "the Vulkan and CPU backends start")) {
        check_model("MLP", build_mlp, vk, cpu);
        check_model("CNN", build_cnn, vk, cpu);
    }
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    return tap_done();
}
