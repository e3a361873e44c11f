/*
 * device-data.c - a fit's training data kept in device memory: on a GPU, the samples and
 * their labels (one-hot, class weights folded in, as upload_target makes them) go up once
 * per fit, and each step's graph gathers its batch there with ggml_get_rows from the
 * shuffled sample indices, the only per-step upload (4 bytes a sample) instead of the
 * batch's samples and labels.  Used by fit's training passes when the model's weights are
 * on a device that is not the host, no input is token ids, and the data take at most a
 * quarter of the device's free memory (or NN_DATA_MAX_BYTES); kept until the next fit
 * uploads other data or the model is freed.
 */
#include <stdlib.h>

#include "nn-impl.h"

#define NN_DATA_MAX_BYTES ((size_t)4 << 30)

struct nn_device_data {
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *x[GGMLC_MAX_IO], *y[GGMLC_MAX_IO];
    int64_t n;
};

void ggmlc__nn_device_data_free(ggmlc_model *m) {
    if (!m->dev_data) return;
    ggml_backend_buffer_free(m->dev_data->buf);
    ggml_free(m->dev_data->ctx);
    free(m->dev_data);
    m->dev_data = NULL;
}

/* Bytes the data take on the device; 0 when an input is token ids (left on the host). */
static size_t data_bytes(const ggmlc_model *m, int64_t n) {
    size_t floats = 0;
    for (int i = 0; i < m->n_inputs; i++) {
        if (ggmlc__nn_input_is_index(m, i)) return 0;
        floats += (size_t)ggmlc__nn_input_elems(m, i);
    }
    for (int k = 0; k < m->n_outputs; k++) floats += (size_t)ggmlc__nn_output_elems(m, k);
    return floats * sizeof(float) * (size_t)n;
}

static bool fits_device(const ggmlc_model *m, size_t bytes) {
    size_t free_bytes = 0, total = 0;
    ggml_backend_dev_memory(ggml_backend_get_device(m->backends[0]), &free_bytes, &total);
    const size_t room = free_bytes ? free_bytes / 4 : total / 4;
    return bytes > 0 && bytes <= NN_DATA_MAX_BYTES && bytes <= room;
}

/* Tensors for n samples of every input and output, in a buffer of the model's first backend. */
static struct nn_device_data *data_alloc(ggmlc_model *m, int64_t n) {
    struct nn_device_data *dd = calloc(1, sizeof *dd);
    if (!dd) return NULL;
    const size_t n_tensors = (size_t)(m->n_inputs + m->n_outputs);
    dd->ctx = ggml_init((struct ggml_init_params){n_tensors * ggml_tensor_overhead(), NULL, true});
    for (int i = 0; dd->ctx && i < m->n_inputs; i++)
        dd->x[i] = ggml_new_tensor_2d(dd->ctx, GGML_TYPE_F32, ggmlc__nn_input_elems(m, i), n);
    for (int k = 0; dd->ctx && k < m->n_outputs; k++)
        dd->y[k] = ggml_new_tensor_2d(dd->ctx, GGML_TYPE_F32, ggmlc__nn_output_elems(m, k), n);
    dd->buf = dd->ctx ? ggml_backend_alloc_ctx_tensors(dd->ctx, m->backends[0]) : NULL;
    if (!dd->buf) {
        ggml_free(dd->ctx);
        free(dd);
        return NULL;
    }
    dd->n = n;
    return dd;
}

/* The samples and the labels the loss takes, up in one transfer each. */
static bool data_upload(ggmlc_model *m, const struct nn_data *d, const float *class_weights) {
    struct nn_device_data *dd = m->dev_data;
    for (int i = 0; i < m->n_inputs; i++)
        ggml_backend_tensor_set(dd->x[i], d->x[i], 0, ggml_nbytes(dd->x[i]));
    for (int k = 0; k < m->n_outputs; k++) {
        const int64_t no = ggmlc__nn_output_elems(m, k);
        float *labels = malloc(ggml_nbytes(dd->y[k]));
        if (!labels) return false;
        for (int64_t s = 0; s < d->n; s++)
            ggmlc__nn_target_row(m, k, d->y[k], s, class_weights, labels + s * no);
        ggml_backend_tensor_set(dd->y[k], labels, 0, ggml_nbytes(dd->y[k]));
        free(labels);
    }
    return ggmlc_last_status() == GGMLC_OK;
}

bool ggmlc__nn_device_data_load(ggmlc_model *m, const struct nn_data *d,
                                const float *class_weights) {
    for (int k = 0; k < m->n_outputs; k++)
        if (!d->y[k]) return false;
    if (!ggmlc__nn_device_stats_usable(m) || !fits_device(m, data_bytes(m, d->n))) return false;
    if (m->dev_data && m->dev_data->n != d->n) {
        ggmlc__nn_graphs_free(m); /* their gathers read the tensors about to go */
        ggmlc__nn_device_data_free(m);
    }
    if (!m->dev_data && !(m->dev_data = data_alloc(m, d->n))) {
        ggmlc_clear_error(); /* the batches go up one by one instead */
        return false;
    }
    if (data_upload(m, d, class_weights)) return true;
    ggmlc__nn_graphs_free(m);
    ggmlc__nn_device_data_free(m);
    ggmlc_clear_error();
    return false;
}

struct ggml_tensor *ggmlc__nn_gather(const ggmlc_model *m, struct ggml_context *ctx, bool output,
                                     int i, struct ggml_tensor *idx,
                                     const struct ggml_tensor *like) {
    struct ggml_tensor *all = output ? m->dev_data->y[i] : m->dev_data->x[i];
    struct ggml_tensor *rows = ggml_get_rows(ctx, all, idx);
    return ggml_reshape_4d(ctx, rows, like->ne[0], like->ne[1], like->ne[2], like->ne[3]);
}
