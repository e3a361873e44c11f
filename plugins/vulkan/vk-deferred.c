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
 * gradients were wrong).  Writes into a buffer that is freed are dropped with it.
 *
 * Small writes (up to VK_DEFER_ONE bytes, VK_DEFER_ALL pending in all, 4-byte aligned as
 * vkCmdUpdateBuffer and vkCmdFillBuffer need) travel inside the command buffer.  Larger ones (up
 * to VK_UPLOAD_MAX pending: a prompt's token embeddings and attention mask, 2 MB for 512 tokens
 * of a 768-wide model) are copied into a host-visible upload buffer and recorded as copies from
 * there; they took a command buffer, a submit and a fence wait each, about 0.5 ms of a 6 ms
 * prompt on an H100.  The upload buffer is reused once the command buffer that copies from it
 * is done: there is one command buffer per device, begun and submitted under its lock, so when
 * none is in flight the copies have run.  Writes that do not fit take the synchronous path.
 */
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

#define VK_DEFER_ONE ((size_t)256 << 10)
#define VK_DEFER_ALL ((size_t)1 << 20)
#define VK_UPLOAD_MAX ((VkDeviceSize)64 << 20)
#define VK_UPDATE_MAX ((size_t)65536) /* vkCmdUpdateBuffer's limit per call */

enum deferred_kind { DEFERRED_UPDATE, DEFERRED_FILL, DEFERRED_COPY };

struct vk_deferred_write {
    VkBuffer buf;
    VkDeviceSize off, n;
    enum deferred_kind kind;
    bool after_overlap; /* a barrier before it: it writes bytes an earlier pending write writes */
    uint32_t fill; /* the 32-bit pattern of a fill */
    /* of an update: its bytes in the deferred data; of a copy: its bytes in the upload buffer */
    size_t data_at;
};

/* Room for one more pending write (of n bytes of data in the deferred data); false when it must
 * take the synchronous path. */
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

/* Room for n more bytes in the upload buffer, at *at: once the copies out of it have run it
 * starts over (and may grow); false when they are pending still and it is full. */
static bool upload_room(struct vk_device *d, size_t n, VkDeviceSize *at) {
    struct vk_deferred *q = &d->deferred;
    if (q->upload_busy && !d->in_flight)
        q->upload_busy = false, q->upload_used = 0; /* their command buffer is done */
    if (q->upload_busy || q->upload_used + n > VK_UPLOAD_MAX) return false;
    if (q->upload_used + n > q->upload.size &&
        (q->upload_used || vk_upload_reserve(d, &q->upload, q->upload_used + n) != GGMLC_OK))
        return false; /* pending copies out of it: not made anew under them */
    *at = q->upload_used;
    q->upload_used += n;
    return true;
}

/* A write too large for the command buffer, as a copy out of the upload buffer. */
static bool defer_copy(struct vk_device *d, VkBuffer buf, VkDeviceSize off, const void *data,
                       size_t n) {
    struct vk_deferred *q = &d->deferred;
    VkDeviceSize at;
    if (!defer_room(q, 0) || !upload_room(d, n, &at)) return false;
    memcpy((unsigned char *)q->upload.map + at, data, n);
    q->writes[q->n] = (struct vk_deferred_write){.buf = buf,
                                                 .off = off,
                                                 .n = n,
                                                 .kind = DEFERRED_COPY,
                                                 .after_overlap = overlaps_pending(q, buf, off, n),
                                                 .data_at = at};
    q->n++;
    return true;
}

bool vk_defer_write(struct vk_device *d, VkBuffer buf, VkDeviceSize off, const void *data,
                    size_t n) {
    struct vk_deferred *q = &d->deferred;
    d->n_readback = 0; /* the outputs read back may be written over */
    if (n > VK_DEFER_ONE || !aligned(off, n)) return n > 0 && defer_copy(d, buf, off, data, n);
    if (!defer_room(q, n)) return false;
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
    q->writes[q->n++] = (struct vk_deferred_write){.buf = buf,
                                                   .off = off,
                                                   .n = n,
                                                   .kind = DEFERRED_FILL,
                                                   .after_overlap = after_overlap,
                                                   .fill = pattern};
    return true;
}

static void record_write(struct vk_device *d, const struct vk_deferred_write *w) {
    struct vk_deferred *q = &d->deferred;
    if (w->kind == DEFERRED_FILL) {
        vkCmdFillBuffer(d->cmd, w->buf, w->off, w->n, w->fill);
        return;
    }
    if (w->kind == DEFERRED_COPY) {
        const VkBufferCopy region = {.srcOffset = w->data_at, .dstOffset = w->off, .size = w->n};
        vkCmdCopyBuffer(d->cmd, q->upload.buf, w->buf, 1, &region);
        q->upload_busy = true;
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
    vk_upload_release(d, &d->deferred.upload);
    d->deferred = (struct vk_deferred){0};
}
