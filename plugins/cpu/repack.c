/*
 * repack.c - the CPU_REPACK buffer type (repack.h): its buffers, the
 * translation between ggml's block layouts and the packed ones, which nodes
 * may read such tensors, and the portable kernel (the block models of
 * quant-match.c over the packed bytes; the SIMD kernels of repack-x86.c must
 * reproduce it exactly).
 */
#include <stdlib.h>
#include <string.h>

#include "ggmlc-blocks.h"
#include "quant-match.h"
#include "repack.h"

#define REPACK_ALIGNMENT 64

static ggml_backend_buffer_type_t repack_buft;

/* ------------------------------------------------------------ which tensors */

static ggml_backend_buffer_t storage_buffer(const struct ggml_tensor *t) {
    return t->view_src ? t->view_src->buffer : t->buffer;
}

bool cpu_repack_in_buffer(const struct ggml_tensor *t) {
    const ggml_backend_buffer_t buf = t ? storage_buffer(t) : NULL;
    return buf && repack_buft && ggml_backend_buffer_get_type(buf) == repack_buft;
}

/* ------------------------------------------------------------------ layouts */

/* A field of a type's block (repack.h): at byte `at`, `size` bytes, interleaved in units. */
struct repack_field {
    uint8_t at, size, unit;
};

struct repack_layout {
    enum ggml_type type;
    size_t block_size;
    struct repack_field fields[4]; /* in order, covering the block; size 0 ends them */
};

static const struct repack_layout layouts[] = {
    {GGML_TYPE_Q4_0, sizeof(block_q4_0), {{0, 2, 2}, {2, 16, 4}}},
    {GGML_TYPE_IQ4_NL, sizeof(block_iq4_nl), {{0, 2, 2}, {2, 16, 4}}},
    {GGML_TYPE_MXFP4, sizeof(block_mxfp4), {{0, 1, 1}, {1, 16, 4}}},
    {GGML_TYPE_Q4_K, sizeof(block_q4_K), {{0, 2, 2}, {2, 2, 2}, {4, 12, 4}, {16, 128, 4}}},
    {GGML_TYPE_Q2_K, sizeof(block_q2_K), {{0, 16, 4}, {16, 64, 4}, {80, 2, 2}, {82, 2, 2}}},
};

/* The layout of a type this CPU packs (ggml repacks Q2_K only in builds for AVX-512). */
static const struct repack_layout *layout_of(enum ggml_type type) {
    if (!cpu_qmatch_serial_type(type)) return NULL;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].type == type) return &layouts[i];
    return NULL;
}

size_t cpu_repack_group_block(enum ggml_type type) {
    const struct repack_layout *l = layout_of(type);
    return l ? CPU_REPACK_ROWS * l->block_size : 0;
}

/* Where byte k of row r's block lies in its group's block; *unit_end: the end (in the row's
 * block) of the unit holding k, up to which the bytes follow each other. */
static size_t byte_in_group_block(const struct repack_layout *l, size_t k, size_t r,
                                  size_t *unit_end) {
    const struct repack_field *f = l->fields;
    while (k >= (size_t)f->at + f->size) f++;
    const size_t j = k - f->at, unit_start = j - j % f->unit;
    *unit_end = f->at + unit_start + f->unit;
    return CPU_REPACK_ROWS * (f->at + unit_start) + f->unit * r + j % f->unit;
}

/* Whether a tensor of this type and shape is stored packed in a CPU_REPACK buffer. */
static bool packable(const struct ggml_tensor *t) {
    return layout_of(t->type) && t->ne[1] % CPU_REPACK_ROWS == 0 && t->ne[3] == 1 &&
           ggml_is_contiguous(t);
}

bool cpu_repack_is_packed(const struct ggml_tensor *t) { return t && !t->view_src && cpu_repack_in_buffer(t) && packable(t); }

bool cpu_repack_node_supported(const struct ggml_tensor *node) {
    bool reads_packed = false;
    for (int i = 0; i < GGML_MAX_SRC; i++) reads_packed |= cpu_repack_in_buffer(node->src[i]);
    if (!reads_packed && !cpu_repack_in_buffer(node)) return true;
    const struct ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    /* MUL_MAT of a matrix, MUL_MAT_ID of a stack of experts (as ggml's buffer takes them) */
    const bool op_ok = node->op == GGML_OP_MUL_MAT ? a->ne[2] == 1 : node->op == GGML_OP_MUL_MAT_ID;
    if (!op_ok || cpu_repack_in_buffer(node) || !cpu_repack_is_packed(a)) return false;
    if (ids && cpu_repack_in_buffer(ids)) return false;
    const ggml_backend_buffer_t bbuf = storage_buffer(b);
    return b->type == GGML_TYPE_F32 && !cpu_repack_in_buffer(b) && (!bbuf || ggml_backend_buffer_is_host(bbuf));
}

/* ---------------------------------------------------------------- transfers */

enum transfer { TRANSFER_SET, TRANSFER_GET, TRANSFER_MEMSET };

/* n bytes: the units' sizes inline (a model's load moves every weight a unit at a time). */
static inline void copy_run(char *dst, const char *src, size_t n) {
    switch (n) {
    case 4: memcpy(dst, src, 4); break;
    case 2: memcpy(dst, src, 2); break;
    default: memcpy(dst, src, n);
    }
}

/* Bytes [o, o + n) of ggml's layout of the packed tensor at packed (nb blocks a row, layout
 * l): written from host (SET), read into host (GET) or set to v (MEMSET), a unit's run of
 * bytes at a time. */
static void transfer_packed(const struct repack_layout *l, char *packed, int64_t nb, size_t o,
                            size_t n, char *host, enum transfer dir, uint8_t v) {
    const size_t bs = l->block_size, row_size = (size_t)nb * bs, end = o + n;
    while (o < end) { /* a row's block (or the part of it in range) per pass */
        const size_t row = o / row_size, in_row = o % row_size, b = in_row / bs;
        char *blk = packed + ((row / CPU_REPACK_ROWS) * (size_t)nb + b) * CPU_REPACK_ROWS * bs;
        for (size_t k = in_row % bs; k < bs && o < end;) { /* a unit's run of bytes per step */
            size_t unit_end;
            char *p = blk + byte_in_group_block(l, k, row % CPU_REPACK_ROWS, &unit_end);
            const size_t run = unit_end - k < end - o ? unit_end - k : end - o;
            if (dir == TRANSFER_SET)
                copy_run(p, host, run);
            else if (dir == TRANSFER_GET)
                copy_run(host, p, run);
            else
                memset(p, v, run);
            if (host) host += run;
            o += run;
            k += run;
        }
    }
}

/* A transfer of bytes [offset, offset + size) of tensor t (or view) in ggml's layout. */
static void transfer(const struct ggml_tensor *t, size_t offset, size_t size, char *host, enum transfer dir, uint8_t v) {
    const struct ggml_tensor *base = t->view_src ? t->view_src : t;
    if (!packable(base)) {
        char *p = (char *)t->data + offset;
        if (dir == TRANSFER_SET) memcpy(p, host, size);
        else if (dir == TRANSFER_GET) memcpy(host, p, size);
        else memset(p, v, size);
        return;
    }
    const struct repack_layout *l = layout_of(base->type);
    const size_t o = (t->view_src ? t->view_offs : 0) + offset;
    transfer_packed(l, base->data, base->ne[0] / ggml_blck_size(base->type), o, size, host, dir, v);
}

/* ----------------------------------------------------------------- buffers */

static void buffer_free(ggml_backend_buffer_t buffer) { free(ggmlc_buffer_context(buffer)); }
static void *buffer_base(ggml_backend_buffer_t buffer) { return ggmlc_buffer_context(buffer); }

static enum ggml_status buffer_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *t, uint8_t v, size_t off,
                                             size_t n) {
    transfer(t, off, n, NULL, TRANSFER_MEMSET, v);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status buffer_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *t, const void *data, size_t off,
                                          size_t n) {
    transfer(t, off, n, (char *)data, TRANSFER_SET, 0);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status buffer_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor *t, void *data, size_t off,
                                          size_t n) {
    transfer(t, off, n, data, TRANSFER_GET, 0);
    return GGML_STATUS_SUCCESS;
}

/* From host memory: a set_tensor of the whole tensor.  Otherwise false (the core then
 * stages the copy through get_tensor and set_tensor). */
static bool buffer_cpy_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor *src, struct ggml_tensor *dst) {
    const ggml_backend_buffer_t sbuf = storage_buffer(src);
    if ((sbuf && !ggml_backend_buffer_is_host(sbuf)) || ggml_nbytes(src) != ggml_nbytes(dst)) return false;
    transfer(dst, 0, ggml_nbytes(dst), src->data, TRANSFER_SET, 0);
    return true;
}

/* Every byte the same value: the same in either layout. */
static void buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    memset(ggmlc_buffer_context(buffer), value, ggml_backend_buffer_get_size(buffer));
}

static const struct ggmlc_buffer_iface repack_buffer_iface = {
    .struct_size = sizeof(struct ggmlc_buffer_iface),
    .free_buffer = buffer_free,
    .get_base = buffer_base,
    .memset_tensor = buffer_memset_tensor,
    .set_tensor = buffer_set_tensor,
    .get_tensor = buffer_get_tensor,
    .cpy_tensor = buffer_cpy_tensor,
    .clear = buffer_clear,
};

static const char *buft_name(ggml_backend_buffer_type_t buft) { return "CPU_REPACK"; }
static size_t buft_alignment(ggml_backend_buffer_type_t buft) { return REPACK_ALIGNMENT; }

static ggml_backend_buffer_t buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    if (size > SIZE_MAX - REPACK_ALIGNMENT) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU_REPACK buffer: %zu bytes cannot be allocated", size);
        return NULL;
    }
    void *mem = aligned_alloc(REPACK_ALIGNMENT, GGML_PAD(size, REPACK_ALIGNMENT));
    if (!mem) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU_REPACK buffer: cannot allocate %zu bytes", size);
        return NULL;
    }
    ggml_backend_buffer_t buffer = ggmlc_buffer_new(buft, &repack_buffer_iface, mem, size);
    if (!buffer) free(mem);
    return buffer;
}

/* Not host memory as ggml means it: the bytes of packed tensors are not in ggml's layout. */
static const struct ggmlc_buft_iface repack_buft_iface = {
    .struct_size = sizeof(struct ggmlc_buft_iface),
    .get_name = buft_name,
    .alloc_buffer = buft_alloc,
    .get_alignment = buft_alignment,
};

static ggml_backend_buffer_type_t extra_bufts[2]; /* {repack_buft, NULL}, set once at plugin init */

ggml_backend_buffer_type_t cpu_repack_buft_create(ggml_backend_dev_t dev) {
    repack_buft = ggmlc_buft_new(dev, &repack_buft_iface, NULL);
    extra_bufts[0] = repack_buft;
    return repack_buft;
}

ggml_backend_buffer_type_t cpu_repack_buft(void) { return repack_buft; }

ggml_backend_buffer_type_t *cpu_repack_extra_bufts(ggml_backend_dev_t dev) { return extra_bufts; }

/* ------------------------------------------------------------------ kernels */

/* Row j's block of a group's block gblk, in ggml's layout, into blk. */
static void unpack_block(const struct repack_layout *l, const uint8_t *gblk, size_t j,
                         uint8_t *blk) {
    for (size_t k = 0, unit_end; k < l->block_size; k = unit_end) {
        const uint8_t *p = gblk + byte_in_group_block(l, k, j, &unit_end);
        memcpy(blk + k, p, unit_end - k);
    }
}

/* The portable kernel: each row's blocks unpacked and summed by quant-match.c's models. */
static void kernel_generic(enum ggml_type type, bool gemm, int n, const void *group,
                           const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const struct repack_layout *l = layout_of(type);
    const int64_t values = ggml_blck_size(type);
    const int step = !gemm ? QK_K : type == GGML_TYPE_Q2_K ? 128 : 64;
    float acc[CPU_QUANT_MAX_ROWS][CPU_REPACK_ROWS] = {{0}},
          accm[CPU_QUANT_MAX_ROWS][CPU_REPACK_ROWS] = {{0}};
    for (int64_t b = 0; b < n / values; b++) {
        const uint8_t *gblk = (const uint8_t *)group + b * CPU_REPACK_ROWS * l->block_size;
        for (int j = 0; j < CPU_REPACK_ROWS; j++) {
            _Alignas(16) uint8_t blk[sizeof(block_q4_K)];
            unpack_block(l, gblk, (size_t)j, blk);
            for (int r = 0; r < y->nrows; r++) {
                if (values == QK_K)
                    cpu_qmatch_serial_superblock(
                        type, blk, (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride) + b,
                        step, &acc[r][j], &accm[r][j]);
                else
                    acc[r][j] =
                        cpu_qmatch_serial_block32(type, blk, y->qs + r * y->qs_stride + b * QK8_0,
                                                  y->d[r * y->d_stride + b], acc[r][j]);
            }
        }
    }
    for (int r = 0; r < y->nrows; r++)
        for (int j = 0; j < CPU_REPACK_ROWS; j++) s[r * s_stride + j] = acc[r][j] - accm[r][j];
}

#define KERNEL_GENERIC(name, type, gemm)                                              \
    static void name(int n, const void *group, const struct cpu_q8_rows *y, float *s, \
                     size_t s_stride) {                                               \
        kernel_generic(type, gemm, n, group, y, s, s_stride);                         \
    }
KERNEL_GENERIC(generic_q4_0, GGML_TYPE_Q4_0, false)
KERNEL_GENERIC(generic_iq4_nl, GGML_TYPE_IQ4_NL, false)
KERNEL_GENERIC(generic_mxfp4, GGML_TYPE_MXFP4, false)
KERNEL_GENERIC(generic_gemv_q4_K, GGML_TYPE_Q4_K, false)
KERNEL_GENERIC(generic_gemm_q4_K, GGML_TYPE_Q4_K, true)
KERNEL_GENERIC(generic_gemv_q2_K, GGML_TYPE_Q2_K, false)
KERNEL_GENERIC(generic_gemm_q2_K, GGML_TYPE_Q2_K, true)

cpu_repack_kernel_t cpu_repack_kernel_on_path(enum ggml_type type, bool gemm,
                                              enum cpu_quant_path path) {
    if (path == CPU_QUANT_AVX512VNNI && cpu_repack_kernel_vnni(type, gemm))
        return cpu_repack_kernel_vnni(type, gemm);
    if (path != CPU_QUANT_GENERIC && cpu_repack_kernel_avx2(type, gemm))
        return cpu_repack_kernel_avx2(type, gemm);
    switch (type) {
    case GGML_TYPE_Q4_0: return generic_q4_0;
    case GGML_TYPE_IQ4_NL: return generic_iq4_nl;
    case GGML_TYPE_MXFP4: return generic_mxfp4;
    case GGML_TYPE_Q4_K: return gemm ? generic_gemm_q4_K : generic_gemv_q4_K;
    case GGML_TYPE_Q2_K: return gemm ? generic_gemm_q2_K : generic_gemv_q2_K;
    default: return NULL;
    }
}

cpu_repack_kernel_t cpu_repack_kernel(enum ggml_type type, bool gemm) {
    return cpu_repack_kernel_on_path(type, gemm, cpu_current_quant_path());
}
