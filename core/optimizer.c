/*
 * optimizer.c - the training module shared by ggml-opt, the model API and the eager engine
 * (optimizer.h): the random generator, optimizer updates and their hyperparameters, losses
 * and gradient clipping.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "optimizer.h"

/* ------------------------------------------------------------ random */

void ggmlc__rng_seed(struct ggmlc_rng *r, uint64_t seed) { r->state = seed; }

uint64_t ggmlc__rng_next(struct ggmlc_rng *r) { /* splitmix64 */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float ggmlc__rng_uniform(struct ggmlc_rng *r) {
    return (float)((ggmlc__rng_next(r) >> 40) / (double)(1ull << 24));
}

/* Uniform in [0, 1) with 53 bits: every value a double holds exactly. */
static double uniform53(struct ggmlc_rng *r) {
    return (double)(ggmlc__rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double ggmlc__rng_normal(struct ggmlc_rng *r) {
    const double u1 = uniform53(r) + 1e-300; /* log(0) never */
    const double u2 = uniform53(r);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

void ggmlc__rng_shuffle(struct ggmlc_rng *r, int64_t *idx, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = (int64_t)(ggmlc__rng_next(r) % (uint64_t)(i + 1));
        const int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* --------------------------------------------------------- optimizers */

int ggmlc__optim_n_pars(enum ggmlc_optim_kind kind) { return kind == GGMLC_OPTIM_ADAMW ? 7 : 3; }

int ggmlc__optim_n_state(enum ggmlc_optim_kind kind) {
    return kind == GGMLC_OPTIM_ADAMW ? 2 : kind == GGMLC_OPTIM_SGD_MOMENTUM ? 1 : 0;
}

/* AdamW's layout is ggml_opt_step_adamw's {alpha, beta1, beta2, eps, wd, 1/(1-beta1^t),
 * 1/(1-beta2^t)}; SGD's starts with ggml_opt_step_sgd's {alpha, wd}. */
int ggmlc__optim_pack(enum ggmlc_optim_kind kind, const struct ggmlc_optim_hparams *hp,
                      int64_t step, float *pars) {
    if (kind == GGMLC_OPTIM_ADAMW) {
        const double t = (double)(step + 1);
        const float v[7] = {hp->lr,
                            hp->beta1,
                            hp->beta2,
                            hp->eps,
                            hp->weight_decay,
                            (float)(1.0 / (1.0 - pow(hp->beta1, t))),
                            (float)(1.0 / (1.0 - pow(hp->beta2, t)))};
        memcpy(pars, v, sizeof v);
        return 7;
    }
    const float v[3] = {hp->lr, hp->weight_decay, hp->momentum};
    memcpy(pars, v, sizeof v);
    return 3;
}

bool ggmlc__optim_new_state(struct ggml_context *ctx, enum ggmlc_optim_kind kind,
                           const struct ggml_tensor *like, struct ggml_tensor **m,
                           struct ggml_tensor **v) {
    const int n = ggmlc__optim_n_state(kind);
    *m = n >= 1 ? ggml_dup_tensor(ctx, like) : NULL;
    *v = n >= 2 ? ggml_dup_tensor(ctx, like) : NULL;
    return (n < 1 || *m) && (n < 2 || *v);
}

/* v = mu v + g (+ wd p); p -= lr v: PyTorch's SGD with momentum (dampening 0, L2 decay). */
static struct ggml_tensor *sgd_momentum(struct ggml_context *ctx, struct ggml_tensor *param,
                                        struct ggml_tensor *grad, struct ggml_tensor *velocity,
                                        struct ggml_tensor *pars, float weight_decay) {
    struct ggml_tensor *lr = ggml_view_1d(ctx, pars, 1, 0);
    struct ggml_tensor *mu = ggml_view_1d(ctx, pars, 1, 2 * sizeof(float));
    struct ggml_tensor *g =
        weight_decay > 0 ? ggml_add(ctx, grad, ggml_scale(ctx, param, weight_decay)) : grad;
    struct ggml_tensor *v = ggml_cpy(ctx, ggml_add(ctx, ggml_mul(ctx, velocity, mu), g), velocity);
    return ggml_cpy(ctx, ggml_sub(ctx, param, ggml_mul(ctx, v, lr)), param);
}

struct ggml_tensor *ggmlc__optim_update(struct ggml_context *ctx, enum ggmlc_optim_kind kind,
                                       struct ggml_tensor *param, struct ggml_tensor *grad,
                                       struct ggml_tensor *m, struct ggml_tensor *v,
                                       struct ggml_tensor *pars, float weight_decay) {
    switch (kind) {
    case GGMLC_OPTIM_ADAMW: return ggml_opt_step_adamw(ctx, param, grad, m, v, pars);
    case GGMLC_OPTIM_SGD: return ggml_opt_step_sgd(ctx, param, grad, ggml_view_1d(ctx, pars, 2, 0));
    case GGMLC_OPTIM_SGD_MOMENTUM: return sgd_momentum(ctx, param, grad, m, pars, weight_decay);
    }
    return NULL;
}

/* ------------------------------------------------------------- losses */

struct ggml_tensor *ggmlc__loss_mean(struct ggml_context *ctx, struct ggml_tensor *out) {
    return ggml_scale(ctx, ggml_sum(ctx, out), 1.0f / (float)ggml_nelements(out));
}

struct ggml_tensor *ggmlc__loss_sum(struct ggml_context *ctx, struct ggml_tensor *out) {
    return ggml_sum(ctx, out);
}

struct ggml_tensor *ggmlc__loss_mse(struct ggml_context *ctx, struct ggml_tensor *out,
                                   struct ggml_tensor *y) {
    return ggmlc__loss_mean(ctx, ggml_sqr(ctx, ggml_sub(ctx, out, y)));
}

/* t as rows of `row` elements (a view; a copy first when t is not contiguous). */
static struct ggml_tensor *as_rows(struct ggml_context *ctx, struct ggml_tensor *t, int64_t row) {
    if (t->ne[0] == row && ggml_n_dims(t) <= 2 && ggml_is_contiguous(t)) return t;
    struct ggml_tensor *c = ggml_is_contiguous(t) ? t : ggml_cont(ctx, t);
    return ggml_reshape_2d(ctx, c, row, ggml_nelements(t) / row);
}

struct ggml_tensor *ggmlc__loss_cross_entropy(struct ggml_context *ctx, struct ggml_tensor *logits,
                                             struct ggml_tensor *y, int64_t row) {
    return ggml_cross_entropy_loss(ctx, as_rows(ctx, logits, row), as_rows(ctx, y, row));
}

/* mean(softplus(z) - y z) */
struct ggml_tensor *ggmlc__loss_bce_logits(struct ggml_context *ctx, struct ggml_tensor *logits,
                                          struct ggml_tensor *y) {
    return ggmlc__loss_mean(ctx,
                           ggml_sub(ctx, ggml_softplus(ctx, logits), ggml_mul(ctx, y, logits)));
}

/* -mean(y log p + (1 - y) log(1 - p)) */
struct ggml_tensor *ggmlc__loss_bce_probs(struct ggml_context *ctx, struct ggml_tensor *p,
                                         struct ggml_tensor *y) {
    struct ggml_tensor *pc = ggml_clamp(ctx, ggml_scale(ctx, p, 1.0f), 1e-7f, 1.0f - 1e-7f);
    struct ggml_tensor *a = ggml_mul(ctx, y, ggml_log(ctx, pc));
    struct ggml_tensor *b = ggml_mul(ctx, ggml_scale_bias(ctx, y, -1.0f, 1.0f),
                                     ggml_log(ctx, ggml_scale_bias(ctx, pc, -1.0f, 1.0f)));
    return ggml_scale(ctx, ggml_sum(ctx, ggml_add(ctx, a, b)), -1.0f / (float)ggml_nelements(p));
}

/* ----------------------------------------------------------- clipping */

struct ggml_tensor *ggmlc__clip_value(struct ggml_context *ctx, struct ggml_tensor *grad,
                                     float clip_value) {
    return clip_value > 0 ? ggml_clamp(ctx, grad, -clip_value, clip_value) : grad;
}

struct ggml_tensor *ggmlc__clip_norm_divisor(struct ggml_context *ctx, struct ggml_tensor **grads,
                                            int n, float clip_value, float clip_norm) {
    if (!(clip_norm > 0)) return NULL;
    struct ggml_tensor *sum = NULL;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *sq =
            ggml_sum(ctx, ggml_sqr(ctx, ggmlc__clip_value(ctx, grads[i], clip_value)));
        sum = sum ? ggml_add(ctx, sum, sq) : sq;
    }
    if (!sum) return NULL;
    return ggml_clamp(ctx, ggml_scale(ctx, ggml_sqrt(ctx, sum), 1.0f / clip_norm), 1.0f, FLT_MAX);
}
