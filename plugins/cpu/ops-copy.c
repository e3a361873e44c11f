/*
 * ops-copy.c - dup, cpy and cont: copies with type conversion between F32,
 * F16, BF16, I32 (and I16/I8), from and to quantized types through the
 * core's reference (de)quantizers, for any layouts and for reshaping
 * copies (cont_4d) that keep the flat element order.
 */
#include "gemm.h" /* the packer's in-register transposes */
#include "ops-ew.h"

/* One row of n elements from src (type st, stride snb) to dst (type dt, stride dnb);
 * quantized rows are contiguous blocks and n a multiple of their block size. */
static void copy_row(char *dst, enum ggml_type dt, size_t dnb, const char *src, enum ggml_type st, size_t snb, int64_t n) {
    if (dt == st && !ggml_is_quantized(st)) {
        ew_copy_same(dst, dnb, src, snb, n, ggml_type_size(st));
        return;
    }
    if (dt == st) { /* quantized, same type: the blocks themselves */
        memcpy(dst, src, ggml_row_size(st, n));
        return;
    }
    float buf[EW_CHUNK]; /* EW_CHUNK is a multiple of every block size (32, 256) */
    for (int64_t off = 0; off < n; off += EW_CHUNK) {
        const int64_t m = n - off < EW_CHUNK ? n - off : EW_CHUNK;
        if (ggml_is_quantized(st))
            ggml_get_type_traits(st)->to_float(src + ggml_row_size(st, off), buf, m);
        else
            ew_load(buf, src + off * snb, st, snb, m);
        if (ggml_is_quantized(dt))
            ggml_get_type_traits(dt)->from_float_ref(buf, dst + ggml_row_size(dt, off), m);
        else
            ew_store(dst + off * dnb, dt, dnb, buf, m);
    }
}

/* Both tensors contiguous and of one type: split the bytes between the tasks. */
static void copy_bytes(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct ggml_tensor *src) {
    int64_t b0, b1;
    cpu_split_range((int64_t)ggml_nbytes(dst), call->ith, call->nth, &b0, &b1);
    if (b1 > b0) memcpy((char *)dst->data + b0, (const char *)src->data + b0, (size_t)(b1 - b0));
}

/* Rows of equal length: row r of src (flat order) becomes row r of dst. */
static void copy_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct ggml_tensor *src) {
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t d1, d2, d3, s1, s2, s3;
        ew_row_coords(ir, dst->ne, &d1, &d2, &d3);
        ew_row_coords(ir, src->ne, &s1, &s2, &s3);
        copy_row(ew_row(dst, d1, d2, d3), dst->type, dst->nb[0], ew_row(src, s1, s2, s3), src->type, src->nb[0], dst->ne[0]);
    }
}

/* 16 x 16 elements: with power-of-two row strides, taller tiles map every source row to
 * the same L1 set (measured: 32 was no faster than row by row, 16 about 1.7x faster). */
#define TILE 16

/* One TILE x TILE (or smaller) tile of a same-type copy, element size es. */
static void copy_tile(char *y, const size_t *dnb, const char *x, const size_t *snb, int64_t n0, int64_t n1, size_t es) {
    for (int64_t i1 = 0; i1 < n1; i1++) {
        char *yr = y + i1 * dnb[1];
        const char *xr = x + i1 * snb[1];
        if (es == 4)
            for (int64_t i0 = 0; i0 < n0; i0++) memcpy(yr + i0 * dnb[0], xr + i0 * snb[0], 4);
        else
            for (int64_t i0 = 0; i0 < n0; i0++) memcpy(yr + i0 * dnb[0], xr + i0 * snb[0], es);
    }
}

/* Same type and shape, src strided along dimension 0 (a transposed or permuted view):
 * going row by row would read one element per cache line; tiles of dimensions 0 and 1
 * keep both sides in cache.  Tasks split the tile rows. */
static void copy_tiled(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct ggml_tensor *src) {
    const size_t es = ggml_type_size(dst->type);
    const int64_t tiles1 = (dst->ne[1] + TILE - 1) / TILE;
    int64_t u0, u1;
    cpu_split_range(tiles1 * dst->ne[2] * dst->ne[3], call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t t1 = u % tiles1, i2 = (u / tiles1) % dst->ne[2], i3 = u / (tiles1 * dst->ne[2]);
        const int64_t i1 = t1 * TILE, n1 = dst->ne[1] - i1 < TILE ? dst->ne[1] - i1 : TILE;
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0 += TILE) {
            const int64_t n0 = dst->ne[0] - i0 < TILE ? dst->ne[0] - i0 : TILE;
            copy_tile(ew_row(dst, i1, i2, i3) + i0 * dst->nb[0], dst->nb, ew_row(src, i1, i2, i3) + i0 * src->nb[0], src->nb, n0, n1, es);
        }
    }
}

/* Columns of a transposed F32 copy per packer call: 16 of them fill a 64-byte line of each dst
 * row, so that the tasks' column blocks never share a line where rows are 64-byte aligned. */
#define T_COLS 16
#define T_DEPTH 256 /* dst rows per packer call: tmp is T_DEPTH x T_COLS floats */

/* A transposed view of F32 (src contiguous along dimension 1, dst along dimension 0, as
 * ggml_cont(ggml_transpose(w)) of autograd's linear and matmul): the GEMM path's packer
 * transposes T_COLS source rows at a time in registers (8 x 8 blocks), and each dst row
 * gets its T_COLS values in one copy.  Element by element (copy_tiled) the 256 x 512
 * transposed weight of the MLP took 151 us on one thread.  False where the path in use has
 * no packer (generic) or the layout differs. */
static bool copy_transposed_f32(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct ggml_tensor *src) {
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    if (!kern->pack_rows || dst->type != GGML_TYPE_F32 || src->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float) ||
        src->nb[1] != sizeof(float))
        return false;
    const int64_t blocks0 = (dst->ne[0] + T_COLS - 1) / T_COLS;
    float tmp[T_DEPTH * T_COLS];
    int64_t u0, u1;
    cpu_split_range(blocks0 * dst->ne[2] * dst->ne[3], call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t i0 = u % blocks0 * T_COLS, i2 = u / blocks0 % dst->ne[2], i3 = u / (blocks0 * dst->ne[2]);
        const int64_t n0 = dst->ne[0] - i0 < T_COLS ? dst->ne[0] - i0 : T_COLS;
        for (int64_t i1 = 0; i1 < dst->ne[1]; i1 += T_DEPTH) {
            const int64_t n1 = dst->ne[1] - i1 < T_DEPTH ? dst->ne[1] - i1 : T_DEPTH;
            kern->pack_rows(GGML_TYPE_F32, ew_row(src, i1, i2, i3) + i0 * src->nb[0], src->nb[0], n0, n1, T_COLS, tmp);
            for (int64_t j = 0; j < n1; j++)
                memcpy(ew_row(dst, i1 + j, i2, i3) + i0 * sizeof(float), tmp + j * T_COLS, (size_t)n0 * sizeof(float));
        }
    }
    return true;
}

/* Rows of different lengths (a reshaping copy): walk src's elements in flat order
 * and dst's coordinates alongside.  Element types only (no blocks). */
static void copy_reshaped(const struct ggmlc_op_call *call, struct ggml_tensor *dst, const struct ggml_tensor *src) {
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(src), call->ith, call->nth, &r0, &r1);
    const size_t es = ggml_type_size(src->type);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t s1, s2, s3, d[4];
        ew_row_coords(ir, src->ne, &s1, &s2, &s3);
        ggml_unravel_index(dst, ir * src->ne[0], &d[0], &d[1], &d[2], &d[3]);
        const char *x = ew_row(src, s1, s2, s3);
        for (int64_t i0 = 0; i0 < src->ne[0]; i0++) {
            char *y = (char *)dst->data + d[0] * dst->nb[0] + d[1] * dst->nb[1] + d[2] * dst->nb[2] + d[3] * dst->nb[3];
            if (dst->type == src->type) {
                memcpy(y, x + i0 * src->nb[0], es);
            } else {
                float v;
                ew_load(&v, x + i0 * src->nb[0], src->type, src->nb[0], 1);
                ew_store(y, dst->type, dst->nb[0], &v, 1);
            }
            for (int k = 0; k < 4 && ++d[k] == dst->ne[k]; k++) d[k] = 0; /* carry into the next dimension */
        }
    }
}

static enum ggml_status compute_copy(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    if (dst->data == src->data && ggml_are_same_shape(dst, src) && ggml_are_same_stride(dst, src) && dst->type == src->type)
        return GGML_STATUS_SUCCESS; /* an in-place dup */
    if (dst->type == src->type && ggml_is_contiguous(dst) && ggml_is_contiguous(src))
        copy_bytes(call, dst, src);
    else if (dst->type == src->type && !ggml_is_quantized(src->type) && ggml_are_same_shape(dst, src) &&
             src->nb[0] != ggml_type_size(src->type)) {
        if (!copy_transposed_f32(call, dst, src)) copy_tiled(call, dst, src);
    }
    else if (dst->ne[0] == src->ne[0])
        copy_rows(call, dst, src);
    else
        copy_reshaped(call, dst, src);
    return GGML_STATUS_SUCCESS;
}

/* Quantized operands need their traits and whole blocks per row. */
static bool copy_type_ok(enum ggml_type type, bool as_dst) {
    if (ew_type_ok(type)) return true;
    if (!ggml_is_quantized(type)) return false;
    const struct ggml_type_traits *tr = ggml_get_type_traits(type);
    return as_dst ? tr->from_float_ref != NULL : tr->to_float != NULL;
}

static bool supports_copy(const struct ggml_tensor *node) {
    const struct ggml_tensor *src = node->src[0];
    if (!src || ggml_nelements(src) != ggml_nelements(node)) return false;
    if (!copy_type_ok(src->type, false) || !copy_type_ok(node->type, true)) return false;
    if (src->type == node->type && ggml_is_contiguous(src) && ggml_is_contiguous(node)) return true;
    if (ggml_is_quantized(src->type) || ggml_is_quantized(node->type)) {
        /* row to row, whole blocks, contiguous blocks on the quantized side(s) */
        const enum ggml_type q = ggml_is_quantized(src->type) ? src->type : node->type;
        return src->ne[0] == node->ne[0] && src->ne[0] % ggml_blck_size(q) == 0 &&
               (!ggml_is_quantized(src->type) || src->nb[0] == ggml_type_size(src->type)) &&
               (!ggml_is_quantized(node->type) || node->nb[0] == ggml_type_size(node->type));
    }
    return true;
}

/* Whole-tensor memcpy splits by bytes; other copies by rows. */
static int tasks_copy(const struct ggml_tensor *node, int n_threads) {
    const int64_t rows = ggml_nrows(node) > ggml_nrows(node->src[0]) ? ggml_nrows(node) : ggml_nrows(node->src[0]);
    if (ggml_nbytes(node) < 65536) return 1;
    return node->type == node->src[0]->type && ggml_is_contiguous(node) && ggml_is_contiguous(node->src[0])
               ? n_threads
               : (rows < n_threads ? (int)rows : n_threads);
}

void cpu_ops_copy_register(struct cpu_op_table *t) {
    const enum ggml_op ops[] = {GGML_OP_DUP, GGML_OP_CPY, GGML_OP_CONT};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        t->compute[ops[i]] = compute_copy;
        t->supports[ops[i]] = supports_copy;
        t->n_tasks[ops[i]] = tasks_copy;
    }
}
