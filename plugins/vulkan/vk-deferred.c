/*
 * vk-deferred.c - small writes into device buffers (a batch of inputs, optimizer
 * hyperparameters, a gradient seed, a memset) kept on the host and recorded at the start
 * of the next command buffer the device begins, instead of a command buffer, a submit and
 * a fence wait each: a training step made ten such round trips around one graph.
 *
 * ggml_backend_tensor_set stays synchronous for the caller (the data are copied here at
 * once) and ordered for the device: every later command buffer (a graph, a read, a larger
 * write, a copy) begins with the pending writes, in the order they were made, and a barrier
 * after them.  Writes into a buffer that is freed are dropped with it.  Writes too large
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

bool vk_defer_write(struct vk_device *d, VkBuffer buf, VkDeviceSize off, const void *data,
                    size_t n) {
    struct vk_deferred *q = &d->deferred;
    if (!aligned(off, n) || !defer_room(q, n)) return false;
    memcpy(q->data + q->bytes, data, n);
    q->writes[q->n++] = (struct vk_deferred_write){.buf = buf, .off = off, .n = n,
                                                   .data_at = q->bytes};
    q->bytes += n;
    return true;
}

bool vk_defer_fill(struct vk_device *d, VkBuffer buf, VkDeviceSize off, size_t n,
                   uint32_t pattern) {
    struct vk_deferred *q = &d->deferred;
    if (!aligned(off, n) || !defer_room(q, 0)) return false;
    q->writes[q->n++] = (struct vk_deferred_write){.buf = buf, .off = off, .n = n,
                                                   .is_fill = true, .fill = pattern};
    return true;
}

/* Transfers before, everything after: shaders and transfers read and write what they wrote. */
static void barrier_after_writes(struct vk_device *d) {
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    vkCmdPipelineBarrier(d->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &mb, 0, NULL, 0, NULL);
}

void vk_deferred_record(struct vk_device *d) {
    struct vk_deferred *q = &d->deferred;
    for (int i = 0; i < q->n; i++) {
        const struct vk_deferred_write *w = &q->writes[i];
        if (w->is_fill) {
            vkCmdFillBuffer(d->cmd, w->buf, w->off, w->n, w->fill);
            continue;
        }
        for (VkDeviceSize done = 0; done < w->n; done += VK_UPDATE_MAX) {
            const VkDeviceSize part = w->n - done < VK_UPDATE_MAX ? w->n - done : VK_UPDATE_MAX;
            vkCmdUpdateBuffer(d->cmd, w->buf, w->off + done, part, q->data + w->data_at + done);
        }
    }
    if (q->n) barrier_after_writes(d);
    q->n = 0;
    q->bytes = 0;
}

void vk_deferred_drop(struct vk_device *d, VkBuffer buf, VkDeviceSize off, VkDeviceSize size) {
    struct vk_deferred *q = &d->deferred;
    int kept = 0;
    for (int i = 0; i < q->n; i++) {
        const struct vk_deferred_write *w = &q->writes[i];
        if (w->buf == buf && w->off >= off && w->off + w->n <= off + size) continue;
        q->writes[kept++] = *w;
    }
    q->n = kept; /* the data of dropped writes stay until the next recording: at most their bytes */
}

void vk_deferred_release(struct vk_device *d) {
    free(d->deferred.writes);
    free(d->deferred.data);
    d->deferred = (struct vk_deferred){0};
}
