/*
 * save.c - model files: GGUF with the architecture and compile options as
 * metadata ("ggmlc.*" keys) and the weights (optionally the optimizer
 * state) as F32 tensors named "<layer>.<param>".  gguf_write_to_file writes
 * to a temporary file and renames it, so a crash never leaves half a model.
 */
#include <math.h>
#include <stdlib.h>

#include "gguf.h"
#include "nn-impl.h"

#define MODEL_FORMAT_VERSION 2 /* 2: several inputs (a shape per input node) and outputs, a loss per output */

/* ------------------------------------------------------------ weights */

/* Number of floats of every parameter, 0 for a model not compiled. */
static int64_t weight_count(const ggmlc_model *m) {
    int64_t n = 0;
    for (int i = 0; m && m->compiled && i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) n += ggmlc__nn_shape_elems(m->layers[i]->params[j].ne, 4);
    }
    return n;
}

/* Every parameter copied out of the model into dst (to_host) or into it from src. */
static void copy_weights(ggmlc_model *m, float *dst, const float *src) {
    int64_t n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            const struct nn_param *p = &m->layers[i]->params[j];
            const size_t bytes = sizeof(float) * (size_t)ggmlc__nn_shape_elems(p->ne, 4);
            if (dst) ggml_backend_tensor_get(p->t, dst + n, 0, bytes);
            else ggml_backend_tensor_set(p->t, src + n, 0, bytes);
            n += ggmlc__nn_shape_elems(p->ne, 4);
        }
    }
}

int64_t ggmlc_model_get_weights(ggmlc_model *m, float *dst, size_t dst_len) {
    const int64_t n = weight_count(m);
    if (!dst || n == 0) return n;
    if ((uint64_t)dst_len < (uint64_t)n) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggmlc_model_get_weights: the model has %lld weights, the array holds %zu floats", (long long)n, dst_len);
        return -1;
    }
    copy_weights(m, dst, NULL);
    return n;
}

enum ggmlc_status ggmlc_model_set_weights(ggmlc_model *m, const float *src, size_t src_len) {
    if (!m || !m->compiled || !src) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_set_weights: compile the model first");
    const int64_t n = weight_count(m);
    if ((uint64_t)src_len != (uint64_t)n)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ggmlc_model_set_weights: the model has %lld weights, the array holds %zu floats", (long long)n,
                               src_len);
    copy_weights(m, NULL, src);
    return GGMLC_OK;
}

/* --------------------------------------------------------------- save */

static void key(char *buf, size_t size, const char *fmt, int i, const char *field) { snprintf(buf, size, fmt, i, field); }

static void save_layer(struct gguf_context *g, int i, const ggmlc_layer *l) {
    char k[96];
    const struct layer_cfg *c = &l->cfg;
#define LKEY(f) (key(k, sizeof k, "ggmlc.layer.%d.%s", i, f), k)
    gguf_set_val_str(g, LKEY("kind"), l->ops->kind);
    gguf_set_val_str(g, LKEY("name"), l->name);
    gguf_set_val_i32(g, LKEY("activation"), (int32_t)l->act);
    gguf_set_val_bool(g, LKEY("trainable"), l->trainable);
    gguf_set_val_i64(g, LKEY("units"), c->units);
    gguf_set_val_i64(g, LKEY("vocab"), c->vocab);
    gguf_set_arr_data(g, LKEY("kernel"), GGUF_TYPE_INT32, c->kernel, 2);
    gguf_set_val_i32(g, LKEY("stride"), c->stride);
    gguf_set_val_i32(g, LKEY("padding"), c->padding);
    gguf_set_val_i32(g, LKEY("dilation"), c->dilation);
    gguf_set_val_f32(g, LKEY("rate"), c->rate);
    gguf_set_val_f32(g, LKEY("eps"), c->eps);
    gguf_set_val_f32(g, LKEY("momentum"), c->momentum);
    gguf_set_val_f32(g, LKEY("slope"), c->slope);
    gguf_set_val_bool(g, LKEY("return_sequences"), c->return_sequences);
    gguf_set_arr_data(g, LKEY("shape"), GGUF_TYPE_INT64, c->shape, (size_t)(c->n_dims > 0 ? c->n_dims : 0));
    gguf_set_val_i32(g, LKEY("pool"), (int32_t)c->pool);
    const int64_t attn[5] = {c->heads, c->kv_heads, c->ff, c->attn_flags, c->groups};
    gguf_set_arr_data(g, LKEY("attn"), GGUF_TYPE_INT64, attn, 5);
    gguf_set_arr_data(g, LKEY("attn_f"), GGUF_TYPE_FLOAT32, (float[]){c->max_bias, c->rope_base},
                      2);
#undef LKEY
}

static int layer_index(const ggmlc_model *m, const ggmlc_layer *l) {
    for (int i = 0; i < m->n_layers; i++) {
        if (m->layers[i] == l) return i;
    }
    return -1;
}

static int node_index(const ggmlc_model *m, const ggmlc_node *n) {
    for (int i = 0; i < m->n_nodes; i++) {
        if (m->nodes[i] == n) return i;
    }
    return -1;
}

static void save_architecture(struct gguf_context *g, const ggmlc_model *m) {
    char k[96];
    gguf_set_val_str(g, "general.architecture", "ggmlc-nn");
    gguf_set_val_u32(g, "ggmlc.format_version", MODEL_FORMAT_VERSION);
    gguf_set_val_bool(g, "ggmlc.model.sequential", m->sequential);
    gguf_set_val_i32(g, "ggmlc.model.n_layers", m->n_layers);
    gguf_set_val_i32(g, "ggmlc.model.n_nodes", m->n_nodes);
    int32_t outputs[GGMLC_MAX_IO], losses[GGMLC_MAX_IO], metrics[GGMLC_MAX_IO];
    float weights[GGMLC_MAX_IO];
    for (int k = 0; k < m->n_outputs; k++) {
        outputs[k] = node_index(m, m->outputs[k]);
        losses[k] = (int32_t)m->heads[k].loss;
        weights[k] = m->heads[k].weight;
        metrics[k] = (int32_t)m->heads[k].metrics;
    }
    gguf_set_arr_data(g, "ggmlc.model.outputs", GGUF_TYPE_INT32, outputs, (size_t)m->n_outputs);
    gguf_set_arr_data(g, "ggmlc.model.input_shape", GGUF_TYPE_INT64, m->inputs[0]->shape, (size_t)m->inputs[0]->n_dims);
    for (int i = 0; i < m->n_layers; i++) save_layer(g, i, m->layers[i]);
    for (int i = 0; i < m->n_nodes; i++) {
        const ggmlc_node *n = m->nodes[i];
        const int32_t v[5] = {(int32_t)n->kind, n->layer ? layer_index(m, n->layer) : -1, n->in[0] ? node_index(m, n->in[0]) : -1,
                              n->in[1] ? node_index(m, n->in[1]) : -1, n->axis};
        key(k, sizeof k, "ggmlc.node.%d.%s", i, "links");
        gguf_set_arr_data(g, k, GGUF_TYPE_INT32, v, 5);
        key(k, sizeof k, "ggmlc.node.%d.%s", i, "shape");
        if (n->kind == NODE_INPUT) gguf_set_arr_data(g, k, GGUF_TYPE_INT64, n->shape, (size_t)n->n_dims);
    }
    const struct ggmlc_compile_options *o = &m->opt;
    gguf_set_val_i32(g, "ggmlc.compile.optimizer", (int32_t)o->optimizer);
    gguf_set_val_f32(g, "ggmlc.compile.learning_rate", o->learning_rate);
    gguf_set_arr_data(g, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, (float[]){o->beta1, o->beta2, o->eps}, 3);
    gguf_set_val_f32(g, "ggmlc.compile.weight_decay", o->weight_decay);
    gguf_set_val_f32(g, "ggmlc.compile.momentum", o->momentum);
    gguf_set_val_i32(g, "ggmlc.compile.loss", (int32_t)o->loss);
    gguf_set_val_u32(g, "ggmlc.compile.metrics", o->metrics);
    gguf_set_arr_data(g, "ggmlc.compile.losses", GGUF_TYPE_INT32, losses, (size_t)m->n_outputs);
    gguf_set_arr_data(g, "ggmlc.compile.loss_weights", GGUF_TYPE_FLOAT32, weights, (size_t)m->n_outputs);
    gguf_set_arr_data(g, "ggmlc.compile.output_metrics", GGUF_TYPE_INT32, metrics, (size_t)m->n_outputs);
    gguf_set_val_u64(g, "ggmlc.compile.seed", o->seed);
    gguf_set_arr_data(g, "ggmlc.compile.clip", GGUF_TYPE_FLOAT32, (float[]){o->clip_norm, o->clip_value}, 2);
}

/* A host copy of a device tensor, named name, added to the file. */
static bool add_tensor(struct gguf_context *g, struct ggml_context *host, struct ggml_tensor *t, const char *name) {
    struct ggml_tensor *c = ggml_new_tensor(host, GGML_TYPE_F32, 4, t->ne);
    if (!c) return false;
    ggml_set_name(c, name);
    ggml_backend_tensor_get(t, c->data, 0, ggml_nbytes(t));
    gguf_add_tensor(g, c);
    return true;
}

enum ggmlc_status ggmlc_model_save(ggmlc_model *m, const char *path, bool with_optimizer) {
    if (!m || !m->compiled || !path) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_save: a compiled model and a path are required");
    size_t bytes = 0;
    int n_tensors = 0;
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            bytes +=
                3 * sizeof(float) * (size_t)ggmlc__nn_shape_elems(m->layers[i]->params[j].ne, 4);
            n_tensors += 3;
        }
    }
    struct ggml_context *host = ggml_init((struct ggml_init_params){bytes + (size_t)(n_tensors + 1) * ggml_tensor_overhead(), NULL, false});
    struct gguf_context *g = gguf_init_empty();
    enum ggmlc_status st = host && g ? GGMLC_OK : ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_save: out of memory");
    if (st == GGMLC_OK) {
        save_architecture(g, m);
        if (with_optimizer) gguf_set_val_i64(g, "ggmlc.optimizer.step", m->step);
        char name[GGML_MAX_NAME];
        for (int i = 0; i < m->n_layers && st == GGMLC_OK; i++) {
            for (int j = 0; j < m->layers[i]->n_params && st == GGMLC_OK; j++) {
                const struct nn_param *p = &m->layers[i]->params[j];
                bool ok = add_tensor(g, host, p->t, p->t->name);
                if (with_optimizer && p->m) ok = ok && (snprintf(name, sizeof name, "%.56s.m", p->t->name), add_tensor(g, host, p->m, name));
                if (with_optimizer && p->v) ok = ok && (snprintf(name, sizeof name, "%.56s.v", p->t->name), add_tensor(g, host, p->v, name));
                if (!ok) st = ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_save: out of memory");
            }
        }
    }
    if (st == GGMLC_OK && !gguf_write_to_file(g, path, false))
        st = ggmlc_set_error(GGMLC_ERR_IO, "ggmlc_model_save: cannot write %s (%s)", path, ggmlc_last_error());
    if (g) gguf_free(g);
    ggml_free(host);
    return st;
}

/* --------------------------------------------------------------- load */

struct reader {
    struct gguf_context *g;
    const char *path;
    bool ok;
};

static int64_t find(struct reader *r, const char *k, enum gguf_type type) {
    const int64_t id = gguf_find_key(r->g, k);
    if (id < 0 || gguf_get_kv_type(r->g, id) != type) {
        if (r->ok) ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: missing or mistyped key %s", r->path, k);
        r->ok = false;
        return -1;
    }
    return id;
}

static int32_t get_i32(struct reader *r, const char *k) { const int64_t id = find(r, k, GGUF_TYPE_INT32); return id < 0 ? 0 : gguf_get_val_i32(r->g, id); }
static int64_t get_i64(struct reader *r, const char *k) { const int64_t id = find(r, k, GGUF_TYPE_INT64); return id < 0 ? 0 : gguf_get_val_i64(r->g, id); }
static float get_f32(struct reader *r, const char *k) { const int64_t id = find(r, k, GGUF_TYPE_FLOAT32); return id < 0 ? 0 : gguf_get_val_f32(r->g, id); }
static bool get_bool(struct reader *r, const char *k) { const int64_t id = find(r, k, GGUF_TYPE_BOOL); return id >= 0 && gguf_get_val_bool(r->g, id); }

/* An array of n values of the given type into dst; n may be less than max. */
static size_t get_arr(struct reader *r, const char *k, enum gguf_type type, void *dst, size_t elem, size_t max) {
    const int64_t id = find(r, k, GGUF_TYPE_ARRAY);
    if (id < 0) return 0;
    const size_t n = gguf_get_arr_n(r->g, id);
    if (gguf_get_arr_type(r->g, id) != type || n > max) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: key %s has the wrong type or length", r->path, k);
        r->ok = false;
        return 0;
    }
    if (n) memcpy(dst, gguf_get_arr_data(r->g, id), n * elem);
    return n;
}

static ggmlc_layer *load_layer(struct reader *r, int i) {
    char k[96], kind[64];
#define LKEY(f) (key(k, sizeof k, "ggmlc.layer.%d.%s", i, f), k)
    const int64_t id = find(r, LKEY("kind"), GGUF_TYPE_STRING);
    if (id < 0) return NULL;
    snprintf(kind, sizeof kind, "%s", gguf_get_val_str(r->g, id));
    const struct layer_ops *ops = ggmlc__nn_layer_ops_by_kind(kind);
    if (!ops) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: unknown layer kind '%s'", r->path, kind);
        r->ok = false;
        return NULL;
    }
    ggmlc_layer *l =
        ggmlc__nn_layer_new(ops, (enum ggmlc_activation)get_i32(r, LKEY("activation")));
    if (!l) return NULL;
    struct layer_cfg *c = &l->cfg;
    const int64_t name_id = find(r, LKEY("name"), GGUF_TYPE_STRING);
    if (name_id >= 0) ggmlc_layer_set_name(l, gguf_get_val_str(r->g, name_id));
    l->trainable = get_bool(r, LKEY("trainable"));
    c->units = get_i64(r, LKEY("units"));
    c->vocab = get_i64(r, LKEY("vocab"));
    get_arr(r, LKEY("kernel"), GGUF_TYPE_INT32, c->kernel, sizeof(int32_t), 2);
    c->stride = get_i32(r, LKEY("stride"));
    c->padding = get_i32(r, LKEY("padding"));
    c->dilation = get_i32(r, LKEY("dilation"));
    c->rate = get_f32(r, LKEY("rate"));
    c->eps = get_f32(r, LKEY("eps"));
    c->momentum = get_f32(r, LKEY("momentum"));
    c->slope = get_f32(r, LKEY("slope"));
    c->return_sequences = get_bool(r, LKEY("return_sequences"));
    c->n_dims = (int)get_arr(r, LKEY("shape"), GGUF_TYPE_INT64, c->shape, sizeof(int64_t), NN_MAX_DIMS);
    c->pool = (enum ggml_op_pool)get_i32(r, LKEY("pool"));
    if (gguf_find_key(r->g, LKEY("attn")) >= 0) { /* files from before attention layers have none */
        int64_t attn[5] = {0};
        float attn_f[2] = {0};
        get_arr(r, LKEY("attn"), GGUF_TYPE_INT64, attn, sizeof(int64_t), 5);
        get_arr(r, LKEY("attn_f"), GGUF_TYPE_FLOAT32, attn_f, sizeof(float), 2);
        const bool fits =
            attn[3] >= 0 && attn[3] <= UINT32_MAX && attn[4] >= 0 && attn[4] <= NN_MAX_WINDOW;
        c->heads = attn[0], c->kv_heads = attn[1], c->ff = attn[2];
        c->attn_flags = fits ? (unsigned)attn[3] : UINT32_MAX, c->groups = fits ? (int)attn[4] : -1;
        c->max_bias = attn_f[0], c->rope_base = attn_f[1];
    }
#undef LKEY
    char why[128];
    if (r->ok && !ggmlc__nn_layer_settings_valid(l, why, sizeof why)) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: layer %d ('%s'): %s", r->path, i, l->name, why);
        r->ok = false;
    }
    if (!r->ok) {
        free(l);
        return NULL;
    }
    return l;
}

/* The output node indices (format 1 stored one), each in [0, n_nodes); returns their count, 0 on error. */
static int load_output_list(struct reader *r, int n_nodes, int32_t *outputs) {
    int n = 0;
    if (gguf_find_key(r->g, "ggmlc.model.outputs") >= 0) {
        n = (int)get_arr(r, "ggmlc.model.outputs", GGUF_TYPE_INT32, outputs, sizeof(int32_t), GGMLC_MAX_IO);
    } else {
        outputs[0] = get_i32(r, "ggmlc.model.output");
        n = 1;
    }
    for (int k = 0; r->ok && k < n; k++) {
        if (outputs[k] >= 0 && outputs[k] < n_nodes) continue;
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: output %d is node %d of %d", r->path, k, outputs[k], n_nodes);
        r->ok = false;
    }
    return r->ok ? n : 0;
}

/* Shape of input node i (format 1: the model's one input shape). */
static int load_input_shape(struct reader *r, int i, int64_t *shape) {
    char k[64];
    key(k, sizeof k, "ggmlc.node.%d.%s", i, "shape");
    if (gguf_find_key(r->g, k) < 0) snprintf(k, sizeof k, "ggmlc.model.input_shape");
    return (int)get_arr(r, k, GGUF_TYPE_INT64, shape, sizeof(int64_t), NN_MAX_DIMS);
}

/* Node i from its links {kind, layer, input 0, input 1, axis}, after checking every index. */
static ggmlc_node *load_node(struct reader *r, ggmlc_model *m, int i, ggmlc_node **nodes, ggmlc_layer **layers, int n_layers) {
    char k[64];
    int32_t v[5] = {-1, -1, -1, -1, 0};
    key(k, sizeof k, "ggmlc.node.%d.%s", i, "links");
    get_arr(r, k, GGUF_TYPE_INT32, v, sizeof(int32_t), 5);
    const bool needs_two = v[0] == NODE_ADD || v[0] == NODE_CONCAT;
    const bool links_ok = r->ok && v[2] >= -1 && v[2] < i && v[3] >= -1 && v[3] < i && (v[0] == NODE_INPUT || v[2] >= 0) &&
                          (!needs_two || v[3] >= 0) && (v[0] != NODE_LAYER || (v[1] >= 0 && v[1] < n_layers));
    if (!links_ok) {
        if (r->ok) ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: node %d has invalid links", r->path, i);
        r->ok = false;
        return NULL;
    }
    ggmlc_node *in0 = v[2] >= 0 ? nodes[v[2]] : NULL, *in1 = v[3] >= 0 ? nodes[v[3]] : NULL;
    int64_t shape[NN_MAX_DIMS];
    switch (v[0]) {
    case NODE_INPUT: {
        const int dims = load_input_shape(r, i, shape);
        return r->ok ? ggmlc_input(m, shape, dims) : NULL;
    }
    case NODE_LAYER:
        return in1 ? ggmlc_apply2(m, layers[v[1]], in0, in1) : ggmlc_apply(m, layers[v[1]], in0);
    case NODE_ADD: return ggmlc_add(m, in0, in1);
    case NODE_CONCAT: return ggmlc_concatenate(m, in0, in1, v[4]);
    default:
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: node %d has an unknown kind %d", r->path, i, v[0]);
        return NULL;
    }
}

/* Rebuild the node graph; layers[] are owned by the model once applied.  The model is
 * returned even when r->ok turned false, so that the caller can free what it owns. */
static ggmlc_model *load_graph(struct reader *r, ggmlc_layer **layers, int n_layers) {
    const bool sequential = get_bool(r, "ggmlc.model.sequential");
    const int n_nodes = get_i32(r, "ggmlc.model.n_nodes");
    int32_t out[GGMLC_MAX_IO];
    const int n_out = r->ok && n_nodes >= 1 && n_nodes <= NN_MAX_NODES ? load_output_list(r, n_nodes, out) : 0;
    if (!r->ok || n_out < 1 || (sequential && n_out != 1)) {
        if (r->ok) ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: invalid node graph (%d nodes, %d valid outputs)", r->path, n_nodes, n_out);
        r->ok = false; /* the caller then frees the layers */
        return NULL;
    }
    ggmlc_model *m = ggmlc_functional();
    if (!m) r->ok = false;
    ggmlc_node *nodes[NN_MAX_NODES] = {NULL};
    for (int i = 0; m && r->ok && i < n_nodes; i++) {
        nodes[i] = load_node(r, m, i, nodes, layers, n_layers);
        if (!nodes[i] && r->ok) /* the links were valid, the model refused the node (shapes, counts) */
            ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: node %d: %s", r->path, i, ggmlc_last_error());
        if (!nodes[i]) r->ok = false;
    }
    if (!m || !r->ok) return m; /* the caller frees it when !r->ok, after the layers it does not own */
    ggmlc_node *outputs[GGMLC_MAX_IO];
    for (int k = 0; k < n_out; k++) outputs[k] = nodes[out[k]];
    if (sequential) { /* a chain from its one input; set directly, as ggmlc_model_add keeps it */
        m->sequential = m->finished = true;
        m->outputs[0] = outputs[0];
        m->n_outputs = 1;
        if (m->n_inputs != 1) r->ok = false;
    } else if (ggmlc_model_set_outputs(m, outputs, n_out) != GGMLC_OK) {
        r->ok = false;
    }
    if (!r->ok) ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: invalid model graph (%s)", r->path,
                                sequential ? "a sequential model with several inputs" : ggmlc_last_error());
    return m;
}

/* Per-output compile settings (format 1: one loss and metric set), in arrays that outlive compile. */
struct loaded_heads {
    enum ggmlc_loss losses[GGMLC_MAX_IO];
    float weights[GGMLC_MAX_IO];
    unsigned metrics[GGMLC_MAX_IO];
};

static bool load_heads(struct reader *r, int n_outputs, struct loaded_heads *h, struct ggmlc_compile_options *o) {
    if (gguf_find_key(r->g, "ggmlc.compile.losses") < 0) return r->ok; /* format 1 */
    int32_t losses[GGMLC_MAX_IO], metrics[GGMLC_MAX_IO];
    const size_t nl = get_arr(r, "ggmlc.compile.losses", GGUF_TYPE_INT32, losses, sizeof(int32_t), GGMLC_MAX_IO);
    const size_t nw = get_arr(r, "ggmlc.compile.loss_weights", GGUF_TYPE_FLOAT32, h->weights, sizeof(float), GGMLC_MAX_IO);
    const size_t nm = get_arr(r, "ggmlc.compile.output_metrics", GGUF_TYPE_INT32, metrics, sizeof(int32_t), GGMLC_MAX_IO);
    if (r->ok && (nl != (size_t)n_outputs || nw != (size_t)n_outputs || nm != (size_t)n_outputs)) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: per-output compile settings for %zu/%zu/%zu outputs, the model has %d",
                        r->path, nl, nw, nm, n_outputs);
        r->ok = false;
    }
    for (int k = 0; r->ok && k < n_outputs; k++) {
        h->losses[k] = (enum ggmlc_loss)losses[k];
        h->metrics[k] = (unsigned)metrics[k];
        if ((unsigned)losses[k] > GGMLC_LOSS_BINARY_CROSSENTROPY || !(h->weights[k] >= 0 && h->weights[k] < INFINITY) ||
            (h->metrics[k] & ~(unsigned)(GGMLC_METRIC_ACCURACY | GGMLC_METRIC_MAE))) {
            ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: output %d: invalid loss %d, loss weight %g or metrics %#x", r->path, k,
                            (int)losses[k], (double)h->weights[k], h->metrics[k]);
            r->ok = false;
        }
    }
    o->losses = h->losses;
    o->loss_weights = h->weights;
    o->output_metrics = h->metrics;
    return r->ok;
}

static bool load_options(struct reader *r, int n_outputs, struct loaded_heads *heads, struct ggmlc_compile_options *o) {
    *o = ggmlc_compile_defaults();
    float adamw[3] = {o->beta1, o->beta2, o->eps};
    o->optimizer = (enum ggmlc_optimizer)get_i32(r, "ggmlc.compile.optimizer");
    o->learning_rate = get_f32(r, "ggmlc.compile.learning_rate");
    get_arr(r, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, adamw, sizeof(float), 3);
    o->beta1 = adamw[0];
    o->beta2 = adamw[1];
    o->eps = adamw[2];
    o->weight_decay = get_f32(r, "ggmlc.compile.weight_decay");
    o->momentum = get_f32(r, "ggmlc.compile.momentum");
    o->loss = (enum ggmlc_loss)get_i32(r, "ggmlc.compile.loss");
    const int64_t mid = find(r, "ggmlc.compile.metrics", GGUF_TYPE_UINT32), sid = find(r, "ggmlc.compile.seed", GGUF_TYPE_UINT64);
    if (mid >= 0) o->metrics = gguf_get_val_u32(r->g, mid);
    if (sid >= 0) o->seed = gguf_get_val_u64(r->g, sid);
    float clip[2] = {0, 0}; /* {clip_norm, clip_value}; files written before clipping existed have none */
    if (gguf_find_key(r->g, "ggmlc.compile.clip") >= 0) get_arr(r, "ggmlc.compile.clip", GGUF_TYPE_FLOAT32, clip, sizeof(float), 2);
    o->clip_norm = clip[0];
    o->clip_value = clip[1];
    char why[128];
    if (r->ok && !ggmlc__nn_compile_settings_valid(o, why, sizeof why)) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: compile settings: %s", r->path, why);
        r->ok = false;
    }
    if (r->ok && (o->metrics & ~(unsigned)(GGMLC_METRIC_ACCURACY | GGMLC_METRIC_MAE))) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: compile settings: unknown metrics %#x", r->path, o->metrics);
        r->ok = false;
    }
    return load_heads(r, n_outputs, heads, o);
}

/* Copy a stored tensor into t after checking its name, type and shape. */
static bool load_tensor(struct reader *r, struct ggml_context *data, struct ggml_tensor *t, const char *name, bool required) {
    struct ggml_tensor *src = ggml_get_tensor(data, name);
    if (!src) {
        if (required) ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: tensor %s is missing", r->path, name);
        return !required;
    }
    if (src->type != GGML_TYPE_F32 || !ggml_are_same_shape(src, t)) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: tensor %s has the wrong type or shape", r->path, name);
        return false;
    }
    ggml_backend_tensor_set(t, src->data, 0, ggml_nbytes(t));
    return true;
}

/* Every parameter the layers declare is stored with that shape: checked before the model is
 * compiled, so that a small file cannot make it allocate weights of any size it likes. */
static bool weights_declared(struct reader *r, const ggmlc_model *m, struct ggml_context *data) {
    char name[GGML_MAX_NAME];
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            const struct nn_param *p = &m->layers[i]->params[j];
            ggmlc__nn_param_name(m->layers[i], p, name, sizeof name);
            const struct ggml_tensor *src = ggml_get_tensor(data, name);
            if (src && src->type == GGML_TYPE_F32 && memcmp(src->ne, p->ne, sizeof p->ne) == 0) continue;
            ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: tensor %s is %s", r->path, name,
                            src ? "not of the shape and type its layer declares" : "missing");
            return false;
        }
    }
    return true;
}

static bool load_weights(struct reader *r, ggmlc_model *m, struct ggml_context *data) {
    char name[GGML_MAX_NAME + 4];
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            const struct nn_param *p = &m->layers[i]->params[j];
            if (!load_tensor(r, data, p->t, p->t->name, true)) return false;
            if (p->m && !(snprintf(name, sizeof name, "%.56s.m", p->t->name), load_tensor(r, data, p->m, name, false))) return false;
            if (p->v && !(snprintf(name, sizeof name, "%.56s.v", p->t->name), load_tensor(r, data, p->v, name, false))) return false;
        }
    }
    const int64_t step_id = gguf_find_key(r->g, "ggmlc.optimizer.step");
    if (step_id >= 0 && gguf_get_kv_type(r->g, step_id) == GGUF_TYPE_INT64) m->step = gguf_get_val_i64(r->g, step_id);
    return true;
}

ggmlc_model *ggmlc_model_load(const char *path, const char *backend) {
    struct ggml_context *data = NULL;
    struct gguf_init_params params = {.no_alloc = false, .ctx = &data};
    struct reader r = {ggmlc__gguf_init_from_file_progress(path, params, "loading the model"), path,
                       true};
    if (!r.g) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: cannot read %s (%s)", path, ggmlc_last_error());
        return NULL;
    }
    ggmlc_model *m = NULL;
    ggmlc_layer *layers[NN_MAX_NODES] = {NULL};
    const int64_t arch = find(&r, "general.architecture", GGUF_TYPE_STRING);
    const int n_layers = get_i32(&r, "ggmlc.model.n_layers");
    if (r.ok && (strcmp(gguf_get_val_str(r.g, arch), "ggmlc-nn") != 0 || n_layers < 0 || n_layers > NN_MAX_NODES)) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s is not a ggmlc model file", path);
        r.ok = false;
    }
    const int64_t version_id = r.ok ? find(&r, "ggmlc.format_version", GGUF_TYPE_UINT32) : -1;
    const uint32_t version = version_id >= 0 ? gguf_get_val_u32(r.g, version_id) : 0;
    if (r.ok && (version < 1 || version > MODEL_FORMAT_VERSION)) { /* a newer file may mean what this reader cannot see */
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ggmlc_model_load: %s: model format %u, this ggmlc reads 1 to %d", path, version, MODEL_FORMAT_VERSION);
        r.ok = false;
    }
    for (int i = 0; r.ok && i < n_layers; i++) layers[i] = load_layer(&r, i);
    if (r.ok) m = load_graph(&r, layers, n_layers);
    struct ggmlc_compile_options o;
    struct loaded_heads heads;
    if (m && r.ok && load_options(&r, m->n_outputs, &heads, &o)) {
        o.backend = backend;
        if (!weights_declared(&r, m, data) || ggmlc_model_compile(m, &o) != GGMLC_OK || !load_weights(&r, m, data)) r.ok = false;
    } else {
        r.ok = false;
    }
    /* frees only the layers no model owns: all of them on failure, those no node applies on success */
    for (int i = 0; i < n_layers && i < NN_MAX_NODES; i++) ggmlc_layer_free(layers[i]);
    if (!r.ok) {
        ggmlc_model_free(m);
        m = NULL;
    }
    gguf_free(r.g);
    ggml_free(data);
    return m;
}
