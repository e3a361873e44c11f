/*
 * vk-deferred.c - small writes into device buffers (a batch of inputs, optimizer
 * hyperparameters, a gradient seed, a memset) kept on the host and recorded at the start
 * of the next command buffer the device begins, instead of a command buffer, a submit and
 * a fence wait each: a training step made ten such round trips around one graph.
 *
 * ggml_backend_tensor_set stays synchronous for the caller (the data are copied here at
 * once) and ordered for the device: every later command buffer (a graph, a read, a larger
 * write, a copy) begins with the pending writes, in the order they were made, and a barrier
 * after them.  A write over bytes that an earlier pending one writes too gets a barrier before
 * it: transfers in one command buffer may run in any order, and ggml's callers do write a
 * tensor twice between two graphs (test-backend-ops randomizes every tensor, then
 * ggml_graph_reset sets the loss gradient to 1: on the H200 the random value won, and the
 * gradients were wrong).  Writes into a buffer that is freed are dropped with it.  Writes too large
 * to keep (over VK_DEFER_ONE bytes, VK_DEFER_ALL pending in all) or not 4-byte aligned, as
 * vkCmdUpdateBuffer and vkCmdFillBuffer need, take the synchronous path.
 */
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

#define VK_DEFER_ONE ((size_t)256 << 10)
#define VK_DEFER_ALL ((size_t)1 << 20)
#define VK_UPDATE_MAX ((size_t)65536) /* vkCmdUpdateBuffer's limit per call */

struct vk_deferred_write {
    VkBuffer buf;
    VkDeviceSize off, n;
    bool is_fill;
    bool after_overlap; /* a barrier before it: it writes bytes an earlier pending write writes */
    uint32_t fill; /* the 32-bit pattern of a fill */
    size_t data_at; /* of a write: its bytes in the deferred data */
};

/* Room for one more write of n bytes of data; false when it must take the synchronous path. */
static bool defer_room(struct vk_deferred *q, size_t n) {
    if (n > VK_DEFER_ONE || q->bytes + n > VK_DEFER_ALL) return false;
    if (q->n == q->cap) {
        const int cap = q->cap ? 2 * q->cap : 16;
        struct vk_deferred_write *w = realloc(q->writes, sizeof *w * (size_t)cap);
        if (!w) return false;
        q->writes = w;
        q->cap = cap;
    }
    if (!q->data) q->data = malloc(VK_DEFER_ALL);
    return q->data != NULL;
}

static bool aligned(VkDeviceSize off, size_t n) { return off % 4 == 0 && n % 4 == 0 && n > 0; }

/* Some pending write (since the last barrier among them or before) touches [off, off + n) of buf. */
static bool overlaps_pending(const struct vk_deferred *q, VkBuffer buf, VkDeviceSize off, VkDeviceSize n) {
    for (int i = q->n - 1; i >= 0; i--) {
        const struct vk_deferred_write *w = &q->writes[i];
        if (w->buf == buf && w->off < off + n && off < w->off + w->n) return true;
        if (w->after_overlap) return false; /* what came before it is ordered by its barrier */
    }
    return false;
}

bool vk_defer_write(struct vk_device *d, VkBuffer buf, VkDeviceSize off, const void *data,
                    size_t n) {
    struct vk_deferred *q = &d->deferred;
    if (!aligned(off, n) || !defer_room(q, n)) return false;
    d->n_readback = 0; /* the outputs read back may be written over */
    memcpy(q->data + q->bytes, data, n);
    const bool after_overlap = overlaps_pending(q, buf, off, n);
    q->writes[q->n++] = (struct vk_deferred_write){.buf = buf, .off = off, .n = n,
                                                   .after_overlap = after_overlap, .data_at = q->bytes};
    q->bytes += n;
    return true;
}

bool vk_defer_fill(struct vk_device *d, VkBuffer buf, VkDeviceSize off, size_t n,
                   uint32_t pattern) {
    struct vk_deferred *q = &d->deferred;
    if (!aligned(off, n) || !defer_room(q, 0)) return false;
    d->n_readback = 0;
    const bool after_overlap = overlaps_pending(q, buf, off, n);
    q->writes[q->n++] = (struct vk_deferred_write){.buf = buf, .off = off, .n = n, .is_fill = true,
                                                   .after_overlap = after_overlap, .fill = pattern};
    return true;
}

static void record_write(struct vk_device *d, const struct vk_deferred_write *w) {
    const struct vk_deferred *q = &d->deferred;
    if (w->is_fill) {
        vkCmdFillBuffer(d->cmd, w->buf, w->off, w->n, w->fill);
        return;
    }
    for (VkDeviceSize done = 0; done < w->n; done += VK_UPDATE_MAX) {
        const VkDeviceSize part = w->n - done < VK_UPDATE_MAX ? w->n - done : VK_UPDATE_MAX;
        vkCmdUpdateBuffer(d->cmd, w->buf, w->off + done, part, q->data + w->data_at + done);
    }
}

/* The pending writes, in groups that a barrier separates: within a group they touch disjoint
 * bytes, so any order is right, and GGMLC_DEBUG=vulkan-reorder records each group backwards to
 * show it (lavapipe runs transfers one by one, in order: a missing barrier is seen there only so). */
void vk_deferred_record(struct vk_device *d) {
    struct vk_deferred *q = &d->deferred;
    for (int first = 0, end; first < q->n; first = end) {
        for (end = first + 1; end < q->n && !q->writes[end].after_overlap;) end++;
        if (q->writes[first].after_overlap) vk_barrier_full(d->cmd); /* after the same bytes' last write */
        for (int i = first; i < end; i++) record_write(d, &q->writes[d->reverse_writes ? end - 1 - (i - first) : i]);
    }
    if (q->n) vk_barrier_full(d->cmd); /* the writes before everything after them */
    q->n = 0;
    q->bytes = 0;
}

void vk_deferred_drop(struct vk_device *d, VkBuffer buf, VkDeviceSize off, VkDeviceSize size) {
    struct vk_deferred *q = &d->deferred;
    int kept = 0;
    bool barrier = false; /* a dropped write's barrier still orders the writes around it */
    for (int i = 0; i < q->n; i++) {
        const struct vk_deferred_write *w = &q->writes[i];
        if (w->buf == buf && w->off >= off && w->off + w->n <= off + size) {
            barrier |= w->after_overlap;
            continue;
        }
        q->writes[kept] = *w;
        q->writes[kept++].after_overlap |= barrier;
        barrier = false;
    }
    q->n = kept; /* the data of dropped writes stay until the next recording: at most their bytes */
}

void vk_deferred_release(struct vk_device *d) {
    free(d->deferred.writes);
    free(d->deferred.data);
    d->deferred = (struct vk_deferred){0};
}
