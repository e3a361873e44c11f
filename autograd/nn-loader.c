/*
 * nn-loader.c - batches of a labelled dataset (struct ggmlc_dataset) as eager tensors, as
 * torch.utils.data.DataLoader gives them: x of shape (B, *sample shape), y of shape (B) holding
 * class indices as floats; a seeded shuffle per epoch (the generator continues from epoch to
 * epoch, so a run is reproducible from its seed), and drop_last.
 */
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "ggmlc-nn.h"
#include "optimizer.h"
#include "nn-impl.h"

struct ga_loader {
    const struct ggmlc_dataset *data; /* borrowed */
    ga_device *dev;
    int64_t batch, sample, pos, n_batches;
    bool shuffle;
    struct ggmlc_rng rng;
    int64_t *order;
    float *xbuf, *ybuf;
};

ga_loader *ga_loader_new(const struct ggmlc_dataset *data, ga_device *dev, int64_t batch_size,
                         bool shuffle, bool drop_last, uint64_t seed) {
    if (!data || !data->x || !data->y || data->n < 1 || batch_size < 1)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_loader_new: need a loaded dataset and batch_size >= 1"),
               NULL;
    if (data->n_dims < 1 || data->n_dims > GA_MAX_DIMS - 1)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_loader_new: samples of %d dimensions",
                               data->n_dims),
               NULL;
    const int64_t n_batches =
        drop_last ? data->n / batch_size : (data->n + batch_size - 1) / batch_size;
    if (n_batches < 1)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_loader_new: %lld samples make no batch of %lld with drop_last",
                               (long long)data->n, (long long)batch_size),
               NULL;
    ga_loader *l = calloc(1, sizeof *l);
    if (!l) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_loader_new: out of memory"), NULL;
    l->data = data;
    l->dev = dev;
    l->batch = batch_size;
    l->sample = ggmlc_dataset_sample_size(data);
    l->n_batches = n_batches;
    l->shuffle = shuffle;
    ggmlc__rng_seed(&l->rng, seed);
    l->order = malloc((size_t)data->n * sizeof *l->order);
    l->xbuf = malloc((size_t)(batch_size * l->sample) * sizeof *l->xbuf);
    l->ybuf = malloc((size_t)batch_size * sizeof *l->ybuf);
    if (!l->order || !l->xbuf || !l->ybuf) {
        ga_loader_free(l);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_loader_new: out of memory"), NULL;
    }
    for (int64_t i = 0; i < data->n; i++) l->order[i] = i;
    return l;
}

/* The batch of `count` samples starting at position pos of this epoch's order. */
static bool make_batch(ga_loader *l, int64_t count, ga_tensor **x, ga_tensor **y) {
    for (int64_t b = 0; b < count; b++) {
        const int64_t i = l->order[l->pos + b];
        memcpy(l->xbuf + b * l->sample, l->data->x + i * l->sample,
               (size_t)l->sample * sizeof(float));
        l->ybuf[b] = l->data->y[i];
    }
    int64_t shape[GA_MAX_DIMS] = {count};
    for (int d = 0; d < l->data->n_dims; d++) shape[d + 1] = l->data->shape[d];
    *x = ga_from_array(l->dev, l->xbuf, (size_t)(count * l->sample), l->data->n_dims + 1, shape);
    *y = *x ? ga_from_array(l->dev, l->ybuf, (size_t)count, 1, shape) : NULL;
    if (*x && *y) return true;
    ga_release(*x);
    *x = *y = NULL;
    return false;
}

bool ga_loader_next(ga_loader *l, ga_tensor **x, ga_tensor **y) {
    if (!l || !x || !y) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_loader_next: NULL argument");
        return false;
    }
    *x = *y = NULL;
    const int64_t done = l->pos / l->batch;
    if (done >= l->n_batches) { /* the epoch is over: the next call starts a new one */
        l->pos = 0;
        return false;
    }
    if (l->pos == 0 && l->shuffle) ggmlc__rng_shuffle(&l->rng, l->order, l->data->n);
    int64_t count = l->data->n - l->pos < l->batch ? l->data->n - l->pos : l->batch;
    if (!make_batch(l, count, x, y)) return false;
    l->pos += l->batch;
    return true;
}

int64_t ga_loader_batches(const ga_loader *l) { return l ? l->n_batches : 0; }

void ga_loader_free(ga_loader *l) {
    if (!l) return;
    free(l->order);
    free(l->xbuf);
    free(l->ybuf);
    free(l);
}
