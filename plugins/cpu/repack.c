/*
 * repack.c - the CPU_REPACK buffer type (repack.h): its buffers, the
 * translation between ggml's Q4_0 layout and the packed one, which nodes may
 * read such tensors, and the portable kernel (fmaf, so that every compiler
 * and CPU gives the bits of ggml's vfmadd; the SIMD kernels of repack-x86.c
 * must reproduce it exactly).
 */
#include <math.h>
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

/* Whether a tensor of this type and shape is stored packed in a CPU_REPACK buffer. */
static bool packable(const struct ggml_tensor *t) {
    return t->type == GGML_TYPE_Q4_0 && t->ne[1] % CPU_REPACK_ROWS == 0 && t->ne[2] == 1 && t->ne[3] == 1 &&
           ggml_is_contiguous(t);
}

bool cpu_repack_is_packed(const struct ggml_tensor *t) { return t && !t->view_src && cpu_repack_in_buffer(t) && packable(t); }

bool cpu_repack_is_serial(const struct ggml_tensor *t) {
    return t && !t->view_src && cpu_repack_in_buffer(t) && t->type != GGML_TYPE_Q4_0 &&
           cpu_qmatch_serial_type(t->type) && t->ne[1] % CPU_REPACK_ROWS == 0 && t->ne[2] == 1 &&
           t->ne[3] == 1 && ggml_is_contiguous(t);
}

bool cpu_repack_node_supported(const struct ggml_tensor *node) {
    bool reads_packed = false;
    for (int i = 0; i < GGML_MAX_SRC; i++) reads_packed |= cpu_repack_in_buffer(node->src[i]);
    if (!reads_packed && !cpu_repack_in_buffer(node)) return true;
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (node->op != GGML_OP_MUL_MAT || cpu_repack_in_buffer(node) ||
        !(cpu_repack_is_packed(a) || cpu_repack_is_serial(a)))
        return false;
    const ggml_backend_buffer_t bbuf = storage_buffer(b);
    return b->type == GGML_TYPE_F32 && !cpu_repack_in_buffer(b) && (!bbuf || ggml_backend_buffer_is_host(bbuf));
}

/* ------------------------------------------------------------------ layout */

/* Where byte k (0..17) of row r's block lies in its group's 144-byte block. */
static inline size_t byte_in_group_block(size_t k, size_t r) {
    if (k < sizeof(ggml_fp16_t)) return sizeof(ggml_fp16_t) * r + k;
    const size_t j = k - sizeof(ggml_fp16_t);
    return 2 * CPU_REPACK_ROWS + 32 * (j / 4) + 4 * r + j % 4;
}

enum transfer { TRANSFER_SET, TRANSFER_GET, TRANSFER_MEMSET };

/* Bytes [o, o + n) of ggml's layout of the packed tensor at packed (nb blocks a row): written
 * from host (SET), read into host (GET) or set to v (MEMSET). */
static void transfer_packed(char *packed, int64_t nb, size_t o, size_t n, char *host, enum transfer dir, uint8_t v) {
    const size_t row_size = (size_t)nb * sizeof(block_q4_0), end = o + n;
    while (o < end) {
        const size_t row = o / row_size, in_row = o % row_size, b = in_row / sizeof(block_q4_0);
        const size_t lo = in_row % sizeof(block_q4_0), hi = lo + (end - o) < sizeof(block_q4_0) ? lo + (end - o) : sizeof(block_q4_0);
        char *blk = packed + ((row / CPU_REPACK_ROWS) * (size_t)nb + b) * CPU_REPACK_GROUP_BLOCK;
        if (dir != TRANSFER_MEMSET && hi - lo == sizeof(block_q4_0)) { /* a whole block: its five runs at once */
            for (size_t k = 0; k < sizeof(block_q4_0); k += k ? 4 : sizeof(ggml_fp16_t)) {
                char *p = blk + byte_in_group_block(k, row % CPU_REPACK_ROWS);
                const size_t run = k ? 4 : sizeof(ggml_fp16_t);
                if (dir == TRANSFER_SET) memcpy(p, host, run);
                else memcpy(host, p, run);
                host += run;
            }
            o += sizeof(block_q4_0);
            continue;
        }
        for (size_t k = lo; k < hi; k++) {
            char *p = blk + byte_in_group_block(k, row % CPU_REPACK_ROWS);
            if (dir == TRANSFER_SET) *p = *host++;
            else if (dir == TRANSFER_GET) *host++ = *p;
            else *p = (char)v;
        }
        o += hi - lo;
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
    const size_t o = (t->view_src ? t->view_offs : 0) + offset;
    transfer_packed(base->data, base->ne[0] / QK4_0, o, size, host, dir, v);
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

/* The integer sum of weight row j of a group's block blk with 32 activation values q. */
static int group_block_sum(const uint8_t *blk, int j, const int8_t *q) {
    int sum = 0;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) {
            const uint8_t byte = blk[2 * CPU_REPACK_ROWS + 32 * i + 4 * j + k];
            sum += ((byte & 15) - 8) * q[4 * i + k] + ((byte >> 4) - 8) * q[16 + 4 * i + k];
        }
    return sum;
}

static void kernel_generic(int n, const void *group, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const uint8_t *g = group;
    for (int r = 0; r < y->nrows; r++)
        for (int j = 0; j < CPU_REPACK_ROWS; j++) {
            float acc = 0.0f;
            for (int b = 0; b < n / QK4_0; b++) {
                const uint8_t *blk = g + (size_t)b * CPU_REPACK_GROUP_BLOCK;
                ggml_fp16_t h;
                memcpy(&h, blk + sizeof h * j, sizeof h);
                const float d = ggmlc_fp16_to_fp32(h) * y->d[r * y->d_stride + b];
                acc = fmaf((float)group_block_sum(blk, j, y->qs + r * y->qs_stride + (size_t)b * QK8_0), d, acc);
            }
            s[r * s_stride + j] = acc;
        }
}

cpu_repack_kernel_t cpu_repack_kernel_on_path(enum cpu_quant_path path) {
    if (path == CPU_QUANT_AVX512VNNI && cpu_repack_kernel_vnni()) return cpu_repack_kernel_vnni();
    if (path != CPU_QUANT_GENERIC && cpu_repack_kernel_avx2()) return cpu_repack_kernel_avx2();
    return kernel_generic;
}

cpu_repack_kernel_t cpu_repack_kernel(void) { return cpu_repack_kernel_on_path(cpu_current_quant_path()); }
