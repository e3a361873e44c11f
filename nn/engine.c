/*
 * engine.c - the training engine: for each batch shape the graph (forward,
 * loss, gradients, optimizer updates) is built and planned once and reused
 * for every batch; weights and optimizer state stay on the device; data go
 * up batch by batch; a smaller last batch gets its own graph.
 */
#include <math.h>
#include <stdlib.h>

#include "ggml-alloc.h"
#include "nn-impl.h"

#define GRAPH_SIZE (64 * GGML_DEFAULT_GRAPH_SIZE)

static struct ggml_tensor *new_batch_tensor(struct ggml_context *ctx, enum ggml_type type, const int64_t *shape, int n_dims, int64_t batch) {
    int64_t ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) ne[i] = shape[n_dims - 1 - i];
    ne[n_dims] = batch;
    return ggml_new_tensor(ctx, type, 4, ne);
}

/* The loss of output k on a batch from its logits (pre-softmax/sigmoid outputs) and labels y. */
static struct ggml_tensor *build_loss(ggmlc_model *m, int k, struct ggml_context *ctx,
                                      struct ggml_tensor *out, struct ggml_tensor *logits,
                                      struct ggml_tensor *y) {
    const bool absorbed = logits != out; /* the final softmax/sigmoid was left to the loss, which works on logits */
    switch (m->heads[k].loss) {
    case GGMLC_LOSS_MSE: return ggmlc__loss_mse(ctx, out, y);
    case GGMLC_LOSS_CATEGORICAL_CROSSENTROPY: /* labels may carry class weights */
    case GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY: /* one-hot by upload_target */
        return ggmlc__loss_cross_entropy(ctx, logits, y, ggmlc__nn_output_classes(m, k));
    case GGMLC_LOSS_BINARY_CROSSENTROPY:
        return absorbed ? ggmlc__loss_bce_logits(ctx, logits, y) : ggmlc__loss_bce_probs(ctx, out, y);
    }
    return NULL;
}

/* The gradients of the trainable parameters the loss reaches, in layer order (frozen ones and
 * those the loss does not reach left out); how many were found. */
static int collect_grads(ggmlc_model *m, struct nn_graph *g, struct ggml_tensor **grads, int cap) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params && n < cap; j++) {
            struct ggml_tensor *grad = ggml_graph_get_grad(g->gb, m->layers[i]->params[j].t);
            if (grad) grads[n++] = grad;
        }
    }
    return n;
}

/* Optimizer updates of every trainable parameter, appended to the step graph: one per
 * parameter group where the graph allows (optim-group.c), else one per tensor, gradients
 * clipped first as the compile options ask. */
static bool build_updates(ggmlc_model *m, struct nn_graph *g) {
    const int grouped = ggmlc__nn_build_group_updates(m, g);
    if (grouped != 0) return grouped > 0;
    struct ggml_context *ctx = g->ctx;
    const struct ggmlc_compile_options *o = &m->opt;
    struct ggml_tensor *grads[NN_MAX_NODES * NN_MAX_PARAMS];
    const int n_grads = collect_grads(m, g, grads, (int)(sizeof grads / sizeof grads[0]));
    struct ggml_tensor *divisor =
        ggmlc__clip_norm_divisor(ctx, grads, n_grads, o->clip_value, o->clip_norm);
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            struct nn_param *p = &m->layers[i]->params[j];
            struct ggml_tensor *grad = ggml_graph_get_grad(g->gb, p->t);
            if (!grad) continue; /* frozen, or not reached by the loss */
            grad = ggmlc__clip_value(ctx, grad, o->clip_value);
            if (divisor) grad = ggml_div(ctx, grad, divisor);
            struct ggml_tensor *step = ggmlc__optim_update(ctx, ggmlc__nn_optim_kind(o), p->t, grad, p->m,
                                                          p->v, m->opt_pars, o->weight_decay);
            if (!step) return false;
            ggml_build_forward_expand(g->gb, step);
        }
    }
    return true;
}

/* moving = momentum * moving + (1 - momentum) * batch * unbias, appended to the step graph:
 * the float operations, in their order, of the loop on the host that this replaces, without
 * its read-back of the batch's statistics after every step. */
static void blend_moving(struct nn_graph *g, struct ggml_tensor *moving, struct ggml_tensor *batch, float momentum, float unbias) {
    struct ggml_context *ctx = g->ctx;
    struct ggml_tensor *b = ggml_scale(ctx, batch, 1 - momentum);
    if (unbias != 1.0f) b = ggml_scale(ctx, b, unbias);
    ggml_build_forward_expand(g->gb, ggml_cpy(ctx, ggml_add(ctx, ggml_scale(ctx, moving, momentum), b), moving));
}

/* Moving statistics of batch normalisation, updated by the training step itself (its graph
 * does not read them: training normalises with the batch's), the variance unbiased as in
 * PyTorch. */
static void build_moving_stats(struct nn_graph *g) {
    for (int i = 0; i + 1 < g->build.n_aux; i++) {
        const struct nn_aux *mean = &g->build.aux[i], *var = &g->build.aux[i + 1];
        if (mean->kind != AUX_BATCH_MEAN || var->kind != AUX_BATCH_VAR) continue;
        ggmlc_layer *l = mean->layer;
        const int64_t count = mean->count;
        const float unbias = count > 1 ? (float)count / (float)(count - 1) : 1.0f;
        blend_moving(g, l->params[2].t, mean->t, l->cfg.momentum, 1.0f);
        blend_moving(g, l->params[3].t, var->t, l->cfg.momentum, unbias);
    }
}

/* Input or label tensor of a batch: gathered from the data on the device (device-data.c) by
 * the batch's sample indices, or set from the host. */
static struct ggml_tensor *batch_tensor(ggmlc_model *m, struct nn_graph *g, bool output, int i,
                                        struct ggml_tensor *t) {
    if (!t || !g->gathered) {
        if (t) ggml_set_input(t);
        return t;
    }
    return ggmlc__nn_gather(m, g->ctx, output, i, g->idx, t);
}

/* Every output's loss against its labels, and their weighted sum (a single output of weight 1: its loss). */
static bool build_total_loss(ggmlc_model *m, struct nn_graph *g, struct ggml_tensor **logits) {
    g->loss = NULL;
    for (int k = 0; k < m->n_outputs; k++) {
        const ggmlc_node *o = m->outputs[k];
        g->y[k] = new_batch_tensor(g->ctx, GGML_TYPE_F32, o->shape, o->n_dims, g->batch);
        if (!(g->y[k] = batch_tensor(m, g, true, k, g->y[k]))) return false;
        g->head_loss[k] = build_loss(m, k, g->ctx, g->out[k], logits[k], g->y[k]);
        if (!g->head_loss[k]) return false;
        ggml_set_output(g->out[k]);
        ggml_set_output(g->head_loss[k]);
        const float w = m->heads[k].weight;
        struct ggml_tensor *term = w == 1.0f ? g->head_loss[k] : ggml_scale(g->ctx, g->head_loss[k], w);
        g->loss = g->loss ? ggml_add(g->ctx, g->loss, term) : term;
    }
    if (g->loss) ggml_set_output(g->loss);
    return g->loss != NULL;
}

static struct nn_graph *build_graph(ggmlc_model *m, int64_t batch, bool training, bool gathered) {
    struct nn_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->training = training;
    g->gathered = gathered;
    g->batch = batch;
    ggmlc__nn_device_stats_usable(m);
    g->ctx = ggml_init((struct ggml_init_params){8 * GRAPH_SIZE * ggml_tensor_overhead() + 3 * ggml_graph_overhead_custom(GRAPH_SIZE, true),
                                                 NULL, true});
    if (!g->ctx) goto fail;
    g->build = (struct nn_build){.ctx = g->ctx, .training = training, .batch = batch};
    if (gathered) {
        g->idx = ggml_new_tensor_1d(g->ctx, GGML_TYPE_I32, batch);
        ggml_set_input(g->idx);
    }
    for (int i = 0; i < m->n_inputs; i++) {
        const ggmlc_node *in = m->inputs[i];
        g->x[i] = new_batch_tensor(g->ctx, ggmlc__nn_input_is_index(m, i) ? GGML_TYPE_I32 : GGML_TYPE_F32, in->shape, in->n_dims, batch);
        if (!(g->x[i] = batch_tensor(m, g, false, i, g->x[i]))) goto fail;
    }
    struct ggml_tensor *logits[GGMLC_MAX_IO];
    if (!ggmlc__nn_model_forward(m, &g->build, g->x, g->out, logits) || !build_total_loss(m, g, logits)) goto fail;
    g->gf = ggml_new_graph_custom(g->ctx, GRAPH_SIZE, training);
    for (int k = 0; k < m->n_outputs; k++) ggml_build_forward_expand(g->gf, g->out[k]);
    ggml_build_forward_expand(g->gf, g->loss);
    for (int i = 0; i < g->build.n_aux; i++) ggml_build_forward_expand(g->gf, g->build.aux[i].t);
    if (training) {
        ggml_set_loss(g->loss);
        g->gb_grad = ggml_graph_dup(g->ctx, g->gf, true);
        ggml_build_backward_expand(g->ctx, g->gb_grad, NULL);
        g->gb = ggml_graph_dup(g->ctx, g->gb_grad, true);
        if (!build_updates(m, g)) goto fail;
        build_moving_stats(g);
    } else {
        g->gb = g->gf;
    }
    ggmlc__nn_build_device_stats(m, g, g->gb); /* loss and metrics summed where they are */
    if (ggmlc_last_status() == GGMLC_ERR_NOMEM) goto fail;
    return g;
fail:
    ggmlc_set_error(GGMLC_ERR_NOMEM, "cannot build the model's graph (%s)", ggmlc_last_error());
    ggml_free(g->ctx);
    free(g);
    return NULL;
}

void ggmlc__nn_graphs_free(ggmlc_model *m) {
    ggmlc__alloc_record_forget(&m->placed);
    for (int i = 0; i < m->n_graphs; i++) {
        ggml_free(m->graphs[i]->ctx);
        free(m->graphs[i]);
    }
    m->n_graphs = 0;
    m->allocated = NULL;
}

/* The graph for a batch size, built once and allocated when it changes. */
static struct nn_graph *get_graph(ggmlc_model *m, int64_t batch, bool training, bool gathered) {
    struct nn_graph *g = NULL;
    for (int i = 0; i < m->n_graphs && !g; i++) {
        const struct nn_graph *c = m->graphs[i];
        const bool same = c->batch == batch && c->training == training && c->gathered == gathered;
        if (same) g = m->graphs[i];
    }
    if (!g) {
        if (m->n_graphs == 4) ggmlc__nn_graphs_free(m);
        ggmlc_clear_error();
        if (!(g = build_graph(m, batch, training, gathered))) return NULL;
        m->graphs[m->n_graphs++] = g;
    }
    if (m->allocated != g) {
        /* the previous graph's places become invalid: the cache may compute it again later */
        ggmlc__alloc_record_forget(&m->placed);
        ggml_backend_sched_reset(m->sched);
        m->allocated = NULL;
        if (!ggmlc__alloc_record_reserve(&m->placed, g->gb)) return NULL;
        if (!ggml_backend_sched_alloc_graph(m->sched, g->gb)) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "cannot allocate the graph for batch %lld", (long long)batch);
            return NULL;
        }
        ggmlc__alloc_record_take(&m->placed, g->gb);
        m->allocated = g;
    }
    return g;
}

/* ------------------------------------------------------------ batches */

struct batch_data {
    const struct nn_data *d;
    const int64_t *order; /* sample indices, NULL: in order */
    int64_t first, count;
    const float *class_weights;
};

static int64_t sample_at(const struct batch_data *b, int64_t i) { return b->order ? b->order[b->first + i] : b->first + i; }

/* Input i of a batch: the same samples (order) for every input. */
static void upload_input(ggmlc_model *m, struct nn_graph *g, int i, const struct batch_data *d, float *buf) {
    const int64_t ni = ggmlc__nn_input_elems(m, i);
    const float *x = d->d->x[i];
    const bool ids = ggmlc__nn_input_is_index(m, i);
    for (int64_t b = 0; b < d->count; b++) {
        const int64_t s = sample_at(d, b);
        if (ids) {
            for (int64_t e = 0; e < ni; e++) ((int32_t *)buf)[b * ni + e] = (int32_t)x[s * ni + e];
        } else {
            memcpy(buf + b * ni, x + s * ni, sizeof(float) * (size_t)ni);
        }
    }
    ggml_backend_tensor_set(g->x[i], buf, 0, ggml_nbytes(g->x[i]));
}

void ggmlc__nn_target_row(const ggmlc_model *m, int k, const float *y, int64_t s,
                          const float *class_weights, float *row) {
    /* rows of nc classes: one per position for the categorical losses, the whole output else */
    const int64_t no = ggmlc__nn_output_elems(m, k), nc = ggmlc__nn_output_classes(m, k);
    const int64_t rows = no / nc;
    const enum ggmlc_loss loss = m->heads[k].loss;
    for (int64_t r = 0; r < rows; r++) {
        float *yr = row + r * nc;
        if (loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
            const int64_t cls = (int64_t)y[s * rows + r];
            for (int64_t e = 0; e < nc; e++) yr[e] = e == cls ? 1.0f : 0.0f;
        } else {
            memcpy(yr, y + s * no + r * nc, sizeof(float) * (size_t)nc);
        }
        if (class_weights && loss != GGMLC_LOSS_MSE) {
            int64_t cls = 0;
            for (int64_t e = 1; e < nc; e++) cls = yr[e] > yr[cls] ? e : cls;
            for (int64_t e = 0; e < nc; e++) yr[e] *= class_weights[cls];
        }
    }
}

/* Labels of output k (one-hot for the sparse loss, class weights folded into the labels); zeros when predicting. */
static void upload_target(ggmlc_model *m, struct nn_graph *g, int k, const struct batch_data *d, float *buf) {
    const float *y = d->d->y[k];
    if (!y) {
        ggml_backend_tensor_memset(g->y[k], 0, 0, ggml_nbytes(g->y[k]));
        return;
    }
    const int64_t no = ggmlc__nn_output_elems(m, k);
    for (int64_t b = 0; b < d->count; b++)
        ggmlc__nn_target_row(m, k, y, sample_at(d, b), d->class_weights, buf + b * no);
    ggml_backend_tensor_set(g->y[k], buf, 0, ggml_nbytes(g->y[k]));
}

static void upload_batch(ggmlc_model *m, struct nn_graph *g, const struct batch_data *d, float *buf) {
    if (g->gathered) { /* the samples are on the device: their indices */
        int32_t *idx = (int32_t *)buf;
        for (int64_t b = 0; b < d->count; b++) idx[b] = (int32_t)sample_at(d, b);
        ggml_backend_tensor_set(g->idx, idx, 0, ggml_nbytes(g->idx));
        return;
    }
    for (int i = 0; i < m->n_inputs; i++) upload_input(m, g, i, d, buf);
    for (int k = 0; k < m->n_outputs; k++) upload_target(m, g, k, d, buf);
}

/* Dropout masks of this step: 0 or 1/(1-rate). */
static void draw_masks(ggmlc_model *m, struct nn_graph *g) {
    for (int i = 0; i < g->build.n_aux; i++) {
        const struct nn_aux *a = &g->build.aux[i];
        if (a->kind != AUX_DROPOUT_MASK) continue;
        const int64_t n = ggml_nelements(a->t);
        float *mask = malloc(sizeof(float) * (size_t)n);
        if (!mask) continue;
        const float rate = a->layer->cfg.rate, keep = 1.0f / (1.0f - rate);
        for (int64_t k = 0; k < n; k++) mask[k] = ggmlc__rng_uniform(&m->rng) >= rate ? keep : 0.0f;
        ggml_backend_tensor_set(a->t, mask, 0, sizeof(float) * (size_t)n);
        free(mask);
    }
}

/* This step's optimizer hyperparameters: AdamW's with bias corrections, or SGD's {lr, wd, momentum}. */
static void set_hyperparameters(ggmlc_model *m) {
    const struct ggmlc_compile_options *o = &m->opt;
    const struct ggmlc_optim_hparams hp = {.lr = (float)m->lr, .beta1 = o->beta1, .beta2 = o->beta2,
                                           .eps = o->eps, .weight_decay = o->weight_decay,
                                           .momentum = o->momentum};
    float pars[GGMLC_OPTIM_MAX_PARS];
    const int n = ggmlc__optim_pack(ggmlc__nn_optim_kind(o), &hp, m->step, pars);
    ggml_backend_tensor_set(m->opt_pars, pars, 0, sizeof(float) * (size_t)n);
}

/* Accuracy and absolute error of output k on a batch (out: a buffer of batch * output elems floats). */
static void score_head(ggmlc_model *m, struct nn_graph *g, int k, const struct batch_data *d, float *out, struct pass_stats *st) {
    const int64_t no = ggmlc__nn_output_elems(m, k), nc = ggmlc__nn_output_classes(m, k), rows = no / nc;
    const bool sparse = m->heads[k].loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    ggml_backend_tensor_get(g->out[k], out, 0, sizeof(float) * (size_t)(no * d->count));
    for (int64_t b = 0; b < d->count; b++) {
        const int64_t s = sample_at(d, b);
        const float *y = d->d->y[k] + s * ggmlc__nn_target_elems(m, k);
        int64_t right = 0; /* positions (rows of nc classes) classified right */
        for (int64_t r = 0; r < rows; r++) {
            const float *o = out + b * no + r * nc, *yr = sparse ? y + r : y + r * nc;
            int64_t pred = 0, truth = 0;
            for (int64_t e = 1; e < nc; e++) pred = o[e] > o[pred] ? e : pred;
            if (sparse) {
                truth = (int64_t)yr[0];
            } else if (nc == 1) { /* binary: threshold 0.5 */
                pred = o[0] > 0.5f;
                truth = yr[0] > 0.5f;
            } else {
                for (int64_t e = 1; e < nc; e++) truth = yr[e] > yr[truth] ? e : truth;
            }
            right += pred == truth;
        }
        st->correct[k] += (double)right / (double)rows;
        if (!sparse) {
            const float *o = out + b * no;
            for (int64_t e = 0; e < no; e++) st->abs_err[k] += fabs((double)o[e] - (double)y[e]) / (double)no;
        }
    }
}

/* Adds the batch to the stats; returns its total loss. */
static float score_batch(ggmlc_model *m, struct nn_graph *g, const struct batch_data *d, float *out, struct pass_stats *st) {
    float total = 0;
    ggml_backend_tensor_get(g->loss, &total, 0, sizeof total);
    st->loss_sum += (double)total * (double)d->count;
    st->n += d->count;
    for (int k = 0; k < m->n_outputs; k++) {
        float loss = total; /* a single output of weight 1 is the total: one read from the device less */
        if (g->head_loss[k] != g->loss) ggml_backend_tensor_get(g->head_loss[k], &loss, 0, sizeof loss);
        st->head_loss_sum[k] += (double)loss * (double)d->count;
        if (d->d->y[k] && (m->heads[k].metrics & (GGMLC_METRIC_ACCURACY | GGMLC_METRIC_MAE))) score_head(m, g, k, d, out, st);
    }
    return total;
}

static double ratio(double a, int64_t b) { return b > 0 ? a / (double)b : NAN; }

void ggmlc__nn_fill_logs(const ggmlc_model *m, const struct pass_stats *st, bool val, struct ggmlc_epoch_logs *logs) {
    double *loss = val ? &logs->val_loss : &logs->loss, *acc = val ? &logs->val_accuracy : &logs->metric_accuracy;
    double *mae = val ? &logs->val_mae : &logs->metric_mae;
    double *head_loss = val ? logs->val_output_loss : logs->output_loss, *head_acc = val ? logs->val_output_accuracy : logs->output_accuracy;
    double *head_mae = val ? logs->val_output_mae : logs->output_mae;
    logs->n_outputs = m->n_outputs;
    *loss = ratio(st->loss_sum, st->n);
    *acc = *mae = NAN;
    for (int k = 0; k < m->n_outputs; k++) {
        head_loss[k] = ratio(st->head_loss_sum[k], st->n);
        head_acc[k] = m->heads[k].metrics & GGMLC_METRIC_ACCURACY ? ratio(st->correct[k], st->n) : NAN;
        head_mae[k] = m->heads[k].metrics & GGMLC_METRIC_MAE ? ratio(st->abs_err[k], st->n) : NAN;
        if (isnan(*acc)) *acc = head_acc[k]; /* the first output measuring it */
        if (isnan(*mae)) *mae = head_mae[k];
    }
}

/* The largest number of floats one sample of any input or output takes. */
static int64_t largest_sample(const ggmlc_model *m) {
    int64_t n = 1;
    for (int i = 0; i < m->n_inputs; i++) n = ggmlc__nn_input_elems(m, i) > n ? ggmlc__nn_input_elems(m, i) : n;
    for (int k = 0; k < m->n_outputs; k++) n = ggmlc__nn_output_elems(m, k) > n ? ggmlc__nn_output_elems(m, k) : n;
    return n;
}

static void after_batch(ggmlc_model *m, struct pass_stats *st, const struct ggmlc_fit_options *fo, int epoch, int64_t ib, int64_t done,
                        struct nn_progress *progress) {
    if (progress) {
        struct ggmlc_epoch_logs running = {.epoch = epoch};
        ggmlc__nn_fill_logs(m, st, false, &running);
        ggmlc__nn_progress_update(progress, done, &running);
    }
    for (int c = 0; fo && c < fo->n_callbacks; c++) {
        const struct ggmlc_callback *cb = &fo->callbacks[c];
        if (cb->on_batch_end && !cb->on_batch_end(m, epoch, ib, st->loss_sum / (double)st->n, cb->user)) m->stop_training = true;
    }
}

/* Whether the loss and metrics summed on the device are read after this batch (done samples of
 * n): at the pass's end, when the progress line is drawn, and after every batch for callbacks
 * that see each batch's loss. */
static bool read_due(const struct ggmlc_fit_options *fo, const struct nn_progress *progress,
                     int64_t done, int64_t n) {
    for (int c = 0; fo && c < fo->n_callbacks; c++)
        if (fo->callbacks[c].on_batch_end) return true;
    return done >= n || ggmlc__nn_progress_due(progress, done);
}

enum ggmlc_status ggmlc__nn_run_pass(ggmlc_model *m, const struct nn_data *data, int64_t batch, const int64_t *order, bool training,
                              const float *class_weights, struct pass_stats *st, float *const *pred, const struct ggmlc_fit_options *fo,
                              int epoch, struct nn_progress *progress) {
    float *buf = malloc(sizeof(float) * (size_t)(largest_sample(m) * batch));
    enum ggmlc_status status = buf ? GGMLC_OK : ggmlc_set_error(GGMLC_ERR_NOMEM, "out of memory for a batch of %lld", (long long)batch);
    const int64_t n = data->n;
    /* samples summed on the device since the last read, from batch unread_from on */
    int64_t unread = 0, unread_from = 0;
    if (st && ggmlc__nn_device_stats_usable(m)) ggmlc__nn_device_stats_reset(m);
    if (training && fo && epoch == fo->initial_epoch) /* a fit's first pass: its data go up once */
        m->data_on_device = ggmlc__nn_device_data_load(m, data, class_weights);
    const bool gathered = training && fo && m->data_on_device;
    for (int64_t first = 0, ib = 0; status == GGMLC_OK && first < n; first += batch, ib++) {
        const struct batch_data d = {data, order, first, n - first < batch ? n - first : batch, class_weights};
        struct nn_graph *g = get_graph(m, d.count, training, gathered);
        if (!g) {
            status = ggmlc_last_status() != GGMLC_OK ? ggmlc_last_status() : GGMLC_ERR_NOMEM;
            break;
        }
        upload_batch(m, g, &d, buf);
        if (training) {
            draw_masks(m, g);
            ggmlc__nn_grads_reset(m, g);
            set_hyperparameters(m);
        }
        /* not waited for: the next step's host work overlaps this one on a GPU; reading a
         * result from the device waits for it, and so does the pass's end */
        if (ggml_backend_sched_graph_compute_async(m->sched, g->gb) != GGML_STATUS_SUCCESS) {
            status = ggmlc_set_error(GGMLC_ERR_BACKEND, "the computation of a batch failed (%s)", ggmlc_last_error());
            break;
        }
        if (training) m->step++;
        const bool scored = !st || !m->stats_acc || read_due(fo, progress, first + d.count, n);
        if (st && m->stats_acc && unread == 0) unread_from = ib;
        if (st && m->stats_acc) unread += d.count;
        float loss = 0.0f;
        int64_t bad_batch = ib; /* the batch a non-finite loss is blamed on */
        if (st && m->stats_acc && scored) {
            int64_t finite_steps;
            /* the mean loss since the last read */
            loss = ggmlc__nn_device_stats_read(m, unread, st, &finite_steps);
            bad_batch = unread_from + finite_steps;
            unread = 0;
        } else if (st && !m->stats_acc) {
            loss = score_batch(m, g, &d, buf, st);
        }
        if (training && fo && fo->stop_on_nan && !isfinite(loss)) {
            status = ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "training stopped in epoch %d, batch %lld: the loss is %g (a learning rate too "
                                     "high, or data with huge or broken values?)", epoch + 1, (long long)bad_batch + 1, (double)loss);
            break;
        }
        for (int k = 0; pred && k < m->n_outputs; k++) {
            const int64_t no = ggmlc__nn_output_elems(m, k);
            ggml_backend_tensor_get(g->out[k], pred[k] + first * no, 0, sizeof(float) * (size_t)(no * d.count));
        }
        if (st && scored) after_batch(m, st, fo, epoch, ib, first + d.count, progress);
    }
    ggml_backend_sched_synchronize(m->sched);
    free(buf);
    return status;
}
