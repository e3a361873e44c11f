/*
 * pending.c - the ops of ggmlc-autograd.h marked "(not yet implemented)": each reports
 * GGMLC_ERR_UNSUPPORTED and returns NULL (or -1), so a program that calls one fails clearly.
 * An op leaves this file when it is written.
 */
#include "ggmlc.h"
#include "autograd-impl.h"

static void *not_yet(const char *fn) {
    ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "%s: not yet implemented", fn);
    return NULL;
}

ga_tensor *ga_where(const ga_tensor *cond, const ga_tensor *a, const ga_tensor *b) {
    return not_yet(__func__);
}

ga_tensor *ga_masked_fill(const ga_tensor *t, const ga_tensor *mask, float value) {
    return not_yet(__func__);
}

ga_tensor *ga_embedding(const ga_tensor *indices, const ga_tensor *weight) {
    return not_yet(__func__);
}

ga_tensor *ga_gather(const ga_tensor *t, int dim, const ga_tensor *indices) {
    return not_yet(__func__);
}

ga_tensor *ga_index_select(const ga_tensor *t, int dim, const ga_tensor *indices) {
    return not_yet(__func__);
}

ga_tensor *ga_scatter_add(const ga_tensor *t, int dim, const ga_tensor *indices,
                          const ga_tensor *src) {
    return not_yet(__func__);
}

ga_tensor *ga_dropout(const ga_tensor *t, float p, bool training) { return not_yet(__func__); }

ga_tensor *ga_layer_norm(const ga_tensor *t, const ga_tensor *weight, const ga_tensor *bias,
                         float eps) {
    return not_yet(__func__);
}

ga_tensor *ga_rms_norm(const ga_tensor *t, const ga_tensor *weight, float eps) {
    return not_yet(__func__);
}

ga_tensor *ga_batch_norm(const ga_tensor *t, ga_tensor *running_mean, ga_tensor *running_var,
                         const ga_tensor *weight, const ga_tensor *bias, bool training,
                         float momentum, float eps) {
    return not_yet(__func__);
}

ga_tensor *ga_group_norm(const ga_tensor *t, int num_groups, const ga_tensor *weight,
                         const ga_tensor *bias, float eps) {
    return not_yet(__func__);
}

ga_tensor *ga_conv1d(const ga_tensor *input, const ga_tensor *weight, const ga_tensor *bias,
                     int stride, int padding, int dilation) {
    return not_yet(__func__);
}

ga_tensor *ga_conv2d(const ga_tensor *input, const ga_tensor *weight, const ga_tensor *bias,
                     int stride, int padding, int dilation) {
    return not_yet(__func__);
}

ga_tensor *ga_max_pool2d(const ga_tensor *input, int kernel, int stride, int padding) {
    return not_yet(__func__);
}

ga_tensor *ga_avg_pool2d(const ga_tensor *input, int kernel, int stride, int padding) {
    return not_yet(__func__);
}

ga_tensor *ga_scaled_dot_product_attention(const ga_tensor *q, const ga_tensor *k,
                                           const ga_tensor *v, const ga_tensor *mask,
                                           float dropout_p, bool is_causal, float scale) {
    return not_yet(__func__);
}
