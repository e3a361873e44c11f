/*
 * nn-optim.c - optimizers over parameter lists (torch.optim's SGD, Adam, AdamW) and gradient
 * clipping by global norm.  AdamW, Adam without weight decay and SGD without dampening or
 * Nesterov run as one fused update per parameter (ga_adamw_step_, ga_sgd_step_: the math of
 * core/optimizer.c); the other variants are written with eager ops.  Everything joins the
 * pending graph: a step costs no host round trip.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "ggmlc.h"
#include "autograd-impl.h"
#include "nn-impl.h"

static ga_optimizer *optimizer_new(enum ga_optim_kind kind, ga_param_list params, float lr,
                                   const char *fn) {
    if (params.n < 0 || (params.n > 0 && !params.params))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: invalid parameter list", fn), NULL;
    if (!(lr >= 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: invalid learning rate %g", fn, lr), NULL;
    for (int k = 0; k < params.n; k++) {
        if (!ggmlc__ga_check(params.params[k], fn)) return NULL;
        /* the fused updates and their state are float32; master weights are the way to train
         * 16-bit models (keep float32 parameters, ga_to_dtype them in the forward pass) */
        if (params.params[k]->dtype != GA_FLOAT32)
            return ggmlc_set_error(GGMLC_ERR_UNSUPPORTED,
                                   "%s: parameter %d is %s; optimizers take float32 parameters",
                                   fn, k, ga_dtype_name(params.params[k]->dtype)),
                   NULL;
    }
    ga_optimizer *o = calloc(1, sizeof *o);
    if (o) o->params = calloc((size_t)params.n + 1, sizeof *o->params);
    if (o) o->state = calloc((size_t)params.n + 1, sizeof *o->state);
    if (!o || !o->params || !o->state) {
        ga_optimizer_free(o);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", fn), NULL;
    }
    for (int k = 0; k < params.n; k++) o->params[k] = ga_retain(params.params[k]);
    o->n = params.n;
    o->kind = kind;
    o->lr = lr;
    return o;
}

ga_optimizer *ga_sgd(ga_param_list params, float lr, float momentum, float dampening,
                     float weight_decay, bool nesterov) {
    if (momentum < 0 || weight_decay < 0 || (nesterov && (momentum <= 0 || dampening != 0)))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_sgd: invalid hyperparameters (Nesterov needs momentum > 0 and "
                               "dampening 0; momentum and weight decay >= 0)"),
               NULL;
    ga_optimizer *o = optimizer_new(GA_OPTIM_SGD, params, lr, "ga_sgd");
    if (!o) return NULL;
    o->momentum = momentum;
    o->dampening = dampening;
    o->weight_decay = weight_decay;
    o->nesterov = nesterov;
    return o;
}

static ga_optimizer *adam_like(enum ga_optim_kind kind, ga_param_list params, float lr, float beta1,
                               float beta2, float eps, float weight_decay, const char *fn) {
    if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps >= 0 && weight_decay >= 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: invalid hyperparameters", fn), NULL;
    ga_optimizer *o = optimizer_new(kind, params, lr, fn);
    if (!o) return NULL;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->weight_decay = weight_decay;
    return o;
}

ga_optimizer *ga_adam(ga_param_list params, float lr, float beta1, float beta2, float eps,
                      float weight_decay) {
    return adam_like(GA_OPTIM_ADAM, params, lr, beta1, beta2, eps, weight_decay, "ga_adam");
}

ga_optimizer *ga_adamw(ga_param_list params, float lr, float beta1, float beta2, float eps,
                       float weight_decay) {
    return adam_like(GA_OPTIM_ADAMW, params, lr, beta1, beta2, eps, weight_decay, "ga_adamw");
}

/* ------------------------------------------------------------------ step */

/* A zero state tensor shaped as p, owned by the optimizer. */
static ga_tensor *state_zeros(ga_tensor **slot, const ga_tensor *p) {
    if (*slot) return *slot;
    ggmlc__ga_internal(1);
    *slot = ga_zeros_like(p);
    ggmlc__ga_internal(-1);
    return *slot;
}

/* g + wd p, with the gradient for the L2 weight decay of SGD and Adam (a new reference). */
static ga_tensor *decayed_grad(const ga_tensor *p, float wd) {
    ga_tensor *g = ga_grad(p);
    if (wd == 0) return ga_retain(g);
    ga_tensor *dp = ga_mul_scalar(p, wd);
    ga_tensor *r = dp ? ga_add(g, dp) : NULL;
    ga_release(dp);
    return r;
}

/* Adam with L2 weight decay: the fused AdamW update (decay 0) of the decayed gradient. */
static enum ggmlc_status adam_step(ga_optimizer *o, ga_tensor *p, struct ga_param_state *s) {
    if (!state_zeros(&s->a, p) || !state_zeros(&s->b, p)) return ggmlc_last_status();
    const bool decoupled = o->kind == GA_OPTIM_ADAMW;
    if (decoupled || o->weight_decay == 0)
        return ga_adamw_step_(p, s->a, s->b, s->step, o->lr, o->beta1, o->beta2, o->eps,
                              decoupled ? o->weight_decay : 0);
    ga_tensor *g = decayed_grad(p, o->weight_decay);
    if (!g) return ggmlc_last_status();
    ga_tensor *own = p->grad;
    p->grad = g;
    enum ggmlc_status st =
        ga_adamw_step_(p, s->a, s->b, s->step, o->lr, o->beta1, o->beta2, o->eps, 0);
    p->grad = own;
    ga_release(g);
    return st;
}

/* torch.optim.SGD in full: buf = mu buf + (1 - dampening) g (g itself at the first step),
 * then p -= lr (g + mu buf) with Nesterov, p -= lr buf without. */
static enum ggmlc_status sgd_composed(ga_optimizer *o, ga_tensor *p, struct ga_param_state *s) {
    struct ga_tmps t;
    ggmlc__ga_tmp_begin(&t);
    ga_tensor *g = ggmlc__ga_tmp(&t, decayed_grad(p, o->weight_decay));
    ga_tensor *buf = NULL;
    if (g && s->a && s->step > 1) {
        ga_tensor *kept = ggmlc__ga_tmp(&t, ga_mul_scalar(s->a, o->momentum));
        ga_tensor *fresh = ggmlc__ga_tmp(&t, ga_mul_scalar(g, 1 - o->dampening));
        buf = kept && fresh ? ggmlc__ga_tmp(&t, ga_add(kept, fresh)) : NULL;
    } else {
        buf = g;
    }
    enum ggmlc_status st =
        buf && state_zeros(&s->a, p) ? ga_assign_(s->a, buf) : ggmlc_last_status();
    ga_tensor *dir = buf;
    if (st == GGMLC_OK && o->nesterov) {
        ga_tensor *mb = ggmlc__ga_tmp(&t, ga_mul_scalar(buf, o->momentum));
        dir = mb ? ggmlc__ga_tmp(&t, ga_add(g, mb)) : NULL;
    }
    ga_tensor *delta = dir ? ggmlc__ga_tmp(&t, ga_mul_scalar(dir, o->lr)) : NULL;
    ga_tensor *np = delta ? ggmlc__ga_tmp(&t, ga_sub(p, delta)) : NULL;
    if (st == GGMLC_OK) st = np ? ga_assign_(p, np) : ggmlc_last_status();
    ggmlc__ga_tmp_end(&t, NULL);
    return st;
}

static enum ggmlc_status sgd_step(ga_optimizer *o, ga_tensor *p, struct ga_param_state *s) {
    if (o->nesterov || (o->dampening != 0 && o->momentum != 0)) return sgd_composed(o, p, s);
    if (o->momentum != 0 && !state_zeros(&s->a, p)) return ggmlc_last_status();
    return ga_sgd_step_(p, o->momentum != 0 ? s->a : NULL, o->lr, o->momentum, o->weight_decay);
}

enum ggmlc_status ga_optimizer_step(ga_optimizer *opt) {
    if (!opt) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_optimizer_step: NULL optimizer");
    bool was = ga_set_grad_enabled(false);
    ggmlc__ga_internal(1); /* temporaries are released here, not by the caller's scope */
    enum ggmlc_status st = GGMLC_OK;
    for (int k = 0; k < opt->n && st == GGMLC_OK; k++) {
        ga_tensor *p = opt->params[k];
        if (!ggmlc__ga_check(p, "ga_optimizer_step")) {
            st = ggmlc_last_status();
            break;
        }
        if (!ga_grad(p)) continue; /* as PyTorch: parameters without a gradient are skipped */
        struct ga_param_state *s = &opt->state[k];
        s->step++;
        st = opt->kind == GA_OPTIM_SGD ? sgd_step(opt, p, s) : adam_step(opt, p, s);
    }
    ggmlc__ga_internal(-1);
    ga_set_grad_enabled(was);
    return st;
}

void ga_optimizer_zero_grad(ga_optimizer *opt) {
    if (!opt) return;
    for (int k = 0; k < opt->n; k++) ga_zero_grad(opt->params[k]);
}

float ga_optimizer_get_lr(const ga_optimizer *opt) { return opt ? opt->lr : NAN; }

void ga_optimizer_set_lr(ga_optimizer *opt, float lr) {
    if (opt && lr >= 0) opt->lr = lr;
}

void ga_optimizer_free(ga_optimizer *opt) {
    if (!opt) return;
    for (int k = 0; k < opt->n; k++) {
        ga_release(opt->params[k]);
        ga_release(opt->state[k].a);
        ga_release(opt->state[k].b);
    }
    free(opt->params);
    free(opt->state);
    free(opt);
}

/* -------------------------------------------------------------- clipping */

/* sum |g|^p over one gradient (max |g| for the infinity norm): a new 0-d tensor. */
static ga_tensor *grad_term(const ga_tensor *g, float norm_type) {
    struct ga_tmps t;
    ggmlc__ga_tmp_begin(&t);
    ga_tensor *a = ggmlc__ga_tmp(&t, ga_abs(g));
    ga_tensor *r = NULL;
    if (a && isinf(norm_type)) {
        ga_tensor *flat = ggmlc__ga_tmp(&t, ga_reshape(a, GA_SHAPE(-1)));
        r = flat ? ga_max_dim(flat, 0, false) : NULL;
    } else if (a) {
        ga_tensor *pw = norm_type == 1 ? a : ggmlc__ga_tmp(&t, ga_pow(a, norm_type));
        r = pw ? ga_sum(pw) : NULL;
    }
    return ggmlc__ga_tmp_end(&t, r);
}

/* acc and term combined (max or sum), both released: a new reference. */
static ga_tensor *combine(ga_tensor *acc, ga_tensor *term, float norm_type) {
    if (!acc || !term) {
        ga_release(acc);
        return term;
    }
    ga_tensor *r;
    if (isinf(norm_type)) {
        ga_tensor *pair[2] = {acc, term};
        ga_tensor *both = ga_stack(pair, 2, 0);
        r = both ? ga_max_dim(both, 0, false) : NULL;
        ga_release(both);
    } else {
        r = ga_add(acc, term);
    }
    ga_release(acc);
    ga_release(term);
    return r;
}

/* The total norm of the gradients of params (a new reference; NULL when none has one). */
static ga_tensor *total_norm(ga_param_list params, float norm_type) {
    ga_tensor *acc = NULL;
    for (int k = 0; k < params.n; k++) {
        ga_tensor *g = ga_grad(params.params[k]);
        if (!g) continue;
        ga_tensor *term = grad_term(g, norm_type);
        if (!term) {
            ga_release(acc);
            return NULL;
        }
        acc = combine(acc, term, norm_type);
        if (!acc) return NULL;
    }
    if (!acc || isinf(norm_type) || norm_type == 1) return acc;
    ga_tensor *r = ga_pow(acc, 1.0f / norm_type);
    ga_release(acc);
    return r;
}

/* Every gradient multiplied by coef (a 0-d tensor). */
static bool scale_grads(ga_param_list params, const ga_tensor *coef) {
    for (int k = 0; k < params.n; k++) {
        ga_tensor *g = ga_grad(params.params[k]);
        if (!g) continue;
        ga_tensor *scaled = ga_mul(g, coef);
        bool ok = scaled && ga_assign_(g, scaled) == GGMLC_OK;
        ga_release(scaled);
        if (!ok) return false;
    }
    return true;
}

ga_tensor *ga_clip_grad_norm(ga_param_list params, float max_norm, float norm_type) {
    if (params.n < 0 || (params.n > 0 && !params.params) || !(max_norm >= 0) || !(norm_type > 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_clip_grad_norm: invalid list, max_norm or norm_type"),
               NULL;
    bool any = false;
    for (int k = 0; k < params.n; k++) {
        if (!ggmlc__ga_check(params.params[k], "ga_clip_grad_norm")) return NULL;
        any |= ga_grad(params.params[k]) != NULL;
    }
    if (!any) /* as PyTorch: nothing to clip, a norm of 0 */
        return ga_scalar(params.n ? params.params[0]->dev : NULL, 0.0f);
    bool was = ga_set_grad_enabled(false);
    struct ga_tmps t;
    ggmlc__ga_tmp_begin(&t);
    ga_tensor *norm = ggmlc__ga_tmp(&t, total_norm(params, norm_type));
    /* clip_coef = min(max_norm / (norm + 1e-6), 1), applied whatever its value (as PyTorch) */
    ga_tensor *den = norm ? ggmlc__ga_tmp(&t, ga_add_scalar(norm, 1e-6f)) : NULL;
    ga_tensor *inv = den ? ggmlc__ga_tmp(&t, ga_pow(den, -1.0f)) : NULL;
    ga_tensor *lim = inv ? ggmlc__ga_tmp(&t, ga_mul_scalar(inv, max_norm)) : NULL;
    ga_tensor *coef = lim ? ggmlc__ga_tmp(&t, ga_clamp(lim, -FLT_MAX, 1.0f)) : NULL;
    ga_tensor *result = coef && scale_grads(params, coef) ? ga_retain(norm) : NULL;
    ggmlc__ga_tmp_end(&t, result);
    ga_set_grad_enabled(was);
    return result;
}
