/*
 * summary.c - what a model looks like from outside: parameter counts,
 * layers, input and output shapes, and the Keras-style summary table
 * (for functional models with a "Connected to" column naming each node's
 * inputs).
 */
#include "nn-impl.h"

int64_t ggmlc_model_param_count(ggmlc_model *m, bool trainable_only) {
    int64_t n = 0;
    for (int i = 0; m && i < m->n_layers; i++) {
        const ggmlc_layer *l = m->layers[i];
        for (int j = 0; j < l->n_params; j++) {
            if (trainable_only && (!l->trainable || !l->params[j].trainable)) continue;
            n += l->params[j].ne[0] * l->params[j].ne[1] * l->params[j].ne[2] * l->params[j].ne[3];
        }
    }
    return n;
}

int ggmlc_model_layer_count(ggmlc_model *m) { return m ? m->n_layers : 0; }
ggmlc_layer *ggmlc_model_layer(ggmlc_model *m, int i) { return m && i >= 0 && i < m->n_layers ? m->layers[i] : NULL; }

static int node_shape(const ggmlc_node *n, int64_t shape[4]) {
    for (int i = 0; i < n->n_dims; i++) shape[i] = n->shape[i];
    return n->n_dims;
}

int ggmlc_model_output_shape(ggmlc_model *m, int64_t shape[4]) { return ggmlc_model_output_shape_at(m, 0, shape); }
int ggmlc_model_input_count(ggmlc_model *m) { return m ? m->n_inputs : 0; }
int ggmlc_model_output_count(ggmlc_model *m) { return m ? m->n_outputs : 0; }
int ggmlc_model_input_shape(ggmlc_model *m, int i, int64_t shape[4]) {
    return m && shape && i >= 0 && i < m->n_inputs ? node_shape(m->inputs[i], shape) : 0;
}
int ggmlc_model_output_shape_at(ggmlc_model *m, int k, int64_t shape[4]) {
    return m && shape && k >= 0 && k < m->n_outputs ? node_shape(m->outputs[k], shape) : 0;
}

static void shape_text(char *buf, size_t size, const int64_t *shape, int n_dims) {
    size_t k = (size_t)snprintf(buf, size, "(None");
    for (int i = 0; i < n_dims && k < size; i++) k += (size_t)snprintf(buf + k, size - k, ", %lld", (long long)shape[i]);
    if (k < size) snprintf(buf + k, size - k, ")");
}

/* How many nodes up to node i (included) share its kind and layer, and how many in all. */
static void count_alike(const ggmlc_model *m, int i, int *index, int *total) {
    const ggmlc_node *n = m->nodes[i];
    *index = *total = 0;
    for (int j = 0; j < m->n_nodes; j++) {
        const bool alike = m->nodes[j]->kind == n->kind && m->nodes[j]->layer == n->layer;
        *total += alike;
        *index += alike && j <= i;
    }
}

/* A node's name: its layer's (with [k] when the layer is applied k > 1 times), input_k, add_k, ... */
static void node_label(const ggmlc_model *m, const ggmlc_node *n, char *buf, size_t size) {
    int i = 0, index, total;
    while (m->nodes[i] != n) i++;
    count_alike(m, i, &index, &total);
    const char *base = n->kind == NODE_LAYER ? n->layer->name : n->kind == NODE_INPUT ? "input" : n->kind == NODE_ADD ? "add" : "concatenate";
    if (total == 1) snprintf(buf, size, "%s", base);
    else if (n->kind == NODE_LAYER) snprintf(buf, size, "%s[%d]", base, index - 1);
    else snprintf(buf, size, "%s_%d", base, index);
}

static int64_t node_params(const ggmlc_node *n) {
    int64_t params = 0;
    for (int j = 0; n->kind == NODE_LAYER && j < n->layer->n_params; j++) {
        const struct nn_param *p = &n->layer->params[j];
        params += p->ne[0] * p->ne[1] * p->ne[2] * p->ne[3];
    }
    return params;
}

/* Widths of the table's columns: at least Keras's, wider for long names and shapes (never cut). */
struct columns {
    int name, shape;
};

/* A node's first two cells: "label (Kind)" and its output shape. */
static void node_cells(const ggmlc_model *m, const ggmlc_node *n, char *name, size_t name_size, char *shape, size_t shape_size) {
    static const char *const types[] = {[NODE_INPUT] = "InputLayer", [NODE_ADD] = "Add", [NODE_CONCAT] = "Concatenate"};
    char label[112];
    node_label(m, n, label, sizeof label);
    snprintf(name, name_size, "%s (%s)", label, n->kind == NODE_LAYER ? n->layer->ops->kind : types[n->kind]);
    shape_text(shape, shape_size, n->shape, n->n_dims);
}

static struct columns column_widths(const ggmlc_model *m) {
    struct columns c = {28, 22};
    for (int i = 0; i < m->n_nodes; i++) {
        char name[192], shape[96];
        node_cells(m, m->nodes[i], name, sizeof name, shape, sizeof shape);
        if ((int)strlen(name) > c.name) c.name = (int)strlen(name);
        if ((int)strlen(shape) > c.shape) c.shape = (int)strlen(shape);
    }
    return c;
}

/* A row; a functional model's nodes also name their inputs (a sequential model's are the row above). */
static void summary_row(const ggmlc_model *m, const ggmlc_node *n, struct columns c, FILE *out) {
    char name[192], shape[96], links[240] = "";
    node_cells(m, n, name, sizeof name, shape, sizeof shape);
    for (int k = 0; k < 2 && !m->sequential && n->in[k]; k++) {
        char in[112];
        node_label(m, n->in[k], in, sizeof in);
        const size_t len = strlen(links);
        snprintf(links + len, sizeof links - len, "%s%s", k ? ", " : "", in);
    }
    fprintf(out, " %-*s %-*s %10lld%s%s\n", c.name, name, c.shape, shape, (long long)node_params(n), links[0] ? "   " : "", links);
}

static void print_rule(FILE *out, char ch, int width) {
    for (int i = 0; i < width; i++) fputc(ch, out);
    fputc('\n', out);
}

/* Where the model computes: the backend holding the weights (and running what it supports), then the
 * others the scheduler falls back to, each with its device's description. */
static void print_devices(const ggmlc_model *m, FILE *out) {
    if (!m->compiled) {
        fprintf(out, "Device: none yet (compile chooses it)\n");
        return;
    }
    for (int i = 0; i < m->n_backends; i++) {
        ggml_backend_dev_t dev = ggml_backend_get_device(m->backends[i]);
        const char *desc = dev ? ggml_backend_dev_description(dev) : NULL;
        fprintf(out, "%s %s%s%s%s\n", i == 0 ? "Device:" : "Fallback:", ggml_backend_name(m->backends[i]), desc ? " (" : "", desc ? desc : "",
                desc ? ")" : "");
    }
}

void ggmlc_model_summary(ggmlc_model *m, FILE *out) {
    if (!m || !out) return;
    const struct columns c = column_widths(m);
    /* Keras's widths: 65 columns, 93 with "Connected to" */
    const int width = c.name + c.shape + 15 + (m->sequential ? 0 : 28);
    fprintf(out, "Model: \"%s\"\n", m->sequential ? "sequential" : "functional");
    print_rule(out, '_', width);
    fprintf(out, " %-*s %-*s %10s%s\n", c.name, "Layer (type)", c.shape, "Output Shape", "Param #", m->sequential ? "" : "   Connected to");
    print_rule(out, '=', width);
    for (int i = 0; i < m->n_nodes; i++) summary_row(m, m->nodes[i], c, out);
    const int64_t total = ggmlc_model_param_count(m, false), trainable = ggmlc_model_param_count(m, true);
    print_rule(out, '=', width);
    fprintf(out, "Total params: %lld (%.2f KB)\nTrainable params: %lld\nNon-trainable params: %lld\n", (long long)total,
            (double)total * 4 / 1024, (long long)trainable, (long long)(total - trainable));
    print_devices(m, out);
    if (!m->sequential) {
        fprintf(out, "Outputs:");
        for (int k = 0; k < m->n_outputs; k++) {
            char label[112];
            node_label(m, m->outputs[k], label, sizeof label);
            fprintf(out, "%s %s", k ? "," : "", label);
        }
        fprintf(out, "\n");
    }
    print_rule(out, '_', width);
}
