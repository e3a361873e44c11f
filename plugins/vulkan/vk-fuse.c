/*
 * vk-fuse.c - two nodes recorded as one dispatch.
 *
 * On a large GPU a decode graph's dispatches are small, and each one that a barrier separates
 * from the last costs a few microseconds whatever it computes (4-5 us on an H200): a llama
 * layer's rms_norm and its mul by the norm weight, or its output projection and the residual add
 * after it, are two such dispatches where one does.  A fusion takes a node and the next node
 * that computes (views between them compute nothing), when the second reads the first's result
 * and a fused kernel takes the pair (vk_*_fits in vk-impl.h), and records one dispatch that
 * computes both.
 *
 * The pair must be adjacent: the second node's result may lie in memory that the allocator gave
 * to a tensor read by a node between them, so it must not be written any earlier.  The fused
 * kernel still writes the first node's result: the plugin sees only its segment of a
 * scheduler's graph, not the readers in other segments, so it cannot prove that result dead
 * (ggml-vulkan, which sees the whole graph's use counts, skips the store where it can).  That
 * store is a few kilobytes per pair in a decode graph; the dispatch and barrier saved are what
 * counts.  GGMLC_VK_FUSE=0 records every node on its own, to compare.
 */
#include "vk-impl.h"

struct vk_fusion {
    bool (*fits)(const struct vk_device *d, const struct ggml_tensor *first, const struct ggml_tensor *second);
    bool (*record)(struct vk_rec *rec, const struct ggml_tensor *first, const struct ggml_tensor *second,
                   enum ggml_status *st);
    bool rows_local;
};

/* rows_local: each element of the first node's sources is read only by the invocation that
 * writes the second node's result at the same place (a row kernel), so the second may share
 * their memory exactly (ggml-alloc places results in place of dead sources); a mat-vec reads all
 * of b in every workgroup, so its fused add must not write anything b occupies. */
static const struct vk_fusion fusions[] = {
    {vk_norm_mul_fits, vk_norm_mul_record, true},
    {vk_mul_mat_add_fits, vk_mul_mat_add_record, false},
    {vk_rope_set_rows_fits, vk_rope_set_rows_record, false},
};

static bool same_place(const struct ggml_tensor *x, const struct ggml_tensor *y) {
    return x->data == y->data && ggml_are_same_shape(x, y) && memcmp(x->nb, y->nb, sizeof x->nb) == 0;
}

static bool memory_overlaps(const struct ggml_tensor *x, const struct ggml_tensor *y) {
    if (!x->buffer || !y->buffer || x->buffer != y->buffer || !x->data || !y->data) return false;
    const char *xa = x->data, *ya = y->data;
    return xa < ya + ggml_nbytes(y) && ya < xa + ggml_nbytes(x);
}

/* Whether one dispatch may compute first and second: second's result, written while the fused
 * kernel still reads first's sources, must not lie on them (ggml-alloc gives a source's memory to
 * a later result once its last reader -- first -- is placed), except exactly in place of one
 * where the kernel is row-local. */
static bool result_spares_sources(const struct vk_fusion *f, const struct ggml_tensor *first,
                                  const struct ggml_tensor *second) {
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        const struct ggml_tensor *src = first->src[s];
        if (src && memory_overlaps(src, second) && !(f->rows_local && same_place(src, second))) return false;
    }
    return true;
}

/* The first node after i that computes something, or n. */
static int next_computing(struct ggml_tensor **nodes, int i, int n) {
    for (i++; i < n; i++)
        if (!ggmlc_op_is_view(nodes[i]->op) && !ggml_is_empty(nodes[i])) break;
    return i;
}

bool vk_fuse_fits(const struct vk_device *d, const struct ggml_tensor *first, const struct ggml_tensor *second) {
    if (vk_tuning()->fuse_off) return false;
    for (size_t k = 0; k < sizeof fusions / sizeof fusions[0]; k++)
        if (fusions[k].fits(d, first, second)) return true;
    return false;
}

int vk_fuse_record(struct vk_rec *rec, struct ggml_tensor **nodes, int i, int n, enum ggml_status *st) {
    if (vk_tuning()->fuse_off || vk_path_disabled(rec->d, VK_PATH_FUSE)) return i;
    const int j = next_computing(nodes, i, n);
    if (j == n || vk_uses_host_memory(rec->d, nodes[j])) return i;
    struct ggml_tensor *const *rest = rec->rest;
    const int n_rest = rec->n_rest;
    rec->rest = nodes + j + 1, rec->n_rest = n - j - 1; /* what reads the pair's result */
    for (size_t k = 0; k < sizeof fusions / sizeof fusions[0]; k++)
        if (fusions[k].fits(rec->d, nodes[i], nodes[j]) && result_spares_sources(&fusions[k], nodes[i], nodes[j]) &&
            fusions[k].record(rec, nodes[i], nodes[j], st))
            return j;
    rec->rest = rest, rec->n_rest = n_rest;
    return i;
}
