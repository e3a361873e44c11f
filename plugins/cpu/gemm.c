/*
 * gemm.c - blocking, packing and the split across threads of the dense
 * product (see gemm.h).  The loops follow the usual five-loop scheme: an
 * m-block of x is packed into panels of mr rows (kept in L3, one panel in L1
 * while it is used), an n-block of w into panels of nr rows (kept in L2), and
 * the micro-kernel multiplies one panel of each into an nr x mr tile of dst.
 * Products with very few x rows skip the packing: each w row is read once
 * and dotted with every x row; products with fewer w rows than a tile is
 * wide swap the operands.  The threads of a node split the output into a
 * static grid of tiles, or for large products work as a team (end of file).
 */
#include <stdatomic.h>
#include <string.h>

#include "gemm.h"
#include "ggmlc-blocks.h"

/* Products with at most this many x rows stream the weights through the mat-vec kernel
 * (matvec.h) instead of packing them.  Measured single-threaded on the AVX-512 path (Zen 4,
 * loaded machine, best of 10-100 runs), mat-vec against the packed GEMM, in ms:
 *   4096 x 1024 f32  m = 16: 2.35 / 3.54   m = 24: 3.74 / 3.61, 4.01 / 4.39   m = 32: 4.88 / 4.00
 *   4096 x 1024 f16  m = 16: 1.17 / 2.48   m = 24: 1.77 / 3.08, 2.36 / 3.00   m = 32: 2.52 / 3.35, 3.80 / 3.41
 *   4096 x 128 f32 (in L2)  m = 16: 0.21 / 0.30   m = 24: 0.31 / 0.36
 * so the GEMM takes over above 24 rows (f32 even at 24, f16 and bf16 from about 32). */
#define GEMM_DOT_MAX_M 24

extern const struct cpu_gemm_kernel cpu_gemm_kernel_generic;
#if defined(__x86_64__)
extern const struct cpu_gemm_kernel cpu_gemm_kernel_avx2;
extern const struct cpu_gemm_kernel cpu_gemm_kernel_avx512;
#endif

static const struct cpu_gemm_kernel *const kernels[CPU_SIMD_COUNT] = {
    [CPU_SIMD_GENERIC] = &cpu_gemm_kernel_generic,
#if defined(__x86_64__)
    [CPU_SIMD_AVX2] = &cpu_gemm_kernel_avx2,
    [CPU_SIMD_AVX512] = &cpu_gemm_kernel_avx512,
#endif
};

const struct cpu_gemm_kernel *cpu_gemm_kernel_for(enum cpu_simd_level level) {
    if (level < 0 || level >= CPU_SIMD_COUNT || level > cpu_simd_best_level()) return NULL;
    return kernels[level];
}

const struct cpu_gemm_kernel *cpu_gemm_kernel(void) {
    const struct cpu_gemm_kernel *k = cpu_gemm_kernel_for(cpu_simd_level());
    return k ? k : &cpu_gemm_kernel_generic;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static float *align64(void *p) {
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* The row stride, in floats, of x rows that compute_dot copies: whole cache lines, but not a
 * multiple of 4 KiB, so that the rows a mat-vec register block reads at one depth fall into
 * different L1 sets.  Rows 16 KiB apart (k = 4096) share one set: 4096 x 14336 f32 weights,
 * 8 columns, 2 threads, AVX2, 17.3 ms at k = 4096 against 15.1 at k = 4000. */
static int64_t dot_x_stride(int64_t k) {
    const int64_t s = (k + 15) & ~(int64_t)15;
    return s * (int64_t)sizeof(float) % 4096 == 0 ? s + 16 : s;
}

size_t cpu_gemm_thread_work(const struct cpu_gemm_kernel *kern, int64_t m, int64_t k) {
    const int64_t widest = kern->nr > kern->mr ? kern->nr : kern->mr; /* tmp: a panel of rows */
    const size_t blocked = (size_t)((kern->mc + kern->nc) * kern->kc + kern->nr * kern->mr + widest * kern->kc);
    const size_t dot = (size_t)(min64(m, GEMM_DOT_MAX_M) * dot_x_stride(k));
    return (blocked > dot ? blocked : dot) * sizeof(float) + 64;
}

static bool use_dot_path(const struct cpu_gemm_problem *p) {
    return p->m <= GEMM_DOT_MAX_M && !p->w.dequant && p->w.k_stride == ggml_type_size(p->w.type);
}

bool cpu_gemm_dequant_ok(const struct cpu_gemm_kernel *kern, enum ggml_type type) {
    const struct ggml_type_traits *tr = ggml_get_type_traits(type);
    return tr->to_float && tr->blck_size > 0 && kern->kc % tr->blck_size == 0;
}

ggml_to_float_t cpu_gemm_dequant_fn(const struct cpu_gemm_kernel *kern, enum ggml_type type) {
    const ggml_to_float_t fast = kern->fast_dequant ? kern->fast_dequant(type) : NULL;
    return fast ? fast : ggml_get_type_traits(type)->to_float;
}

/* Dequantize rows [r0, r0 + rows) x [k0, k0 + kc) into tmp (rows of kc), then pack those. */
static void pack_dequantized(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_operand *op, int64_t r0,
                             int64_t rows, int64_t k0, int64_t kc, int width, float *dst, float *tmp) {
    const size_t offset = (size_t)(k0 / ggml_blck_size(op->type)) * ggml_type_size(op->type);
    for (int64_t j = 0; j < rows; j++) op->dequant((const char *)op->data + (r0 + j) * op->row_stride + offset, tmp + j * kc, kc);
    if (kern->pack_rows) {
        kern->pack_rows(GGML_TYPE_F32, (const char *)tmp, (size_t)kc * sizeof(float), rows, kc, width, dst);
        return;
    }
    for (int64_t k = 0; k < kc; k++)
        for (int64_t j = 0; j < width; j++) dst[k * width + j] = j < rows ? tmp[j * kc + k] : 0.0f;
}

static float load_f32(enum ggml_type type, const char *p) {
    switch (type) {
    case GGML_TYPE_F16: return ggmlc_fp16_to_fp32(*(const ggml_fp16_t *)p);
    case GGML_TYPE_BF16: return ggmlc_bf16_to_fp32(*(const ggml_bf16_t *)p);
    default: return *(const float *)p;
    }
}

/* Copy rows [r0, r0 + rows) x [k0, k0 + kc) of op, as f32, into a panel laid out
 * dst[k * width + j]; rows rows..width-1 of the panel are zero. */
static void pack_panel(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_operand *op, int64_t r0, int64_t rows,
                       int64_t k0, int64_t kc, int width, float *dst, float *tmp) {
    if (op->dequant) {
        pack_dequantized(kern, op, r0, rows, k0, kc, width, dst, tmp);
        return;
    }
    const size_t es = ggml_type_size(op->type);
    const char *base = (const char *)op->data + r0 * op->row_stride + k0 * op->k_stride;
    if (op->k_stride == es && kern->pack_rows) {
        kern->pack_rows(op->type, base, op->row_stride, rows, kc, width, dst);
        return;
    }
    if (op->row_stride == es && kern->pack_cols) {
        kern->pack_cols(op->type, base, op->k_stride, rows, kc, width, dst);
        return;
    }
    if (op->k_stride == es) { /* rows contiguous along k: convert a row, scatter it */
        for (int64_t j = 0; j < rows; j++) {
            const char *row = base + j * op->row_stride;
            const float *src = (const float *)row;
            if (op->type != GGML_TYPE_F32) {
                kern->to_f32(op->type, row, tmp, kc);
                src = tmp;
            }
            for (int64_t k = 0; k < kc; k++) dst[k * width + j] = src[k];
        }
    } else if (op->row_stride == es) { /* a transposed view: each k is a contiguous run of rows */
        for (int64_t k = 0; k < kc; k++) kern->to_f32(op->type, base + k * op->k_stride, dst + k * width, rows);
    } else {
        for (int64_t k = 0; k < kc; k++)
            for (int64_t j = 0; j < rows; j++) dst[k * width + j] = load_f32(op->type, base + j * op->row_stride + k * op->k_stride);
    }
    if (rows < width)
        for (int64_t k = 0; k < kc; k++) memset(dst + k * width + rows, 0, (size_t)(width - rows) * sizeof(float));
}

/* Pack `count` rows from r0 into consecutive panels of `width` rows. */
static void pack_block(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_operand *op, int64_t r0, int64_t count,
                       int64_t k0, int64_t kc, int width, float *dst, float *tmp) {
    for (int64_t p = 0; p < count; p += width)
        pack_panel(kern, op, r0 + p, min64(width, count - p), k0, kc, width, dst + p * kc, tmp);
}

/* Choose a grid tn x tm = nth over the output (in units of register tiles) that
 * minimises the largest tile, and return thread ith's tile in elements. */
static void thread_tile(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, int ith, int nth,
                        int64_t *n0, int64_t *n1, int64_t *m0, int64_t *m1) {
    const int64_t un = (p->n + kern->nr - 1) / kern->nr, um = (p->m + kern->mr - 1) / kern->mr;
    int best_tn = 1;
    int64_t best_cost = INT64_MAX;
    for (int tn = nth; tn >= 1; tn--) {
        if (nth % tn) continue;
        const int tm = nth / tn;
        const int64_t cost = ((un + tn - 1) / tn) * ((um + tm - 1) / tm);
        if (cost < best_cost) best_cost = cost, best_tn = tn;
    }
    const int tn = best_tn, tm = nth / tn, in = ith % tn, im = ith / tn;
    *n0 = min64(un * in / tn * kern->nr, p->n);
    *n1 = min64(un * (in + 1) / tn * kern->nr, p->n);
    *m0 = min64(um * im / tm * kern->mr, p->m);
    *m1 = min64(um * (im + 1) / tm * kern->mr, p->m);
}

/* Where element (w row i, x row j) of the product goes: dst[j][i], or dst[i][j] for a
 * problem solved with its operands swapped (see swap_small_n). */
struct dst_view {
    float *base;
    int64_t ldc;
    bool transposed;
};

static struct dst_view dst_view_of(const struct cpu_gemm_problem *p) {
    return (struct dst_view){p->dst, (int64_t)(p->dst_stride / sizeof(float)), p->dst_transposed};
}

static float *dst_at(const struct dst_view *v, int64_t i, int64_t j) {
    return v->transposed ? v->base + i * v->ldc + j : v->base + j * v->ldc + i;
}

/* c (+)= the valid rows x cols of a full tile computed into `tile`.  The usual layout has each
 * row's cols contiguous: a loop the compiler vectorizes (edge tiles, such as the last 32 of
 * 128 outputs with 48-wide tiles, are common in small models). */
static void store_partial(const float *tile, int nr, float *c, const struct dst_view *v, int64_t rows, int64_t cols,
                          bool accumulate) {
    if (!v->transposed) {
        for (int64_t i = 0; i < rows; i++) {
            float *ci = c + i * v->ldc;
            const float *ti = tile + i * nr;
            if (accumulate)
                for (int64_t j = 0; j < cols; j++) ci[j] += ti[j];
            else
                memcpy(ci, ti, (size_t)cols * sizeof(float));
        }
        return;
    }
    for (int64_t j = 0; j < cols; j++) { /* transposed: a run of `rows` values per output row */
        float *cj = c + j * v->ldc;
        for (int64_t i = 0; i < rows; i++) cj[i] = (accumulate ? cj[i] : 0.0f) + tile[i * nr + j];
    }
}

/* Where the micro-kernel reads a block of one operand: packed panels (panel row r starts
 * r * ld floats after `packed`'s first: ld = kb for panels packed one block deep, the whole
 * depth k for operands packed once), or the f32 operand in place (`direct`: the block's row
 * r, depth d at direct + r * rs + d * ks; see read_in_place). */
struct block_src {
    const float *packed;
    int64_t ld;
    const float *direct;
    int64_t rs, ks;
};

static struct block_src packed_src(const float *buf, int64_t ld) {
    return (struct block_src){buf, ld, NULL, 0, 0};
}

/* The block of op from row r0 and depth k0, read in place. */
static struct block_src direct_src(const struct cpu_gemm_operand *op, int64_t r0, int64_t k0) {
    const int64_t rs = (int64_t)(op->row_stride / sizeof(float)), ks = (int64_t)(op->k_stride / sizeof(float));
    return (struct block_src){NULL, 0, (const float *)op->data + r0 * rs + k0 * ks, rs, ks};
}

#define GEMM_MAX_MR 16

/* ---------------------------------------------------- zero runs along k
 *
 * Causal attention's probabilities and their gradients are zero on one side of the diagonal:
 * along k, a row of them starts or ends with a run of exact zeros (P[tk][tq] for tk > tq).  A
 * tile whose w or x rows are all zero over some depths needs no multiply-adds there: each
 * such term is +-0, and adding +-0 to an accumulator that starts at +0 changes no bit (it is
 * never -0: x + -x rounds to +0).  So the micro-kernel runs over the depths where both
 * panels may be nonzero: about half the multiply-adds of four of attention's six products
 * (the weighted values and the gradients of values, queries and keys; one thread, 64 heads
 * of 128 x 128 x 32, best of 30: 0.80 -> 0.70 ms, 0.97 -> 0.76, 1.16 -> 0.85; the scans and
 * the shorter tiles take the rest).  Only where the other operand is finite over the block:
 * 0 x inf is NaN, which the full sum has. */

/* Depths [k0, k1) of a block outside which a panel is zero (k0 = k1: zero throughout). */
struct depth_range {
    int64_t k0, k1;
};

#if defined(__x86_64__)
/* The scans below are vector code (AVX2, where the CPU has it: elsewhere no zero runs are
 * looked for, which changes no result).  Scalar, finding the runs of attention's small
 * products (128 x 128 x 32) took longer than the multiply-adds they saved. */
#include <immintrin.h>
#define SCAN_TARGET __attribute__((target("avx2")))

/* The OR and the largest of the magnitudes (bits without the sign) of values, lane-wise:
 * the OR is zero when all are +-0, the largest at least 0x7f800000 where one is inf or NaN. */
struct magnitudes {
    __m256i any, max;
};

SCAN_TARGET static inline void add_magnitudes(const float *p, int64_t n, struct magnitudes *m) {
    const __m256i sign_off = _mm256_set1_epi32(0x7fffffff);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i b = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + i)), sign_off);
        m->any = _mm256_or_si256(m->any, b), m->max = _mm256_max_epu32(m->max, b);
    }
    if (i < n) { /* the tail through a masked load, which reads (and faults on) nothing past it */
        const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256i b = _mm256_and_si256(_mm256_maskload_epi32((const int *)(p + i), lanes), sign_off);
        m->any = _mm256_or_si256(m->any, b), m->max = _mm256_max_epu32(m->max, b);
    }
}

/* The magnitudes of rows [r, r + rows) and depths [k0, k1) of a block (r a multiple of the
 * width for packed panels, whose depths are contiguous runs of width values, zero-padded). */
SCAN_TARGET static struct magnitudes block_magnitudes(const struct block_src *src, int64_t r, int64_t rows, int width,
                                                      int64_t k0, int64_t k1) {
    struct magnitudes m = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    if (!src->direct) {
        add_magnitudes(src->packed + r * src->ld + k0 * width, (k1 - k0) * width, &m);
    } else if (src->ks == 1) { /* rows along k */
        for (int64_t j = 0; j < rows; j++) add_magnitudes(src->direct + (r + j) * src->rs + k0, k1 - k0, &m);
    } else if (src->rs == 1) { /* k-major: each depth a run of rows */
        for (int64_t k = k0; k < k1; k++) add_magnitudes(src->direct + r + k * src->ks, rows, &m);
    } else {
        for (int64_t j = 0; j < rows; j++)
            for (int64_t k = k0; k < k1; k++) add_magnitudes(src->direct + (r + j) * src->rs + k * src->ks, 1, &m);
    }
    return m;
}

SCAN_TARGET static bool block_is_zero(const struct block_src *src, int64_t r, int64_t rows, int width, int64_t k0, int64_t k1) {
    const struct magnitudes m = block_magnitudes(src, r, rows, width, k0, k1);
    return _mm256_testz_si256(m.any, m.any);
}

/* Zero runs are found a chunk of depths at a time (rounded toward the nonzero values: the
 * few zero terms left in cost less than finding them one depth at a time). */
#define ZERO_RUN_CHUNK 8

/* The nonzero depths of rows [r, r + rows) of a block kb deep: chunks from each end up to the
 * first holding a nonzero (NaN is not zero), so a chunk or two for dense panels. */
SCAN_TARGET static struct depth_range nonzero_depths(const struct block_src *src, int64_t r, int64_t rows, int width,
                                                     int64_t kb) {
    struct depth_range d = {0, kb};
    while (d.k0 < kb && block_is_zero(src, r, rows, width, d.k0, min64(d.k0 + ZERO_RUN_CHUNK, kb))) d.k0 += ZERO_RUN_CHUNK;
    if (d.k0 >= kb) return (struct depth_range){0, 0};
    while (d.k1 > d.k0) {
        const int64_t c0 = d.k1 - ZERO_RUN_CHUNK > d.k0 ? d.k1 - ZERO_RUN_CHUNK : d.k0;
        if (!block_is_zero(src, r, rows, width, c0, d.k1)) break;
        d.k1 = c0;
    }
    return d;
}

/* Every value of rows [0, rows) of a block kb deep is finite (in panels of width). */
SCAN_TARGET static bool block_is_finite(const struct block_src *src, int64_t rows, int width, int64_t kb) {
    for (int64_t r = 0; r < rows; r += width) {
        const struct magnitudes m = block_magnitudes(src, r, min64(width, rows - r), width, 0, kb);
        /* magnitudes are below 2^31: a signed comparison with the largest finite one */
        const __m256i over = _mm256_cmpgt_epi32(m.max, _mm256_set1_epi32(0x7f7fffff));
        if (!_mm256_testz_si256(over, over)) return false;
    }
    return true;
}

static bool zero_runs_ok(void) {
    static atomic_int ok = -1; /* the CPU's answer, asked once */
    int v = atomic_load_explicit(&ok, memory_order_relaxed);
    if (v < 0) atomic_store_explicit(&ok, v = cpu_simd_best_level() >= CPU_SIMD_AVX2, memory_order_relaxed);
    return v;
}
#else /* no scans: zero_runs_ok() is false, so neither of these is called */
static struct depth_range nonzero_depths(const struct block_src *src, int64_t r, int64_t rows, int width, int64_t kb) {
    (void)src, (void)r, (void)rows, (void)width;
    return (struct depth_range){0, kb};
}
static bool block_is_finite(const struct block_src *src, int64_t rows, int width, int64_t kb) {
    (void)src, (void)rows, (void)width, (void)kb;
    return false;
}
static bool zero_runs_ok(void) { return false; }
#endif

/* Value (row, k) of a block (panels of width). */
static float block_value(const struct block_src *src, int64_t row, int width, int64_t k) {
    if (src->direct) return src->direct[row * src->rs + k * src->ks];
    return src->packed[row / width * width * src->ld + k * width + row % width];
}

/* Whether a block of rows x kb may have zero runs worth looking for: it can, on the AVX2
 * path, when its first row ends or its last row starts with a zero (a causal operand does one
 * or the other); dense blocks then cost two reads, not a scan of every panel. */
static bool may_have_zero_runs(const struct block_src *src, int64_t rows, int width, int64_t kb) {
    if (rows <= 0 || kb <= 0 || !zero_runs_ok()) return false;
    return block_value(src, 0, width, kb - 1) == 0.0f || block_value(src, rows - 1, width, 0) == 0.0f;
}

/* The w panels' nonzero depths of a block (at most GEMM_MAX_W_PANELS panels; more, or a block
 * of x that is not finite: the whole depth), and whether any panel has a zero run. */
#define GEMM_MAX_W_PANELS 64

static bool w_panel_depths(const struct block_src *w, const struct block_src *x, int64_t nb, int64_t mb, int64_t kb,
                           int nr, int mr, struct depth_range out[GEMM_MAX_W_PANELS]) {
    const int64_t panels = (nb + nr - 1) / nr;
    if (panels > GEMM_MAX_W_PANELS || !may_have_zero_runs(w, nb, nr, kb)) return false;
    bool trimmed = false;
    for (int64_t p = 0; p < panels; p++) {
        out[p] = nonzero_depths(w, p * nr, min64(nr, nb - p * nr), nr, kb);
        trimmed = trimmed || out[p].k0 > 0 || out[p].k1 < kb;
    }
    return trimmed && block_is_finite(x, mb, mr, kb);
}

/* The nonzero depths of the x panel at row jp of a block (x_runs: may_have_zero_runs of the
 * block), where the block of w is finite (*w_finite: -1 until asked, then 0 or 1; asked only
 * once a panel has a zero run). */
static struct depth_range x_panel_depths(const struct block_src *x, const struct block_src *w, int64_t jp, int64_t rows,
                                         int64_t nb, int64_t kb, int nr, int mr, bool x_runs, int *w_finite) {
    if (!x_runs) return (struct depth_range){0, kb};
    const struct depth_range d = nonzero_depths(x, jp, rows, mr, kb);
    if (d.k0 == 0 && d.k1 == kb) return d;
    if (*w_finite < 0) *w_finite = block_is_finite(w, nb, nr, kb);
    return *w_finite ? d : (struct depth_range){0, kb};
}

/* Depths where both a w panel and an x panel may be nonzero. */
static struct depth_range both_nonzero(struct depth_range a, struct depth_range b) {
    struct depth_range d = {a.k0 > b.k0 ? a.k0 : b.k0, a.k1 < b.k1 ? a.k1 : b.k1};
    if (d.k1 <= d.k0) d.k0 = d.k1 = 0;
    return d;
}

/* Whether the micro-kernel reads op, an operand of a product of depth k, in place instead of
 * packing it: f32 with element strides, for w (as nr-wide vectors along n) when it is stored
 * k-major with rows less than 2 KiB apart (further, its panels alias in L1: the 512-wide
 * weight gradient ran 55 GFLOPS in place, 69 packed), for x (one value per row and k) when
 * stored along k, or k-major in products no
 * deeper than a cache block.  Packing these copied every value once more per product, as much
 * time as the multiply-adds of the small products (attention's 128 x 128 x 32).  Deeper x
 * stored k-major is packed: each k of an x panel read in place is another cache line, which
 * the w panels streaming past evict before the next panel of w reuses it (the weight
 * gradients, depth T x B, ran 62-67 GFLOPS in place, 71-77 packed). */
static bool read_in_place(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_operand *op, bool is_w,
                          int64_t k) {
    const size_t f = sizeof(float);
    if (!kern->micro_strided || kern->mr > GEMM_MAX_MR || op->dequant || op->type != GGML_TYPE_F32) return false;
    if (op->row_stride % f || op->k_stride % f || (uintptr_t)op->data % f) return false;
    return is_w ? op->row_stride == f && op->k_stride < 2048 : op->k_stride == f || (op->row_stride == f && k <= kern->kc);
}

/* The last, narrower than nr, of the w panels of a block read in place, packed into edge
 * (zeros beyond its cols rows), so that no vector load reads past the operand. */
static void pack_edge_panel(const struct block_src *w, int64_t ip, int64_t cols, int64_t kb, int nr, float *edge) {
    for (int64_t k = 0; k < kb; k++) {
        const float *src = w->direct + ip * w->rs + k * w->ks;
        for (int64_t j = 0; j < nr; j++) edge[k * nr + j] = j < cols ? src[j * w->rs] : 0.0f;
    }
}

/* The micro-kernel on one tile: the full tile into dst, else into `tile`, then its valid part. */
static void tile_product(const struct cpu_gemm_kernel *kern, const float *wp, int64_t w_ks, const float *const *xr,
                         int64_t x_ks, int64_t kb, const struct dst_view *v, int64_t i, int64_t j, int64_t rows,
                         int64_t cols, bool accumulate, float *tile) {
    float *c = dst_at(v, i, j);
    if (rows == kern->mr && cols == kern->nr && !v->transposed) {
        kern->micro_strided(kb, wp, w_ks, xr, x_ks, c, v->ldc, accumulate);
        return;
    }
    kern->micro_strided(kb, wp, w_ks, xr, x_ks, tile, kern->nr, false);
    store_partial(tile, kern->nr, c, v, rows, cols, accumulate);
}

/* multiply_blocks with either operand read in place (micro_strided).  Rows of x beyond mb
 * re-read its last row (their results are dropped); the narrow last panel of a w read in
 * place is packed into edge first.  Each tile runs over the depths where both panels may be
 * nonzero (zero runs along k, above). */
static void multiply_blocks_strided(const struct cpu_gemm_kernel *kern, const struct block_src *w,
                                    const struct block_src *x, int64_t nb, int64_t mb, int64_t kb,
                                    const struct dst_view *v, int64_t ic, int64_t jc, bool accumulate, float *tile,
                                    float *edge) {
    const int nr = kern->nr, mr = kern->mr;
    const int64_t edge_ip = nb / nr * nr;
    if (w->direct && edge_ip < nb) pack_edge_panel(w, edge_ip, nb - edge_ip, kb, nr, edge);
    struct depth_range w_depths[GEMM_MAX_W_PANELS];
    const bool w_trimmed = w_panel_depths(w, x, nb, mb, kb, nr, mr, w_depths);
    const bool x_runs = may_have_zero_runs(x, mb, mr, kb);
    int w_finite = -1;
    for (int64_t jp = 0; jp < mb; jp += mr) {
        const struct depth_range xd = x_panel_depths(x, w, jp, min64(mr, mb - jp), nb, kb, nr, mr, x_runs, &w_finite);
        const float *xr[GEMM_MAX_MR], *shifted[GEMM_MAX_MR];
        for (int i = 0; i < mr; i++)
            xr[i] = x->direct ? x->direct + min64(jp + i, mb - 1) * x->rs : x->packed + jp * x->ld + i;
        const int64_t x_ks = x->direct ? x->ks : mr;
        for (int64_t ip = 0; ip < nb; ip += nr) {
            const struct depth_range d = w_trimmed ? both_nonzero(xd, w_depths[ip / nr]) : xd;
            if (d.k0 > 0)
                for (int i = 0; i < mr; i++) shifted[i] = xr[i] + d.k0 * x_ks;
            const bool in_place = w->direct && ip < edge_ip;
            const float *wp = in_place ? w->direct + ip * w->rs : w->direct ? edge : w->packed + ip * w->ld;
            const int64_t w_ks = in_place ? w->ks : nr;
            tile_product(kern, wp + d.k0 * w_ks, w_ks, d.k0 > 0 ? shifted : xr, x_ks, d.k1 - d.k0, v, ic + ip, jc + jp,
                         min64(mr, mb - jp), min64(nr, nb - ip), accumulate, tile);
        }
    }
}

/* Multiply the blocks of w (nb rows from w row ic) and x (mb rows from x row jc), kb deep,
 * each tile over the depths where both panels may be nonzero. */
static void multiply_blocks(const struct cpu_gemm_kernel *kern, const struct block_src *w, const struct block_src *x,
                            int64_t nb, int64_t mb, int64_t kb, const struct dst_view *v, int64_t ic, int64_t jc,
                            bool accumulate, float *tile, float *edge) {
    if (w->direct || x->direct) {
        multiply_blocks_strided(kern, w, x, nb, mb, kb, v, ic, jc, accumulate, tile, edge);
        return;
    }
    const int nr = kern->nr, mr = kern->mr;
    struct depth_range w_depths[GEMM_MAX_W_PANELS];
    const bool w_trimmed = w_panel_depths(w, x, nb, mb, kb, nr, mr, w_depths);
    const bool x_runs = may_have_zero_runs(x, mb, mr, kb);
    int w_finite = -1;
    for (int64_t jp = 0; jp < mb; jp += mr) {
        const struct depth_range xd = x_panel_depths(x, w, jp, min64(mr, mb - jp), nb, kb, nr, mr, x_runs, &w_finite);
        for (int64_t ip = 0; ip < nb; ip += nr) {
            const struct depth_range d = w_trimmed ? both_nonzero(xd, w_depths[ip / nr]) : xd;
            const float *xp = x->packed + jp * x->ld + d.k0 * mr, *wp = w->packed + ip * w->ld + d.k0 * nr;
            const int64_t depth = d.k1 - d.k0;
            float *c = dst_at(v, ic + ip, jc + jp);
            if (jp + mr <= mb && ip + nr <= nb && !v->transposed) {
                kern->micro(depth, wp, xp, c, v->ldc, accumulate);
            } else {
                const int64_t cols = min64(nr, nb - ip);
                if (cols < nr && kern->micro_narrow)
                    kern->micro_narrow(depth, wp, xp, tile, nr, false, (int)cols);
                else
                    kern->micro(depth, wp, xp, tile, nr, false);
                store_partial(tile, nr, c, v, min64(mr, mb - jp), cols, accumulate);
            }
        }
    }
}

/* The depth of the k-blocks of p: at most kern->kc, and as even as multiples of 8 allow.  A
 * fixed kc leaves a thin last block (784 = 3 x 256 + 16 for the MNIST layer) that costs a
 * whole pass over the output tile for few multiply-adds, and in team mode two more barriers.
 * Dequantized weights keep kern->kc, which their blocks tile (cpu_gemm_dequant_ok). */
static int64_t depth_block(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p) {
    if (p->w.dequant || p->k <= kern->kc) return kern->kc;
    const int64_t blocks = (p->k + kern->kc - 1) / kern->kc;
    return min64(((p->k + blocks - 1) / blocks + 7) & ~(int64_t)7, kern->kc);
}

static void compute_blocked(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, int64_t n0,
                            int64_t n1, int64_t m0, int64_t m1, void *work) {
    float *wbuf = align64(work);
    float *xbuf = wbuf + kern->mc * kern->kc;
    float *tile = xbuf + kern->nc * kern->kc;
    float *tmp = tile + kern->nr * kern->mr;
    const struct dst_view v = dst_view_of(p);
    const int64_t kc = depth_block(kern, p);
    const bool w_in_place = read_in_place(kern, &p->w, true, p->k), x_in_place = read_in_place(kern, &p->x, false, p->k);
    for (int64_t jc = m0; jc < m1; jc += kern->nc) {
        const int64_t mb = min64(kern->nc, m1 - jc);
        for (int64_t pc = 0; pc < p->k; pc += kc) {
            const int64_t kb = min64(kc, p->k - pc);
            if (!x_in_place) pack_block(kern, &p->x, jc, mb, pc, kb, kern->mr, xbuf, tmp);
            const struct block_src xs = x_in_place ? direct_src(&p->x, jc, pc) : packed_src(xbuf, kb);
            for (int64_t ic = n0; ic < n1; ic += kern->mc) {
                const int64_t nb = min64(kern->mc, n1 - ic);
                if (!w_in_place) pack_block(kern, &p->w, ic, nb, pc, kb, kern->nr, wbuf, tmp);
                const struct block_src ws = w_in_place ? direct_src(&p->w, ic, pc) : packed_src(wbuf, kb);
                multiply_blocks(kern, &ws, &xs, nb, mb, kb, &v, ic, jc, pc > 0, tile, tmp);
            }
        }
    }
}

/* Whether compute_dot copies x's rows: not f32 along k, or several rows 4 KiB apart. */
static bool dot_copies_x(const struct cpu_gemm_problem *p) {
    return p->x.type != GGML_TYPE_F32 || p->x.k_stride != sizeof(float) ||
           p->x.row_stride % sizeof(float) || (p->m > 1 && p->x.row_stride % 4096 == 0);
}

/* Few x rows: convert them once (when needed), then stream w rows n0..n1 once through the
 * path's mat-vec kernel, which dots each group of w rows with all of them. */
static void compute_dot(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, int64_t n0, int64_t n1,
                        void *work) {
    const float *x = (const float *)p->x.data;
    int64_t xs = (int64_t)(p->x.row_stride / sizeof(float));
    if (dot_copies_x(p)) {
        float *xbuf = align64(work);
        xs = dot_x_stride(p->k);
        for (int64_t m = 0; m < p->m; m++) {
            const char *row = (const char *)p->x.data + m * p->x.row_stride;
            if (p->x.k_stride == ggml_type_size(p->x.type)) {
                kern->to_f32(p->x.type, row, xbuf + m * xs, p->k);
            } else {
                for (int64_t k = 0; k < p->k; k++)
                    xbuf[m * xs + k] = load_f32(p->x.type, row + k * p->x.k_stride);
            }
        }
        x = xbuf;
    }
    const struct dst_view v = dst_view_of(p);
    const int64_t out_row_stride = v.transposed ? v.ldc : 1, out_col_stride = v.transposed ? 1 : v.ldc;
    const char *w = (const char *)p->w.data + n0 * p->w.row_stride;
    for (int64_t m = 0; m < p->m; m += CPU_MATVEC_MAX_COLS) {
        const int nx = (int)min64(CPU_MATVEC_MAX_COLS, p->m - m);
        kern->matvec(p->k, p->w.type, w, p->w.row_stride, n1 - n0, x + m * xs, xs, nx, dst_at(&v, n0, m), out_row_stride,
                     out_col_stride);
    }
}

/* Fewer w rows than a register tile is wide leave lanes idle, and every tile goes through
 * the tile buffer anyway: solve the product with the roles swapped (x rows along the
 * vector lanes), writing dst transposed.  Every thread of a product makes the same choice. */
static const struct cpu_gemm_problem *swap_small_n(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p,
                                                   struct cpu_gemm_problem *swapped) {
    if (p->dst_transposed || p->w.dequant || p->n >= kern->nr || p->m <= p->n) return p;
    *swapped = *p;
    swapped->n = p->m;
    swapped->m = p->n;
    swapped->w = p->x;
    swapped->x = p->w;
    swapped->dst_transposed = true;
    return swapped;
}

void cpu_gemm_compute(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *problem, int ith, int nth,
                      void *work) {
    if (problem->n <= 0 || problem->m <= 0) return;
    struct cpu_gemm_problem swapped;
    const struct cpu_gemm_problem *p = swap_small_n(kern, problem, &swapped);
    if (use_dot_path(p)) {
        int64_t n0, n1;
        cpu_split_range(p->n, ith, nth, &n0, &n1);
        if (n0 < n1) compute_dot(kern, p, n0, n1, work);
        return;
    }
    int64_t n0, n1, m0, m1;
    thread_tile(kern, p, ith, nth, &n0, &n1, &m0, &m1);
    if (n0 >= n1 || m0 >= m1) return;
    if (p->k == 0) { /* an empty sum */
        const struct dst_view v = dst_view_of(p);
        for (int64_t m = m0; m < m1; m++)
            for (int64_t n = n0; n < n1; n++) *dst_at(&v, n, m) = 0.0f;
        return;
    }
    compute_blocked(kern, p, n0, n1, m0, m1, work);
}

/* ------------------------------------------------------------ team mode */

/* Below this many multiply-adds the barriers of team mode cost more than they save. */
#define GEMM_TEAM_MIN_WORK (1 << 21)

bool cpu_gemm_use_team(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, int nth) {
    (void)kern;
    return nth > 1 && !use_dot_path(p) && p->k > 0 && (double)p->n * (double)p->m * (double)p->k >= GEMM_TEAM_MIN_WORK;
}

static int64_t team_iterations(const struct cpu_gemm_kernel *kern, int64_t m, int64_t k) {
    return ((m + kern->nc - 1) / kern->nc) * ((k + kern->kc - 1) / kern->kc);
}

/* Products whose operands, packed whole, take at most this many bytes are computed with
 * both packed once (pack_once below).  The MNIST MLP's largest, 784 deep, take 2.5 MB;
 * ggmlc-gpt's MLP weight gradients (128 x 512 and 512 x 128, 2048 deep) 5.3 MB, which in the
 * blocked team mode met at 16 barriers (8 depth blocks), where the threads waited for each
 * other 3% of a 2-thread training step: packed once, 2 threads, loaded VM, 3 alternating
 * rounds, 4.7-5.1 -> 4.0-4.7 ms and 3.7-4.7 -> 3.7-4.0 ms. */
#define GEMM_PACK_ONCE_MAX_BYTES ((size_t)8 << 20)

/* Rows of an operand of `rows` rows packed in panels of nr or of mr rows, whichever takes more. */
static int64_t packed_rows(const struct cpu_gemm_kernel *kern, int64_t rows) {
    const int64_t by_nr = (rows + kern->nr - 1) / kern->nr * kern->nr, by_mr = (rows + kern->mr - 1) / kern->mr * kern->mr;
    return by_nr > by_mr ? by_nr : by_mr;
}

/* Bytes of both operands of an n x m product of depth k packed whole (an upper bound whichever
 * operand swap_small_n puts where).  Rounding both to panels of the wider dimension alone fell
 * short where the narrower does not divide it: AVX2's 6-row x panels of 32 rows take 36, not 32,
 * and compute_team_once wrote past the shared scratch into thread 0's tile (wrong 2-thread
 * products of 128 x 4096 by 4096 x 32). */
static size_t pack_once_bytes(const struct cpu_gemm_kernel *kern, int64_t n, int64_t m, int64_t k) {
    return (size_t)((packed_rows(kern, n) + packed_rows(kern, m)) * k) * sizeof(float);
}

static bool use_pack_once(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p) {
    return !p->w.dequant && pack_once_bytes(kern, p->n, p->m, p->k) <= GEMM_PACK_ONCE_MAX_BYTES;
}

size_t cpu_gemm_team_shared(const struct cpu_gemm_kernel *kern, int64_t n, int64_t m, int64_t k) {
    const size_t blocked = (size_t)(kern->nc * kern->kc) * sizeof(float) + (size_t)team_iterations(kern, m, k) * sizeof(atomic_int);
    /* a smaller product of these operands (one batch of several) may be packed once */
    size_t once = pack_once_bytes(kern, n, m, k);
    if (once > GEMM_PACK_ONCE_MAX_BYTES) once = GEMM_PACK_ONCE_MAX_BYTES;
    return (blocked > once + sizeof(atomic_int) ? blocked : once + sizeof(atomic_int)) + 128;
}

/* The work items of one block: n_chunks ranges of w panels times m_parts ranges of
 * x panels, as even as the register tiles allow.  There are several items per
 * thread, a multiple of the thread count where possible, so that equal threads
 * finish together and a slowed one simply takes fewer. */
struct team_split {
    int64_t w_panels, n_chunks, x_panels, m_parts;
};

static struct team_split team_split_of(const struct cpu_gemm_kernel *kern, int64_t n, int64_t mb, int nth) {
    struct team_split t;
    const int64_t want = 4 * (int64_t)nth;
    t.w_panels = (n + kern->nr - 1) / kern->nr;
    t.x_panels = (mb + kern->mr - 1) / kern->mr;
    const int64_t panels_per_block = kern->mc / kern->nr; /* a chunk of w fits the packing buffer */
    t.n_chunks = (t.w_panels + panels_per_block - 1) / panels_per_block;
    if (t.n_chunks < want) t.n_chunks = want < t.w_panels ? want : t.w_panels;
    t.n_chunks = (t.n_chunks + nth - 1) / nth * nth;
    if (t.n_chunks > t.w_panels) t.n_chunks = t.w_panels;
    t.m_parts = t.n_chunks >= want ? 1 : (want + t.n_chunks - 1) / t.n_chunks;
    if (t.m_parts > t.x_panels) t.m_parts = t.x_panels;
    return t;
}

/* Work item `item` of a block: w panels of chunk item / m_parts times x panels of part item % m_parts. */
static void team_item(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, const struct team_split *t,
                      int64_t item, int64_t jc, int64_t mb, int64_t pc, int64_t kb, const float *xbuf, float *wbuf,
                      float *tile, float *tmp) {
    const int64_t chunk = item / t->m_parts, part = item % t->m_parts;
    const int64_t ic = t->w_panels * chunk / t->n_chunks * kern->nr;
    const int64_t nb = min64(t->w_panels * (chunk + 1) / t->n_chunks * kern->nr, p->n) - ic;
    const int64_t j0 = t->x_panels * part / t->m_parts * kern->mr;
    const int64_t rows = min64(t->x_panels * (part + 1) / t->m_parts * kern->mr, mb) - j0;
    const struct dst_view v = dst_view_of(p);
    const bool w_in_place = read_in_place(kern, &p->w, true, p->k), x_in_place = read_in_place(kern, &p->x, false, p->k);
    if (!w_in_place) pack_block(kern, &p->w, ic, nb, pc, kb, kern->nr, wbuf, tmp);
    const struct block_src ws = w_in_place ? direct_src(&p->w, ic, pc) : packed_src(wbuf, kb);
    const struct block_src xs = x_in_place ? direct_src(&p->x, jc + j0, pc) : packed_src(xbuf + j0 * kb, kb);
    multiply_blocks(kern, &ws, &xs, nb, rows, kb, &v, ic, jc + j0, pc > 0, tile, tmp);
}

/* Pack `rows` rows from r0 of op, the whole depth k, into one panel of `width` laid out
 * dst[k * width + j]: a block of depth kb from pc is then the panel pack_panel makes of it,
 * at dst + pc * width.  Packed a cache block at a time (tmp holds one block's rows). */
static void pack_panel_whole(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_operand *op, int64_t r0,
                             int64_t rows, int64_t k, int width, float *dst, float *tmp) {
    for (int64_t pc = 0; pc < k; pc += kern->kc)
        pack_panel(kern, op, r0, rows, pc, min64(kern->kc, k - pc), width, dst + pc * width, tmp);
}

/* Team mode for products small enough to pack whole (use_pack_once): the threads pack
 * their shares of the panels of both operands once, meet at one barrier, then take work
 * items -- one w panel times a range of x panels, the whole depth -- from a shared counter.
 * The blocked team mode below packs and meets per depth block, and its items of whole w
 * chunks left one thread idle for up to two panels of work at each block: for the MLP's
 * 256 x 784 by 784 x 512 product, four blocks (eight barriers) of chunks of 1 or 2 of the
 * 11 panels.  Here items are small (about GEMM_ONCE_ITEMS per thread) at no packing cost,
 * so the threads finish within a small item of each other, once. */
#define GEMM_ONCE_ITEMS 12

static void compute_team_once(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p,
                              const struct ggmlc_op_call *call, void *shared, void *work) {
    const int nr = kern->nr, mr = kern->mr;
    const int64_t w_panels = (p->n + nr - 1) / nr, x_panels = (p->m + mr - 1) / mr, k = p->k;
    float *wpk = align64(shared), *xpk = wpk + w_panels * nr * k;
    atomic_int *next = (atomic_int *)(xpk + x_panels * mr * k);
    float *wbuf = align64(work), *tile = wbuf + kern->mc * kern->kc, *tmp = tile + nr * mr;
    const int64_t want = GEMM_ONCE_ITEMS * (int64_t)call->nth;
    const int64_t m_parts = min64((want + w_panels - 1) / w_panels, x_panels);
    const bool w_in_place = read_in_place(kern, &p->w, true, p->k), x_in_place = read_in_place(kern, &p->x, false, p->k);
    /* Where each w panel meets one item and x is read in place (llama.cpp's prompt products:
     * 128 x 2048 x 768 and the like), the item packs its panel itself, a depth block at a
     * time, into this thread's buffer: nothing shared to wait for, and the panel is still in
     * L1/L2 when the micro-kernel reads it, where the shared pack wrote megabytes out to be
     * read back (2 threads, dev VM: 60.5 -> 65.9 GFLOPS). */
    const bool w_private = !w_in_place && x_in_place && m_parts == 1;
    int64_t q0, q1;
    cpu_split_range(w_panels, call->ith, call->nth, &q0, &q1);
    if (!w_in_place && !w_private)
        for (int64_t q = q0; q < q1; q++) pack_panel_whole(kern, &p->w, q * nr, min64(nr, p->n - q * nr), k, nr, wpk + q * nr * k, tmp);
    cpu_split_range(x_panels, call->ith, call->nth, &q0, &q1);
    if (!x_in_place)
        for (int64_t q = q0; q < q1; q++) pack_panel_whole(kern, &p->x, q * mr, min64(mr, p->m - q * mr), k, mr, xpk + q * mr * k, tmp);
    if (call->ith == 0) atomic_init(next, 0);
    call->barrier(call); /* both operands are packed (and the counter is reset) */
    const int64_t kc = depth_block(kern, p);
    const struct dst_view v = dst_view_of(p);
    for (int64_t item; (item = atomic_fetch_add(next, 1)) < w_panels * m_parts;) {
        const int64_t ic = item / m_parts * nr, part = item % m_parts;
        const int64_t j0 = x_panels * part / m_parts * mr, j1 = min64(x_panels * (part + 1) / m_parts * mr, p->m);
        const int64_t rows = min64(nr, p->n - ic);
        for (int64_t pc = 0; pc < k; pc += kc) {
            const int64_t kb = min64(kc, k - pc);
            struct block_src ws = w_in_place ? direct_src(&p->w, ic, pc) : packed_src(wpk + ic * k + pc * nr, k);
            if (w_private) {
                pack_panel(kern, &p->w, ic, rows, pc, kb, nr, wbuf, tmp);
                ws = packed_src(wbuf, kb);
            }
            const struct block_src xs = x_in_place ? direct_src(&p->x, j0, pc) : packed_src(xpk + j0 * k + pc * mr, k);
            multiply_blocks(kern, &ws, &xs, rows, j1 - j0, kb, &v, ic, j0, pc > 0, tile, tmp);
        }
    }
    call->barrier(call); /* nobody reads the packed operands any more */
}

void cpu_gemm_compute_team(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *problem,
                           const struct ggmlc_op_call *call, void *shared, void *work) {
    struct cpu_gemm_problem swapped;
    const struct cpu_gemm_problem *p = swap_small_n(kern, problem, &swapped);
    if (use_pack_once(kern, p)) {
        compute_team_once(kern, p, call, shared, work);
        return;
    }
    float *xbuf = align64(shared);
    atomic_int *next = (atomic_int *)(xbuf + kern->nc * kern->kc);
    float *wbuf = align64(work), *tile = wbuf + kern->mc * kern->kc, *tmp = tile + kern->nr * kern->mr;
    if (call->ith == 0)
        for (int64_t i = 0; i < team_iterations(kern, p->m, p->k); i++) atomic_init(&next[i], 0);
    const int64_t kc = depth_block(kern, p);
    int64_t iter = 0;
    for (int64_t jc = 0; jc < p->m; jc += kern->nc) {
        const int64_t mb = min64(kern->nc, p->m - jc);
        const struct team_split t = team_split_of(kern, p->n, mb, call->nth);
        for (int64_t pc = 0; pc < p->k; pc += kc, iter++) {
            const int64_t kb = min64(kc, p->k - pc);
            int64_t q0 = 0, q1 = 0; /* this thread's panels of the shared x block (none: read in place) */
            if (!read_in_place(kern, &p->x, false, p->k)) cpu_split_range(t.x_panels, call->ith, call->nth, &q0, &q1);
            for (int64_t q = q0; q < q1; q++)
                pack_panel(kern, &p->x, jc + q * kern->mr, min64(kern->mr, mb - q * kern->mr), pc, kb, kern->mr,
                           xbuf + q * kern->mr * kb, tmp);
            call->barrier(call); /* the x block is complete (and the counters are reset) */
            for (int64_t item; (item = atomic_fetch_add(&next[iter], 1)) < t.n_chunks * t.m_parts;)
                team_item(kern, p, &t, item, jc, mb, pc, kb, xbuf, wbuf, tile, tmp);
            call->barrier(call); /* nobody reads the x block any more */
        }
    }
}
