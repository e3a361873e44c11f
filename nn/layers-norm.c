/*
 * layers-norm.c - normalisation layers and embeddings.
 *
 * Batch normalisation normalises each channel (the first dimension of the
 * shape, PyTorch's convention) with the batch's statistics in training and
 * the moving statistics in inference; the engine updates the moving ones
 * after each step: moving = momentum * moving + (1 - momentum) * batch,
 * the variance unbiased as in PyTorch.
 */
#include "nn-impl.h"

/* Broadcast shape of a per-channel vector for an input of in_dims dimensions (ggml order). */
static void channel_shape(const int64_t *in, int in_dims, int64_t ne[4]) {
    for (int i = 0; i < 4; i++) ne[i] = 1;
    ne[in_dims - 1] = in[0];
}

static enum ggmlc_status batch_norm_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    for (int i = 0; i < in_dims; i++) out[i] = in[i];
    *out_dims = in_dims;
    int64_t ne[4];
    channel_shape(in, in_dims, ne);
    ggmlc__nn_add_param(l, "gamma", 4, ne, GGMLC_INIT_ONES, in[0], in[0]);
    ggmlc__nn_add_param(l, "beta", 4, ne, GGMLC_INIT_ZEROS, in[0], in[0]);
    ggmlc__nn_add_param(l, "moving_mean", 4, ne, GGMLC_INIT_ZEROS, in[0], in[0])->trainable = false;
    ggmlc__nn_add_param(l, "moving_var", 4, ne, GGMLC_INIT_ONES, in[0], in[0])->trainable = false;
    return GGMLC_OK;
}

/* Per-channel mean of x over every other dimension, shaped for broadcasting. */
static struct ggml_tensor *channel_mean(struct ggml_context *ctx, struct ggml_tensor *x, int axis, const int64_t *bshape) {
    int perm[4] = {0, 1, 2, 3}; /* move the channel axis last */
    for (int i = axis; i < 3; i++) perm[i + 1] = i;
    perm[axis] = 3;
    struct ggml_tensor *t = ggml_cont(ctx, ggml_permute(ctx, x, perm[0], perm[1], perm[2], perm[3]));
    const int64_t c = x->ne[axis];
    t = ggml_reshape_2d(ctx, t, ggml_nelements(x) / c, c);
    t = ggml_mean(ctx, t);
    return ggml_reshape_4d(ctx, t, bshape[0], bshape[1], bshape[2], bshape[3]);
}

static struct ggml_tensor *batch_norm_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    struct ggml_context *ctx = b->ctx;
    const float eps = l->cfg.eps;
    struct ggml_tensor *mean, *var;
    if (b->training) {
        const int axis = l->in_dims - 1;
        mean = channel_mean(ctx, x, axis, l->params[2].ne);
        var = channel_mean(ctx, ggml_sqr(ctx, ggml_sub(ctx, x, mean)), axis, l->params[2].ne);
        ggml_set_output(mean);
        ggml_set_output(var);
        const int64_t count = ggml_nelements(x) / l->in_shape[0];
        if (!ggmlc__nn_add_aux(b, AUX_BATCH_MEAN, l, mean, count) || !ggmlc__nn_add_aux(b, AUX_BATCH_VAR, l, var, count)) return NULL;
    } else {
        mean = l->params[2].t;
        var = l->params[3].t;
    }
    struct ggml_tensor *xn = ggml_div(ctx, ggml_sub(ctx, x, mean), ggml_sqrt(ctx, ggml_scale_bias(ctx, var, 1.0f, eps)));
    return ggml_add(ctx, ggml_mul(ctx, xn, l->params[0].t), l->params[1].t);
}

const struct layer_ops ggmlc__nn_batch_norm_ops = {"BatchNormalization", batch_norm_setup, batch_norm_forward};

ggmlc_layer *ggmlc_batch_norm(float momentum, float eps) {
    if (!(momentum >= 0 && momentum < 1) || !(eps > 0)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_batch_norm: momentum must be in [0, 1) and eps positive");
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&ggmlc__nn_batch_norm_ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    l->cfg.momentum = momentum;
    l->cfg.eps = eps;
    return l;
}

/* ------------------------------------------------- layer and RMS norms */

static enum ggmlc_status last_axis_norm_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    for (int i = 0; i < in_dims; i++) out[i] = in[i];
    *out_dims = in_dims;
    const int64_t f = in[in_dims - 1];
    ggmlc__nn_add_param(l, "gamma", 1, (int64_t[]){f}, GGMLC_INIT_ONES, f, f);
    if (l->ops == &ggmlc__nn_layer_norm_ops) ggmlc__nn_add_param(l, "beta", 1, (int64_t[]){f}, GGMLC_INIT_ZEROS, f, f);
    return GGMLC_OK;
}

static struct ggml_tensor *layer_norm_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    struct ggml_tensor *y = ggml_mul(b->ctx, ggml_norm(b->ctx, x, l->cfg.eps), l->params[0].t);
    return ggml_add(b->ctx, y, l->params[1].t);
}

static struct ggml_tensor *rms_norm_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    return ggml_mul(b->ctx, ggml_rms_norm(b->ctx, x, l->cfg.eps), l->params[0].t);
}

const struct layer_ops ggmlc__nn_layer_norm_ops = {"LayerNormalization", last_axis_norm_setup, layer_norm_forward};
const struct layer_ops ggmlc__nn_rms_norm_ops = {"RMSNormalization", last_axis_norm_setup, rms_norm_forward};

static ggmlc_layer *new_norm(const struct layer_ops *ops, float eps) {
    if (!(eps > 0)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: eps must be positive", ops->kind);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(ops, GGMLC_ACT_NONE);
    if (l) l->cfg.eps = eps;
    return l;
}

ggmlc_layer *ggmlc_layer_norm(float eps) { return new_norm(&ggmlc__nn_layer_norm_ops, eps); }
ggmlc_layer *ggmlc_rms_norm(float eps) { return new_norm(&ggmlc__nn_rms_norm_ops, eps); }

/* ------------------------------------------------------------ embedding */

/* {T} token ids -> {T, dim}; the engine feeds ids as I32 when the model starts with an embedding. */
static enum ggmlc_status embedding_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    if (in_dims != 1) return ggmlc__nn_bad_input(l, "a {T} sequence of ids", in_dims);
    out[0] = in[0];
    out[1] = l->cfg.units;
    *out_dims = 2;
    ggmlc__nn_add_param(l, "embeddings", 2, (int64_t[]){l->cfg.units, l->cfg.vocab}, GGMLC_INIT_GLOROT_UNIFORM, l->cfg.vocab, l->cfg.units);
    return GGMLC_OK;
}

static struct ggml_tensor *embedding_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    if (x->type != GGML_TYPE_I32) {
        ggmlc_set_error(GGMLC_ERR_TYPE, "Embedding ('%s'): must be the first layer (its input are token ids)", l->name);
        return NULL;
    }
    struct ggml_tensor *ids = ggml_reshape_1d(b->ctx, x, ggml_nelements(x));
    return ggml_reshape_3d(b->ctx, ggml_get_rows(b->ctx, l->params[0].t, ids), l->cfg.units, x->ne[0], b->batch);
}

const struct layer_ops ggmlc__nn_embedding_ops = {"Embedding", embedding_setup, embedding_forward};

ggmlc_layer *ggmlc_embedding(int64_t vocab, int64_t dim) {
    if (vocab <= 0 || dim <= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_embedding: vocab and dim must be positive");
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&ggmlc__nn_embedding_ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    l->cfg.vocab = vocab;
    l->cfg.units = dim;
    return l;
}
