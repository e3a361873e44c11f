/*
 * nn-modules.c - the eager engine's modules (ggmlc-autograd-nn.h): layers holding their
 * parameters, a Sequential container, parameter lists named as PyTorch's state_dict, and
 * train/eval mode.  Forward passes are the functional ops of ggmlc-autograd.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "optimizer.h"
#include "autograd-impl.h"
#include "nn-impl.h"

/* ------------------------------------------------------------ building */

ga_module *ggmlc__ga_module_new(const struct ga_module_ops *ops) {
    ga_module *m = calloc(1, sizeof *m);
    if (!m) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory"), NULL;
    m->ops = ops;
    m->training = true;
    return m;
}

/* Parameters and buffers belong to their module, not to the caller's scope. */
static ga_tensor *owned(ga_tensor *(*make)(ga_device *, int, const int64_t *), ga_device *dev,
                        int ndim, const int64_t *shape) {
    ggmlc__ga_untracked(1);
    ga_tensor *t = make(dev, ndim, shape);
    ggmlc__ga_untracked(-1);
    return t;
}

/* A tensor of uniform numbers in [-bound, bound) from the ga_manual_seed generator. */
ga_tensor *ggmlc__ga_uniform_param(ga_device *dev, int ndim, const int64_t *shape, double bound) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    float *v = malloc(n * sizeof *v);
    if (!v) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory"), NULL;
    struct ggmlc_rng *rng = ggmlc__ga_rng();
    for (size_t i = 0; i < n; i++) v[i] = (float)((2.0 * ggmlc__rng_uniform(rng) - 1.0) * bound);
    ggmlc__ga_untracked(1);
    ga_tensor *t = ga_from_array(dev, v, n, ndim, shape);
    ggmlc__ga_untracked(-1);
    free(v);
    return t;
}

/* Attach t (NULL: creation failed, the module is freed) as a parameter or a buffer. */
bool ggmlc__ga_module_add_tensor(ga_module *m, const char *name, ga_tensor *t, bool is_param) {
    if (!t) return false;
    if (is_param) ga_requires_grad_(t, true);
    m->tensors[m->n_tensors] = t;
    m->tensor_names[m->n_tensors] = name;
    m->is_param[m->n_tensors++] = is_param;
    return true;
}

static ga_module *finish(ga_module *m, bool ok) {
    if (ok) return m;
    ga_module_free(m);
    return NULL;
}

static bool positive(int64_t v, const char *what, const char *fn) {
    if (v > 0) return true;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %s must be positive (got %lld)", fn, what,
                    (long long)v);
    return false;
}

/* --------------------------------------------------------------- layers */

static ga_tensor *linear_forward(ga_module *m, const ga_tensor *x) {
    return ga_linear(x, m->tensors[0], m->n_tensors > 1 ? m->tensors[1] : NULL);
}

ga_module *ga_linear_module(ga_device *dev, int64_t in, int64_t out, bool bias) {
    static const struct ga_module_ops ops = {"Linear", linear_forward};
    if (!positive(in, "in_features", __func__) || !positive(out, "out_features", __func__))
        return NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (!m) return NULL;
    const double bound = 1.0 / sqrt((double)in); /* kaiming_uniform(a = sqrt(5)), as PyTorch */
    bool ok = ggmlc__ga_module_add_tensor(
        m, "weight", ggmlc__ga_uniform_param(dev, GA_SHAPE(out, in), bound), true);
    if (ok && bias)
        ok = ggmlc__ga_module_add_tensor(m, "bias",
                                         ggmlc__ga_uniform_param(dev, GA_SHAPE(out), bound), true);
    return finish(m, ok);
}

static ga_tensor *conv2d_forward(ga_module *m, const ga_tensor *x) {
    return ga_conv2d(x, m->tensors[0], m->n_tensors > 1 ? m->tensors[1] : NULL, m->i[0], m->i[1],
                     1);
}

ga_module *ga_conv2d_module(ga_device *dev, int64_t in_ch, int64_t out_ch, int kernel, int stride,
                            int padding, bool bias) {
    static const struct ga_module_ops ops = {"Conv2d", conv2d_forward};
    if (!positive(in_ch, "in_channels", __func__) || !positive(out_ch, "out_channels", __func__) ||
        !positive(kernel, "kernel_size", __func__) || !positive(stride, "stride", __func__))
        return NULL;
    if (padding < 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: negative padding", __func__), NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (!m) return NULL;
    m->i[0] = stride;
    m->i[1] = padding;
    const double bound = 1.0 / sqrt((double)(in_ch * kernel * kernel));
    bool ok = ggmlc__ga_module_add_tensor(
        m, "weight", ggmlc__ga_uniform_param(dev, GA_SHAPE(out_ch, in_ch, kernel, kernel), bound),
        true);
    if (ok && bias)
        ok = ggmlc__ga_module_add_tensor(
            m, "bias", ggmlc__ga_uniform_param(dev, GA_SHAPE(out_ch), bound), true);
    return finish(m, ok);
}

static ga_tensor *embedding_forward(ga_module *m, const ga_tensor *x) {
    return ga_embedding(x, m->tensors[0]);
}

ga_module *ga_embedding_module(ga_device *dev, int64_t num, int64_t dim) {
    static const struct ga_module_ops ops = {"Embedding", embedding_forward};
    if (!positive(num, "num_embeddings", __func__) || !positive(dim, "embedding_dim", __func__))
        return NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (!m) return NULL;
    return finish(m, ggmlc__ga_module_add_tensor(m, "weight",
                                                 owned(ga_randn, dev, GA_SHAPE(num, dim)), true));
}

static ga_tensor *layer_norm_forward(ga_module *m, const ga_tensor *x) {
    return ga_layer_norm(x, m->tensors[0], m->tensors[1], m->f[0]);
}

ga_module *ga_layer_norm_module(ga_device *dev, int64_t dim, float eps) {
    static const struct ga_module_ops ops = {"LayerNorm", layer_norm_forward};
    if (!positive(dim, "normalized_shape", __func__)) return NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (!m) return NULL;
    m->f[0] = eps;
    bool ok = ggmlc__ga_module_add_tensor(m, "weight", owned(ga_ones, dev, GA_SHAPE(dim)), true) &&
              ggmlc__ga_module_add_tensor(m, "bias", owned(ga_zeros, dev, GA_SHAPE(dim)), true);
    return finish(m, ok);
}

static ga_tensor *rms_norm_forward(ga_module *m, const ga_tensor *x) {
    return ga_rms_norm(x, m->tensors[0], m->f[0]);
}

ga_module *ga_rms_norm_module(ga_device *dev, int64_t dim, float eps) {
    static const struct ga_module_ops ops = {"RMSNorm", rms_norm_forward};
    if (!positive(dim, "normalized_shape", __func__)) return NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (!m) return NULL;
    m->f[0] = eps;
    return finish(
        m, ggmlc__ga_module_add_tensor(m, "weight", owned(ga_ones, dev, GA_SHAPE(dim)), true));
}

static ga_tensor *batch_norm_forward(ga_module *m, const ga_tensor *x) {
    return ga_batch_norm(x, m->tensors[2], m->tensors[3], m->tensors[0], m->tensors[1], m->training,
                         m->f[1], m->f[0]);
}

ga_module *ga_batch_norm_module(ga_device *dev, int64_t channels, float eps, float momentum) {
    static const struct ga_module_ops ops = {"BatchNorm", batch_norm_forward};
    if (!positive(channels, "num_features", __func__)) return NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (!m) return NULL;
    m->f[0] = eps;
    m->f[1] = momentum;
    bool ok =
        ggmlc__ga_module_add_tensor(m, "weight", owned(ga_ones, dev, GA_SHAPE(channels)), true) &&
        ggmlc__ga_module_add_tensor(m, "bias", owned(ga_zeros, dev, GA_SHAPE(channels)), true) &&
        ggmlc__ga_module_add_tensor(m, "running_mean", owned(ga_zeros, dev, GA_SHAPE(channels)),
                                    false) &&
        ggmlc__ga_module_add_tensor(m, "running_var", owned(ga_ones, dev, GA_SHAPE(channels)),
                                    false);
    return finish(m, ok);
}

/* ------------------------------------------------- layers without parameters */

static ga_tensor *dropout_forward(ga_module *m, const ga_tensor *x) {
    return ga_dropout(x, m->f[0], m->training);
}

ga_module *ga_dropout_module(float p) {
    static const struct ga_module_ops ops = {"Dropout", dropout_forward};
    if (!(p >= 0 && p <= 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: p = %g is not in [0, 1]", __func__, p),
               NULL;
    ga_module *m = ggmlc__ga_module_new(&ops);
    if (m) m->f[0] = p;
    return m;
}

#define GA_ACTIVATION_MODULE(fn, kind, op)                             \
    static ga_tensor *fn##_forward(ga_module *m, const ga_tensor *x) { \
        (void)m;                                                       \
        return op(x);                                                  \
    }                                                                  \
    ga_module *fn(void) {                                              \
        static const struct ga_module_ops ops = {kind, fn##_forward};  \
        return ggmlc__ga_module_new(&ops);                             \
    }

GA_ACTIVATION_MODULE(ga_relu_module, "ReLU", ga_relu)
GA_ACTIVATION_MODULE(ga_gelu_module, "GELU", ga_gelu)
GA_ACTIVATION_MODULE(ga_silu_module, "SiLU", ga_silu)
GA_ACTIVATION_MODULE(ga_tanh_module, "Tanh", ga_tanh)
GA_ACTIVATION_MODULE(ga_sigmoid_module, "Sigmoid", ga_sigmoid)

static ga_tensor *flatten_forward(ga_module *m, const ga_tensor *x) {
    (void)m;
    return ga_reshape(x, GA_SHAPE(ga_size(x, 0), -1));
}

ga_module *ga_flatten_module(void) {
    static const struct ga_module_ops ops = {"Flatten", flatten_forward};
    return ggmlc__ga_module_new(&ops);
}

static ga_tensor *max_pool_forward(ga_module *m, const ga_tensor *x) {
    return ga_max_pool2d(x, m->i[0], m->i[1], m->i[2]);
}

static ga_tensor *avg_pool_forward(ga_module *m, const ga_tensor *x) {
    return ga_avg_pool2d(x, m->i[0], m->i[1], m->i[2]);
}

static ga_module *pool_module(const struct ga_module_ops *ops, int kernel, int stride, int padding,
                              const char *fn) {
    if (!positive(kernel, "kernel_size", fn)) return NULL;
    if (stride < 0 || padding < 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: negative stride or padding", fn), NULL;
    ga_module *m = ggmlc__ga_module_new(ops);
    if (!m) return NULL;
    m->i[0] = kernel;
    m->i[1] = stride ? stride : kernel; /* PyTorch: stride defaults to the kernel size */
    m->i[2] = padding;
    return m;
}

ga_module *ga_max_pool2d_module(int kernel, int stride, int padding) {
    static const struct ga_module_ops ops = {"MaxPool2d", max_pool_forward};
    return pool_module(&ops, kernel, stride, padding, __func__);
}

ga_module *ga_avg_pool2d_module(int kernel, int stride, int padding) {
    static const struct ga_module_ops ops = {"AvgPool2d", avg_pool_forward};
    return pool_module(&ops, kernel, stride, padding, __func__);
}

/* ------------------------------------------------------------ Sequential */

static ga_tensor *sequential_forward(ga_module *m, const ga_tensor *x) {
    ga_tensor *h = ga_retain((ga_tensor *)x);
    ggmlc__ga_internal(1); /* the intermediate results are released here, not by a scope */
    for (int c = 0; c < m->n_children && h; c++) {
        ga_tensor *next = ga_module_forward(m->children[c], h);
        ga_release(h);
        h = next;
    }
    ggmlc__ga_internal(-1);
    ggmlc__ga_scope_track(h);
    return h;
}

ga_module *ga_sequential(void) {
    static const struct ga_module_ops ops = {"Sequential", sequential_forward};
    return ggmlc__ga_module_new(&ops);
}

enum ggmlc_status ggmlc__ga_module_add_child(ga_module *m, const char *name, ga_module *child) {
    if (!child)
        return ggmlc_last_status() != GGMLC_OK
                   ? ggmlc_last_status()
                   : ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga: NULL module");
    if (m->n_children == m->cap_children) {
        int cap = m->cap_children ? 2 * m->cap_children : 8;
        ga_module **p = realloc(m->children, (size_t)cap * sizeof *p);
        if (p) m->children = p;
        const char **nm = realloc((void *)m->child_names, (size_t)cap * sizeof *nm);
        if (nm) m->child_names = nm;
        if (!p || !nm) {
            ga_module_free(child);
            return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory");
        }
        m->cap_children = cap;
    }
    m->child_names[m->n_children] = name;
    m->children[m->n_children++] = child;
    return GGMLC_OK;
}

enum ggmlc_status ga_sequential_add(ga_module *seq, ga_module *child) {
    if (!seq || !child || seq == child)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_sequential_add: %s",
                               seq == child && seq ? "a module cannot contain itself"
                                                   : "NULL module");
    if (seq->ops->forward != sequential_forward)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_sequential_add: a %s is not a Sequential",
                               seq->ops->kind);
    return ggmlc__ga_module_add_child(seq, NULL, child);
}

/* -------------------------------------------------------------- common */

ga_tensor *ga_module_forward(ga_module *m, const ga_tensor *x) {
    if (!m) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_module_forward: NULL module"), NULL;
    if (!ggmlc__ga_check(x, "ga_module_forward")) return NULL;
    return m->ops->forward(m, x);
}

const char *ga_module_kind(const ga_module *m) { return m ? m->ops->kind : NULL; }

void ga_module_train(ga_module *m, bool training) {
    if (!m) return;
    m->training = training;
    for (int c = 0; c < m->n_children; c++) ga_module_train(m->children[c], training);
}

bool ga_module_is_training(const ga_module *m) { return m && m->training; }

static void list_clear(ga_module *m) {
    for (int k = 0; k < m->list.n; k++) free((char *)m->list.names[k]);
    m->list.n = 0;
}

static bool list_push(ga_module *m, const char *prefix, const char *name, ga_tensor *t,
                      bool is_param) {
    if (m->list.n == m->cap_list) {
        int cap = m->cap_list ? 2 * m->cap_list : 16;
        ga_tensor **p = realloc(m->list.params, (size_t)cap * sizeof *p);
        if (p) m->list.params = p;
        const char **nm = realloc((void *)m->list.names, (size_t)cap * sizeof *nm);
        if (nm) m->list.names = nm;
        bool *ip = realloc(m->list_is_param, (size_t)cap * sizeof *ip);
        if (ip) m->list_is_param = ip;
        if (!p || !nm || !ip) return false;
        m->cap_list = cap;
    }
    size_t len = strlen(prefix) + strlen(name) + 1;
    char *full = malloc(len);
    if (!full) return false;
    snprintf(full, len, "%s%s", prefix, name);
    m->list.params[m->list.n] = t;
    m->list.names[m->list.n] = full;
    m->list_is_param[m->list.n++] = is_param;
    return true;
}

static bool walk(ga_module *root, ga_module *m, const char *prefix, bool with_buffers) {
    for (int k = 0; k < m->n_tensors; k++)
        if ((m->is_param[k] || with_buffers) &&
            !list_push(root, prefix, m->tensor_names[k], m->tensors[k], m->is_param[k]))
            return false;
    for (int c = 0; c < m->n_children; c++) {
        char sub[256];
        const char *cn = m->child_names[c];
        int len = cn ? snprintf(sub, sizeof sub, "%s%s.", prefix, cn)
                     : snprintf(sub, sizeof sub, "%s%d.", prefix, c);
        if (len >= (int)sizeof sub) return false;
        if (!walk(root, m->children[c], sub, with_buffers)) return false;
    }
    return true;
}

ga_param_list ggmlc__ga_module_walk(ga_module *m, bool with_buffers) {
    ga_param_list none = {NULL, NULL, -1};
    if (!m) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga: NULL module"), none;
    list_clear(m);
    if (!walk(m, m, "", with_buffers)) {
        list_clear(m);
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory listing a module's parameters");
        return none;
    }
    return m->list;
}

ga_param_list ga_module_parameters(ga_module *m) { return ggmlc__ga_module_walk(m, false); }

void ga_module_free(ga_module *m) {
    if (!m) return;
    for (int c = 0; c < m->n_children; c++) ga_module_free(m->children[c]);
    for (int k = 0; k < m->n_tensors; k++) ga_release(m->tensors[k]);
    list_clear(m);
    free(m->children);
    free((void *)m->child_names);
    free(m->list.params);
    free((void *)m->list.names);
    free(m->list_is_param);
    free(m);
}
