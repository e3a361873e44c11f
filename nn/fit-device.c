/*
 * fit-device.c - a pass's loss and metrics summed on the device, for models whose weights
 * live on a device that is not the host (a GPU): each step's graph adds its batch's loss,
 * per-output losses, correct predictions and absolute errors to an accumulator in device
 * memory, and the engine reads it once per progress update or pass (one read, and a reset
 * that the Vulkan plugin folds into the next graph) instead of the loss and the outputs
 * after every step, each a round trip between host and device that stalls the GPU.
 * The sums are those the host made (engine.c's score_batch): the loss times the batch's
 * sample count, the same argmax for accuracy (class weights scale the labels but not their
 * argmax); only the order of the float additions differs.  Models on the CPU, binary
 * outputs with an accuracy (a threshold, not an argmax) and outputs of over
 * NN_STATS_MAX_CLASSES classes keep the host's scoring.
 */
#include <float.h>
#include <math.h>

#include "nn-impl.h"

#define NN_STATS_MAX_CLASSES 1024 /* the identity matrix that turns argmaxes into rows */

/* Slots of the accumulator: the total loss, then per output its loss, correct count and
 * summed absolute error (each times the samples, as the host sums them), then how many steps
 * came before the first whose loss is not finite. */
static int slot_head(int k) { return 1 + 3 * k; }
static int slot_finite(const ggmlc_model *m) { return 1 + 3 * m->n_outputs; }
static int n_slots(const ggmlc_model *m) { return slot_finite(m) + 1; }

static bool on_host_memory(const ggmlc_model *m) {
    return ggml_backend_dev_type(ggml_backend_get_device(m->backends[0])) ==
           GGML_BACKEND_DEVICE_TYPE_CPU;
}

/* The largest class count of an output whose accuracy the device computes; -1 when an output
 * must be scored on the host. */
static int64_t classes_needed(const ggmlc_model *m) {
    int64_t most = 1;
    for (int k = 0; k < m->n_outputs; k++) {
        const int64_t nc = ggmlc__nn_output_classes(m, k); /* per position */
        if (!(m->heads[k].metrics & GGMLC_METRIC_ACCURACY)) continue;
        if (nc == 1 || nc > NN_STATS_MAX_CLASSES) return -1;
        most = nc > most ? nc : most;
    }
    return most;
}

/* The accumulator and the identity matrix in a buffer of the model's first backend. */
static bool stats_alloc(ggmlc_model *m, int64_t classes) {
    m->ctx_stats = ggml_init((struct ggml_init_params){2 * ggml_tensor_overhead(), NULL, true});
    if (!m->ctx_stats) return false;
    m->stats_acc = ggml_new_tensor_1d(m->ctx_stats, GGML_TYPE_F32, n_slots(m));
    m->stats_eye = ggml_new_tensor_2d(m->ctx_stats, GGML_TYPE_F32, classes, classes);
    m->buf_stats = ggml_backend_alloc_ctx_tensors(m->ctx_stats, m->backends[0]);
    if (!m->buf_stats) return false;
    ggml_backend_buffer_clear(m->buf_stats, 0);
    float one = 1.0f;
    for (int64_t c = 0; c < classes; c++)
        ggml_backend_tensor_set(m->stats_eye, &one, sizeof(float) * (size_t)(c * classes + c),
                                sizeof one);
    return true;
}

void ggmlc__nn_device_stats_free(ggmlc_model *m) {
    ggml_backend_buffer_free(m->buf_stats);
    ggml_free(m->ctx_stats);
    m->buf_stats = NULL;
    m->ctx_stats = NULL;
    m->stats_acc = m->stats_eye = NULL;
}

bool ggmlc__nn_device_stats_usable(ggmlc_model *m) {
    if (m->stats_acc) return true;
    if (m->stats_refused || on_host_memory(m)) return false;
    const int64_t classes = classes_needed(m);
    if (classes < 0 || !stats_alloc(m, classes)) {
        ggmlc__nn_device_stats_free(m);
        m->stats_refused = true; /* scored on the host from now on */
        ggmlc_clear_error();
        return false;
    }
    return true;
}

/* acc[slot] += v (a one-element tensor), as the last nodes of graph. */
static struct ggml_tensor *cell_of(struct ggml_context *ctx, struct ggml_tensor *acc, int slot) {
    return ggml_view_1d(ctx, acc, 1, sizeof(float) * (size_t)slot);
}

/* acc[slot] += v (a one-element tensor) in place, as the last node of graph; the new sum. */
static struct ggml_tensor *accumulate(struct ggml_context *ctx, struct ggml_cgraph *graph,
                                      struct ggml_tensor *acc, int slot, struct ggml_tensor *v) {
    struct ggml_tensor *cell = cell_of(ctx, acc, slot);
    struct ggml_tensor *sum = ggml_add_inplace(ctx, cell, ggml_reshape_1d(ctx, v, 1));
    ggml_build_forward_expand(graph, sum);
    return sum;
}

/* Steps whose loss is finite before the first one that is not: while the running loss sum is
 * finite (FLT_MAX - |sum| > 0; a NaN or infinite loss leaves it NaN or infinite), += 1.  Where
 * a loss that is not finite stopped training the host names that batch. */
static void count_finite(ggmlc_model *m, struct nn_graph *g, struct ggml_cgraph *graph,
                         struct ggml_tensor *loss_sum) {
    struct ggml_context *ctx = g->ctx;
    struct ggml_tensor *margin = ggml_scale_bias(ctx, ggml_abs(ctx, loss_sum), -1.0f, FLT_MAX);
    accumulate(ctx, graph, m->stats_acc, slot_finite(m), ggml_step(ctx, margin));
}

/* Rows of the identity matrix picked by the argmax of each row of nc classes (one per sample,
 * or one per position of a sequence output): one-hot predictions. */
static struct ggml_tensor *one_hot_argmax(ggmlc_model *m, struct ggml_context *ctx,
                                          struct ggml_tensor *t, int64_t nc, int64_t n_rows) {
    /* a reshape only where needed: the scheduler copies each view of an input on its own */
    const bool rows_already = t->ne[0] == nc && t->ne[1] == n_rows && ggml_nrows(t) == n_rows;
    struct ggml_tensor *rows = rows_already ? t : ggml_reshape_2d(ctx, t, nc, n_rows);
    return ggml_get_rows(ctx, m->stats_eye, ggml_argmax(ctx, rows));
}

static void head_stats(ggmlc_model *m, struct nn_graph *g, int k, struct ggml_cgraph *graph) {
    struct ggml_context *ctx = g->ctx;
    const int64_t no = ggmlc__nn_output_elems(m, k);
    const float count = (float)g->batch;
    if (g->head_loss[k] != g->loss) /* else the total's slot serves: ggmlc__nn_device_stats_read */
        accumulate(ctx, graph, m->stats_acc, slot_head(k), ggml_scale(ctx, g->head_loss[k], count));
    const unsigned metrics = m->heads[k].metrics;
    if (metrics & GGMLC_METRIC_ACCURACY) {
        const int64_t nc = ggmlc__nn_output_classes(m, k), n_rows = g->batch * (no / nc);
        struct ggml_tensor *hits = ggml_mul(ctx, one_hot_argmax(m, ctx, g->out[k], nc, n_rows),
                                            one_hot_argmax(m, ctx, g->y[k], nc, n_rows));
        accumulate(ctx, graph, m->stats_acc, slot_head(k) + 1, ggml_sum(ctx, hits));
    }
    if ((metrics & GGMLC_METRIC_MAE) &&
        m->heads[k].loss != GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
        struct ggml_tensor *err = ggml_sum(ctx, ggml_abs(ctx, ggml_sub(ctx, g->out[k], g->y[k])));
        err = ggml_scale(ctx, err, 1.0f / (float)no);
        accumulate(ctx, graph, m->stats_acc, slot_head(k) + 2, err);
    }
}

void ggmlc__nn_build_device_stats(ggmlc_model *m, struct nn_graph *g, struct ggml_cgraph *graph) {
    if (!m->stats_acc) return;
    struct ggml_tensor *loss_sum =
        accumulate(g->ctx, graph, m->stats_acc, 0, ggml_scale(g->ctx, g->loss, (float)g->batch));
    for (int k = 0; k < m->n_outputs; k++) head_stats(m, g, k, graph);
    count_finite(m, g, graph, loss_sum);
}

void ggmlc__nn_device_stats_reset(ggmlc_model *m) {
    if (m->stats_acc) ggml_backend_tensor_memset(m->stats_acc, 0, 0, ggml_nbytes(m->stats_acc));
}

float ggmlc__nn_device_stats_read(ggmlc_model *m, int64_t samples, struct pass_stats *st,
                                  int64_t *finite_steps) {
    float v[2 + 3 * GGMLC_MAX_IO];
    ggml_backend_tensor_get(m->stats_acc, v, 0, sizeof(float) * (size_t)n_slots(m));
    ggmlc__nn_device_stats_reset(m);
    st->loss_sum += v[0];
    st->n += samples;
    for (int k = 0; k < m->n_outputs; k++) {
        const bool is_total = m->n_outputs == 1 && m->heads[k].weight == 1.0f;
        st->head_loss_sum[k] += is_total ? v[0] : v[slot_head(k)];
        /* right positions; a sample counts the fraction of its positions that are right */
        const int64_t positions = ggmlc__nn_output_elems(m, k) / ggmlc__nn_output_classes(m, k);
        st->correct[k] += (double)llround(v[slot_head(k) + 1]) / (double)positions;
        st->abs_err[k] += v[slot_head(k) + 2];
    }
    *finite_steps = (int64_t)llround(v[slot_finite(m)]);
    return samples > 0 ? v[0] / (float)samples : 0.0f;
}
