/*
 * tensor.c - tensor creation, shape queries, views and the helpers that
 * operator constructors build nodes with.
 */
#include <stdio.h>

#include "ggml-impl.h"

/* ------------------------------------------------------------- creation */

/* Bytes of a contiguous tensor of this shape, or SIZE_MAX on overflow. */
static size_t contiguous_nbytes(enum ggml_type type, const int64_t ne[GGML_MAX_DIMS]) {
    size_t n = ggml_row_size(type, ne[0]);
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        if (ne[i] != 0 && n > SIZE_MAX / (size_t)ne[i]) return SIZE_MAX;
        n *= (size_t)ne[i];
    }
    return n;
}

/* A tensor with contiguous strides; with view_src it shares view_src's storage at
 * view_offs (callers that set other strides check the bounds themselves). */
static struct ggml_tensor *new_tensor_impl(struct ggml_context *ctx, enum ggml_type type, int n_dims,
                                           const int64_t *ne, struct ggml_tensor *view_src, size_t view_offs) {
    if (!ctx) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, "ggml_new_tensor", "NULL context");
    if (!ggmlc__type_is_valid(type)) return ggmlc__op_fail(GGMLC_ERR_TYPE, "ggml_new_tensor", "invalid type id %d", (int)type);
    if (n_dims < 1 || n_dims > GGML_MAX_DIMS)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_new_tensor", "n_dims = %d, must be 1..%d", n_dims, GGML_MAX_DIMS);

    int64_t shape[GGML_MAX_DIMS] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 0) return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_new_tensor", "negative size ne[%d] = %lld", i, (long long)ne[i]);
        shape[i] = ne[i];
    }
    if (shape[0] % ggml_blck_size(type) != 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_new_tensor", "ne[0] = %lld is not a multiple of the %s block size %lld",
                             (long long)shape[0], ggml_type_name(type), (long long)ggml_blck_size(type));
    const size_t data_size = contiguous_nbytes(type, shape);
    if (data_size == SIZE_MAX) return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_new_tensor", "tensor size overflows");

    if (view_src && view_src->view_src) { /* views of views point at the storage owner */
        view_offs += view_src->view_offs;
        view_src = view_src->view_src;
    }

    void *data = view_src && view_src->data ? (char *)view_src->data + view_offs : NULL;
    const bool own_data = !view_src && !ctx->no_alloc;
    struct ggml_object *obj = ggmlc__new_object(ctx, GGML_OBJECT_TYPE_TENSOR, GGML_TENSOR_SIZE + (own_data ? data_size : 0));
    if (!obj) return NULL;

    struct ggml_tensor *t = (struct ggml_tensor *)((char *)ctx->mem_buffer + obj->offs);
    *t = (struct ggml_tensor){
        .type = type,
        .buffer = view_src ? view_src->buffer : NULL,
        .op = GGML_OP_NONE,
        .view_src = view_src,
        .view_offs = view_offs,
        .data = own_data ? (void *)(t + 1) : data,
    };
    for (int i = 0; i < GGML_MAX_DIMS; i++) t->ne[i] = shape[i];
    t->nb[0] = ggml_type_size(type);
    t->nb[1] = t->nb[0] * (size_t)(t->ne[0] / ggml_blck_size(type));
    for (int i = 2; i < GGML_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
    return t;
}

struct ggml_tensor *ggml_new_tensor(struct ggml_context *ctx, enum ggml_type type, int n_dims, const int64_t *ne) {
    return new_tensor_impl(ctx, type, n_dims, ne, NULL, 0);
}

struct ggml_tensor *ggml_new_tensor_1d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0) {
    return ggml_new_tensor(ctx, type, 1, (int64_t[]){ne0});
}

struct ggml_tensor *ggml_new_tensor_2d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1) {
    return ggml_new_tensor(ctx, type, 2, (int64_t[]){ne0, ne1});
}

struct ggml_tensor *ggml_new_tensor_3d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    return ggml_new_tensor(ctx, type, 3, (int64_t[]){ne0, ne1, ne2});
}

struct ggml_tensor *ggml_new_tensor_4d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return ggml_new_tensor(ctx, type, 4, (int64_t[]){ne0, ne1, ne2, ne3});
}

struct ggml_tensor *ggml_dup_tensor(struct ggml_context *ctx, const struct ggml_tensor *src) {
    GGMLC_CHECK_SRC(src);
    return ggml_new_tensor(ctx, src->type, GGML_MAX_DIMS, src->ne);
}

struct ggml_tensor *ggml_view_tensor(struct ggml_context *ctx, struct ggml_tensor *src) {
    GGMLC_CHECK_SRC(src);
    struct ggml_tensor *t = new_tensor_impl(ctx, src->type, GGML_MAX_DIMS, src->ne, src, 0);
    GGMLC_CHECK_SRC(t);
    ggml_format_name(t, "%s (view)", src->name);
    for (int i = 0; i < GGML_MAX_DIMS; i++) t->nb[i] = src->nb[i];
    return t;
}

/* ------------------------------------------------------- node helpers */

struct ggml_tensor *ggmlc__new_node(struct ggml_context *ctx, enum ggml_type type, int n_dims, const int64_t *ne) {
    return ggml_new_tensor(ctx, type, n_dims, ne);
}

struct ggml_tensor *ggmlc__view_node(struct ggml_context *ctx, struct ggml_tensor *a) {
    return ggml_view_tensor(ctx, a);
}

void ggmlc__node_set(struct ggml_tensor *t, enum ggml_op op, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c) {
    t->op = op;
    t->src[0] = a;
    t->src[1] = b;
    t->src[2] = c;
}

void ggmlc__set_op_params(struct ggml_tensor *t, const void *params, size_t size) {
    GGML_ASSERT(size <= GGML_MAX_OP_PARAMS);
    memcpy(t->op_params, params, size);
}

int32_t ggmlc__get_op_params_i32(const struct ggml_tensor *t, int i) { return t->op_params[i]; }
void ggmlc__set_op_params_i32(struct ggml_tensor *t, int i, int32_t value) { t->op_params[i] = value; }

float ggmlc__get_op_params_f32(const struct ggml_tensor *t, int i) {
    float f;
    memcpy(&f, &t->op_params[i], sizeof f);
    return f;
}

void ggmlc__set_op_params_f32(struct ggml_tensor *t, int i, float value) { memcpy(&t->op_params[i], &value, sizeof value); }

const char *ggmlc__shape_str(const struct ggml_tensor *t, char *buf) {
    if (!t) {
        snprintf(buf, GGMLC_SHAPE_STR, "(null)");
    } else {
        snprintf(buf, GGMLC_SHAPE_STR, "[%lld, %lld, %lld, %lld] %s", (long long)t->ne[0], (long long)t->ne[1],
                 (long long)t->ne[2], (long long)t->ne[3], ggml_type_name(t->type));
    }
    return buf;
}

/* ------------------------------------------------------------- queries */

int64_t ggml_nelements(const struct ggml_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }
int64_t ggml_nrows(const struct ggml_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

size_t ggml_nbytes(const struct ggml_tensor *t) {
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] <= 0) return 0;
    }
    const size_t blck = (size_t)ggml_blck_size(t->type);
    size_t nbytes;
    if (blck == 1) {
        nbytes = ggml_type_size(t->type);
        for (int i = 0; i < GGML_MAX_DIMS; i++) nbytes += (size_t)(t->ne[i] - 1) * t->nb[i];
    } else {
        nbytes = (size_t)t->ne[0] * t->nb[0] / blck;
        for (int i = 1; i < GGML_MAX_DIMS; i++) nbytes += (size_t)(t->ne[i] - 1) * t->nb[i];
    }
    return nbytes;
}

size_t ggml_nbytes_pad(const struct ggml_tensor *t) { return GGML_PAD(ggml_nbytes(t), GGML_MEM_ALIGN); }
size_t ggml_element_size(const struct ggml_tensor *t) { return ggml_type_size(t->type); }

bool ggml_is_transposed(const struct ggml_tensor *t) { return t->nb[0] > t->nb[1]; }

bool ggml_is_permuted(const struct ggml_tensor *t) {
    return t->nb[0] > t->nb[1] || t->nb[1] > t->nb[2] || t->nb[2] > t->nb[3];
}

bool ggml_is_view(const struct ggml_tensor *t) { return t && t->view_src != NULL; }

bool ggml_is_empty(const struct ggml_tensor *t) {
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] == 0) return true;
    }
    return false;
}

bool ggml_is_scalar(const struct ggml_tensor *t) { return t->ne[0] == 1 && t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1; }
bool ggml_is_vector(const struct ggml_tensor *t) { return t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1; }
bool ggml_is_matrix(const struct ggml_tensor *t) { return t->ne[2] == 1 && t->ne[3] == 1; }
bool ggml_is_3d(const struct ggml_tensor *t) { return t->ne[3] == 1; }

int ggml_n_dims(const struct ggml_tensor *t) {
    for (int i = GGML_MAX_DIMS - 1; i >= 1; i--) {
        if (t->ne[i] > 1) return i + 1;
    }
    return 1;
}

/* Contiguous in dimensions >= n: rows below n may be strided. */
static bool is_contiguous_n(const struct ggml_tensor *t, int n) {
    size_t next_nb = ggml_type_size(t->type);
    if (t->ne[0] != ggml_blck_size(t->type) && t->nb[0] != next_nb) return false;
    next_nb *= (size_t)(t->ne[0] / ggml_blck_size(t->type));
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] != 1) {
            if (i > n) {
                if (t->nb[i] != next_nb) return false;
                next_nb *= (size_t)t->ne[i];
            } else {
                next_nb = (size_t)t->ne[i] * t->nb[i];
            }
        }
    }
    return true;
}

bool ggml_is_contiguous(const struct ggml_tensor *t) { return is_contiguous_n(t, 0); }
bool ggml_is_contiguous_0(const struct ggml_tensor *t) { return is_contiguous_n(t, 0); }
bool ggml_is_contiguous_1(const struct ggml_tensor *t) { return is_contiguous_n(t, 1); }
bool ggml_is_contiguous_2(const struct ggml_tensor *t) { return is_contiguous_n(t, 2); }

/* Dimensions below n are packed (dims of size 1 may have any stride). */
static bool is_contiguous_below(const struct ggml_tensor *t, int n) {
    size_t next_nb = ggml_type_size(t->type);
    if (t->ne[0] != ggml_blck_size(t->type) && t->nb[0] != next_nb) return false;
    next_nb *= (size_t)(t->ne[0] / ggml_blck_size(t->type));
    for (int i = 1; i < n; i++) {
        if (t->ne[i] != 1 && t->nb[i] != next_nb) return false;
        next_nb *= (size_t)t->ne[i];
    }
    return true;
}

bool ggml_is_contiguous_to_1(const struct ggml_tensor *t) { return is_contiguous_below(t, 1); }
bool ggml_is_contiguous_to_2(const struct ggml_tensor *t) { return is_contiguous_below(t, 2); }
bool ggml_is_contiguous_to_3(const struct ggml_tensor *t) { return is_contiguous_below(t, 3); }

bool ggml_is_contiguously_allocated(const struct ggml_tensor *t) {
    return ggml_nbytes(t) == (size_t)ggml_nelements(t) * ggml_type_size(t->type) / (size_t)ggml_blck_size(t->type);
}

bool ggml_is_contiguous_channels(const struct ggml_tensor *t) {
    return t->nb[0] > t->nb[2] && t->nb[1] > t->nb[0] && t->nb[2] == ggml_type_size(t->type);
}

bool ggml_is_contiguous_rows(const struct ggml_tensor *t) {
    return t->ne[0] == ggml_blck_size(t->type) || t->nb[0] == ggml_type_size(t->type);
}

bool ggml_are_same_shape(const struct ggml_tensor *t0, const struct ggml_tensor *t1) {
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t0->ne[i] != t1->ne[i]) return false;
    }
    return true;
}

bool ggml_are_same_stride(const struct ggml_tensor *t0, const struct ggml_tensor *t1) {
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t0->nb[i] != t1->nb[i]) return false;
    }
    return true;
}

bool ggml_can_repeat(const struct ggml_tensor *t0, const struct ggml_tensor *t1) {
    if (ggml_is_empty(t0)) return ggml_is_empty(t1);
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t1->ne[i] % t0->ne[i] != 0) return false;
    }
    return true;
}

void ggml_unravel_index(const struct ggml_tensor *t, int64_t i, int64_t *i0, int64_t *i1, int64_t *i2, int64_t *i3) {
    const int64_t ne0 = t->ne[0], ne1 = t->ne[1], ne2 = t->ne[2];
    const int64_t j3 = i / (ne2 * ne1 * ne0);
    const int64_t j2 = (i - j3 * ne2 * ne1 * ne0) / (ne1 * ne0);
    const int64_t j1 = (i - j3 * ne2 * ne1 * ne0 - j2 * ne1 * ne0) / ne0;
    const int64_t j0 = i - j3 * ne2 * ne1 * ne0 - j2 * ne1 * ne0 - j1 * ne0;
    if (i0) *i0 = j0;
    if (i1) *i1 = j1;
    if (i2) *i2 = j2;
    if (i3) *i3 = j3;
}

enum ggml_unary_op ggml_get_unary_op(const struct ggml_tensor *t) { return (enum ggml_unary_op)t->op_params[0]; }
enum ggml_glu_op ggml_get_glu_op(const struct ggml_tensor *t) { return (enum ggml_glu_op)t->op_params[0]; }

void *ggml_get_data(const struct ggml_tensor *t) { return t->data; }
float *ggml_get_data_f32(const struct ggml_tensor *t) { return t->type == GGML_TYPE_F32 ? (float *)t->data : NULL; }

/* -------------------------------------------------------- names, flags */

const char *ggml_get_name(const struct ggml_tensor *t) { return t->name; }

struct ggml_tensor *ggml_set_name(struct ggml_tensor *t, const char *name) {
    if (!t) return NULL;
    size_t i;
    for (i = 0; i < sizeof t->name - 1 && name[i]; i++) t->name[i] = name[i];
    t->name[i] = '\0';
    return t;
}

struct ggml_tensor *ggml_format_name(struct ggml_tensor *t, const char *fmt, ...) {
    if (!t) return NULL;
    va_list args;
    va_start(args, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, args);
    va_end(args);
    return t;
}

void ggml_set_input(struct ggml_tensor *t) { t->flags |= GGML_TENSOR_FLAG_INPUT; }
void ggml_set_output(struct ggml_tensor *t) { t->flags |= GGML_TENSOR_FLAG_OUTPUT; }
void ggml_set_param(struct ggml_tensor *t) { t->flags |= GGML_TENSOR_FLAG_PARAM; }
/* ggml requires a scalar F32 loss; ggmlc refuses another instead of seeding every element
 * with 1 (an implicit sum the caller did not ask for). */
void ggml_set_loss(struct ggml_tensor *t) {
    if (!t) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_set_loss: NULL tensor");
        return;
    }
    char shape[GGMLC_SHAPE_STR];
    if (!ggml_is_scalar(t)) {
        ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "ggml_set_loss: tensor '%s' has shape %s; a loss must be a scalar (reduce it with "
            "ggml_sum or ggml_mean)",
            t->name, ggmlc__shape_str(t, shape));
        return;
    }
    if (t->type != GGML_TYPE_F32) {
        ggmlc_set_error(GGMLC_ERR_TYPE, "ggml_set_loss: tensor '%s' is %s; a loss must be F32",
                        t->name, ggml_type_name(t->type));
        return;
    }
    t->flags |= GGML_TENSOR_FLAG_LOSS;
}

/* --------------------------------------------------------------- views */

static struct ggml_tensor *view_impl(struct ggml_context *ctx, struct ggml_tensor *a, int n_dims, const int64_t *ne,
                                     const size_t *nb, size_t offset) {
    GGMLC_CHECK_SRC(a);
    int64_t shape[GGML_MAX_DIMS] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) shape[i] = ne[i];
    /* extent of the view in bytes with the requested strides */
    size_t extent = 0;
    if (shape[0] > 0 && shape[1] > 0 && shape[2] > 0 && shape[3] > 0) {
        extent = ggml_row_size(a->type, shape[0]);
        for (int i = 1; i < GGML_MAX_DIMS; i++) extent += (size_t)(shape[i] - 1) * (i < n_dims ? nb[i] : 0);
    }
    if (offset + extent > ggml_nbytes(a)) {
        char sa[GGMLC_SHAPE_STR];
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_view", "view of %zu bytes at offset %zu is outside %s (%zu bytes)",
                             extent, offset, ggmlc__shape_str(a, sa), ggml_nbytes(a));
    }
    struct ggml_tensor *t = new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, shape, a, offset);
    GGMLC_CHECK_SRC(t);
    for (int i = 1; i < n_dims; i++) t->nb[i] = nb[i];
    for (int i = n_dims; i < GGML_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
    ggml_format_name(t, "%s (view)", a->name);
    ggmlc__node_set(t, GGML_OP_VIEW, a, NULL, NULL);
    ggmlc__set_op_params(t, &offset, sizeof offset);
    return t;
}

struct ggml_tensor *ggml_view_1d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, size_t offset) {
    return view_impl(ctx, a, 1, (int64_t[]){ne0}, (size_t[]){0}, offset);
}

struct ggml_tensor *ggml_view_2d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
    return view_impl(ctx, a, 2, (int64_t[]){ne0, ne1}, (size_t[]){0, nb1}, offset);
}

struct ggml_tensor *ggml_view_3d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2,
                                 size_t nb1, size_t nb2, size_t offset) {
    return view_impl(ctx, a, 3, (int64_t[]){ne0, ne1, ne2}, (size_t[]){0, nb1, nb2}, offset);
}

struct ggml_tensor *ggml_view_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                                 size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return view_impl(ctx, a, 4, (int64_t[]){ne0, ne1, ne2, ne3}, (size_t[]){0, nb1, nb2, nb3}, offset);
}

static struct ggml_tensor *reshape_impl(struct ggml_context *ctx, struct ggml_tensor *a, int n_dims, const int64_t *ne) {
    GGMLC_CHECK_SRC(a);
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) n *= ne[i];
    char sa[GGMLC_SHAPE_STR];
    if (!ggml_is_contiguous(a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_reshape", "%s is not contiguous (use ggml_cont first)", ggmlc__shape_str(a, sa));
    if (n != ggml_nelements(a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, "ggml_reshape", "cannot reshape %s (%lld elements) to %lld elements",
                             ggmlc__shape_str(a, sa), (long long)ggml_nelements(a), (long long)n);
    struct ggml_tensor *t = new_tensor_impl(ctx, a->type, n_dims, ne, a, 0);
    GGMLC_CHECK_SRC(t);
    ggml_format_name(t, "%s (reshaped)", a->name);
    ggmlc__node_set(t, GGML_OP_RESHAPE, a, NULL, NULL);
    return t;
}

struct ggml_tensor *ggml_reshape(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(b);
    return reshape_impl(ctx, a, GGML_MAX_DIMS, b->ne);
}

struct ggml_tensor *ggml_reshape_1d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0) {
    return reshape_impl(ctx, a, 1, (int64_t[]){ne0});
}

struct ggml_tensor *ggml_reshape_2d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1) {
    return reshape_impl(ctx, a, 2, (int64_t[]){ne0, ne1});
}

struct ggml_tensor *ggml_reshape_3d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2) {
    return reshape_impl(ctx, a, 3, (int64_t[]){ne0, ne1, ne2});
}

struct ggml_tensor *ggml_reshape_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return reshape_impl(ctx, a, 4, (int64_t[]){ne0, ne1, ne2, ne3});
}

struct ggml_tensor *ggml_permute(struct ggml_context *ctx, struct ggml_tensor *a, int axis0, int axis1, int axis2, int axis3) {
    GGMLC_CHECK_SRC(a);
    const int axes[GGML_MAX_DIMS] = {axis0, axis1, axis2, axis3};
    bool seen[GGML_MAX_DIMS] = {false};
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (axes[i] < 0 || axes[i] >= GGML_MAX_DIMS || seen[axes[i]])
            return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, "ggml_permute", "axes (%d, %d, %d, %d) are not a permutation of 0..3",
                                 axis0, axis1, axis2, axis3);
        seen[axes[i]] = true;
    }
    struct ggml_tensor *t = ggml_view_tensor(ctx, a);
    GGMLC_CHECK_SRC(t);
    ggml_format_name(t, "%s (permuted)", a->name);
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[axes[i]] = a->ne[i];
        t->nb[axes[i]] = a->nb[i];
    }
    ggmlc__node_set(t, GGML_OP_PERMUTE, a, NULL, NULL);
    ggmlc__set_op_params(t, axes, sizeof axes);
    return t;
}

struct ggml_tensor *ggml_transpose(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    struct ggml_tensor *t = ggml_view_tensor(ctx, a);
    GGMLC_CHECK_SRC(t);
    ggml_format_name(t, "%s (transposed)", a->name);
    t->ne[0] = a->ne[1];
    t->ne[1] = a->ne[0];
    t->nb[0] = a->nb[1];
    t->nb[1] = a->nb[0];
    ggmlc__node_set(t, GGML_OP_TRANSPOSE, a, NULL, NULL);
    return t;
}
