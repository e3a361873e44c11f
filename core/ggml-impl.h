/*
 * ggml-impl.h - private structures and helpers shared by the files of core/.
 * Nothing here is installed; plugins see only include/ (the graph layouts are there, in
 * include/ggml/src/ggml-impl.h, because clients use them).
 */
#ifndef GGML_IMPL_H
#define GGML_IMPL_H

#include <stdarg.h>
#include <string.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "ggmlc-plugin.h"
#include "ggmlc-blocks.h" /* the f16/bf16 converters the core shares with plugins */

#include "hidden.h" /* GGMLC_HIDDEN */

/* struct ggml_cgraph and struct ggml_hash_set: installed, clients read them */
#include "ggml/src/ggml-impl.h"

/* ------------------------------------------------------------ contexts */

/* Header of every object in a context's arena; the payload follows it. */
struct ggml_object {
    size_t offs; /* payload offset from the arena start */
    size_t size; /* payload size, padded to GGML_MEM_ALIGN */
    struct ggml_object *next;
    enum ggml_object_type type;
    char padding[4];
};
#define GGML_OBJECT_SIZE sizeof(struct ggml_object)

struct ggml_context {
    size_t mem_size;
    void  *mem_buffer;
    bool   mem_buffer_owned;
    bool   no_alloc;
    int    n_objects;
    struct ggml_object *objects_begin;
    struct ggml_object *objects_end;
};

/* Reserve an object of size payload bytes; NULL (error recorded) when the arena is full. */
GGMLC_HIDDEN struct ggml_object *ggmlc__new_object(struct ggml_context *ctx, enum ggml_object_type type, size_t size);

/* -------------------------------------------------------------- graphs */

#define GGML_HASHSET_FULL          ((size_t)-1)
#define GGML_HASHSET_ALREADY_EXISTS ((size_t)-2)

GGMLC_HIDDEN size_t ggmlc__hash_size(size_t min_sz);
GGMLC_HIDDEN struct ggml_hash_set ggmlc__hash_set_new(size_t size);
GGMLC_HIDDEN void   ggmlc__hash_set_free(struct ggml_hash_set *hash_set);
GGMLC_HIDDEN void   ggmlc__hash_set_reset(struct ggml_hash_set *hash_set);
/* Slot of key, or GGML_HASHSET_FULL when absent and the set is full. */
GGMLC_HIDDEN size_t ggmlc__hash_find(const struct ggml_hash_set *hash_set, const struct ggml_tensor *key);
GGMLC_HIDDEN bool   ggmlc__hash_contains(const struct ggml_hash_set *hash_set, const struct ggml_tensor *key);
/* Insert key; GGML_HASHSET_ALREADY_EXISTS when present. */
GGMLC_HIDDEN size_t ggmlc__hash_insert(struct ggml_hash_set *hash_set, struct ggml_tensor *key);
/* Slot of key, inserting it when absent. */
GGMLC_HIDDEN size_t ggmlc__hash_find_or_insert(struct ggml_hash_set *hash_set, struct ggml_tensor *key);
/* ggmlc__hash_find_or_insert that also tells whether key was absent (*inserted), so that data kept
 * per slot can be reset when a key first claims it rather than all of it for every graph. */
GGMLC_HIDDEN size_t ggmlc__hash_claim(struct ggml_hash_set *hash_set, struct ggml_tensor *key,
                                     bool *inserted);

/* True when g can be computed; false with an error naming who when building it lost a node
 * (see incomplete), so that a compute fails instead of silently skipping part of the graph. */
GGMLC_HIDDEN bool ggmlc__graph_complete(const struct ggml_cgraph *g, const char *who);
/* Whether every tensor of g is in a live buffer (or none); false with an error naming who and
 * the tensor otherwise.  Run after allocation: the scheduler reassigns its own tensors. */
GGMLC_HIDDEN bool ggmlc__graph_buffers_live(const struct ggml_cgraph *g, const char *who);
/* False, with an error naming who and the tensor, when tensor's storage is a freed buffer. */
GGMLC_HIDDEN bool ggmlc__tensor_buffer_live(const char *who, const struct ggml_tensor *tensor);

/* A view of nodes [i0, i1) of cgraph sharing its arrays (for backends computing segments). */
GGMLC_HIDDEN struct ggml_cgraph ggmlc__graph_view(struct ggml_cgraph *cgraph, int i0, int i1);

/* ----------------------------------------------------- op construction
 * Every operator constructor follows the same pattern:
 *
 *     GGMLC_CHECK_SRC(a); GGMLC_CHECK_SRC(b);           // NULL operands -> NULL
 *     if (!ggml_can_repeat(b, a))
 *         return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "cannot broadcast %s to %s", ...);
 *     struct ggml_tensor *r = inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
 *     GGMLC_CHECK_SRC(r);                               // arena full -> NULL
 *     ggmlc__node_set(r, GGML_OP_ADD, a, b, NULL);
 */

#define GGMLC_CHECK_SRC(t) do { if ((t) == NULL) return NULL; } while (0)

/* Record and log one error for constructor `func`; returns NULL for tail calls. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__op_fail(enum ggmlc_status status, const char *func, const char *fmt, ...)
    GGML_ATTRIBUTE_FORMAT(3, 4);
/* "[4, 3, 2, 1] f32" into buf (at least GGMLC_SHAPE_STR bytes); returns buf. */
#define GGMLC_SHAPE_STR 96
GGMLC_HIDDEN const char *ggmlc__shape_str(const struct ggml_tensor *t, char *buf);
/* ggmlc__op_fail(status, func, "<reason> (<shape of a> and <shape of b>)"); returns NULL. */
static inline struct ggml_tensor *ggmlc_op_fail_shapes(enum ggmlc_status status, const char *func, const char *reason,
                                                       const struct ggml_tensor *a, const struct ggml_tensor *b) {
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    return ggmlc__op_fail(status, func, "%s (%s and %s)", reason, ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
}

/* A node of the given type and shape (n_dims 1..4) with no operator yet. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__new_node(struct ggml_context *ctx, enum ggml_type type, int n_dims, const int64_t *ne);
/* An in-place result: a view of a (same shape) that the operator will overwrite. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__view_node(struct ggml_context *ctx, struct ggml_tensor *a);
/* Set the operator and up to three sources (further sources: assign t->src[i] directly). */
GGMLC_HIDDEN void ggmlc__node_set(struct ggml_tensor *t, enum ggml_op op,
                                 struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c);

/* Operator parameters (op_params), as raw bytes, int32 or f32 slots. */
GGMLC_HIDDEN void    ggmlc__set_op_params(struct ggml_tensor *t, const void *params, size_t size);
GGMLC_HIDDEN int32_t ggmlc__get_op_params_i32(const struct ggml_tensor *t, int i);
GGMLC_HIDDEN void    ggmlc__set_op_params_i32(struct ggml_tensor *t, int i, int32_t value);
GGMLC_HIDDEN float   ggmlc__get_op_params_f32(const struct ggml_tensor *t, int i);
GGMLC_HIDDEN void    ggmlc__set_op_params_f32(struct ggml_tensor *t, int i, float value);

/* True for F32, F16, BF16. */
GGMLC_HIDDEN bool ggmlc__is_float_type(enum ggml_type type);
/* True when type is a valid, non-removed type id. */
GGMLC_HIDDEN bool ggmlc__type_is_valid(enum ggml_type type);

/* ------------------------------------------------------------- logging */

GGMLC_HIDDEN void ggmlc__log_internal(enum ggml_log_level level, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(2, 3);
GGMLC_HIDDEN void ggmlc__log_internal_v(enum ggml_log_level level, const char *fmt, va_list args);
#define GGMLC_LOG_DEBUG(...) ggmlc__log_internal(GGML_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define GGMLC_LOG_INFO(...)  ggmlc__log_internal(GGML_LOG_LEVEL_INFO, __VA_ARGS__)
#define GGMLC_LOG_WARN(...)  ggmlc__log_internal(GGML_LOG_LEVEL_WARN, __VA_ARGS__)
#define GGMLC_LOG_ERROR(...) ggmlc__log_internal(GGML_LOG_LEVEL_ERROR, __VA_ARGS__)

/* While quiet, ggmlc_set_error on the calling thread records without logging (the plugin
 * loader reports a failing plugin's own error once, in its own message). */
GGMLC_HIDDEN void ggmlc__errors_quiet(bool quiet);

#endif /* GGML_IMPL_H */
