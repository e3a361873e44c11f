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

static bool input_is_index(const ggmlc_model *m) {
    return m->n_nodes > 1 && m->nodes[1]->kind == NODE_LAYER && m->nodes[1]->layer->ops == &nn_embedding_ops;
}

static int64_t in_elems(const ggmlc_model *m) { return nn_shape_elems(m->input->shape, m->input->n_dims); }
static int64_t out_elems(const ggmlc_model *m) { return nn_shape_elems(m->output->shape, m->output->n_dims); }

static struct ggml_tensor *new_batch_tensor(struct ggml_context *ctx, enum ggml_type type, const int64_t *shape, int n_dims, int64_t batch) {
    int64_t ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) ne[i] = shape[n_dims - 1 - i];
    ne[n_dims] = batch;
    return ggml_new_tensor(ctx, type, 4, ne);
}

/* The loss of a batch from the logits (pre-softmax/sigmoid outputs) and the labels y. */
static struct ggml_tensor *build_loss(ggmlc_model *m, struct ggml_context *ctx, struct ggml_tensor *out, struct ggml_tensor *logits,
                                      struct ggml_tensor *y) {
    const int64_t n = out_elems(m);
    const bool absorbed = logits != out; /* the final softmax/sigmoid was left to the loss, which works on logits */
    switch (m->opt.loss) {
    case GGMLC_LOSS_MSE:
        return ggml_scale(ctx, ggml_sum(ctx, ggml_sqr(ctx, ggml_sub(ctx, out, y))), 1.0f / (float)ggml_nelements(out));
    case GGMLC_LOSS_CATEGORICAL_CROSSENTROPY:
    case GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY: {
        /* mean over samples of -sum(y * log_softmax(z)); labels may carry class weights */
        struct ggml_tensor *z = ggml_reshape_2d(ctx, ggml_is_contiguous(logits) ? logits : ggml_cont(ctx, logits), n, ggml_nelements(logits) / n);
        struct ggml_tensor *t = ggml_reshape_2d(ctx, y, n, ggml_nelements(y) / n);
        return ggml_cross_entropy_loss(ctx, z, t);
    }
    case GGMLC_LOSS_BINARY_CROSSENTROPY:
        if (absorbed) { /* mean(softplus(z) - y z), the stable form on logits */
            return ggml_scale(ctx, ggml_sum(ctx, ggml_sub(ctx, ggml_softplus(ctx, logits), ggml_mul(ctx, y, logits))),
                              1.0f / (float)ggml_nelements(out));
        } else { /* probabilities p: -mean(y log p + (1 - y) log(1 - p)), p clamped away from 0 and 1 */
            struct ggml_tensor *p = ggml_clamp(ctx, ggml_scale(ctx, out, 1.0f), 1e-7f, 1.0f - 1e-7f);
            struct ggml_tensor *a = ggml_mul(ctx, y, ggml_log(ctx, p));
            struct ggml_tensor *b = ggml_mul(ctx, ggml_scale_bias(ctx, y, -1.0f, 1.0f), ggml_log(ctx, ggml_scale_bias(ctx, p, -1.0f, 1.0f)));
            return ggml_scale(ctx, ggml_sum(ctx, ggml_add(ctx, a, b)), -1.0f / (float)ggml_nelements(out));
        }
    }
    return NULL;
}

/* Optimizer updates of every trainable parameter, appended to the step graph. */
static bool build_updates(ggmlc_model *m, struct nn_graph *g) {
    struct ggml_context *ctx = g->ctx;
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            struct nn_param *p = &m->layers[i]->params[j];
            struct ggml_tensor *grad = ggml_graph_get_grad(g->gb, p->t);
            if (!grad) continue; /* frozen, or not reached by the loss */
            struct ggml_tensor *step;
            if (m->opt.optimizer == GGMLC_OPT_ADAMW) {
                step = ggml_opt_step_adamw(ctx, p->t, grad, p->m, p->v, m->opt_pars);
            } else if (p->m) { /* SGD with momentum: v = mu v + g (+ wd p); p -= lr v */
                struct ggml_tensor *lr = ggml_view_1d(ctx, m->opt_pars, 1, 0), *mu = ggml_view_1d(ctx, m->opt_pars, 1, 2 * sizeof(float));
                struct ggml_tensor *gw = m->opt.weight_decay > 0 ? ggml_add(ctx, grad, ggml_scale(ctx, p->t, m->opt.weight_decay)) : grad;
                struct ggml_tensor *v = ggml_cpy(ctx, ggml_add(ctx, ggml_mul(ctx, p->m, mu), gw), p->m);
                step = ggml_cpy(ctx, ggml_sub(ctx, p->t, ggml_mul(ctx, v, lr)), p->t);
            } else {
                step = ggml_opt_step_sgd(ctx, p->t, grad, ggml_view_1d(ctx, m->opt_pars, 2, 0));
            }
            if (!step) return false;
            ggml_build_forward_expand(g->gb, step);
        }
    }
    return true;
}

static struct nn_graph *build_graph(ggmlc_model *m, int64_t batch, bool training) {
    struct nn_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->training = training;
    g->batch = batch;
    g->ctx = ggml_init((struct ggml_init_params){8 * GRAPH_SIZE * ggml_tensor_overhead() + 3 * ggml_graph_overhead_custom(GRAPH_SIZE, true),
                                                 NULL, true});
    if (!g->ctx) goto fail;
    g->build = (struct nn_build){.ctx = g->ctx, .training = training, .batch = batch};
    g->x = new_batch_tensor(g->ctx, input_is_index(m) ? GGML_TYPE_I32 : GGML_TYPE_F32, m->input->shape, m->input->n_dims, batch);
    g->y = new_batch_tensor(g->ctx, GGML_TYPE_F32, m->output->shape, m->output->n_dims, batch);
    if (!g->x || !g->y) goto fail;
    ggml_set_input(g->x);
    ggml_set_input(g->y);
    struct ggml_tensor *logits;
    g->out = nn_model_forward(m, &g->build, g->x, &logits);
    if (!g->out) goto fail;
    g->loss = build_loss(m, g->ctx, g->out, logits, g->y);
    if (!g->loss) goto fail;
    ggml_set_output(g->out);
    ggml_set_output(g->loss);
    g->gf = ggml_new_graph_custom(g->ctx, GRAPH_SIZE, training);
    ggml_build_forward_expand(g->gf, g->out);
    ggml_build_forward_expand(g->gf, g->loss);
    for (int i = 0; i < g->build.n_aux; i++) ggml_build_forward_expand(g->gf, g->build.aux[i].t);
    if (training) {
        ggml_set_loss(g->loss);
        g->gb_grad = ggml_graph_dup(g->ctx, g->gf, true);
        ggml_build_backward_expand(g->ctx, g->gb_grad, NULL);
        g->gb = ggml_graph_dup(g->ctx, g->gb_grad, true);
        if (!build_updates(m, g)) goto fail;
    } else {
        g->gb = g->gf;
    }
    if (ggmlc_last_status() == GGMLC_ERR_NOMEM) goto fail;
    return g;
fail:
    ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc: cannot build the model's graph (%s)", ggmlc_last_error());
    ggml_free(g->ctx);
    free(g);
    return NULL;
}

void nn_graphs_free(ggmlc_model *m) {
    ggmlc_alloc_record_forget(&m->placed);
    for (int i = 0; i < m->n_graphs; i++) {
        ggml_free(m->graphs[i]->ctx);
        free(m->graphs[i]);
    }
    m->n_graphs = 0;
    m->allocated = NULL;
}

/* The graph for a batch size, built once and allocated when it changes. */
static struct nn_graph *get_graph(ggmlc_model *m, int64_t batch, bool training) {
    struct nn_graph *g = NULL;
    for (int i = 0; i < m->n_graphs && !g; i++) {
        if (m->graphs[i]->batch == batch && m->graphs[i]->training == training) g = m->graphs[i];
    }
    if (!g) {
        if (m->n_graphs == 4) nn_graphs_free(m);
        ggmlc_clear_error();
        if (!(g = build_graph(m, batch, training))) return NULL;
        m->graphs[m->n_graphs++] = g;
    }
    if (m->allocated != g) {
        /* the previous graph's places become invalid: the cache may compute it again later */
        ggmlc_alloc_record_forget(&m->placed);
        ggml_backend_sched_reset(m->sched);
        m->allocated = NULL;
        if (!ggmlc_alloc_record_reserve(&m->placed, g->gb)) return NULL;
        if (!ggml_backend_sched_alloc_graph(m->sched, g->gb)) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc: cannot allocate the graph for batch %lld", (long long)batch);
            return NULL;
        }
        ggmlc_alloc_record_take(&m->placed, g->gb);
        m->allocated = g;
    }
    return g;
}

/* ------------------------------------------------------------ batches */

struct batch_data {
    const float *x, *y;
    const int64_t *order; /* sample indices, NULL: in order */
    int64_t first, count;
    const float *class_weights;
};

/* Upload inputs and labels of a batch (one-hot for the sparse loss, class weights folded into the labels). */
static void upload_batch(ggmlc_model *m, struct nn_graph *g, const struct batch_data *d, float *xbuf, float *ybuf) {
    const int64_t ni = in_elems(m), no = out_elems(m);
    for (int64_t b = 0; b < d->count; b++) {
        const int64_t s = d->order ? d->order[d->first + b] : d->first + b;
        if (input_is_index(m)) {
            for (int64_t k = 0; k < ni; k++) ((int32_t *)xbuf)[b * ni + k] = (int32_t)d->x[s * ni + k];
        } else {
            memcpy(xbuf + b * ni, d->x + s * ni, sizeof(float) * (size_t)ni);
        }
        if (!d->y) continue;
        float *yb = ybuf + b * no;
        if (m->opt.loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
            const int64_t cls = (int64_t)d->y[s];
            for (int64_t k = 0; k < no; k++) yb[k] = k == cls ? 1.0f : 0.0f;
        } else {
            memcpy(yb, d->y + s * no, sizeof(float) * (size_t)no);
        }
        if (d->class_weights && m->opt.loss != GGMLC_LOSS_MSE) {
            int64_t cls = 0;
            for (int64_t k = 1; k < no; k++) cls = yb[k] > yb[cls] ? k : cls;
            for (int64_t k = 0; k < no; k++) yb[k] *= d->class_weights[cls];
        }
    }
    ggml_backend_tensor_set(g->x, xbuf, 0, ggml_nbytes(g->x));
    if (d->y) ggml_backend_tensor_set(g->y, ybuf, 0, ggml_nbytes(g->y));
    else ggml_backend_tensor_memset(g->y, 0, 0, ggml_nbytes(g->y));
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
        for (int64_t k = 0; k < n; k++) mask[k] = nn_uniform(m) >= rate ? keep : 0.0f;
        ggml_backend_tensor_set(a->t, mask, 0, sizeof(float) * (size_t)n);
        free(mask);
    }
}

/* Moving statistics of batch normalisation after a training step. */
static void update_moving_stats(struct nn_graph *g) {
    for (int i = 0; i + 1 < g->build.n_aux; i++) {
        const struct nn_aux *mean = &g->build.aux[i], *var = &g->build.aux[i + 1];
        if (mean->kind != AUX_BATCH_MEAN || var->kind != AUX_BATCH_VAR) continue;
        ggmlc_layer *l = mean->layer;
        const int64_t c = ggml_nelements(mean->t), count = mean->count;
        float *buf = malloc(sizeof(float) * 4 * (size_t)c);
        if (!buf) continue;
        float *bm = buf, *bv = buf + c, *mm = buf + 2 * c, *mv = buf + 3 * c;
        ggml_backend_tensor_get(mean->t, bm, 0, sizeof(float) * (size_t)c);
        ggml_backend_tensor_get(var->t, bv, 0, sizeof(float) * (size_t)c);
        ggml_backend_tensor_get(l->params[2].t, mm, 0, sizeof(float) * (size_t)c);
        ggml_backend_tensor_get(l->params[3].t, mv, 0, sizeof(float) * (size_t)c);
        const float mo = l->cfg.momentum, unbias = count > 1 ? (float)count / (float)(count - 1) : 1.0f;
        for (int64_t k = 0; k < c; k++) {
            mm[k] = mo * mm[k] + (1 - mo) * bm[k];
            mv[k] = mo * mv[k] + (1 - mo) * bv[k] * unbias;
        }
        ggml_backend_tensor_set(l->params[2].t, mm, 0, sizeof(float) * (size_t)c);
        ggml_backend_tensor_set(l->params[3].t, mv, 0, sizeof(float) * (size_t)c);
        free(buf);
    }
}

/* This step's optimizer hyperparameters: AdamW's with bias corrections, or SGD's {lr, wd, momentum}. */
static void set_hyperparameters(ggmlc_model *m) {
    const struct ggmlc_compile_options *o = &m->opt;
    if (o->optimizer == GGMLC_OPT_ADAMW) {
        const double t = (double)(m->step + 1);
        const float v[7] = {(float)m->lr, o->beta1, o->beta2, o->eps, o->weight_decay,
                            (float)(1.0 / (1.0 - pow(o->beta1, t))), (float)(1.0 / (1.0 - pow(o->beta2, t)))};
        ggml_backend_tensor_set(m->opt_pars, v, 0, sizeof v);
    } else {
        const float v[3] = {(float)m->lr, o->weight_decay, o->momentum};
        ggml_backend_tensor_set(m->opt_pars, v, 0, sizeof v);
    }
}

/* Accumulated metrics of a pass over data. */
struct pass_stats {
    double loss_sum;
    int64_t n, correct;
    double abs_err;
};

static void score_batch(ggmlc_model *m, struct nn_graph *g, const struct batch_data *d, float *out, struct pass_stats *st) {
    float loss = 0;
    ggml_backend_tensor_get(g->loss, &loss, 0, sizeof loss);
    st->loss_sum += (double)loss * (double)d->count;
    st->n += d->count;
    if (!(m->opt.metrics & (GGMLC_METRIC_ACCURACY | GGMLC_METRIC_MAE)) || !d->y) return;
    const int64_t no = out_elems(m);
    ggml_backend_tensor_get(g->out, out, 0, sizeof(float) * (size_t)(no * d->count));
    for (int64_t b = 0; b < d->count; b++) {
        const int64_t s = d->order ? d->order[d->first + b] : d->first + b;
        const float *o = out + b * no, *y = d->y + (m->opt.loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ? s : s * no);
        int64_t pred = 0, truth = 0;
        for (int64_t k = 1; k < no; k++) pred = o[k] > o[pred] ? k : pred;
        if (m->opt.loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
            truth = (int64_t)y[0];
        } else if (no == 1) { /* binary: threshold 0.5 */
            pred = o[0] > 0.5f;
            truth = y[0] > 0.5f;
        } else {
            for (int64_t k = 1; k < no; k++) truth = y[k] > y[truth] ? k : truth;
        }
        st->correct += pred == truth;
        if (m->opt.loss != GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
            for (int64_t k = 0; k < no; k++) st->abs_err += fabs((double)o[k] - (double)y[k]) / (double)no;
        }
    }
}

/* Run batches over [0, n): train when training, else score (and collect outputs into pred when not NULL). */
static enum ggmlc_status run_pass(ggmlc_model *m, const float *x, const float *y, int64_t n, int64_t batch, const int64_t *order,
                                  bool training, const float *class_weights, struct pass_stats *st, float *pred,
                                  const struct ggmlc_fit_options *fo, int epoch, struct nn_progress *progress) {
    const int64_t ni = in_elems(m), no = out_elems(m);
    float *xbuf = malloc(sizeof(float) * (size_t)(ni * batch)), *ybuf = malloc(sizeof(float) * (size_t)(no * batch));
    float *obuf = malloc(sizeof(float) * (size_t)(no * batch));
    enum ggmlc_status status = xbuf && ybuf && obuf ? GGMLC_OK : GGMLC_ERR_NOMEM;
    for (int64_t first = 0, ib = 0; status == GGMLC_OK && first < n; first += batch, ib++) {
        const struct batch_data d = {x, y, order, first, n - first < batch ? n - first : batch, class_weights};
        struct nn_graph *g = get_graph(m, d.count, training);
        if (!g) {
            status = ggmlc_last_status() != GGMLC_OK ? ggmlc_last_status() : GGMLC_ERR_NOMEM;
            break;
        }
        upload_batch(m, g, &d, xbuf, ybuf);
        if (training) {
            draw_masks(m, g);
            ggml_graph_reset(g->gb_grad);
            set_hyperparameters(m);
        }
        if (ggml_backend_sched_graph_compute(m->sched, g->gb) != GGML_STATUS_SUCCESS) {
            status = ggmlc_set_error(GGMLC_ERR_BACKEND, "ggmlc: the computation of a batch failed (%s)", ggmlc_last_error());
            break;
        }
        if (training) {
            update_moving_stats(g);
            m->step++;
        }
        if (st) score_batch(m, g, &d, obuf, st);
        if (pred) ggml_backend_tensor_get(g->out, pred + first * no, 0, sizeof(float) * (size_t)(no * d.count));
        if (progress) nn_progress_update(progress, first + d.count, st->loss_sum / (double)st->n,
                                         m->opt.metrics & GGMLC_METRIC_ACCURACY ? (double)st->correct / (double)st->n : NAN);
        for (int c = 0; fo && c < fo->n_callbacks; c++) {
            const struct ggmlc_callback *cb = &fo->callbacks[c];
            if (cb->on_batch_end && !cb->on_batch_end(m, epoch, ib, st->loss_sum / (double)st->n, cb->user)) m->stop_training = true;
        }
    }
    free(xbuf);
    free(ybuf);
    free(obuf);
    return status;
}

static enum ggmlc_status check_ready(ggmlc_model *m, const float *x, int64_t n, int64_t batch) {
    if (!m || !m->compiled) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc: compile the model first");
    if (!x || n <= 0 || batch <= 0) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc: no data or a non-positive batch size");
    return GGMLC_OK;
}

/* ------------------------------------------------------------ public */

struct ggmlc_fit_options ggmlc_fit_defaults(void) {
    return (struct ggmlc_fit_options){.epochs = 10, .batch_size = 32, .shuffle = true, .verbose = 1};
}

static double ratio(int64_t a, int64_t b) { return b > 0 ? (double)a / (double)b : NAN; }

static void fill_logs(const ggmlc_model *m, const struct pass_stats *st, double *loss, double *acc, double *mae) {
    *loss = st->n > 0 ? st->loss_sum / (double)st->n : NAN;
    *acc = m->opt.metrics & GGMLC_METRIC_ACCURACY ? ratio(st->correct, st->n) : NAN;
    *mae = m->opt.metrics & GGMLC_METRIC_MAE && st->n > 0 ? st->abs_err / (double)st->n : NAN;
}

enum ggmlc_status ggmlc_model_evaluate(ggmlc_model *m, const float *x, const float *y, int64_t n, int64_t batch, double *loss,
                                       double metrics[2]) {
    enum ggmlc_status status = check_ready(m, x, n, batch);
    if (status != GGMLC_OK) return status;
    if (!y) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_evaluate: labels are required");
    struct pass_stats st = {0};
    status = run_pass(m, x, y, n, batch, NULL, false, NULL, &st, NULL, NULL, 0, NULL);
    double l, acc, mae;
    fill_logs(m, &st, &l, &acc, &mae);
    if (loss) *loss = l;
    if (metrics) {
        metrics[0] = acc;
        metrics[1] = mae;
    }
    return status;
}

enum ggmlc_status ggmlc_model_predict(ggmlc_model *m, const float *x, int64_t n, int64_t batch, float *out) {
    enum ggmlc_status status = check_ready(m, x, n, batch);
    if (status != GGMLC_OK) return status;
    if (!out) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_predict: NULL output");
    return run_pass(m, x, NULL, n, batch, NULL, false, NULL, NULL, out, NULL, 0, NULL);
}

static void shuffle(ggmlc_model *m, int64_t *order, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = (int64_t)(nn_random(m) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static bool run_epoch_callbacks(ggmlc_model *m, const struct ggmlc_fit_options *fo, const struct ggmlc_epoch_logs *logs) {
    bool go_on = !m->stop_training;
    for (int c = 0; c < fo->n_callbacks; c++) {
        const struct ggmlc_callback *cb = &fo->callbacks[c];
        if (cb->on_epoch_end && !cb->on_epoch_end(m, logs, cb->user)) go_on = false;
    }
    return go_on;
}

enum ggmlc_status ggmlc_model_fit(ggmlc_model *m, const float *x, const float *y, int64_t n, const struct ggmlc_fit_options *options,
                                  ggmlc_history **history) {
    const struct ggmlc_fit_options fo = options ? *options : ggmlc_fit_defaults();
    enum ggmlc_status status = check_ready(m, x, n, fo.batch_size);
    if (status != GGMLC_OK) return status;
    if (!y || fo.epochs <= 0) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_fit: labels and a positive epoch count are required");
    /* validation: explicit data, or the last validation_split of x */
    const float *vx = fo.val_x, *vy = fo.val_y;
    int64_t n_val = fo.val_x ? fo.n_val : (int64_t)(n * (double)fo.validation_split), n_train = n;
    if (!fo.val_x && n_val > 0) {
        n_train = n - n_val;
        vx = x + n_train * in_elems(m);
        vy = y + n_train * (m->opt.loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ? 1 : out_elems(m));
    }
    if (n_train <= 0) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_fit: the validation split leaves no training data");
    ggmlc_history *h = calloc(1, sizeof *h);
    int64_t *order = malloc(sizeof(int64_t) * (size_t)n_train);
    if (!h || !order) {
        free(h);
        free(order);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_fit: out of memory");
    }
    for (int64_t i = 0; i < n_train; i++) order[i] = i;
    m->stop_training = false;
    for (int epoch = 0; epoch < fo.epochs && status == GGMLC_OK; epoch++) {
        const int64_t t0 = ggml_time_us();
        if (fo.shuffle) shuffle(m, order, n_train);
        struct nn_progress progress;
        nn_progress_begin(&progress, fo.verbose, epoch, fo.epochs, n_train);
        struct ggmlc_epoch_logs logs = {.epoch = epoch, .learning_rate = m->lr};
        struct pass_stats train = {0}, val = {0};
        status = run_pass(m, x, y, n_train, fo.batch_size, order, true, fo.class_weights, &train, NULL, &fo, epoch, &progress);
        if (status == GGMLC_OK && n_val > 0) status = run_pass(m, vx, vy, n_val, fo.batch_size, NULL, false, NULL, &val, NULL, NULL, epoch, NULL);
        fill_logs(m, &train, &logs.loss, &logs.metric_accuracy, &logs.metric_mae);
        if (n_val > 0) fill_logs(m, &val, &logs.val_loss, &logs.val_accuracy, &logs.val_mae);
        else logs.val_loss = logs.val_accuracy = logs.val_mae = NAN;
        logs.seconds = (double)(ggml_time_us() - t0) / 1e6;
        nn_progress_end(&progress, &logs);
        if (status == GGMLC_OK) status = nn_history_push(h, &logs);
        if (status == GGMLC_OK && !run_epoch_callbacks(m, &fo, &logs)) break;
    }
    for (int c = 0; c < fo.n_callbacks; c++) {
        if (fo.callbacks[c].on_train_end) fo.callbacks[c].on_train_end(m, fo.callbacks[c].user);
    }
    free(order);
    if (history) *history = h;
    else ggmlc_history_free(h);
    return status;
}
