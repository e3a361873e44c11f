/*
 * layers.c - the layer object and the shape-only and dense layers:
 * dense, activation, flatten, reshape, dropout.
 */
#include <math.h>
#include <stdlib.h>

#include "nn-impl.h"

ggmlc_layer *ggmlc__nn_layer_new(const struct layer_ops *ops, enum ggmlc_activation act) {
    ggmlc_layer *l = calloc(1, sizeof *l);
    if (!l) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", ops->kind);
        return NULL;
    }
    l->ops = ops;
    l->act = act;
    l->trainable = true;
    l->kernel_init = GGMLC_INIT_GLOROT_UNIFORM;
    l->cfg.slope = 0.01f;
    l->default_name = true;
    snprintf(l->name, sizeof l->name, "%s", ops->kind);
    return l;
}

void ggmlc_layer_free(ggmlc_layer *l) {
    if (l && !l->owned) free(l);
}

void ggmlc_layer_set_name(ggmlc_layer *l, const char *name) {
    if (!l || !name) return;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->default_name = false;
}

void ggmlc_layer_set_initializer(ggmlc_layer *l, enum ggmlc_initializer init) {
    if (l) l->kernel_init = init;
}

void ggmlc_layer_set_trainable(ggmlc_layer *l, bool trainable) {
    if (l) l->trainable = trainable;
}

int64_t ggmlc__nn_shape_elems(const int64_t *shape, int n_dims) {
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) {
        if (shape[i] <= 0 || __builtin_mul_overflow(n, shape[i], &n) || n > NN_MAX_ELEMS) return -1;
    }
    return n;
}

void ggmlc__nn_param_name(const ggmlc_layer *l, const struct nn_param *p, char *buf, size_t size) {
    snprintf(buf, size, "%s.%s", l->name, p->name);
}

struct nn_param *ggmlc__nn_add_param(ggmlc_layer *l, const char *name, int n_dims, const int64_t *ne, enum ggmlc_initializer init,
                              double fan_in, double fan_out) {
    GGML_ASSERT(l->n_params < NN_MAX_PARAMS);
    struct nn_param *p = &l->params[l->n_params++];
    *p = (struct nn_param){.init = init, .fan_in = fan_in, .fan_out = fan_out, .trainable = true};
    snprintf(p->name, sizeof p->name, "%s", name);
    for (int i = 0; i < 4; i++) p->ne[i] = i < n_dims ? ne[i] : 1;
    return p;
}

bool ggmlc__nn_add_aux(struct nn_build *b, enum nn_aux_kind kind, ggmlc_layer *l, struct ggml_tensor *t, int64_t count) {
    if (!t) return false;
    if (b->n_aux >= NN_MAX_AUX) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "layer '%s': a graph holds at most %d dropout masks and batch statistics",
                        l->name, NN_MAX_AUX);
        return false;
    }
    b->aux[b->n_aux++] = (struct nn_aux){kind, l, t, count};
    return true;
}

struct ggml_tensor *ggmlc__nn_activate(struct ggml_context *ctx, struct ggml_tensor *x, enum ggmlc_activation act, float slope) {
    switch (act) {
    case GGMLC_ACT_NONE: return x;
    case GGMLC_ACT_RELU: return ggml_relu(ctx, x);
    case GGMLC_ACT_LEAKY_RELU: return ggml_leaky_relu(ctx, x, slope, false);
    case GGMLC_ACT_ELU: return ggml_elu(ctx, x);
    case GGMLC_ACT_GELU: return ggml_gelu(ctx, x);
    case GGMLC_ACT_SILU: return ggml_silu(ctx, x);
    case GGMLC_ACT_SIGMOID: return ggml_sigmoid(ctx, x);
    case GGMLC_ACT_TANH: return ggml_tanh(ctx, x);
    case GGMLC_ACT_SOFTMAX: return ggml_soft_max(ctx, x);
    case GGMLC_ACT_HARDSWISH: return ggml_hardswish(ctx, x);
    }
    return NULL;
}

enum ggmlc_status ggmlc__nn_bad_input(ggmlc_layer *l, const char *need, int in_dims) {
    return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s ('%s'): needs %s input, got %d dimensions", l->ops->kind, l->name, need, in_dims);
}

/* --------------------------------------------------------------- dense */

static enum ggmlc_status dense_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    const int64_t f = in[in_dims - 1], u = l->cfg.units;
    for (int i = 0; i < in_dims; i++) out[i] = in[i];
    out[in_dims - 1] = u;
    *out_dims = in_dims;
    ggmlc__nn_add_param(l, "kernel", 2, (int64_t[]){f, u}, l->kernel_init, f, u);
    ggmlc__nn_add_param(l, "bias", 1, (int64_t[]){u}, GGMLC_INIT_ZEROS, f, u);
    return GGMLC_OK;
}

static struct ggml_tensor *dense_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    struct ggml_tensor *y = ggml_add(b->ctx, ggml_mul_mat(b->ctx, l->params[0].t, x), l->params[1].t);
    return ggmlc__nn_activate(b->ctx, y, l->act, l->cfg.slope);
}

static const struct layer_ops dense_ops = {"Dense", dense_setup, dense_forward};

ggmlc_layer *ggmlc_dense(int64_t units, enum ggmlc_activation act) {
    if (units <= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dense: units must be positive (got %lld)", (long long)units);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&dense_ops, act);
    if (l) l->cfg.units = units;
    return l;
}

/* ---------------------------------------------------------- activation */

static enum ggmlc_status same_shape_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    for (int i = 0; i < in_dims; i++) out[i] = in[i];
    *out_dims = in_dims;
    return GGMLC_OK;
}

static struct ggml_tensor *activation_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    return ggmlc__nn_activate(b->ctx, x, l->act, l->cfg.slope);
}

static const struct layer_ops activation_ops = {"Activation", same_shape_setup, activation_forward};

ggmlc_layer *ggmlc_activation(enum ggmlc_activation act) { return ggmlc__nn_layer_new(&activation_ops, act); }

ggmlc_layer *ggmlc_leaky_relu(float slope) {
    ggmlc_layer *l = ggmlc__nn_layer_new(&activation_ops, GGMLC_ACT_LEAKY_RELU);
    if (l) l->cfg.slope = slope;
    return l;
}

/* ------------------------------------------------------- flatten, reshape */

static enum ggmlc_status flatten_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    out[0] = ggmlc__nn_shape_elems(in, in_dims);
    *out_dims = 1;
    return GGMLC_OK;
}

/* x reshaped to a shape (Keras order) plus the batch dimension. */
static struct ggml_tensor *reshape_to(struct ggml_context *ctx, struct ggml_tensor *x, const int64_t *shape, int n_dims, int64_t batch) {
    int64_t ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) ne[i] = shape[n_dims - 1 - i];
    ne[n_dims] = batch;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    return ggml_reshape_4d(ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

static struct ggml_tensor *flatten_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    return reshape_to(b->ctx, x, l->out_shape, 1, b->batch);
}

static const struct layer_ops flatten_ops = {"Flatten", flatten_setup, flatten_forward};

ggmlc_layer *ggmlc_flatten(void) { return ggmlc__nn_layer_new(&flatten_ops, GGMLC_ACT_NONE); }

static enum ggmlc_status reshape_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    const int64_t have = ggmlc__nn_shape_elems(in, in_dims), want = ggmlc__nn_shape_elems(l->cfg.shape, l->cfg.n_dims);
    if (want < 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "Reshape ('%s'): the target shape has a dimension below 1 or over 2^40 elements", l->name);
    if (have != want)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "Reshape ('%s'): %lld elements cannot take the target shape of %lld", l->name,
                               (long long)have, (long long)want);
    for (int i = 0; i < l->cfg.n_dims; i++) out[i] = l->cfg.shape[i];
    *out_dims = l->cfg.n_dims;
    return GGMLC_OK;
}

static struct ggml_tensor *reshape_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    return reshape_to(b->ctx, x, l->cfg.shape, l->cfg.n_dims, b->batch);
}

static const struct layer_ops reshape_ops = {"Reshape", reshape_setup, reshape_forward};

ggmlc_layer *ggmlc_reshape(const int64_t *shape, int n_dims) {
    if (!shape || n_dims < 1 || n_dims > NN_MAX_DIMS) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_reshape: 1 to %d dimensions", NN_MAX_DIMS);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&reshape_ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    for (int i = 0; i < n_dims; i++) l->cfg.shape[i] = shape[i];
    l->cfg.n_dims = n_dims;
    return l;
}

/* ------------------------------------------------------------- dropout */

/* In training, x times a mask of 0 and 1/(1-rate) that the engine draws for each step. */
static struct ggml_tensor *dropout_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    if (!b->training || l->cfg.rate <= 0) return x;
    struct ggml_tensor *mask = ggml_new_tensor(b->ctx, GGML_TYPE_F32, GGML_MAX_DIMS, x->ne);
    if (!mask) return NULL;
    ggml_set_input(mask);
    ggml_format_name(mask, "%s mask", l->name);
    return ggmlc__nn_add_aux(b, AUX_DROPOUT_MASK, l, mask, 0) ? ggml_mul(b->ctx, x, mask) : NULL;
}

static const struct layer_ops dropout_ops = {"Dropout", same_shape_setup, dropout_forward};

ggmlc_layer *ggmlc_dropout(float rate) {
    if (!(rate >= 0 && rate < 1)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dropout: rate must be in [0, 1) (got %g)", rate);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&dropout_ops, GGMLC_ACT_NONE);
    if (l) l->cfg.rate = rate;
    return l;
}

/* -------------------------------------------------------------- settings */

bool ggmlc__nn_setting_ok(bool ok, const char *name, double value, const char *need, char *why, size_t size) {
    if (!ok) snprintf(why, size, "%s %g is not %s", name, value, need);
    return ok;
}

bool ggmlc__nn_in_unit_interval(double v) { return v >= 0 && v < 1; }

static bool is_norm(const ggmlc_layer *l) {
    return l->ops == &ggmlc__nn_batch_norm_ops || l->ops == &ggmlc__nn_layer_norm_ops || l->ops == &ggmlc__nn_rms_norm_ops;
}

bool ggmlc__nn_layer_settings_valid(const ggmlc_layer *l, char *why, size_t size) {
    const struct layer_cfg *c = &l->cfg;
    return ggmlc__nn_setting_ok((unsigned)l->act <= GGMLC_ACT_HARDSWISH, "activation", (int)l->act,
                                "a known one", why, size) &&
           ggmlc__nn_setting_ok(ggmlc__nn_in_unit_interval(c->rate), "dropout rate", c->rate,
                                "in [0, 1)", why, size) &&
           ggmlc__nn_setting_ok(ggmlc__nn_in_unit_interval(c->momentum), "momentum", c->momentum,
                                "in [0, 1)", why, size) &&
           ggmlc__nn_setting_ok(
               is_norm(l) ? c->eps > 0 && c->eps < INFINITY : c->eps >= 0 && c->eps < INFINITY,
               "eps", c->eps, is_norm(l) ? "a finite number > 0" : "a finite number >= 0", why,
               size) &&
           ggmlc__nn_setting_ok(isfinite(c->slope), "slope", c->slope, "a finite number", why,
                                size) &&
           ggmlc__nn_setting_ok((unsigned)c->pool < GGML_OP_POOL_COUNT, "pooling", c->pool,
                                "max or average", why, size) &&
           ggmlc__nn_attn_settings_valid(l, why, size);
}

/* -------------------------------------------------------------- registry */

const struct layer_ops *ggmlc__nn_layer_ops_by_kind(const char *kind) {
    static const struct layer_ops *const all[] = {
        &dense_ops, &activation_ops, &flatten_ops, &reshape_ops, &dropout_ops, &ggmlc__nn_conv1d_ops, &ggmlc__nn_conv2d_ops,
        &ggmlc__nn_pool1d_ops, &ggmlc__nn_pool2d_ops, &ggmlc__nn_global_pool2d_ops, &ggmlc__nn_batch_norm_ops, &ggmlc__nn_layer_norm_ops,
        &ggmlc__nn_rms_norm_ops, &ggmlc__nn_embedding_ops, &ggmlc__nn_lstm_ops, &ggmlc__nn_gru_ops,
        &ggmlc__nn_mha_ops, &ggmlc__nn_posemb_ops, &ggmlc__nn_encoder_ops, &ggmlc__nn_decoder_ops,
        &ggmlc__nn_unet_res_ops, &ggmlc__nn_spatial_ops,
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(all[i]->kind, kind) == 0) return all[i];
    }
    return NULL;
}
