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
};

static const struct vk_fusion fusions[] = {
    {vk_norm_mul_fits, vk_norm_mul_record},
    {vk_mul_mat_add_fits, vk_mul_mat_add_record},
    {vk_rope_set_rows_fits, vk_rope_set_rows_record},
};

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
    for (size_t k = 0; k < sizeof fusions / sizeof fusions[0]; k++)
        if (fusions[k].fits(rec->d, nodes[i], nodes[j]) && fusions[k].record(rec, nodes[i], nodes[j], st)) return j;
    return i;
}
