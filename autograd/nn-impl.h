/*
 * nn-impl.h - the inside of the eager engine's modules, optimizers and schedulers
 * (ggmlc-autograd-nn.h), shared by the files that implement them.
 */
#ifndef GGMLC_AUTOGRAD_NN_IMPL_H
#define GGMLC_AUTOGRAD_NN_IMPL_H

#include "ggmlc-autograd-nn.h"
#include "hidden.h"

#define GA_MODULE_MAX_TENSORS 4

/* What a kind of module does; forward gets x and returns a new reference. */
struct ga_module_ops {
    const char *kind; /* "Linear", as PyTorch prints it */
    ga_tensor *(*forward)(ga_module *m, const ga_tensor *x);
};

struct ga_module {
    const struct ga_module_ops *ops;
    bool training;
    /* own parameters (is_param) and buffers (running statistics), owned */
    ga_tensor *tensors[GA_MODULE_MAX_TENSORS];
    const char *tensor_names[GA_MODULE_MAX_TENSORS];
    bool is_param[GA_MODULE_MAX_TENSORS];
    int n_tensors;
    ga_module **children;     /* owned, in registration order */
    const char **child_names; /* static names ("self_attn"), or NULL for the index */
    int n_children, cap_children;
    float f[4]; /* configuration: eps, p, momentum, ... */
    int i[4];   /* configuration: stride, padding, ... */
    /* the last list made by ga_module_parameters or the state walk (names owned) */
    ga_param_list list;
    bool *list_is_param;
    int cap_list;
};

/* Every tensor of m and its children, parameters only or buffers too, named as PyTorch's
 * state_dict names them ("0.weight"); the list lives in m until the next call or ga_module_free.
 * n = -1 when memory is short (with an error set). */
GGMLC_HIDDEN ga_param_list ggmlc__ga_module_walk(ga_module *m, bool with_buffers);

/* Register child under name (a static string; NULL: its index, as in Sequential); the module
 * owns it from now on (it is freed if registering fails).  A NULL child is an error (the failed
 * constructor's). */
GGMLC_HIDDEN enum ggmlc_status ggmlc__ga_module_add_child(ga_module *m, const char *name,
                                                          ga_module *child);
/* A module of the given kind without tensors or children (NULL with an error). */
GGMLC_HIDDEN ga_module *ggmlc__ga_module_new(const struct ga_module_ops *ops);
/* Attach t as a parameter (requires grad) or a buffer; false (t NULL) when creation failed. */
GGMLC_HIDDEN bool ggmlc__ga_module_add_tensor(ga_module *m, const char *name, ga_tensor *t,
                                              bool is_param);
/* A tensor of uniform numbers in [-bound, bound) from the ga_manual_seed generator, owned by no
 * scope (for parameters). */
GGMLC_HIDDEN ga_tensor *ggmlc__ga_uniform_param(ga_device *dev, int ndim, const int64_t *shape,
                                                double bound);

struct ga_param_state {
    ga_tensor *a, *b; /* moments (Adam), momentum buffer (SGD); NULL until the first step */
    int64_t step;
};

enum ga_optim_kind { GA_OPTIM_SGD, GA_OPTIM_ADAM, GA_OPTIM_ADAMW };

struct ga_optimizer {
    enum ga_optim_kind kind;
    ga_tensor **params; /* retained */
    struct ga_param_state *state;
    int n;
    float lr, momentum, dampening, beta1, beta2, eps, weight_decay;
    bool nesterov;
};

#endif /* GGMLC_AUTOGRAD_NN_IMPL_H */
