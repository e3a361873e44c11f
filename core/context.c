/*
 * context.c - contexts: an arena of objects (tensors, graphs, work buffers).
 *
 * The layout of an object in the arena is [struct ggml_object][payload],
 * payloads aligned to GGML_MEM_ALIGN, so that ggml_tensor_overhead() and
 * ggml_graph_overhead() let callers size arenas exactly as with ggml.
 */
#include <stdlib.h>

#include "ggml-impl.h"

struct ggml_context *ggml_init(struct ggml_init_params params) {
    if (!params.mem_buffer && params.mem_size > SIZE_MAX - (GGML_MEM_ALIGN - 1)) { /* rounding up would wrap to 0 */
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_init: a memory pool of %zu bytes cannot be allocated", params.mem_size);
        return NULL;
    }
    struct ggml_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_init: cannot allocate a context");
        return NULL;
    }
    const size_t mem_size = params.mem_buffer ? params.mem_size : GGML_PAD(params.mem_size, GGML_MEM_ALIGN);
    ctx->mem_size = mem_size;
    ctx->no_alloc = params.no_alloc;
    if (params.mem_buffer) {
        ctx->mem_buffer = params.mem_buffer;
    } else if (mem_size > 0) {
        ctx->mem_buffer = aligned_alloc(GGML_MEM_ALIGN, mem_size);
        if (!ctx->mem_buffer) {
            free(ctx);
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_init: cannot allocate a memory pool of %zu bytes", mem_size);
            return NULL;
        }
        ctx->mem_buffer_owned = true;
    }
    return ctx;
}

void ggml_reset(struct ggml_context *ctx) {
    if (!ctx) return;
    ctx->n_objects = 0;
    ctx->objects_begin = NULL;
    ctx->objects_end = NULL;
}

void ggml_free(struct ggml_context *ctx) {
    if (!ctx) return;
    if (ctx->mem_buffer_owned) free(ctx->mem_buffer);
    free(ctx);
}

size_t ggml_used_mem(const struct ggml_context *ctx) {
    return ctx->objects_end ? ctx->objects_end->offs + ctx->objects_end->size : 0;
}

bool ggml_get_no_alloc(struct ggml_context *ctx) { return ctx->no_alloc; }
void ggml_set_no_alloc(struct ggml_context *ctx, bool no_alloc) { ctx->no_alloc = no_alloc; }
void *ggml_get_mem_buffer(const struct ggml_context *ctx) { return ctx->mem_buffer; }
size_t ggml_get_mem_size(const struct ggml_context *ctx) { return ctx->mem_size; }

struct ggml_object *ggmlc__new_object(struct ggml_context *ctx, enum ggml_object_type type, size_t size) {
    const size_t cur_end = ggml_used_mem(ctx);
    const size_t size_needed = GGML_PAD(size, GGML_MEM_ALIGN);
    if (size > SIZE_MAX / 2 || cur_end + GGML_OBJECT_SIZE + size_needed > ctx->mem_size || !ctx->mem_buffer) {
        ggmlc_set_error(GGMLC_ERR_NOMEM,
                        "not enough space in the context's memory pool (needed %zu bytes, available %zu)",
                        cur_end + GGML_OBJECT_SIZE + size_needed, ctx->mem_size);
        return NULL;
    }
    struct ggml_object *obj = (struct ggml_object *)((char *)ctx->mem_buffer + cur_end);
    *obj = (struct ggml_object){
        .offs = cur_end + GGML_OBJECT_SIZE,
        .size = size_needed,
        .next = NULL,
        .type = type,
    };
    if (ctx->objects_end) {
        ctx->objects_end->next = obj;
    } else {
        ctx->objects_begin = obj;
    }
    ctx->objects_end = obj;
    ctx->n_objects++;
    return obj;
}

void *ggml_new_buffer(struct ggml_context *ctx, size_t nbytes) {
    struct ggml_object *obj = ggmlc__new_object(ctx, GGML_OBJECT_TYPE_WORK_BUFFER, nbytes);
    return obj ? (char *)ctx->mem_buffer + obj->offs : NULL;
}

void ggml_print_object(const struct ggml_object *obj) {
    GGMLC_LOG_INFO(" - ggml_object: type = %d, offset = %zu, size = %zu, next = %p\n",
                   (int)obj->type, obj->offs, obj->size, (const void *)obj->next);
}

void ggml_print_objects(const struct ggml_context *ctx) {
    GGMLC_LOG_INFO("%s: objects in context %p:\n", __func__, (const void *)ctx);
    for (const struct ggml_object *obj = ctx->objects_begin; obj; obj = obj->next) ggml_print_object(obj);
}

static struct ggml_tensor *tensor_of(const struct ggml_context *ctx, const struct ggml_object *obj) {
    return (struct ggml_tensor *)((char *)ctx->mem_buffer + obj->offs);
}

struct ggml_tensor *ggml_get_first_tensor(const struct ggml_context *ctx) {
    for (const struct ggml_object *obj = ctx->objects_begin; obj; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TYPE_TENSOR) return tensor_of(ctx, obj);
    }
    return NULL;
}

struct ggml_tensor *ggml_get_next_tensor(const struct ggml_context *ctx, struct ggml_tensor *tensor) {
    const struct ggml_object *obj = (const struct ggml_object *)((char *)tensor - GGML_OBJECT_SIZE);
    for (obj = obj->next; obj; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TYPE_TENSOR) return tensor_of(ctx, obj);
    }
    return NULL;
}

struct ggml_tensor *ggml_get_tensor(struct ggml_context *ctx, const char *name) {
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (strcmp(t->name, name) == 0) return t;
    }
    return NULL;
}

size_t ggml_get_max_tensor_size(const struct ggml_context *ctx) {
    size_t max_size = 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        const size_t bytes = ggml_nbytes(t);
        if (bytes > max_size) max_size = bytes;
    }
    return max_size;
}

size_t ggml_tensor_overhead(void) { return GGML_OBJECT_SIZE + GGML_TENSOR_SIZE; }
