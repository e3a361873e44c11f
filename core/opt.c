/*
 * opt.c - optimization contexts: the loss, backward and optimizer graphs
 * built around a model's outputs, their allocation through a backend
 * scheduler, evaluation, and results.
 *
 * Persistent state (gradient accumulators, the loss seed, AdamW moments and
 * the optimizer's hyperparameter tensor) lives in ctx_static, allocated once
 * in the first backend of the scheduler; everything else is allocated by the
 * scheduler per graph.  Hyperparameters are tensor data, so a learning-rate
 * schedule never rebuilds a graph.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend-impl.h"
#include "opt-impl.h"

#define OPT_MAX_PARAMS 4096

struct opt_param {
    struct ggml_tensor *param;
    struct ggml_tensor *grad_acc;
    struct ggml_tensor *m, *v; /* AdamW moments, NULL for SGD */
};

struct ggml_opt_context {
    ggml_backend_sched_t sched;
    struct ggmlc_rng rng;

    struct ggml_context *ctx_static; /* persistent tensors, in buf_static */
    ggml_backend_buffer_t buf_static;
    struct ggml_context *ctx_graphs; /* loss, labels, backward nodes, graphs (no_alloc) */

    struct ggml_tensor *inputs, *outputs, *labels, *loss, *loss_scaled, *pred, *ncorrect;
    struct ggml_tensor *loss_seed;   /* the loss's gradient accumulator (holds 1) */
    struct ggml_tensor *opt_pars;    /* the optimizer's hyperparameters (ggmlc__optim_pack) */
    struct ggml_cgraph *gf, *gb_grad, *gb_opt;
    struct opt_param *params;
    int n_params;

    bool static_graphs;
    struct ggml_cgraph *allocated; /* graph chosen by the last ggml_opt_alloc, to compute */
    struct ggml_cgraph *kept;      /* graph whose allocation the scheduler holds */
    struct ggmlc_alloc_record placed; /* what the scheduler placed for the last allocation */
    bool allocated_backward, allocated_step;

    struct opt_gather *gather; /* the dataset's copy that ggml_opt_epoch gathers batches from */
    bool gathering;            /* ggml_opt_epoch is on the gathering route */

    enum ggml_opt_loss_type loss_type;
    enum ggml_opt_build_type build_type;
    enum ggml_opt_optimizer_type optimizer;
    int32_t opt_period;
    int32_t opt_i;  /* accumulation steps done in the current period */
    int64_t iter;   /* optimizer steps done */
    ggml_opt_get_optimizer_params get_opt_pars;
    void *get_opt_pars_ud;
};

struct ggml_opt_result {
    int64_t ndata;
    int64_t nbatches;
    double loss_sum, loss_sq_sum;
    bool loss_is_sum; /* the batches' losses were SUM losses: reported summed, not averaged */
    int64_t ncorrect;
    bool has_accuracy;
    int32_t *pred;
    size_t pred_cap;
};

struct ggmlc_rng *ggmlc__opt_rng(ggml_opt_context_t c) { return &c->rng; }

/* -------------------------------------------------------------- params */

struct ggml_opt_optimizer_params ggml_opt_get_default_optimizer_params(void *userdata) {
    (void)userdata;
    return (struct ggml_opt_optimizer_params){
        .adamw = {.alpha = 0.001f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .wd = 0.0f},
        .sgd = {.alpha = 0.001f, .wd = 0.0f},
    };
}

struct ggml_opt_optimizer_params ggml_opt_get_constant_optimizer_params(void *userdata) {
    return *(struct ggml_opt_optimizer_params *)userdata;
}

struct ggml_opt_params ggml_opt_default_params(ggml_backend_sched_t backend_sched, enum ggml_opt_loss_type loss_type) {
    return (struct ggml_opt_params){
        .backend_sched = backend_sched,
        .loss_type = loss_type,
        .build_type = GGML_OPT_BUILD_TYPE_OPT,
        .opt_period = 1,
        .get_opt_pars = ggml_opt_get_default_optimizer_params,
        .optimizer = GGML_OPT_OPTIMIZER_TYPE_ADAMW,
    };
}

const char *ggml_opt_optimizer_name(enum ggml_opt_optimizer_type type) {
    switch (type) {
    case GGML_OPT_OPTIMIZER_TYPE_ADAMW: return "adamw";
    case GGML_OPT_OPTIMIZER_TYPE_SGD: return "sgd";
    default: return "unknown";
    }
}

/* ------------------------------------------------------------- building */

/* The enum of ggml-opt's optimizers as the optimizer module's. */
static enum ggmlc_optim_kind optim_kind(enum ggml_opt_optimizer_type type) {
    return type == GGML_OPT_OPTIMIZER_TYPE_ADAMW ? GGMLC_OPTIM_ADAMW : GGMLC_OPTIM_SGD;
}

/* An input tensor for the labels, shaped like the outputs. */
static struct ggml_tensor *new_labels(struct ggml_context *ctx, struct ggml_tensor *out) {
    struct ggml_tensor *labels = ggml_dup_tensor(ctx, out);
    ggml_set_input(labels);
    ggml_set_name(labels, "labels");
    return labels;
}

static struct ggml_tensor *build_loss(ggml_opt_context_t c) {
    struct ggml_context *ctx = c->ctx_graphs;
    struct ggml_tensor *out = c->outputs;
    c->labels = c->pred = c->ncorrect = NULL;
    switch (c->loss_type) {
    case GGML_OPT_LOSS_TYPE_MEAN: return ggmlc__loss_mean(ctx, out);
    case GGML_OPT_LOSS_TYPE_SUM: return ggmlc__loss_sum(ctx, out);
    case GGML_OPT_LOSS_TYPE_CROSS_ENTROPY:
        c->labels = new_labels(ctx, out);
        c->pred = ggml_argmax(ctx, out);
        c->ncorrect = ggml_count_equal(ctx, c->pred, ggml_argmax(ctx, c->labels));
        return ggmlc__loss_cross_entropy(ctx, out, c->labels, out->ne[0]);
    case GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR:
        c->labels = new_labels(ctx, out);
        return ggmlc__loss_mse(ctx, out, c->labels);
    }
    return NULL;
}

/* The parameters of the forward graph, with persistent accumulators and moments. */
static bool collect_params(ggml_opt_context_t c) {
    if (c->ctx_static) return true; /* created by an earlier build: the parameters do not change */
    int n = 0;
    for (int i = 0; i < ggml_graph_n_nodes(c->gf); i++) n += (ggml_graph_node(c->gf, i)->flags & GGML_TENSOR_FLAG_PARAM) != 0;
    const enum ggmlc_optim_kind kind = optim_kind(c->optimizer);
    const size_t per_param = 1 + (size_t)ggmlc__optim_n_state(kind);
    c->ctx_static = ggml_init((struct ggml_init_params){(per_param * (size_t)n + 4) * ggml_tensor_overhead(), NULL, true});
    c->params = calloc((size_t)n + 1, sizeof *c->params);
    if (!c->ctx_static || !c->params) return false;
    for (int i = 0; i < ggml_graph_n_nodes(c->gf); i++) {
        struct ggml_tensor *p = ggml_graph_node(c->gf, i);
        if (!(p->flags & GGML_TENSOR_FLAG_PARAM)) continue;
        struct opt_param *op = &c->params[c->n_params++];
        op->param = p;
        op->grad_acc = ggml_new_tensor(c->ctx_static, GGML_TYPE_F32, GGML_MAX_DIMS, p->ne);
        ggml_format_name(op->grad_acc, "grad acc %s", p->name);
        if (!ggmlc__optim_new_state(c->ctx_static, kind, op->grad_acc, &op->m, &op->v))
            return false;
    }
    c->loss_seed = ggml_new_tensor_1d(c->ctx_static, GGML_TYPE_F32, 1);
    c->opt_pars = ggml_new_tensor_1d(c->ctx_static, GGML_TYPE_F32, ggmlc__optim_n_pars(kind));
    c->buf_static = ggml_backend_alloc_ctx_tensors(c->ctx_static, ggml_backend_sched_get_backend(c->sched, 0));
    if (!c->buf_static) return false;
    ggml_backend_buffer_clear(c->buf_static, 0);
    return true;
}

/* Gradient accumulators indexed like the graph's nodes, for ggml_build_backward_expand. */
static struct ggml_tensor **grad_acc_array(ggml_opt_context_t c, struct ggml_cgraph *g) {
    const int n = ggml_graph_n_nodes(g);
    struct ggml_tensor **accs = calloc((size_t)n + 1, sizeof *accs);
    if (!accs) return NULL;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *node = ggml_graph_node(g, i);
        if (node == c->loss_scaled) accs[i] = c->loss_seed;
        for (int j = 0; j < c->n_params; j++) {
            if (c->params[j].param == node) accs[i] = c->params[j].grad_acc;
        }
    }
    return accs;
}

static bool build_backward(ggml_opt_context_t c) {
    c->gb_grad = ggml_graph_dup(c->ctx_graphs, c->gf, true);
    struct ggml_tensor **accs = grad_acc_array(c, c->gb_grad);
    if (!c->gb_grad || !accs) {
        free(accs);
        return false;
    }
    ggml_build_backward_expand(c->ctx_graphs, c->gb_grad, accs);
    free(accs);
    if (c->build_type < GGML_OPT_BUILD_TYPE_OPT) return true;
    c->gb_opt = ggml_graph_dup(c->ctx_graphs, c->gb_grad, true);
    if (!c->gb_opt) return false;
    for (int i = 0; i < c->n_params; i++) {
        struct opt_param *p = &c->params[i];
        struct ggml_tensor *step = ggmlc__optim_update(c->ctx_graphs, optim_kind(c->optimizer), p->param,
                                                      p->grad_acc, p->m, p->v, c->opt_pars, 0.0f);
        if (!step) return false;
        ggml_build_forward_expand(c->gb_opt, step);
    }
    return true;
}

/* Whether the loss is a mean over the datapoints (all but SUM). */
static bool loss_per_datapoint(enum ggml_opt_loss_type type) { return type != GGML_OPT_LOSS_TYPE_SUM; }

/* Build the loss and, as the build type asks, the backward and optimizer graphs. */
static bool build_graphs(ggml_opt_context_t c, struct ggml_cgraph *gf_user) {
    if (c->ctx_graphs) ggml_reset(c->ctx_graphs);
    else c->ctx_graphs = ggml_init((struct ggml_init_params){64 * GGML_DEFAULT_GRAPH_SIZE * ggml_tensor_overhead() +
                                                                 3 * ggml_graph_overhead_custom(OPT_GRAPH_SIZE, true),
                                                             NULL, true});
    if (!c->ctx_graphs) return false;
    ggml_set_output(c->outputs);
    c->loss = build_loss(c);
    if (!c->loss) return false;
    ggml_set_name(c->loss, "loss");
    ggml_set_output(c->loss);
    /* A loss per datapoint is averaged over the opt_period batches of a step, as ggml does;
     * a SUM loss is summed over them, unscaled. */
    const bool average = c->opt_period > 1 && loss_per_datapoint(c->loss_type);
    c->loss_scaled = average ? ggml_scale(c->ctx_graphs, c->loss, 1.0f / (float)c->opt_period) : c->loss;
    ggml_set_loss(c->loss_scaled);
    if (c->pred) ggml_set_output(c->pred);
    if (c->ncorrect) ggml_set_output(c->ncorrect);
    c->gf = ggml_new_graph_custom(c->ctx_graphs, OPT_GRAPH_SIZE, true);
    if (!c->gf) return false;
    if (gf_user) ggml_graph_cpy(gf_user, c->gf);
    ggml_build_forward_expand(c->gf, c->loss_scaled);
    if (c->pred) ggml_build_forward_expand(c->gf, c->ncorrect);
    c->gb_grad = c->gb_opt = NULL;
    if (c->build_type == GGML_OPT_BUILD_TYPE_FORWARD) return true;
    return collect_params(c) && build_backward(c);
}

/* -------------------------------------------------------------- context */

ggml_opt_context_t ggml_opt_init(struct ggml_opt_params params) {
    if (!params.backend_sched || params.opt_period < 1 || (unsigned)params.optimizer >= GGML_OPT_OPTIMIZER_TYPE_COUNT) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_init: a backend scheduler, opt_period >= 1 and a known optimizer are required");
        return NULL;
    }
    struct ggml_opt_context *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->sched = params.backend_sched;
    ggmlc__rng_seed(&c->rng, 42);
    c->loss_type = params.loss_type;
    c->build_type = params.build_type;
    c->optimizer = params.optimizer;
    c->opt_period = params.opt_period;
    c->get_opt_pars = params.get_opt_pars ? params.get_opt_pars : ggml_opt_get_default_optimizer_params;
    c->get_opt_pars_ud = params.get_opt_pars_ud;
    c->static_graphs = params.ctx_compute && params.inputs && params.outputs;
    if (c->static_graphs) {
        c->inputs = params.inputs;
        c->outputs = params.outputs;
        if (!build_graphs(c, NULL)) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_opt_init: cannot build the training graphs (%s)", ggmlc_last_error());
            ggml_opt_free(c);
            return NULL;
        }
        ggml_opt_reset(c, true);
    }
    return c;
}

void ggml_opt_free(ggml_opt_context_t c) {
    if (!c) return;
    ggmlc__alloc_record_free(&c->placed);
    ggmlc__opt_gather_free(c->gather);
    ggml_backend_buffer_free(c->buf_static);
    ggml_free(c->ctx_static);
    ggml_free(c->ctx_graphs);
    free(c->params);
    free(c);
}

void ggml_opt_reset(ggml_opt_context_t c, bool optimizer) {
    struct ggml_cgraph *g = optimizer && c->gb_opt ? c->gb_opt : c->gb_grad;
    if (g) ggml_graph_reset(g);
    if (optimizer) c->iter = 0;
    c->opt_i = 0;
}

bool ggml_opt_static_graphs(ggml_opt_context_t c) { return c->static_graphs; }
struct ggml_tensor *ggml_opt_inputs(ggml_opt_context_t c) { return c->inputs; }
struct ggml_tensor *ggml_opt_outputs(ggml_opt_context_t c) { return c->outputs; }
struct ggml_tensor *ggml_opt_labels(ggml_opt_context_t c) { return c->labels; }
struct ggml_tensor *ggml_opt_loss(ggml_opt_context_t c) { return c->loss; }
struct ggml_tensor *ggml_opt_pred(ggml_opt_context_t c) { return c->pred; }
struct ggml_tensor *ggml_opt_ncorrect(ggml_opt_context_t c) { return c->ncorrect; }
enum ggml_opt_optimizer_type ggml_opt_context_optimizer_type(ggml_opt_context_t c) { return c->optimizer; }

struct ggml_tensor *ggml_opt_grad_acc(ggml_opt_context_t c, struct ggml_tensor *node) {
    for (int i = 0; i < c->n_params; i++) {
        if (c->params[i].param == node) return c->params[i].grad_acc;
    }
    return NULL;
}

/* ------------------------------------------------------------ evaluation */

void ggml_opt_prepare_alloc(ggml_opt_context_t c, struct ggml_context *ctx_compute, struct ggml_cgraph *gf,
                            struct ggml_tensor *inputs, struct ggml_tensor *outputs) {
    (void)ctx_compute;
    if (c->static_graphs) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_prepare_alloc: the context uses static graphs");
        return;
    }
    c->inputs = inputs;
    c->outputs = outputs;
    c->placed.n = 0; /* new graphs: the old tensors may be gone already, leave them alone */
    c->kept = NULL;
    if (!build_graphs(c, gf)) ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_opt_prepare_alloc: cannot build the graphs");
}

/* The places the scheduler gave the last graph allocated are forgotten (the graphs share
 * tensors: each is allocated afresh). */
static void drop_allocation(ggml_opt_context_t c) {
    ggmlc__alloc_record_forget(&c->placed);
    c->kept = NULL;
    ggml_backend_sched_reset(c->sched);
}

/* Give g the scheduler's memory. */
static bool allocate(ggml_opt_context_t c, struct ggml_cgraph *g) {
    drop_allocation(c);
    if (!ggmlc__alloc_record_reserve(&c->placed, g)) return false;
    if (!ggml_backend_sched_alloc_graph(c->sched, g)) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_opt_alloc: the scheduler could not allocate the graph");
        return false;
    }
    ggmlc__alloc_record_take(&c->placed, g);
    c->kept = g;
    return true;
}

void ggml_opt_alloc(ggml_opt_context_t c, bool backward) {
    struct ggml_cgraph *g = c->gf;
    if (backward && c->build_type >= GGML_OPT_BUILD_TYPE_GRAD) {
        const bool step = c->build_type == GGML_OPT_BUILD_TYPE_OPT && c->opt_i + 1 == c->opt_period;
        g = step ? c->gb_opt : c->gb_grad;
    }
    c->allocated = NULL;
    if (!g) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_alloc: no graph to allocate (call ggml_opt_prepare_alloc first)");
        return;
    }
    c->allocated_backward = g != c->gf;
    c->allocated_step = g == c->gb_opt;
    if (c->gathering && !(g = ggmlc__opt_gather_graph(c->gather, g))) return;
    /* As in ggml: the graph allocated last step is computed again where it was (its inputs
     * are rewritten in place), unless the scheduler has served another graph since. */
    if ((g != c->kept || !ggmlc__sched_holds(c->sched, g)) && !allocate(c, g)) return;
    c->allocated = g;
}

/* Write this step's hyperparameters (with AdamW's bias corrections) into opt_pars. */
static void set_optimizer_params(ggml_opt_context_t c) {
    const struct ggml_opt_optimizer_params p = c->get_opt_pars(c->get_opt_pars_ud);
    const bool adamw = c->optimizer == GGML_OPT_OPTIMIZER_TYPE_ADAMW;
    const struct ggmlc_optim_hparams hp = adamw
        ? (struct ggmlc_optim_hparams){.lr = p.adamw.alpha, .beta1 = p.adamw.beta1,
                                       .beta2 = p.adamw.beta2, .eps = p.adamw.eps,
                                       .weight_decay = p.adamw.wd}
        : (struct ggmlc_optim_hparams){.lr = p.sgd.alpha, .weight_decay = p.sgd.wd};
    float pars[GGMLC_OPTIM_MAX_PARS];
    const int n = ggmlc__optim_pack(optim_kind(c->optimizer), &hp, c->iter, pars);
    ggml_backend_tensor_set(c->opt_pars, pars, 0, sizeof(float) * (size_t)n);
}

/* The step's loss, number correct and predictions (pred_out: ndata of them) from the device.
 * They are graph outputs: a GPU backend that copies a graph's outputs back with its command
 * buffer (ggmlc's Vulkan plugin) serves these reads without another transfer or wait, so a step
 * costs one submit and one wait. */
static void read_results(ggml_opt_context_t c, float *loss, int64_t *ncorrect, int32_t *pred_out) {
    ggml_backend_tensor_get(c->loss, loss, 0, sizeof *loss);
    if (c->ncorrect) ggml_backend_tensor_get(c->ncorrect, ncorrect, 0, sizeof *ncorrect);
    if (c->pred && pred_out) ggml_backend_tensor_get(c->pred, pred_out, 0, ggml_nbytes(c->pred));
}

/* Room in r for ndata more predictions; false when there is no memory for them. */
static bool pred_room(ggml_opt_result_t r, int64_t ndata) {
    const size_t need = (size_t)(r->ndata + ndata);
    if (need <= r->pred_cap) return true;
    size_t cap = r->pred_cap ? r->pred_cap : 1024;
    while (cap < need) cap *= 2;
    int32_t *p = realloc(r->pred, cap * sizeof *p);
    if (!p) return false;
    r->pred = p;
    r->pred_cap = cap;
    return true;
}

static void record_result(ggml_opt_context_t c, ggml_opt_result_t r) {
    const int64_t ndata = c->outputs->ne[1];
    float loss = 0;
    int64_t ncorrect = 0;
    int32_t *pred_out = c->pred && pred_room(r, ndata) ? r->pred + r->ndata : NULL;
    read_results(c, &loss, &ncorrect, pred_out);
    r->ndata += ndata;
    r->nbatches++;
    r->loss_sum += loss;
    r->loss_sq_sum += (double)loss * loss;
    r->loss_is_sum = !loss_per_datapoint(c->loss_type);
    if (!c->pred) return;
    r->has_accuracy = true;
    r->ncorrect += ncorrect;
}

void ggml_opt_eval(ggml_opt_context_t c, ggml_opt_result_t result) {
    if (!c->allocated) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_eval: no graph allocated (call ggml_opt_alloc first)");
        return;
    }
    struct ggml_cgraph *g = c->allocated;
    c->allocated = NULL;
    if (c->allocated_backward && c->opt_i == 0) ggml_graph_reset(c->gb_grad); /* a new accumulation period */
    const bool step = c->allocated_backward && c->allocated_step;
    if (step) set_optimizer_params(c);
    if (ggml_backend_sched_graph_compute(c->sched, g) != GGML_STATUS_SUCCESS) {
        ggmlc_set_error(GGMLC_ERR_BACKEND, "ggml_opt_eval: the computation failed");
        return;
    }
    if (c->allocated_backward) {
        c->opt_i = step || c->build_type < GGML_OPT_BUILD_TYPE_OPT ? 0 : c->opt_i + 1;
        if (step) c->iter++;
    }
    if (result) record_result(c, result);
}

/* ------------------------------------------- ggml_opt_epoch's gathering */

bool ggmlc__opt_gather_begin(ggml_opt_context_t c, ggml_opt_dataset_t dataset, bool copied) {
    c->gathering = false;
    if (!c->static_graphs) return false;
    const struct opt_gather_target target = {ggml_backend_sched_get_backend(c->sched, 0), c->inputs, c->labels};
    if (!ggmlc__opt_gather_fits(c->gather, &target, dataset)) {
        /* a new copy: the graphs allocated so far (gathering from the old one, or with the labels
         * in the scheduler's memory) lose their places first */
        drop_allocation(c);
        ggmlc__opt_gather_free(c->gather);
        if (!(c->gather = ggmlc__opt_gather_new(&target, dataset))) return false;
        copied = false;
    }
    c->gathering = copied || ggmlc__opt_gather_upload(c->gather, dataset);
    return c->gathering;
}

void ggmlc__opt_gather_step(ggml_opt_context_t c, ggml_opt_dataset_t dataset, int64_t ibatch) {
    ggmlc__opt_gather_batch(c->gather, dataset, ibatch);
}

void ggmlc__opt_gather_end(ggml_opt_context_t c) { c->gathering = false; }

/* --------------------------------------------------------------- results */

ggml_opt_result_t ggml_opt_result_init(void) { return calloc(1, sizeof(struct ggml_opt_result)); }

void ggml_opt_result_free(ggml_opt_result_t r) {
    if (!r) return;
    free(r->pred);
    free(r);
}

void ggml_opt_result_reset(ggml_opt_result_t r) {
    int32_t *pred = r->pred;
    const size_t cap = r->pred_cap;
    *r = (struct ggml_opt_result){.pred = pred, .pred_cap = cap};
}

void ggml_opt_result_ndata(ggml_opt_result_t r, int64_t *ndata) { *ndata = r->ndata; }

/* As in ggml: no batch gives a loss of 0; a loss per datapoint is the mean over the batches
 * and its uncertainty the standard error of that mean; a SUM loss is the sum over the
 * batches and its uncertainty the (Bessel-corrected) standard deviation of the batch losses. */
void ggml_opt_result_loss(ggml_opt_result_t r, double *loss, double *unc) {
    const double n = (double)r->nbatches;
    const double mean = n > 0 ? r->loss_sum / n : 0.0;
    *loss = n == 0 ? 0.0 : r->loss_is_sum ? r->loss_sum : mean;
    if (unc) {
        const double var = n > 1 ? (r->loss_sq_sum / n - mean * mean) * n / (n - 1) : NAN;
        const double sd = sqrt(var > 0 ? var : 0);
        *unc = n > 1 ? (r->loss_is_sum ? sd : sd / sqrt(n)) : NAN;
    }
}

void ggml_opt_result_pred(ggml_opt_result_t r, int32_t *pred) {
    if (r->pred && r->ndata > 0) memcpy(pred, r->pred, (size_t)r->ndata * sizeof *pred);
}

void ggml_opt_result_accuracy(ggml_opt_result_t r, double *accuracy, double *unc) {
    const double n = (double)r->ndata;
    const double acc = r->has_accuracy && n > 0 ? (double)r->ncorrect / n : NAN;
    *accuracy = acc;
    if (unc) *unc = r->has_accuracy && n > 1 ? sqrt(acc * (1 - acc) / (n - 1)) : NAN;
}
