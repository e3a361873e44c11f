/*
 * optim-step.c - the functional optimizer updates (ga_adamw_step_, ga_sgd_step_): one update
 * of a parameter from its .grad with the math of core/optimizer.c, so that eager and graph
 * training agree.  The update is a node that writes the parameter's storage in place; it runs
 * at the next flush, ordered after the reads of the old value recorded before it.
 */
#include <string.h>

#include "ggmlc.h"
#include "optimizer.h"
#include "autograd-impl.h"

/* The stored tensor of the hyperparameters, shared by the updates of one step. */
static ga_tensor *hyperparameters(ga_device *d, const float *pars, int n) {
    if (d->pars && (int)d->pars->ne[0] == n && memcmp(d->pars_host, pars, n * sizeof *pars) == 0)
        return d->pars;
    ggmlc__ga_internal(1);
    ga_tensor *t = ga_from_array(d, pars, (size_t)n, 1, (const int64_t[]){n});
    ggmlc__ga_internal(-1);
    if (!t) return NULL;
    ga_release(d->pars);
    d->pars = t;
    memcpy(d->pars_host, pars, n * sizeof *pars);
    return t;
}

/* A stored value for a tensor updated in place (computing what is pending first). */
static bool settle(ga_tensor *t) {
    if (t->pending_index < 0 && t->store) return true;
    return ga_synchronize(t->dev) == GGMLC_OK && t->store != NULL;
}

static bool same_shape(const ga_tensor *p, const ga_tensor *s, const char *fn) {
    if (!s) return true;
    if (!ggmlc__ga_check_pair(p, s, fn)) return false;
    if (memcmp(p->ne, s->ne, sizeof p->ne) == 0) return true;
    ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: a state tensor's shape differs from the parameter's", fn);
    return false;
}

static enum ggmlc_status update(ga_tensor *p, ga_tensor *m, ga_tensor *v,
                                enum ggmlc_optim_kind kind, const struct ggmlc_optim_hparams *hp,
                                int64_t step, const char *fn) {
    if (!ggmlc__ga_check(p, fn) || !same_shape(p, m, fn) || !same_shape(p, v, fn))
        return ggmlc_last_status();
    if (!p->grad) return GGMLC_OK; /* as PyTorch: a parameter without a gradient is skipped */
    if ((m && m->requires_grad) || (v && v->requires_grad))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: state tensors must not require grad",
                               fn);
    if (!settle(p) || (m && !settle(m)) || (v && !settle(v))) return ggmlc_last_status();
    ga_device *d = p->dev;
    float pars[GGMLC_OPTIM_MAX_PARS];
    int n = ggmlc__optim_pack(kind, hp, step, pars);
    if (!ggmlc__ga_reserve(d, 8)) return ggmlc_last_status();
    ga_tensor *pt = hyperparameters(d, pars, n);
    if (!pt) return ggmlc_last_status();
    struct ggml_context *ctx = d->seg;
    struct ggml_tensor *node = ggmlc__optim_update(
        ctx, kind, ggmlc__ga_node(p), ggmlc__ga_node(p->grad), m ? ggmlc__ga_node(m) : NULL,
        v ? ggmlc__ga_node(v) : NULL, ggmlc__ga_node(pt), hp->weight_decay);
    if (!node || !ggmlc__ga_add_effect(d, node))
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: cannot build the update", fn);
    p->node = node; /* later reads of p see the updated value */
    p->node_epoch = d->epoch;
    return GGMLC_OK;
}

enum ggmlc_status ga_adamw_step_(ga_tensor *param, ga_tensor *m, ga_tensor *v, int64_t step,
                                 float lr, float beta1, float beta2, float eps,
                                 float weight_decay) {
    if (!m || !v || step < 1)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_adamw_step_: needs both moment tensors and a step >= 1");
    struct ggmlc_optim_hparams hp = {lr, beta1, beta2, eps, weight_decay, 0};
    return update(param, m, v, GGMLC_OPTIM_ADAMW, &hp, step - 1, "ga_adamw_step_");
}

enum ggmlc_status ga_sgd_step_(ga_tensor *param, ga_tensor *momentum_buffer, float lr,
                               float momentum, float weight_decay) {
    struct ggmlc_optim_hparams hp = {lr, 0, 0, 0, weight_decay, momentum};
    enum ggmlc_optim_kind kind = GGMLC_OPTIM_SGD;
    if (momentum != 0) {
        if (!momentum_buffer)
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                   "ga_sgd_step_: momentum needs a momentum buffer");
        kind = GGMLC_OPTIM_SGD_MOMENTUM;
    }
    return update(param, kind == GGMLC_OPTIM_SGD ? NULL : momentum_buffer, NULL, kind, &hp, 0,
                  "ga_sgd_step_");
}
