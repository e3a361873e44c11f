/*
 * opt-dataset.c - datasets for ggml-opt: data and labels in host memory,
 * shuffled by shards, copied into batch tensors.
 */
#include <stdint.h>
#include <stdlib.h>

#include "opt-impl.h"

struct ggml_opt_dataset {
    struct ggml_context *ctx;
    struct ggml_tensor  *data;   /* [ne_datapoint, ndata] */
    struct ggml_tensor  *labels; /* [ne_label, ndata] or NULL */
    int64_t ndata;
    int64_t ndata_shard;
    size_t  nbs_data;   /* bytes of one shard of data */
    size_t  nbs_labels; /* bytes of one shard of labels */
    int64_t *permutation; /* shard order, ndata / ndata_shard entries */
};

/* As in ggml, ndata need not be a multiple of ndata_shard: batches are made of the
 * ndata / ndata_shard whole shards, and the datapoints after the last whole shard are
 * stored but never part of a batch. */
ggml_opt_dataset_t ggml_opt_dataset_init(enum ggml_type type_data, enum ggml_type type_label, int64_t ne_datapoint,
                                         int64_t ne_label, int64_t ndata, int64_t ndata_shard) {
    if (ne_datapoint <= 0 || ne_label < 0 || ndata <= 0 || ndata_shard <= 0 || ndata_shard > ndata) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_dataset_init: invalid sizes (ne_datapoint %lld, ne_label %lld, "
                        "ndata %lld, ndata_shard %lld; need 0 < ndata_shard <= ndata)",
                        (long long)ne_datapoint, (long long)ne_label, (long long)ndata, (long long)ndata_shard);
        return NULL;
    }
    struct ggml_opt_dataset *d = calloc(1, sizeof *d);
    const int64_t nshards = ndata / ndata_shard;
    if (d) d->permutation = malloc(sizeof(int64_t) * (size_t)nshards);
    if (!d || !d->permutation) goto oom;
    const size_t bytes = ggml_row_size(type_data, ne_datapoint * ndata) +
                         (ne_label > 0 ? ggml_row_size(type_label, ne_label * ndata) : 0) + 3 * ggml_tensor_overhead();
    d->ctx = ggml_init((struct ggml_init_params){bytes, NULL, false});
    if (!d->ctx) goto oom;
    d->data = ggml_new_tensor_2d(d->ctx, type_data, ne_datapoint, ndata);
    d->labels = ne_label > 0 ? ggml_new_tensor_2d(d->ctx, type_label, ne_label, ndata) : NULL;
    if (!d->data || (ne_label > 0 && !d->labels)) goto oom;
    d->ndata = ndata;
    d->ndata_shard = ndata_shard;
    d->nbs_data = d->data->nb[1] * (size_t)ndata_shard;
    d->nbs_labels = d->labels ? d->labels->nb[1] * (size_t)ndata_shard : 0;
    for (int64_t i = 0; i < nshards; i++) d->permutation[i] = i;
    return d;
oom:
    ggml_opt_dataset_free(d);
    ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_opt_dataset_init: cannot allocate %lld datapoints", (long long)ndata);
    return NULL;
}

void ggml_opt_dataset_free(ggml_opt_dataset_t d) {
    if (!d) return;
    ggml_free(d->ctx);
    free(d->permutation);
    free(d);
}

int64_t ggml_opt_dataset_ndata(ggml_opt_dataset_t d) { return d->ndata; }

struct ggmlc_opt_shards ggmlc__opt_dataset_shards(ggml_opt_dataset_t d) {
    return (struct ggmlc_opt_shards){.n = d->ndata / d->ndata_shard, .nb_data = d->nbs_data, .nb_labels = d->nbs_labels,
                                     .order = d->permutation};
}
struct ggml_tensor *ggml_opt_dataset_data(ggml_opt_dataset_t d) { return d->data; }
struct ggml_tensor *ggml_opt_dataset_labels(ggml_opt_dataset_t d) { return d->labels; }

void ggml_opt_dataset_shuffle(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t d, int64_t idata) {
    if (!opt_ctx || !d) { /* the generator is the context's */
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_dataset_shuffle: NULL %s", opt_ctx ? "dataset" : "optimization context");
        return;
    }
    const int64_t nshards = d->ndata / d->ndata_shard;
    int64_t n = idata < 0 ? nshards : idata / d->ndata_shard;
    if (n > nshards) n = nshards;
    ggmlc__rng_shuffle(ggmlc__opt_rng(opt_ctx), d->permutation, n);
}

int64_t ggmlc__opt_dataset_batch_shards(ggml_opt_dataset_t d, size_t nb_data_batch, size_t nb_labels_batch, int64_t ibatch,
                                        const char *func) {
    const int64_t nshards = d->ndata / d->ndata_shard;
    const int64_t shards = nb_data_batch % d->nbs_data == 0 ? (int64_t)(nb_data_batch / d->nbs_data) : 0;
    if (shards == 0 || (nb_labels_batch != SIZE_MAX && nb_labels_batch != (size_t)shards * d->nbs_labels)) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: a batch of %zu data bytes is not a whole number of shards of %zu bytes "
                        "(with the same number of label shards)", func, nb_data_batch, d->nbs_data);
        return -1;
    }
    if (ibatch < 0 || (ibatch + 1) * shards > nshards) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: batch %lld of %lld shards lies past the %lld whole shards of %lld datapoints",
                        func, (long long)ibatch, (long long)shards, (long long)nshards, (long long)d->ndata_shard);
        return -1;
    }
    return shards;
}

/* The shards listed in order (each nbs bytes of src) into dst: gathered in host memory and
 * written with one transfer where dst lies on a device (a write per shard would cost a device
 * transfer each), or copied straight in where dst is host memory (or a plain context's). */
static void batch_to_tensor(const struct ggml_tensor *src, size_t nbs, const int64_t *shard, int64_t n,
                            struct ggml_tensor *dst) {
    const bool host = dst->buffer ? ggml_backend_buffer_is_host(dst->buffer) : dst->data != NULL;
    char *gathered = host ? (char *)dst->data : malloc((size_t)n * nbs);
    if (!gathered) { /* no memory for the gathering: a write per shard */
        for (int64_t i = 0; i < n; i++) ggml_backend_tensor_set(dst, (const char *)src->data + shard[i] * nbs, (size_t)i * nbs, nbs);
        return;
    }
    for (int64_t i = 0; i < n; i++) memcpy(gathered + i * nbs, (const char *)src->data + shard[i] * nbs, nbs);
    if (!host) {
        ggml_backend_tensor_set(dst, gathered, 0, (size_t)n * nbs);
        free(gathered);
    }
}

void ggml_opt_dataset_get_batch(ggml_opt_dataset_t d, struct ggml_tensor *data_batch, struct ggml_tensor *labels_batch, int64_t ibatch) {
    /* unlike ggml, a labelled dataset also serves a loss without labels (SUM, MEAN): they stay unread */
    if (!data_batch || !ggml_is_contiguous(data_batch) || data_batch->type != d->data->type ||
        (labels_batch && (!d->labels || !ggml_is_contiguous(labels_batch) || labels_batch->type != d->labels->type))) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ggml_opt_dataset_get_batch: batch tensors do not match the dataset's types or labels");
        return;
    }
    const int64_t shards = ggmlc__opt_dataset_batch_shards(d, ggml_nbytes(data_batch), labels_batch ? ggml_nbytes(labels_batch) : SIZE_MAX,
                                        ibatch, __func__);
    if (shards < 0) return;
    batch_to_tensor(d->data, d->nbs_data, d->permutation + ibatch * shards, shards, data_batch);
    if (labels_batch) batch_to_tensor(d->labels, d->nbs_labels, d->permutation + ibatch * shards, shards, labels_batch);
}

void ggml_opt_dataset_get_batch_host(ggml_opt_dataset_t d, void *data_batch, size_t nb_data_batch, void *labels_batch, int64_t ibatch) {
    if (labels_batch && !d->labels) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_opt_dataset_get_batch_host: labels wanted from a dataset without labels");
        return;
    }
    const int64_t shards = ggmlc__opt_dataset_batch_shards(d, nb_data_batch, SIZE_MAX, ibatch, __func__);
    for (int64_t i = 0; i < shards; i++) {
        const int64_t shard = d->permutation[ibatch * shards + i];
        memcpy((char *)data_batch + i * d->nbs_data, (const char *)d->data->data + shard * d->nbs_data, d->nbs_data);
        if (labels_batch)
            memcpy((char *)labels_batch + i * d->nbs_labels, (const char *)d->labels->data + shard * d->nbs_labels, d->nbs_labels);
    }
}
