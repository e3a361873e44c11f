/*
 * vk-buffer.c - the Vulkan buffer type and its buffers: device-local memory
 * (sub-allocated, see vk-memory.c) written and read through the staging
 * buffer, one synchronous transfer per staging-sized chunk.
 *
 * When the device is out of memory, a buffer falls back to host memory
 * (b->host; one warning per device): nodes touching it are then computed on
 * the CPU (the core's fallback, backend-fallback.c), so a graph that does not fit still
 * computes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

#define STAGING_CHUNK ((VkDeviceSize)32 << 20)

struct vk_buffer *vk_tensor_buffer(const struct vk_device *d, const struct ggml_tensor *t) {
    ggml_backend_buffer_t buf = t->view_src ? t->view_src->buffer : t->buffer;
    if (!buf || ggml_backend_buffer_get_type(buf) != d->buft) return NULL;
    return ggmlc_buffer_context(buf);
}

VkDeviceSize vk_tensor_offset(const struct vk_buffer *b, const struct ggml_tensor *t) {
    if (b->host) return (VkDeviceSize)((uintptr_t)t->data - (uintptr_t)b->host);
    return b->alloc.offset + (VkDeviceSize)((uintptr_t)t->data - VK_FAKE_BASE);
}

static void copy_region(struct vk_device *d, VkBuffer src, VkDeviceSize src_off, VkBuffer dst, VkDeviceSize dst_off, VkDeviceSize n) {
    const VkBufferCopy region = {.srcOffset = src_off, .dstOffset = dst_off, .size = n};
    vkCmdCopyBuffer(d->cmd, src, dst, 1, &region);
}

/* Move n bytes between host memory and the buffer at byte offset off, through staging. */
static enum ggml_status transfer(struct vk_buffer *b, VkDeviceSize off, void *host, size_t n, bool upload) {
    if (b->host) {
        if (upload) memcpy((char *)b->host + off, host, n);
        else memcpy(host, (const char *)b->host + off, n);
        return GGML_STATUS_SUCCESS;
    }
    struct vk_device *d = b->dev;
    pthread_mutex_lock(&d->lock);
    enum ggmlc_status st;
    if (!upload && vk_readback_get(d, b->alloc.buf, off, host, n, &st)) { /* read back with the graph */
        pthread_mutex_unlock(&d->lock);
        return st == GGMLC_OK ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
    }
    st = vk_staging_reserve(d, n < STAGING_CHUNK ? n : STAGING_CHUNK);
    if (st == GGMLC_OK) st = vk_cmd_wait(d); /* a segment in flight may still copy its outputs into staging */
    for (size_t done = 0; st == GGMLC_OK && done < n;) {
        const size_t chunk = n - done < d->staging.size ? n - done : (size_t)d->staging.size;
        if (upload) memcpy(d->staging.map, (const char *)host + done, chunk);
        st = vk_cmd_begin(d);
        if (st != GGMLC_OK) break;
        if (upload) copy_region(d, d->staging.buf, 0, b->alloc.buf, off + done, chunk);
        else {
            copy_region(d, b->alloc.buf, off + done, d->staging.buf, 0, chunk);
            vk_barrier_to_host(d->cmd);
        }
        st = vk_cmd_submit_wait(d);
        if (st == GGMLC_OK && !upload) memcpy((char *)host + done, d->staging.map, chunk);
        done += chunk;
    }
    pthread_mutex_unlock(&d->lock);
    return st == GGMLC_OK ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
}

/* A small write is kept for the next command buffer (vk-deferred.c): no round trip of its own. */
static bool deferred_write(struct vk_buffer *b, VkDeviceSize off, const void *data, size_t n) {
    if (b->host) return false;
    pthread_mutex_lock(&b->dev->lock);
    const bool kept = !b->dev->lost && vk_defer_write(b->dev, b->alloc.buf, off, data, n);
    pthread_mutex_unlock(&b->dev->lock);
    return kept;
}

static enum ggml_status buf_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *t, const void *data, size_t off, size_t n) {
    struct vk_buffer *b = ggmlc_buffer_context(buffer);
    int64_t mark = vk_time_mark(b->dev);
    const VkDeviceSize at = vk_tensor_offset(b, t) + off;
    const enum ggml_status st = deferred_write(b, at, data, n) ? GGML_STATUS_SUCCESS : transfer(b, at, (void *)data, n, true);
    vk_time_add(b->dev, VK_TIME_SET, &mark);
    return st;
}

static enum ggml_status buf_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor *t, void *data, size_t off, size_t n) {
    struct vk_buffer *b = ggmlc_buffer_context(buffer);
    int64_t mark = vk_time_mark(b->dev);
    const enum ggml_status st = transfer(b, vk_tensor_offset(b, t) + off, data, n, false);
    vk_time_add(b->dev, VK_TIME_GET, &mark);
    return st;
}

/* Fill n bytes at off with value: vkCmdFillBuffer needs 4-byte alignment, else stage a filled copy. */
static enum ggml_status fill(struct vk_buffer *b, VkDeviceSize off, uint8_t value, VkDeviceSize n) {
    if (b->host) {
        memset((char *)b->host + off, value, n);
        return GGML_STATUS_SUCCESS;
    }
    if (off % 4 != 0 || n % 4 != 0) {
        void *tmp = malloc(n);
        if (!tmp) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan: cannot stage a %llu-byte memset", (unsigned long long)n);
            return GGML_STATUS_ALLOC_FAILED;
        }
        memset(tmp, value, n);
        enum ggml_status s = transfer(b, off, tmp, n, true);
        free(tmp);
        return s;
    }
    struct vk_device *d = b->dev;
    pthread_mutex_lock(&d->lock);
    if (!d->lost && vk_defer_fill(d, b->alloc.buf, off, n, value * 0x01010101u)) {
        pthread_mutex_unlock(&d->lock);
        return GGML_STATUS_SUCCESS;
    }
    enum ggmlc_status st = vk_cmd_begin(d);
    if (st == GGMLC_OK) {
        vkCmdFillBuffer(d->cmd, b->alloc.buf, off, n, value * 0x01010101u);
        st = vk_cmd_submit_wait(d);
    }
    pthread_mutex_unlock(&d->lock);
    return st == GGMLC_OK ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
}

static enum ggml_status buf_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *t, uint8_t value, size_t off, size_t n) {
    struct vk_buffer *b = ggmlc_buffer_context(buffer);
    return fill(b, vk_tensor_offset(b, t) + off, value, n);
}

static void buf_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    struct vk_buffer *b = ggmlc_buffer_context(buffer);
    if (b->host) memset(b->host, value, b->host_size);
    else fill(b, b->alloc.offset, value, b->alloc.size);
}

/* Device-to-device copy when src lives in a buffer of the same device. */
static bool buf_cpy_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor *src, struct ggml_tensor *dst) {
    struct vk_buffer *db = ggmlc_buffer_context(buffer);
    struct vk_device *d = db->dev;
    struct vk_buffer *sb = vk_tensor_buffer(d, src);
    if (!sb) return false;
    if (sb->host) /* host-backed on either side: one transfer from or into host memory */
        return transfer(db, vk_tensor_offset(db, dst), (char *)sb->host + vk_tensor_offset(sb, src), ggml_nbytes(src), true) ==
               GGML_STATUS_SUCCESS;
    if (db->host)
        return transfer(sb, vk_tensor_offset(sb, src), (char *)db->host + vk_tensor_offset(db, dst), ggml_nbytes(src), false) ==
               GGML_STATUS_SUCCESS;
    pthread_mutex_lock(&d->lock);
    enum ggmlc_status st = vk_cmd_begin(d);
    if (st == GGMLC_OK) {
        copy_region(d, sb->alloc.buf, vk_tensor_offset(sb, src), db->alloc.buf, vk_tensor_offset(db, dst), ggml_nbytes(src));
        st = vk_cmd_submit_wait(d);
    }
    pthread_mutex_unlock(&d->lock);
    return st == GGMLC_OK;
}

static void *buf_get_base(ggml_backend_buffer_t buffer) {
    struct vk_buffer *b = ggmlc_buffer_context(buffer);
    return b->host ? b->host : (void *)VK_FAKE_BASE;
}

static void buf_free(ggml_backend_buffer_t buffer) {
    struct vk_buffer *b = ggmlc_buffer_context(buffer);
    if (b->host) {
        free(b->host);
        free(b);
        return;
    }
    pthread_mutex_lock(&b->dev->lock);
    vk_cmd_wait(b->dev); /* a compute in flight may still use the memory */
    vk_deferred_drop(b->dev, b->alloc.buf, b->alloc.offset, b->alloc.size);
    vk_mem_free(b->dev, &b->alloc);
    pthread_mutex_unlock(&b->dev->lock);
    free(b);
}

static const struct ggmlc_buffer_iface vk_buffer_iface = {
    .struct_size = sizeof(struct ggmlc_buffer_iface),
    .free_buffer = buf_free,
    .get_base = buf_get_base,
    .memset_tensor = buf_memset_tensor,
    .set_tensor = buf_set_tensor,
    .get_tensor = buf_get_tensor,
    .cpy_tensor = buf_cpy_tensor,
    .clear = buf_clear,
};

/* ------------------------------------------------------- buffer type */

static const char *buft_name(ggml_backend_buffer_type_t buft) {
    struct vk_device *d = ggmlc_buft_context(buft);
    return d->name;
}

/* Out of device memory: give b host memory instead, warning once per device (caller holds d->lock). */
static bool use_host_memory(struct vk_device *d, struct vk_buffer *b, size_t size) {
    const size_t align = 256, padded = (size + align - 1) / align * align;
    b->host = aligned_alloc(align, padded ? padded : align);
    if (!b->host) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of device memory and of host memory allocating a buffer of %zu bytes",
                        d->name, size);
        return false;
    }
    b->host_size = padded;
    if (!d->warned_host_memory)
        ggmlc_log(GGML_LOG_LEVEL_WARN, "vulkan %s: out of device memory allocating a buffer of %zu bytes; buffers that do not "
                  "fit go to host memory and the nodes using them are computed on the CPU\n", d->name, size);
    d->warned_host_memory = true;
    return true;
}

static ggml_backend_buffer_t buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    struct vk_device *d = ggmlc_buft_context(buft);
    struct vk_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory", d->name);
        return NULL;
    }
    b->dev = d;
    pthread_mutex_lock(&d->lock);
    enum ggmlc_status st = vk_device_open(d);
    if (st == GGMLC_OK) st = vk_mem_alloc(d, size, &b->alloc);
    const bool host_fallback = st == GGMLC_ERR_NOMEM && !d->lost && use_host_memory(d, b, size);
    pthread_mutex_unlock(&d->lock);
    if (st != GGMLC_OK && !host_fallback) {
        free(b);
        return NULL;
    }
    ggml_backend_buffer_t buffer = ggmlc_buffer_new(buft, &vk_buffer_iface, b, size);
    if (!buffer) {
        if (b->host) {
            free(b->host);
        } else {
            pthread_mutex_lock(&d->lock);
            vk_mem_free(d, &b->alloc);
            pthread_mutex_unlock(&d->lock);
        }
        free(b);
    }
    return buffer;
}

static size_t buft_alignment(ggml_backend_buffer_type_t buft) {
    struct vk_device *d = ggmlc_buft_context(buft);
    const size_t a = (size_t)d->props.limits.minStorageBufferOffsetAlignment;
    return a > 64 ? a : 64;
}

/* The largest single allocation (vkAllocateMemory's limit; Vulkan 1.1 maintenance3). */
static size_t buft_max_size(ggml_backend_buffer_type_t buft) {
    struct vk_device *d = ggmlc_buft_context(buft);
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(d->phys, &p2);
    return (size_t)m3.maxMemoryAllocationSize;
}

static const struct ggmlc_buft_iface vk_buft_iface = {
    .struct_size = sizeof(struct ggmlc_buft_iface),
    .get_name = buft_name,
    .alloc_buffer = buft_alloc,
    .get_alignment = buft_alignment,
    .get_max_size = buft_max_size,
};

ggml_backend_buffer_type_t vk_buffer_type_new(struct vk_device *d, ggml_backend_dev_t gdev) {
    return ggmlc_buft_new(gdev, &vk_buft_iface, d);
}

/* ------------------------------------------------------- host buffer type
 *
 * Host memory offered by the device for tensors that the CPU backend computes on: the buffer type
 * ggml's get_host_buffer_type names.  llama.cpp puts the weights it leaves on the CPU (n_gpu_layers
 * below the model's) into the first GPU's host buffer type, ahead of the CPU's extra types
 * (CPU_REPACK), as it does with ggml-vulkan; a device without one would see those weights
 * repacked, summed in another order than on ggml, and the tokens part from ggml's.  The memory is
 * plain host memory (not pinned): the CPU reads it at full speed, and uploads of an offloaded
 * product's weights go through the staging buffer as from any host buffer.  The device's backends
 * do not take this type (supports_buft), so the scheduler gives its tensors to the CPU, and
 * offload_op decides, as on ggml, when a batched product's weights are worth the copy. */

static const char *host_buft_name(ggml_backend_buffer_type_t buft) {
    return ((const struct vk_device *)ggmlc_buft_context(buft))->host_name;
}

static ggml_backend_buffer_t host_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    return ggmlc_host_buffer_new(buft, size);
}

static size_t host_buft_alignment(ggml_backend_buffer_type_t buft) {
    return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}

static bool host_buft_is_host(ggml_backend_buffer_type_t buft) { return true; }

static const struct ggmlc_buft_iface vk_host_buft_iface = {
    .struct_size = sizeof(struct ggmlc_buft_iface),
    .get_name = host_buft_name,
    .alloc_buffer = host_buft_alloc,
    .get_alignment = host_buft_alignment,
    .is_host = host_buft_is_host,
};

ggml_backend_buffer_type_t vk_host_buffer_type_new(struct vk_device *d, ggml_backend_dev_t gdev) {
    snprintf(d->host_name, sizeof d->host_name, "%s_Host", d->name);
    return ggmlc_buft_new(gdev, &vk_host_buft_iface, d);
}
