/*
 * vk-memory.c - device-local memory.  Small buffers share 64 MiB blocks (one
 * VkDeviceMemory and one VkBuffer each, carved first-fit from a sorted free
 * list) because drivers limit the number of allocations; large buffers get a
 * block of their own.  Also the host-visible staging buffer for transfers.
 */
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

struct vk_segment {
    VkDeviceSize offset, size;
};

struct vk_block {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    struct vk_segment *free; /* sorted by offset, never adjacent */
    int n_free, cap_free;
    int n_live;
    struct vk_block *next;
};

uint32_t vk_find_memory_type(const struct vk_device *d, uint32_t type_bits, VkMemoryPropertyFlags required,
                             VkMemoryPropertyFlags preferred) {
    uint32_t fallback = UINT32_MAX;
    for (uint32_t i = 0; i < d->memprops.memoryTypeCount; i++) {
        const VkMemoryPropertyFlags f = d->memprops.memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (f & required) != required) continue;
        if ((f & preferred) == preferred) return i;
        if (fallback == UINT32_MAX) fallback = i;
    }
    return fallback;
}

static VkDeviceSize alloc_alignment(const struct vk_device *d) {
    const VkDeviceSize a = d->props.limits.minStorageBufferOffsetAlignment;
    return a > 256 ? a : 256;
}

/* A VkBuffer of size bytes bound to fresh memory of the wanted properties.  With quiet_oom,
 * running out of memory returns GGMLC_ERR_NOMEM without recording an error: the caller
 * has a fallback and tells the user itself. */
static enum ggmlc_status create_bound_buffer(struct vk_device *d, VkDeviceSize size, VkMemoryPropertyFlags required,
                                             VkMemoryPropertyFlags preferred, bool quiet_oom, VkBuffer *buf, VkDeviceMemory *mem) {
    const VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    enum ggmlc_status st = vk_check(d, vkCreateBuffer(d->dev, &info, NULL, buf), "vkCreateBuffer");
    if (st != GGMLC_OK) return st;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->dev, *buf, &req);
    const uint32_t type = vk_find_memory_type(d, req.memoryTypeBits, required, preferred);
    if (type == UINT32_MAX) {
        vkDestroyBuffer(d->dev, *buf, NULL);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: no suitable memory type for a buffer", d->name);
    }
    const VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = type};
    const bool injected = (required & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && vk_fault_device_alloc(); /* tests: vk-fault.c */
    const VkResult r = injected ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(d->dev, &alloc, NULL, mem);
    const bool oom = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
    st = oom && quiet_oom ? GGMLC_ERR_NOMEM : vk_check(d, r, "vkAllocateMemory");
    if (st == GGMLC_OK) st = vk_check(d, vkBindBufferMemory(d->dev, *buf, *mem, 0), "vkBindBufferMemory");
    if (st != GGMLC_OK) {
        if (*mem) vkFreeMemory(d->dev, *mem, NULL);
        vkDestroyBuffer(d->dev, *buf, NULL);
        *mem = VK_NULL_HANDLE;
        *buf = VK_NULL_HANDLE;
        if (st == GGMLC_ERR_NOMEM && !quiet_oom)
            ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of memory allocating %llu MiB", d->name,
                            (unsigned long long)(size >> 20));
    }
    return st;
}

/* A new block in *out, or the status of the failure (out of device memory: not recorded). */
static enum ggmlc_status block_new(struct vk_device *d, VkDeviceSize size, struct vk_block **out) {
    struct vk_block *b = calloc(1, sizeof *b);
    *out = NULL;
    if (!b || !(b->free = malloc(4 * sizeof *b->free))) {
        free(b);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory", d->name);
    }
    const enum ggmlc_status st = create_bound_buffer(d, size, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, true, &b->buf, &b->mem);
    if (st != GGMLC_OK) {
        free(b->free);
        free(b);
        return st;
    }
    b->size = size;
    b->cap_free = 4;
    b->n_free = 1;
    b->free[0] = (struct vk_segment){0, size};
    b->next = d->blocks;
    d->blocks = b;
    *out = b;
    return GGMLC_OK;
}

static void block_destroy(struct vk_device *d, struct vk_block *b) {
    for (struct vk_block **p = &d->blocks; *p; p = &(*p)->next) {
        if (*p == b) {
            *p = b->next;
            break;
        }
    }
    vk_replay_forget(d); /* a kept command buffer may name b->buf */
    vkDestroyBuffer(d->dev, b->buf, NULL);
    vkFreeMemory(d->dev, b->mem, NULL);
    free(b->free);
    free(b);
}

static bool block_take(struct vk_block *b, VkDeviceSize size, VkDeviceSize *offset) {
    for (int i = 0; i < b->n_free; i++) {
        if (b->free[i].size < size) continue;
        *offset = b->free[i].offset;
        b->free[i].offset += size;
        b->free[i].size -= size;
        if (b->free[i].size == 0) {
            memmove(&b->free[i], &b->free[i + 1], (size_t)(b->n_free - i - 1) * sizeof *b->free);
            b->n_free--;
        }
        b->n_live++;
        return true;
    }
    return false;
}

/* Insert [offset, offset+size) into the sorted free list, merging neighbours. */
static bool block_give_back(struct vk_block *b, VkDeviceSize offset, VkDeviceSize size) {
    int i = 0;
    while (i < b->n_free && b->free[i].offset < offset) i++;
    const bool merge_prev = i > 0 && b->free[i - 1].offset + b->free[i - 1].size == offset;
    const bool merge_next = i < b->n_free && offset + size == b->free[i].offset;
    if (merge_prev && merge_next) {
        b->free[i - 1].size += size + b->free[i].size;
        memmove(&b->free[i], &b->free[i + 1], (size_t)(b->n_free - i - 1) * sizeof *b->free);
        b->n_free--;
    } else if (merge_prev) {
        b->free[i - 1].size += size;
    } else if (merge_next) {
        b->free[i].offset = offset;
        b->free[i].size += size;
    } else {
        if (b->n_free == b->cap_free) {
            struct vk_segment *grown = realloc(b->free, 2 * (size_t)b->cap_free * sizeof *grown);
            if (!grown) return false; /* the range is lost until the block dies; harmless */
            b->free = grown;
            b->cap_free *= 2;
        }
        memmove(&b->free[i + 1], &b->free[i], (size_t)(b->n_free - i) * sizeof *b->free);
        b->free[i] = (struct vk_segment){offset, size};
        b->n_free++;
    }
    return true;
}

enum ggmlc_status vk_mem_alloc(struct vk_device *d, VkDeviceSize size, struct vk_alloc *out) {
    const VkDeviceSize align = alloc_alignment(d);
    size = (size + align - 1) / align * align;
    struct vk_block *b = NULL;
    VkDeviceSize offset = 0;
    if (size <= VK_BLOCK_SIZE / 2) {
        for (b = d->blocks; b; b = b->next)
            if (b->size == VK_BLOCK_SIZE && block_take(b, size, &offset)) break;
        if (!b) {
            const enum ggmlc_status st = block_new(d, VK_BLOCK_SIZE, &b);
            if (st != GGMLC_OK) return st;
            block_take(b, size, &offset);
        }
    } else {
        const enum ggmlc_status st = block_new(d, size, &b);
        if (st != GGMLC_OK) return st;
        block_take(b, size, &offset);
    }
    *out = (struct vk_alloc){.block = b, .buf = b->buf, .offset = offset, .size = size};
    return GGMLC_OK;
}

void vk_mem_free(struct vk_device *d, struct vk_alloc *a) {
    struct vk_block *b = a->block;
    if (!b) return;
    d->n_readback = 0; /* another buffer may take the memory of an output read back */
    block_give_back(b, a->offset, a->size);
    if (--b->n_live == 0) block_destroy(d, b);
    memset(a, 0, sizeof *a);
}

void vk_mem_release_all(struct vk_device *d) {
    while (d->blocks) block_destroy(d, d->blocks);
}

static void host_buffer_destroy(struct vk_device *d, struct vk_staging *s) {
    if (s->buf) vkDestroyBuffer(d->dev, s->buf, NULL);
    if (s->mem) vkFreeMemory(d->dev, s->mem, NULL); /* unmaps implicitly */
    memset(s, 0, sizeof *s);
}

/* Host-visible memory of at least size bytes in *s (at least 1 MiB, doubling), mapped; preferred:
 * the memory properties wanted beyond host-visible and coherent. */
static enum ggmlc_status host_buffer_create(struct vk_device *d, struct vk_staging *s,
                                            VkDeviceSize size, VkMemoryPropertyFlags preferred) {
    VkDeviceSize want = (VkDeviceSize)1 << 20;
    while (want < size) want *= 2;
    size = want;
    enum ggmlc_status st = create_bound_buffer(
        d, size, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        preferred, false, &s->buf, &s->mem);
    if (st != GGMLC_OK) return st;
    st = vk_check(d, vkMapMemory(d->dev, s->mem, 0, VK_WHOLE_SIZE, 0, &s->map), "vkMapMemory");
    if (st != GGMLC_OK) {
        host_buffer_destroy(d, s);
        return st;
    }
    s->size = size;
    return GGMLC_OK;
}

enum ggmlc_status vk_staging_reserve(struct vk_device *d, VkDeviceSize size) {
    if (d->staging.size >= size) return GGMLC_OK;
    /* grown rarely (doubling): a new staging buffer makes vk-replay.c forget the command buffers
     * it kept; cached memory, as the host reads results back from it */
    if (d->staging.size && size < 2 * d->staging.size) size = 2 * d->staging.size;
    vk_staging_release(d);
    return host_buffer_create(d, &d->staging, size, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
}

enum ggmlc_status vk_upload_reserve(struct vk_device *d, struct vk_staging *s, VkDeviceSize size) {
    if (s->size >= size) return GGMLC_OK;
    if (s->size && size < 2 * s->size) size = 2 * s->size;
    host_buffer_destroy(d, s);
    /* only written by the host: any host-visible memory */
    return host_buffer_create(d, s, size, 0);
}

void vk_upload_release(struct vk_device *d, struct vk_staging *s) { host_buffer_destroy(d, s); }

/* *a holding at least size bytes: kept when it does, else allocated anew, at least `least` bytes,
 * grown by doubling (few reallocations).  Out of device memory: false, *a empty. */
static bool reserve_grown(struct vk_device *d, struct vk_alloc *a, VkDeviceSize size, VkDeviceSize least) {
    if (a->block && a->size >= size) return true;
    vk_mem_free(d, a); /* a no-op without a block */
    VkDeviceSize want = least;
    while (want < size) want *= 2;
    if (vk_mem_alloc(d, want, a) == GGMLC_OK) return true;
    memset(a, 0, sizeof *a);
    return false;
}

bool vk_scratch_reserve(struct vk_device *d, VkDeviceSize size) {
    return reserve_grown(d, &d->scratch, size, (VkDeviceSize)1 << 20);
}

void vk_scratch_release(struct vk_device *d) { vk_mem_free(d, &d->scratch); /* a no-op without a block */ }

bool vk_checks_reserve(struct vk_device *d, VkDeviceSize size) { return reserve_grown(d, &d->checks, size, 4096); }

void vk_checks_release(struct vk_device *d) { vk_mem_free(d, &d->checks); }

void vk_staging_release(struct vk_device *d) {
    d->n_readback = 0;
    if (d->staging.buf) vk_replay_forget(d); /* a kept command buffer may copy into it */
    host_buffer_destroy(d, &d->staging);
}
