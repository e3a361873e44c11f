/*
 * model.c - models as graphs of nodes (a sequential model is a chain),
 * shape inference, the forward graph, and compile: weights
 * initialised and placed on the first configured device, a scheduler over
 * the configured backends (CPU last) for everything else.
 */
#include <math.h>
#include <stdlib.h>

#include "ggml-alloc.h"
#include "ggml-cpu.h"
#include "nn-impl.h"

/* ---------------------------------------------------------- optimizer */

enum ggmlc_optim_kind ggmlc__nn_optim_kind(const struct ggmlc_compile_options *o) {
    if (o->optimizer == GGMLC_OPT_ADAMW) return GGMLC_OPTIM_ADAMW;
    return o->momentum > 0 ? GGMLC_OPTIM_SGD_MOMENTUM : GGMLC_OPTIM_SGD;
}

/* -------------------------------------------------------- construction */

static ggmlc_model *model_new(bool sequential) {
    ggmlc_model *m = calloc(1, sizeof *m);
    if (!m) ggmlc_set_error(GGMLC_ERR_NOMEM, "cannot allocate a model");
    if (m) m->sequential = sequential;
    return m;
}

static ggmlc_node *node_new(ggmlc_model *m, enum nn_node_kind kind) {
    if (m->n_nodes >= NN_MAX_NODES) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "a model holds at most %d nodes", NN_MAX_NODES);
        return NULL;
    }
    ggmlc_node *n = calloc(1, sizeof *n);
    if (!n) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    n->kind = kind;
    m->nodes[m->n_nodes++] = n;
    return n;
}

ggmlc_model *ggmlc_functional(void) { return model_new(false); }

/* What is wrong with a shape that ggmlc__nn_shape_elems refuses. */
static const char *shape_problem(const int64_t *shape, int n_dims) {
    static _Thread_local char text[96];
    for (int i = 0; i < n_dims; i++) {
        if (shape[i] <= 0) {
            snprintf(text, sizeof text, "dimension %d is %lld", i, (long long)shape[i]);
            return text;
        }
    }
    return "the shape holds more than 2^40 elements";
}

ggmlc_node *ggmlc_input(ggmlc_model *m, const int64_t *shape, int n_dims) {
    if (!m || !shape || n_dims < 1 || n_dims > NN_MAX_DIMS) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_input: a shape of 1 to %d dimensions is required", NN_MAX_DIMS);
        return NULL;
    }
    if (ggmlc__nn_shape_elems(shape, n_dims) < 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_input: %s", shape_problem(shape, n_dims));
        return NULL;
    }
    if (m->sequential ? m->n_inputs > 0 : m->n_inputs >= GGMLC_MAX_IO || m->compiled) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "ggmlc_input: %s (at most %d inputs)",
                        m->compiled ? "the model is already compiled" : m->sequential ? "a sequential model has one input" : "too many inputs",
                        m->sequential ? 1 : GGMLC_MAX_IO);
        return NULL;
    }
    ggmlc_node *n = node_new(m, NODE_INPUT);
    if (!n) return NULL;
    for (int i = 0; i < n_dims; i++) n->shape[i] = shape[i];
    n->n_dims = n_dims;
    m->inputs[m->n_inputs++] = n;
    return n;
}

/* Whether n is a node of m (nodes of another model cannot be linked in). */
static bool node_of(const ggmlc_model *m, const ggmlc_node *n, const char *func) {
    for (int i = 0; i < m->n_nodes; i++) {
        if (m->nodes[i] == n) return true;
    }
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: a node of another model", func);
    return false;
}

/* Register a layer with the model once (a shared layer appears once). */
static bool own_layer(ggmlc_model *m, ggmlc_layer *l) {
    for (int i = 0; i < m->n_layers; i++) {
        if (m->layers[i] == l) return true;
    }
    if (l->owned) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "layer '%s' belongs to another model", l->name);
        return false;
    }
    l->owned = true;
    m->layers[m->n_layers++] = l;
    if (l->default_name) { /* default names get a number */
        char base[sizeof l->name];
        snprintf(base, sizeof base, "%s", l->name);
        snprintf(l->name, sizeof l->name, "%.48s_%d", base, m->n_layers);
    }
    return true;
}

/* Settings in range, so that no layer's shape arithmetic overflows (the constructors
 * check more; a model file may hold anything). */
static enum ggmlc_status settings_check(const ggmlc_layer *l) {
    const struct layer_cfg *c = &l->cfg;
    const bool sizes_ok = c->units >= 0 && c->units <= NN_MAX_ELEMS && c->vocab >= 0 && c->vocab <= NN_MAX_ELEMS;
    bool window_ok = c->padding >= -1 && c->padding <= NN_MAX_WINDOW;
    const int window[] = {c->kernel[0], c->kernel[1], c->stride, c->dilation};
    for (size_t i = 0; i < sizeof window / sizeof *window; i++) window_ok &= window[i] >= 0 && window[i] <= NN_MAX_WINDOW;
    if (sizes_ok && window_ok) return GGMLC_OK;
    return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "layer '%s': %s out of range", l->name,
                           sizes_ok ? "kernel, stride, padding or dilation (at most 32768)" : "units or vocabulary size (at most 2^40)");
}

/* Set up a layer for an input shape (and a second one, in2_dims 0 for none), or check that a
 * shared layer gets the same ones. */
static enum ggmlc_status setup_layer(ggmlc_layer *l, const int64_t *in, int in_dims,
                                     const int64_t *in2, int in2_dims) {
    if (l->set_up) {
        if (in_dims != l->in_dims ||
            memcmp(in, l->in_shape, sizeof(int64_t) * (size_t)in_dims) != 0 ||
            in2_dims != l->in2_dims ||
            (in2_dims > 0 && memcmp(in2, l->in2_shape, sizeof(int64_t) * (size_t)in2_dims) != 0))
            return ggmlc_set_error(GGMLC_ERR_SHAPE, "layer '%s' is shared between inputs of different shapes", l->name);
        return GGMLC_OK;
    }
    if (in2_dims > 0 && !l->ops->setup2)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ggmlc_apply2: layer '%s' (%s) takes one input", l->name,
                               l->ops->kind);
    int64_t out[NN_MAX_DIMS] = {0};
    int out_dims = 0;
    l->n_params = 0;
    enum ggmlc_status st = settings_check(l);
    if (st == GGMLC_OK)
        st = l->ops->setup2
                 ? l->ops->setup2(l, in, in_dims, in2_dims ? in2 : NULL, in2_dims, out, &out_dims)
                 : l->ops->setup(l, in, in_dims, out, &out_dims);
    if (st != GGMLC_OK) return st;
    if (ggmlc__nn_shape_elems(out, out_dims) < 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "layer '%s': output %s", l->name, shape_problem(out, out_dims));
    memcpy(l->in_shape, in, sizeof(int64_t) * (size_t)in_dims);
    memcpy(l->out_shape, out, sizeof(int64_t) * (size_t)out_dims);
    if (in2_dims) memcpy(l->in2_shape, in2, sizeof(int64_t) * (size_t)in2_dims);
    l->in_dims = in_dims;
    l->out_dims = out_dims;
    l->in2_dims = in2_dims;
    l->set_up = true;
    return GGMLC_OK;
}

/* A layer node on x and, when not NULL, x2 (for func's messages). */
static ggmlc_node *apply_layer(ggmlc_model *m, ggmlc_layer *l, ggmlc_node *x, ggmlc_node *x2,
                               const char *func) {
    if (!m || !l || !x) {
        if (l && !l->owned) ggmlc_layer_free(l);
        return NULL;
    }
    if (m->compiled || !node_of(m, x, func) || (x2 && !node_of(m, x2, func))) {
        if (m->compiled)
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: the model is already compiled", func);
        if (!l->owned) ggmlc_layer_free(l); /* taken over, as on the other failures */
        return NULL;
    }
    if (!own_layer(m, l) ||
        setup_layer(l, x->shape, x->n_dims, x2 ? x2->shape : NULL, x2 ? x2->n_dims : 0) != GGMLC_OK)
        return NULL;
    ggmlc_node *n = node_new(m, NODE_LAYER);
    if (!n) return NULL;
    n->layer = l;
    n->in[0] = x;
    n->in[1] = x2;
    memcpy(n->shape, l->out_shape, sizeof n->shape);
    n->n_dims = l->out_dims;
    return n;
}

ggmlc_node *ggmlc_apply(ggmlc_model *m, ggmlc_layer *l, ggmlc_node *x) {
    return apply_layer(m, l, x, NULL, "ggmlc_apply");
}

ggmlc_node *ggmlc_apply2(ggmlc_model *m, ggmlc_layer *l, ggmlc_node *x, ggmlc_node *x2) {
    if (!x2) {
        if (l && !l->owned) ggmlc_layer_free(l);
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_apply2: the second input is NULL");
        return NULL;
    }
    return apply_layer(m, l, x, x2, "ggmlc_apply2");
}

ggmlc_node *ggmlc_add(ggmlc_model *m, ggmlc_node *a, ggmlc_node *b) {
    if (!m || !a || !b || !node_of(m, a, "ggmlc_add") || !node_of(m, b, "ggmlc_add")) return NULL;
    if (a->n_dims != b->n_dims || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->n_dims) != 0) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggmlc_add: the two branches have different shapes");
        return NULL;
    }
    ggmlc_node *n = node_new(m, NODE_ADD);
    if (!n) return NULL;
    n->in[0] = a;
    n->in[1] = b;
    memcpy(n->shape, a->shape, sizeof n->shape);
    n->n_dims = a->n_dims;
    return n;
}

ggmlc_node *ggmlc_concatenate(ggmlc_model *m, ggmlc_node *a, ggmlc_node *b, int axis) {
    if (!m || !a || !b || !node_of(m, a, "ggmlc_concatenate") || !node_of(m, b, "ggmlc_concatenate")) return NULL;
    bool ok = a->n_dims == b->n_dims && axis >= 0 && axis < a->n_dims;
    for (int i = 0; ok && i < a->n_dims; i++) ok = i == axis || a->shape[i] == b->shape[i];
    if (!ok) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggmlc_concatenate: shapes differ outside axis %d", axis);
        return NULL;
    }
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[axis] += b->shape[axis]; /* no overflow: each input holds at most NN_MAX_ELEMS */
    if (ggmlc__nn_shape_elems(shape, a->n_dims) < 0) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggmlc_concatenate: %s", shape_problem(shape, a->n_dims));
        return NULL;
    }
    ggmlc_node *n = node_new(m, NODE_CONCAT);
    if (!n) return NULL;
    n->in[0] = a;
    n->in[1] = b;
    n->axis = axis;
    memcpy(n->shape, shape, sizeof n->shape);
    n->n_dims = a->n_dims;
    return n;
}

/* Every input must feed an output: an input outside the graph would have no tensor to upload to. */
static enum ggmlc_status check_connected(ggmlc_model *m, ggmlc_node **outputs, int n_outputs) {
    bool used[NN_MAX_NODES] = {false};
    for (int k = 0; k < n_outputs; k++) {
        for (int i = 0; i < m->n_nodes; i++) used[i] |= m->nodes[i] == outputs[k];
    }
    for (int i = m->n_nodes - 1; i >= 0; i--) { /* nodes only link to earlier nodes */
        for (int j = 0; used[i] && j < i; j++) used[j] |= m->nodes[j] == m->nodes[i]->in[0] || m->nodes[j] == m->nodes[i]->in[1];
    }
    for (int i = 0, input = 0; i < m->n_nodes; i++) {
        if (m->nodes[i]->kind != NODE_INPUT) continue;
        input++;
        if (!used[i])
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_outputs: input %d leads to none of the outputs", input);
    }
    return GGMLC_OK;
}

enum ggmlc_status ggmlc_model_set_outputs(ggmlc_model *m, ggmlc_node **outputs, int n_outputs) {
    if (!m || !outputs || n_outputs < 1 || n_outputs > GGMLC_MAX_IO)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_outputs: 1 to %d outputs are required, got %d", GGMLC_MAX_IO,
                               n_outputs);
    if (m->sequential || m->compiled)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_outputs: only for functional models, before compile");
    for (int k = 0; k < n_outputs; k++) {
        if (!outputs[k]) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_outputs: output %d is NULL (%s)", k, ggmlc_last_error());
        if (!node_of(m, outputs[k], "ggmlc_model_set_outputs")) return GGMLC_ERR_INVALID_ARG;
        if (outputs[k]->kind == NODE_INPUT)
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_outputs: output %d is an input", k);
        for (int j = 0; j < k; j++) {
            if (outputs[j] == outputs[k]) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_outputs: outputs %d and %d are the same node", j, k);
        }
    }
    enum ggmlc_status st = check_connected(m, outputs, n_outputs);
    if (st != GGMLC_OK) return st;
    memcpy(m->outputs, outputs, sizeof(ggmlc_node *) * (size_t)n_outputs);
    m->n_outputs = n_outputs;
    m->finished = true;
    return GGMLC_OK;
}

ggmlc_model *ggmlc_sequential(const int64_t *input_shape, int n_dims) {
    ggmlc_model *m = model_new(true);
    if (m && !ggmlc_input(m, input_shape, n_dims)) {
        ggmlc_model_free(m);
        return NULL;
    }
    if (m) {
        m->outputs[0] = m->inputs[0];
        m->n_outputs = 1;
        m->finished = true;
    }
    return m;
}

/* Remember the first refused add of a model not yet compiled (a refused add after compile leaves
 * the compiled model as it was); the first refusal is the one to report: later ones may follow from it. */
static enum ggmlc_status add_refused(ggmlc_model *m, enum ggmlc_status st) {
    if (m && !m->compiled && m->broken == GGMLC_OK) {
        m->broken = st;
        snprintf(m->broken_why, sizeof m->broken_why, "%s", ggmlc_last_error());
    }
    return st;
}

enum ggmlc_status ggmlc_model_add(ggmlc_model *m, ggmlc_layer *l) {
    if (!m || !l) {
        if (l && !l->owned) ggmlc_layer_free(l);
        return add_refused(m, ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_add: NULL model or layer (%s)", ggmlc_last_error()));
    }
    if (!m->sequential) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_add: use ggmlc_apply with functional models");
    ggmlc_node *n = ggmlc_apply(m, l, m->outputs[0]);
    if (!n) return add_refused(m, ggmlc_last_status() != GGMLC_OK ? ggmlc_last_status() : GGMLC_ERR_INVALID_ARG);
    m->outputs[0] = n;
    return GGMLC_OK;
}

enum ggmlc_status ggmlc__nn_model_usable(const ggmlc_model *m, const char *func) {
    if (m->broken == GGMLC_OK) return GGMLC_OK;
    return ggmlc_set_error(m->broken, "%s: a layer was refused when it was added, so the model lacks it (%s)", func, m->broken_why);
}

void ggmlc_model_free(ggmlc_model *m) {
    if (!m) return;
    ggmlc__nn_graphs_free(m);
    ggmlc__alloc_record_free(&m->placed);
    ggml_backend_sched_free(m->sched);
    ggml_backend_buffer_free(m->buf_params);
    ggml_free(m->ctx_params);
    ggmlc__nn_device_stats_free(m);
    ggmlc__nn_device_data_free(m);
    ggmlc__nn_groups_free(m);
    for (int i = 0; i < m->n_backends; i++) ggml_backend_free(m->backends[i]);
    for (int i = 0; i < m->n_nodes; i++) free(m->nodes[i]);
    for (int i = 0; i < m->n_layers; i++) free(m->layers[i]);
    free(m);
}

enum ggmlc_status ggmlc__nn_model_finish(ggmlc_model *m) {
    if (!m->finished || m->n_inputs < 1 || m->n_outputs < 1)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "the model has no input or output yet (ggmlc_model_set_outputs)");
    if (m->n_layers == 0) /* a sequential model's output is then its input: nothing to train */
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "the model has no layers (ggmlc_model_add)");
    return GGMLC_OK;
}

/* ---------------------------------------------------------- the graph */

static int output_index(const ggmlc_model *m, const ggmlc_node *n) {
    for (int k = 0; k < m->n_outputs; k++) {
        if (m->outputs[k] == n) return k;
    }
    return -1;
}

/* The layer's graph on its node's input(s). */
static struct ggml_tensor *layer_graph(ggmlc_layer *l, struct nn_build *b, const ggmlc_node *n) {
    if (l->ops->forward2) return l->ops->forward2(l, b, n->in[0]->t, n->in[1] ? n->in[1]->t : NULL);
    return l->ops->forward(l, b, n->in[0]->t);
}

/* A layer node; an output's final softmax/sigmoid is applied after keeping its logits for the loss. */
static struct ggml_tensor *forward_layer(ggmlc_model *m, struct nn_build *b, ggmlc_node *n, struct ggml_tensor **logits) {
    ggmlc_layer *l = n->layer;
    const int k = logits ? output_index(m, n) : -1;
    if (k < 0 || (l->act != GGMLC_ACT_SOFTMAX && l->act != GGMLC_ACT_SIGMOID))
        return layer_graph(l, b, n);
    const enum ggmlc_activation act = l->act;
    l->act = GGMLC_ACT_NONE;
    logits[k] = layer_graph(l, b, n);
    l->act = act;
    return logits[k] ? ggmlc__nn_activate(b->ctx, logits[k], act, l->cfg.slope) : NULL;
}

bool ggmlc__nn_model_forward(ggmlc_model *m, struct nn_build *b, struct ggml_tensor **x, struct ggml_tensor **out, struct ggml_tensor **logits) {
    for (int k = 0; logits && k < m->n_outputs; k++) logits[k] = NULL;
    for (int i = 0, input = 0; i < m->n_nodes; i++) {
        ggmlc_node *n = m->nodes[i];
        switch (n->kind) {
        case NODE_INPUT: n->t = x[input++]; break;
        case NODE_ADD: n->t = ggml_add(b->ctx, n->in[0]->t, n->in[1]->t); break;
        case NODE_CONCAT: n->t = ggml_concat(b->ctx, n->in[0]->t, n->in[1]->t, n->n_dims - 1 - n->axis); break;
        case NODE_LAYER: n->t = forward_layer(m, b, n, logits); break;
        }
        if (!n->t) return false;
    }
    for (int k = 0; k < m->n_outputs; k++) {
        out[k] = m->outputs[k]->t;
        if (logits && !logits[k]) logits[k] = out[k];
    }
    return true;
}

void ggmlc__nn_output_name(const ggmlc_model *m, int k, char *buf, size_t size) {
    const ggmlc_node *n = m->outputs[k];
    if (n->kind == NODE_LAYER) snprintf(buf, size, "%s", n->layer->name);
    else snprintf(buf, size, "output_%d", k + 1);
}

int64_t ggmlc__nn_input_vocab(const ggmlc_model *m, int i) {
    int64_t vocab = 0;
    for (int j = 0; j < m->n_nodes; j++) {
        const ggmlc_node *n = m->nodes[j];
        if (n->kind != NODE_LAYER || n->in[0] != m->inputs[i] || n->layer->ops != &ggmlc__nn_embedding_ops) continue;
        if (vocab == 0 || n->layer->cfg.vocab < vocab) vocab = n->layer->cfg.vocab;
    }
    return vocab;
}

bool ggmlc__nn_input_is_index(const ggmlc_model *m, int i) {
    return ggmlc__nn_input_vocab(m, i) > 0;
}

int64_t ggmlc__nn_input_elems(const ggmlc_model *m, int i) { return ggmlc__nn_shape_elems(m->inputs[i]->shape, m->inputs[i]->n_dims); }
int64_t ggmlc__nn_output_elems(const ggmlc_model *m, int k) { return ggmlc__nn_shape_elems(m->outputs[k]->shape, m->outputs[k]->n_dims); }
int64_t ggmlc__nn_output_classes(const ggmlc_model *m, int k) {
    const enum ggmlc_loss loss = m->heads[k].loss;
    if (loss != GGMLC_LOSS_CATEGORICAL_CROSSENTROPY && loss != GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY)
        return ggmlc__nn_output_elems(m, k);
    return m->outputs[k]->shape[m->outputs[k]->n_dims - 1];
}
int64_t ggmlc__nn_target_elems(const ggmlc_model *m, int k) {
    const int64_t elems = ggmlc__nn_output_elems(m, k);
    const bool sparse = m->heads[k].loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    return sparse ? elems / ggmlc__nn_output_classes(m, k) : elems;
}

/* -------------------------------------------------------------- compile */

struct ggmlc_compile_options ggmlc_compile_defaults(void) {
    return (struct ggmlc_compile_options){
        .optimizer = GGMLC_OPT_ADAMW, .learning_rate = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
        .weight_decay = 0.0f, .momentum = 0.0f, .loss = GGMLC_LOSS_MSE, .metrics = 0, .seed = 42, .backend = NULL,
    };
}

/* Initial values of a parameter (Glorot/He from its fans). */
static void init_values(ggmlc_model *m, const struct nn_param *p, float *v, int64_t n) {
    const double fi = (double)p->fan_in, fo = (double)p->fan_out;
    double limit = 0, std = 0;
    switch (p->init) {
    case GGMLC_INIT_ZEROS: for (int64_t i = 0; i < n; i++) v[i] = 0; return;
    case GGMLC_INIT_ONES: for (int64_t i = 0; i < n; i++) v[i] = 1; return;
    case GGMLC_INIT_GLOROT_UNIFORM: limit = sqrt(6.0 / (fi + fo)); break;
    case GGMLC_INIT_HE_UNIFORM: limit = sqrt(6.0 / fi); break;
    case GGMLC_INIT_GLOROT_NORMAL: std = sqrt(2.0 / (fi + fo)); break;
    case GGMLC_INIT_HE_NORMAL: std = sqrt(2.0 / fi); break;
    }
    for (int64_t i = 0; i < n; i++) {
        /* the normal value rounded to float before scaling: the same weights per seed */
        v[i] = limit > 0 ? (float)(limit * (2.0 * ggmlc__rng_uniform(&m->rng) - 1.0))
                         : (float)(std * (float)ggmlc__rng_normal(&m->rng));
    }
}

/* The backends: the named one or every default-choice device in preference order, then the CPU. */
static enum ggmlc_status open_backends(ggmlc_model *m, const char *name) {
    if (name) {
        ggml_backend_t be = ggml_backend_init_by_name(name, NULL);
        if (!be) return ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggmlc_model_compile: no backend or device named '%s'", name);
        m->backends[m->n_backends++] = be;
    } else {
        for (size_t i = 0; i < ggml_backend_dev_count() && m->n_backends < 7; i++) {
            ggml_backend_dev_t dev = ggml_backend_dev_get(i);
            if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) continue;
            if (!ggmlc_device_is_default_choice(dev, NULL))
                continue; /* as ggml_backend_init_best */
            ggml_backend_t be = ggml_backend_dev_init(dev, NULL);
            if (be) m->backends[m->n_backends++] = be;
        }
    }
    if (m->n_backends == 0 || !ggml_backend_is_cpu(m->backends[m->n_backends - 1])) {
        ggml_backend_t cpu = ggml_backend_cpu_init();
        if (!cpu) return ggmlc_set_error(GGMLC_ERR_PLUGIN, "ggmlc_model_compile: no CPU backend (see ggmlc-info)");
        m->backends[m->n_backends++] = cpu;
    }
    m->sched = ggml_backend_sched_new(m->backends, NULL, m->n_backends, 64 * GGML_DEFAULT_GRAPH_SIZE, false, true);
    return m->sched ? GGMLC_OK : ggmlc_set_error(GGMLC_ERR_BACKEND, "ggmlc_model_compile: cannot create the scheduler");
}

/* Parameter tensors (and optimizer state) in one buffer of the first backend, initialised. */
static enum ggmlc_status place_params(ggmlc_model *m) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) n += m->layers[i]->n_params;
    m->ctx_params = ggml_init((struct ggml_init_params){(3 * (size_t)n + 2) * ggml_tensor_overhead(), NULL, true});
    if (!m->ctx_params) return GGMLC_ERR_NOMEM;
    const enum ggmlc_optim_kind kind = ggmlc__nn_optim_kind(&m->opt);
    for (int i = 0; i < m->n_layers; i++) {
        ggmlc_layer *l = m->layers[i];
        for (int j = 0; j < l->n_params; j++) {
            struct nn_param *p = &l->params[j];
            if (ggmlc__nn_shape_elems(p->ne, 4) < 0) /* shapes come from layer settings, which a model file may forge */
                return ggmlc_set_error(GGMLC_ERR_SHAPE, "ggmlc_model_compile: parameter %s of layer '%s' has an impossible shape",
                                       p->name, l->name);
            p->t = ggml_new_tensor(m->ctx_params, GGML_TYPE_F32, 4, p->ne);
            if (!p->t) { /* a shape no tensor can have (a damaged model file): the constructor said why */
                char why[256];
                snprintf(why, sizeof why, "%s", ggmlc_last_error());
                return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_compile: layer %s: parameter %s: %s", l->name, p->name, why);
            }
            ggmlc__nn_param_name(l, p, p->t->name, sizeof p->t->name);
            const bool trains = l->trainable && p->trainable;
            if (trains && !ggmlc__optim_new_state(m->ctx_params, kind, p->t, &p->m, &p->v)) {
                return ggmlc_set_error(GGMLC_ERR_NOMEM,
                                       "ggmlc_model_compile: no room for the optimizer state");
            }
            if (trains) ggml_set_param(p->t);
        }
    }
    m->opt_pars = ggml_new_tensor_1d(m->ctx_params, GGML_TYPE_F32, ggmlc__optim_n_pars(kind));
    if (!ggmlc__nn_params_alloc(m)) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_compile: cannot allocate the weights");
    ggml_backend_buffer_set_usage(m->buf_params, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_clear(m->buf_params, 0);
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            const struct nn_param *p = &m->layers[i]->params[j];
            const int64_t count = ggml_nelements(p->t);
            float *v = malloc(sizeof(float) * (size_t)count);
            if (!v) return GGMLC_ERR_NOMEM;
            init_values(m, p, v, count);
            ggml_backend_tensor_set(p->t, v, 0, sizeof(float) * (size_t)count);
            free(v);
        }
    }
    return GGMLC_OK;
}

/* Each output's loss, loss weight and metrics from the options; the option arrays are not kept. */
static enum ggmlc_status set_heads(ggmlc_model *m) {
    struct ggmlc_compile_options *o = &m->opt;
    for (int k = 0; k < m->n_outputs; k++) {
        struct nn_head *h = &m->heads[k];
        *h = (struct nn_head){o->losses ? o->losses[k] : o->loss, o->loss_weights ? o->loss_weights[k] : 1.0f,
                              o->output_metrics ? o->output_metrics[k] : o->metrics};
        if ((unsigned)h->loss > GGMLC_LOSS_BINARY_CROSSENTROPY || !(h->weight >= 0 && h->weight < INFINITY) ||
            (h->metrics & ~(unsigned)(GGMLC_METRIC_ACCURACY | GGMLC_METRIC_MAE)))
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_compile: output %d: invalid loss %d, loss weight %g or metrics %#x", k,
                                   (int)h->loss, (double)h->weight, h->metrics);
    }
    /* the single-output fields describe output 0, as a model file stores them */
    o->loss = m->heads[0].loss;
    o->metrics = m->heads[0].metrics;
    o->losses = NULL;
    o->loss_weights = NULL;
    o->output_metrics = NULL;
    return GGMLC_OK;
}

bool ggmlc__nn_compile_settings_valid(const struct ggmlc_compile_options *o, char *why,
                                      size_t size) {
    return ggmlc__nn_setting_ok(o->optimizer == GGMLC_OPT_ADAMW || o->optimizer == GGMLC_OPT_SGD, "optimizer", o->optimizer, "a known one", why, size) &&
           ggmlc__nn_setting_ok((unsigned)o->loss <= GGMLC_LOSS_BINARY_CROSSENTROPY, "loss", o->loss, "a known one", why, size) &&
           ggmlc__nn_setting_ok(o->learning_rate > 0 && o->learning_rate < INFINITY, "learning rate", o->learning_rate, "a finite number > 0", why, size) &&
           ggmlc__nn_setting_ok(ggmlc__nn_in_unit_interval(o->beta1), "beta1", o->beta1, "in [0, 1)", why, size) &&
           ggmlc__nn_setting_ok(ggmlc__nn_in_unit_interval(o->beta2), "beta2", o->beta2, "in [0, 1)", why, size) &&
           ggmlc__nn_setting_ok(o->eps > 0 && o->eps < INFINITY, "eps", o->eps, "a finite number > 0", why, size) &&
           ggmlc__nn_setting_ok(o->weight_decay >= 0 && o->weight_decay < INFINITY, "weight decay", o->weight_decay, "a finite number >= 0", why, size) &&
           ggmlc__nn_setting_ok(ggmlc__nn_in_unit_interval(o->momentum), "momentum", o->momentum, "in [0, 1)", why, size) &&
           ggmlc__nn_setting_ok(o->clip_norm >= 0 && o->clip_norm < INFINITY, "clip_norm", o->clip_norm, "a finite number >= 0", why, size) &&
           ggmlc__nn_setting_ok(o->clip_value >= 0 && o->clip_value < INFINITY, "clip_value", o->clip_value, "a finite number >= 0", why, size);
}

enum ggmlc_status ggmlc_model_compile(ggmlc_model *m, const struct ggmlc_compile_options *options) {
    if (!m) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_compile: NULL model");
    if (m->compiled) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_compile: the model is already compiled");
    enum ggmlc_status st = ggmlc__nn_model_usable(m, "ggmlc_model_compile");
    if (st == GGMLC_OK) st = ggmlc__nn_model_finish(m);
    if (st != GGMLC_OK) return st;
    m->opt = options ? *options : ggmlc_compile_defaults();
    char why[128];
    if (!ggmlc__nn_compile_settings_valid(&m->opt, why, sizeof why)) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_compile: %s", why);
    if ((st = set_heads(m)) != GGMLC_OK) return st;
    ggmlc__rng_seed(&m->rng, m->opt.seed);
    m->lr = m->opt.learning_rate;
    if ((st = open_backends(m, m->opt.backend)) != GGMLC_OK || (st = place_params(m)) != GGMLC_OK) return st;
    m->compiled = true;
    return GGMLC_OK;
}

double ggmlc_model_get_learning_rate(ggmlc_model *m) { return m ? m->lr : 0; }
void ggmlc_model_set_learning_rate(ggmlc_model *m, double lr) {
    if (m && lr > 0) m->lr = lr;
}
