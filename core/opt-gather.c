/*
 * opt-gather.c - ggml_opt_epoch's batches gathered on the device.
 *
 * ggml-opt's dataset is host memory, and ggml_opt_epoch copies each batch into the inputs (and
 * the labels) with ggml_opt_dataset_get_batch: on a GPU that is a transfer of the batch every
 * step.  Here the dataset's whole shards go up at the epoch's start, and each step's graph
 * begins with ggml_get_rows over that copy, indexed by the batch's shard numbers (the only
 * per-step upload, 4 bytes a shard), each placed in the memory of the inputs, or of the labels
 * (which live next to the copy meanwhile).  The step then computes what it computed from the
 * host batch, bit for bit: the values are copied, not converted, and the inputs hold the batch
 * afterwards as they did.
 *
 * ggml_opt_epoch copies the dataset at every call, so changes the caller makes between epochs
 * are seen (ggml_opt_fit, between whose epochs no code of the caller's runs, copies it once);
 * the copy stays allocated with the optimization context for the next epoch.  The gathering
 * graphs are the context's step graphs with the two nodes in front: a backend runs them in
 * graph order, and a GPU backend puts a barrier between a write and a read of the same memory,
 * as between any two nodes.
 */
#include <stdlib.h>
#include <string.h>

#include "opt-impl.h"

#define OPT_GATHER_MAX_BYTES ((size_t)4 << 30)
#define OPT_GATHER_GRAPHS 3 /* forward, gradients, optimizer step */
#define OPT_GATHER_GRAPH_SIZE (OPT_GRAPH_SIZE + 8)   /* theirs and the gathering nodes */

struct opt_gather {
    struct ggml_context *ctx;        /* the tensors below and the graphs (no_alloc) */
    ggml_backend_buffer_t buf;       /* data, labels and idx, in the target's backend */
    struct opt_gather_target target; /* what it was made for */
    struct ggmlc_opt_shards layout;  /* the dataset layout it was made for (order aside) */
    int64_t per_batch;               /* shards in a batch */
    struct ggml_tensor *data, *labels; /* the dataset's whole shards, one row per shard */
    struct ggml_tensor *labels_home;   /* where the target's labels live meanwhile */
    struct ggml_tensor *idx;           /* the batch's shard numbers, I32 */
    struct ggml_tensor *into_inputs, *into_labels; /* the gathering nodes */
    int32_t *idx_host;
    struct ggml_cgraph *from[OPT_GATHER_GRAPHS], *gathering[OPT_GATHER_GRAPHS];
    int n_graphs;
};

void ggmlc__opt_gather_free(struct opt_gather *g) {
    if (!g) return;
    struct ggml_tensor *labels = g->target.labels;
    if (labels && labels->buffer == g->buf) labels->data = NULL, labels->buffer = NULL; /* homeless again */
    ggml_backend_buffer_free(g->buf);
    ggml_free(g->ctx);
    free(g->idx_host);
    free(g);
}

/* GGMLC_OPT_DEVICE_DATA: "0" never, "1" always (host memory too: tests), else on devices. */
static bool wanted(const struct opt_gather_target *t) {
    const char *env = ggmlc_getenv("GGMLC_OPT_DEVICE_DATA");
    if (env && strcmp(env, "0") == 0) return false;
    if (env && strcmp(env, "1") == 0) return true;
    return t->inputs->buffer && !ggml_backend_buffer_is_host(t->inputs->buffer);
}

/* The dataset's copy takes at most a quarter of the device's free memory (and a cap). */
static bool fits_device(ggml_backend_t backend, size_t bytes) {
    size_t free_bytes = 0, total = 0;
    ggml_backend_dev_memory(ggml_backend_get_device(backend), &free_bytes, &total);
    const size_t room = free_bytes ? free_bytes / 4 : total / 4;
    return bytes <= OPT_GATHER_MAX_BYTES && bytes <= room;
}

/* Shards per batch for these batch tensors, or 0 where gathering does not apply. */
static int64_t batch_shards(const struct opt_gather_target *t, ggml_opt_dataset_t d) {
    const struct ggml_tensor *data = ggml_opt_dataset_data(d), *labels = ggml_opt_dataset_labels(d);
    if (!t->inputs->buffer || t->inputs->type != GGML_TYPE_F32 || data->type != GGML_TYPE_F32 ||
        !ggml_is_contiguous(t->inputs) || !ggml_backend_supports_buft(t->backend, ggml_backend_buffer_get_type(t->inputs->buffer)))
        return 0;
    if (t->labels && (!labels || labels->type != GGML_TYPE_F32 || t->labels->type != GGML_TYPE_F32)) return 0;
    const int64_t n = ggmlc__opt_dataset_batch_shards(d, ggml_nbytes(t->inputs), t->labels ? ggml_nbytes(t->labels) : SIZE_MAX,
                                                      0, __func__);
    if (n < 0) ggmlc_clear_error(); /* the host route reports it, as before */
    return n > 0 ? n : 0;
}

/* Shards per batch where the route applies to target and dataset, else 0. */
static int64_t usable(const struct opt_gather_target *t, ggml_opt_dataset_t d) {
    const int64_t per_batch = wanted(t) ? batch_shards(t, d) : 0;
    const struct ggmlc_opt_shards layout = ggmlc__opt_dataset_shards(d);
    const size_t bytes = (size_t)layout.n * (layout.nb_data + (t->labels ? layout.nb_labels : 0));
    return per_batch > 0 && fits_device(t->backend, bytes) ? per_batch : 0;
}

/* g's tensors in its own context and buffer, the labels' home among them. */
static bool gather_tensors(struct opt_gather *g) {
    const struct opt_gather_target *t = &g->target;
    const size_t graph_bytes = OPT_GATHER_GRAPHS * ggml_graph_overhead_custom(OPT_GATHER_GRAPH_SIZE, false);
    g->ctx = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead() + graph_bytes, NULL, true});
    g->idx_host = malloc(sizeof *g->idx_host * (size_t)g->per_batch);
    if (!g->ctx || !g->idx_host) return false;
    g->data = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, (int64_t)(g->layout.nb_data / sizeof(float)), g->layout.n);
    if (t->labels) {
        g->labels = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, (int64_t)(g->layout.nb_labels / sizeof(float)), g->layout.n);
        g->labels_home = ggml_dup_tensor(g->ctx, t->labels);
    }
    g->idx = ggml_new_tensor_1d(g->ctx, GGML_TYPE_I32, g->per_batch);
    ggml_set_name(g->data, "dataset shards");
    ggml_set_name(g->idx, "batch shards");
    g->buf = ggml_backend_alloc_ctx_tensors(g->ctx, t->backend);
    /* the labels are an input, which the scheduler would place in host memory: the gathering
     * writes them, so they live on the device, next to the copy, while it exists */
    return g->buf && (!t->labels || ggml_backend_tensor_alloc(g->buf, t->labels, g->labels_home->data) == GGML_STATUS_SUCCESS);
}

/* The batch's rows of all, gathered straight into dst's memory: the node is placed where dst
 * is (both contiguous F32 of the same size), which saves a copy node, its dispatch and its
 * barrier per step.  A backend orders the two by memory, as any write and read of it. */
static struct ggml_tensor *gather_into(struct opt_gather *g, struct ggml_tensor *all, struct ggml_tensor *dst) {
    struct ggml_tensor *rows = ggml_get_rows(g->ctx, all, g->idx);
    if (!rows || ggml_nbytes(rows) != ggml_nbytes(dst)) return NULL;
    ggml_format_name(rows, "%s (gathered)", dst->name);
    return ggml_backend_tensor_alloc(dst->buffer, rows, dst->data) == GGML_STATUS_SUCCESS ? rows : NULL;
}

struct opt_gather *ggmlc__opt_gather_new(const struct opt_gather_target *t, ggml_opt_dataset_t d) {
    const int64_t per_batch = usable(t, d);
    if (per_batch == 0 || (t->labels && t->labels->data)) return NULL;
    struct opt_gather *g = calloc(1, sizeof *g);
    if (g) {
        g->target = *t;
        g->layout = ggmlc__opt_dataset_shards(d);
        g->layout.order = NULL;
        g->per_batch = per_batch;
    }
    if (!g || !gather_tensors(g)) {
        ggmlc__opt_gather_free(g);
        ggmlc_clear_error(); /* no memory for it: the batches go up from the host */
        return NULL;
    }
    g->into_inputs = gather_into(g, g->data, t->inputs);
    g->into_labels = t->labels ? gather_into(g, g->labels, t->labels) : NULL;
    if (!g->into_inputs || (t->labels && !g->into_labels)) {
        ggmlc__opt_gather_free(g);
        ggmlc_clear_error();
        return NULL;
    }
    return g;
}

bool ggmlc__opt_gather_fits(const struct opt_gather *g, const struct opt_gather_target *t, ggml_opt_dataset_t d) {
    const struct ggmlc_opt_shards layout = ggmlc__opt_dataset_shards(d);
    return g && g->target.backend == t->backend && g->target.inputs == t->inputs && g->target.labels == t->labels &&
           g->layout.n == layout.n && g->layout.nb_data == layout.nb_data && g->layout.nb_labels == layout.nb_labels &&
           usable(t, d) == g->per_batch;
}

bool ggmlc__opt_gather_upload(struct opt_gather *g, ggml_opt_dataset_t d) {
    ggml_backend_tensor_set(g->data, ggml_opt_dataset_data(d)->data, 0, ggml_nbytes(g->data));
    if (g->labels) ggml_backend_tensor_set(g->labels, ggml_opt_dataset_labels(d)->data, 0, ggml_nbytes(g->labels));
    return ggmlc_last_status() == GGMLC_OK;
}

void ggmlc__opt_gather_batch(struct opt_gather *g, ggml_opt_dataset_t d, int64_t ibatch) {
    const int64_t *order = ggmlc__opt_dataset_shards(d).order + ibatch * g->per_batch;
    for (int64_t i = 0; i < g->per_batch; i++) g->idx_host[i] = (int32_t)order[i];
    ggml_backend_tensor_set(g->idx, g->idx_host, 0, ggml_nbytes(g->idx));
}

struct ggml_cgraph *ggmlc__opt_gather_graph(struct opt_gather *g, struct ggml_cgraph *graph) {
    for (int i = 0; i < g->n_graphs; i++) {
        if (g->from[i] == graph) return g->gathering[i];
    }
    if (g->n_graphs == OPT_GATHER_GRAPHS || ggml_graph_size(graph) > OPT_GRAPH_SIZE) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_epoch: no room for another gathering graph");
        return NULL;
    }
    struct ggml_cgraph *out = ggml_new_graph_custom(g->ctx, OPT_GATHER_GRAPH_SIZE, false);
    if (!out) return NULL;
    ggml_build_forward_expand(out, g->into_inputs);
    if (g->into_labels) ggml_build_forward_expand(out, g->into_labels);
    /* then graph's nodes in graph's order: each one's sources are in by then */
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) ggml_build_forward_expand(out, ggml_graph_node(graph, i));
    g->from[g->n_graphs] = graph;
    g->gathering[g->n_graphs++] = out;
    return out;
}
