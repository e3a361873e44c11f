/*
 * tensor-alloc.c - placing single tensors in buffers: ggml_backend_tensor_alloc,
 * views, the linear tensor allocator (tallocr), and allocating every tensor
 * of a no_alloc context at once (split over several buffers when the buffer
 * type caps the size of one buffer).
 *
 * The graph allocator, which reuses memory by liveness, is in graph-alloc.c.
 */
#include <stdlib.h>

#include "backend-impl.h"

/* ------------------------------------------------------ single tensors */

enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor, void *addr) {
    if (!buffer || !tensor || !addr) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_tensor_alloc: NULL buffer, tensor or address");
        return GGML_STATUS_FAILED;
    }
    if (tensor->data || tensor->view_src) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_tensor_alloc: tensor '%s' is already allocated or is a view",
                        tensor->name);
        return GGML_STATUS_FAILED;
    }
    const char *base = ggml_backend_buffer_get_base(buffer);
    const size_t size = ggml_backend_buffer_get_alloc_size(buffer, tensor);
    const size_t offset = (size_t)((const char *)addr - base);
    if ((const char *)addr < base || offset > buffer->size || size > buffer->size - offset) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_tensor_alloc: tensor '%s' (%zu bytes at offset %zu) does not fit in "
                        "buffer %s of %zu bytes", tensor->name, size, offset, ggml_backend_buffer_name(buffer), buffer->size);
        return GGML_STATUS_FAILED;
    }
    tensor->buffer = buffer;
    tensor->data = addr;
    return ggml_backend_buffer_init_tensor(buffer, tensor);
}

enum ggml_status ggml_backend_view_init(struct ggml_tensor *tensor) {
    if (!tensor || !tensor->view_src || !tensor->view_src->buffer || !tensor->view_src->data) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_view_init: '%s' is not a view of an allocated tensor",
                        tensor ? tensor->name : "(null)");
        return GGML_STATUS_FAILED;
    }
    tensor->buffer = tensor->view_src->buffer;
    tensor->data = (char *)tensor->view_src->data + tensor->view_offs;
    return ggml_backend_buffer_init_tensor(tensor->buffer, tensor);
}

/* ------------------------------------------------------------- tallocr */

static size_t align_up(size_t offset, size_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer) {
    void *base = ggml_backend_buffer_get_base(buffer);
    const size_t alignment = ggml_backend_buffer_get_alignment(buffer);
    /* the first aligned address, should the buffer's base not be aligned */
    const size_t first = align_up((uintptr_t)base, alignment) - (uintptr_t)base;
    return (struct ggml_tallocr){.buffer = buffer, .base = base, .alignment = alignment, .offset = first};
}

enum ggml_status ggml_tallocr_alloc(struct ggml_tallocr *talloc, struct ggml_tensor *tensor) {
    const size_t size = align_up(ggml_backend_buffer_get_alloc_size(talloc->buffer, tensor), talloc->alignment);
    const size_t avail = ggml_backend_buffer_get_size(talloc->buffer);
    if (talloc->offset > avail || size > avail - talloc->offset) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_tallocr_alloc: tensor '%s' needs %zu bytes, buffer %s has %zu of %zu left",
                        tensor->name, size, ggml_backend_buffer_name(talloc->buffer),
                        talloc->offset < avail ? avail - talloc->offset : 0, avail);
        return GGML_STATUS_ALLOC_FAILED;
    }
    enum ggml_status st = ggml_backend_tensor_alloc(talloc->buffer, tensor, (char *)talloc->base + talloc->offset);
    if (st == GGML_STATUS_SUCCESS) talloc->offset += size;
    return st;
}

/* ------------------------------------------------------- multi-buffers
 * When the tensors of a context exceed the largest buffer of a type, they
 * go into several buffers; the caller gets one buffer that owns the others,
 * so that one ggml_backend_buffer_free releases everything. */

struct multi_buffer {
    size_t n;
    ggml_backend_buffer_t parts[];
};

static void multi_free(ggml_backend_buffer_t buffer) {
    struct multi_buffer *mb = buffer->context;
    for (size_t i = 0; i < mb->n; i++) ggml_backend_buffer_free(mb->parts[i]);
    free(mb);
}

static void *multi_base(ggml_backend_buffer_t buffer) {
    return ggml_backend_buffer_get_base(((struct multi_buffer *)buffer->context)->parts[0]);
}

static void multi_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    struct multi_buffer *mb = buffer->context;
    for (size_t i = 0; i < mb->n; i++) ggml_backend_buffer_clear(mb->parts[i], value);
}

static void multi_reset(ggml_backend_buffer_t buffer) {
    struct multi_buffer *mb = buffer->context;
    for (size_t i = 0; i < mb->n; i++) ggml_backend_buffer_reset(mb->parts[i]);
}

/* Tensors never point at the multi-buffer itself (they live in its parts),
 * so its data hooks are only reached by mistake. */
static enum ggml_status multi_no_data(ggml_backend_buffer_t b, struct ggml_tensor *t, uint8_t v, size_t off, size_t n) {
    ggmlc_set_error(GGMLC_ERR_INTERNAL, "multi-buffer: tensor '%s' is not placed in the multi-buffer itself", t->name);
    return GGML_STATUS_FAILED;
}
static enum ggml_status multi_no_set(ggml_backend_buffer_t b, struct ggml_tensor *t, const void *d, size_t off, size_t n) {
    return multi_no_data(b, t, 0, off, n);
}
static enum ggml_status multi_no_get(ggml_backend_buffer_t b, const struct ggml_tensor *t, void *d, size_t off, size_t n) {
    return multi_no_data(b, (struct ggml_tensor *)t, 0, off, n);
}

static const struct ggmlc_buffer_iface multi_buffer_iface = {
    .struct_size = sizeof(struct ggmlc_buffer_iface),
    .free_buffer = multi_free,
    .get_base = multi_base,
    .memset_tensor = multi_no_data,
    .set_tensor = multi_no_set,
    .get_tensor = multi_no_get,
    .clear = multi_clear,
    .reset = multi_reset,
};

static ggml_backend_buffer_t multi_buffer_new(ggml_backend_buffer_t *parts, size_t n) {
    struct multi_buffer *mb = malloc(sizeof *mb + n * sizeof parts[0]);
    if (!mb) return NULL;
    mb->n = n;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        mb->parts[i] = parts[i];
        total += parts[i]->size;
    }
    ggml_backend_buffer_t buffer = ggmlc_buffer_new(parts[0]->buft, &multi_buffer_iface, mb, total);
    if (!buffer) free(mb);
    return buffer;
}

/* ------------------------------------------------ context allocation */

static bool needs_storage(const struct ggml_tensor *t) { return t->data == NULL && t->view_src == NULL; }

/* Allocate one buffer for the tensors in [first, end) of ctx and place them. */
static ggml_backend_buffer_t alloc_run(struct ggml_context *ctx, ggml_backend_buffer_type_t buft, struct ggml_tensor *first,
                                       struct ggml_tensor *end, size_t size) {
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, size);
    if (!buffer) return NULL;
    struct ggml_tallocr talloc = ggml_tallocr_new(buffer);
    for (struct ggml_tensor *t = first; t != end; t = ggml_get_next_tensor(ctx, t)) {
        if (needs_storage(t) && ggml_tallocr_alloc(&talloc, t) != GGML_STATUS_SUCCESS) {
            ggml_backend_buffer_free(buffer);
            return NULL;
        }
    }
    return buffer;
}

/* Undo the placement of ctx's tensors in buffers that are about to be freed. */
static void unplace_all(struct ggml_context *ctx, ggml_backend_buffer_t *buffers, size_t n) {
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        for (size_t i = 0; i < n; i++) {
            if (t->buffer == buffers[i]) { /* views placed in them too */
                t->buffer = NULL;
                t->data = NULL;
            }
        }
    }
    for (size_t i = 0; i < n; i++) ggml_backend_buffer_free(buffers[i]);
}

size_t ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context *ctx, ggml_backend_buffer_type_t buft) {
    if (!ctx || !buft) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_alloc_ctx_tensors_from_buft_size: NULL context or buffer type");
        return 0;
    }
    const size_t alignment = ggml_backend_buft_get_alignment(buft);
    size_t total = 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (needs_storage(t)) total += align_up(ggml_backend_buft_get_alloc_size(buft, t), alignment);
    }
    return total;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context *ctx, ggml_backend_buffer_type_t buft) {
    if (!ctx || !buft) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_alloc_ctx_tensors_from_buft: NULL context or buffer type");
        return NULL;
    }
    const size_t alignment = ggml_backend_buft_get_alignment(buft);
    const size_t max_size = ggml_backend_buft_get_max_size(buft);
    ggml_backend_buffer_t *parts = NULL;
    size_t n_parts = 0;
    struct ggml_tensor *run_first = ggml_get_first_tensor(ctx);
    size_t run_size = 0;
    for (struct ggml_tensor *t = run_first;; t = ggml_get_next_tensor(ctx, t)) {
        const size_t size = t && needs_storage(t) ? align_up(ggml_backend_buft_get_alloc_size(buft, t), alignment) : 0;
        if (size > max_size) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_alloc_ctx_tensors: tensor '%s' (%zu bytes) exceeds the maximum "
                            "buffer size of %s (%zu bytes)", t->name, size, ggml_backend_buft_name(buft), max_size);
            goto fail;
        }
        /* close the current run at the end, or when t would overflow it */
        if (!t || run_size + size > max_size) {
            if (run_size > 0) {
                ggml_backend_buffer_t *grown = realloc(parts, (n_parts + 1) * sizeof *parts);
                if (!grown) goto fail;
                parts = grown;
                parts[n_parts] = alloc_run(ctx, buft, run_first, t, run_size);
                if (!parts[n_parts]) goto fail;
                n_parts++;
            }
            run_first = t;
            run_size = 0;
        }
        if (!t) break;
        run_size += size;
    }
    if (n_parts == 0) {
        free(parts);
        return NULL; /* nothing to allocate */
    }
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src && !t->data && t->view_src->data && ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) goto fail;
    }
    ggml_backend_buffer_t result = n_parts == 1 ? parts[0] : multi_buffer_new(parts, n_parts);
    if (!result) goto fail;
    free(parts);
    return result;
fail:
    unplace_all(ctx, parts, n_parts);
    free(parts);
    return NULL;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context *ctx, ggml_backend_t backend) {
    if (!backend) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_alloc_ctx_tensors: NULL backend");
        return NULL;
    }
    /* the device's own type, read directly so that this file needs only buffers */
    ggml_backend_dev_t dev = backend->device;
    return ggml_backend_alloc_ctx_tensors_from_buft(ctx, dev->iface.get_buffer_type(dev));
}
