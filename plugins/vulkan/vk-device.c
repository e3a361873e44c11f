/*
 * vk-device.c - the logical device of a physical device: its queue, the
 * command buffer every computation and transfer is recorded into, the
 * descriptor/pipeline layouts, and error handling (device loss included).
 */
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

enum ggmlc_status vk_check(struct vk_device *d, VkResult r, const char *what) {
    if (r == VK_SUCCESS) return GGMLC_OK;
    if (r == VK_ERROR_DEVICE_LOST) {
        d->lost = true;
        return ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s (%s): device lost during %s; what its memory held is gone, and "
                               "it declines every op from now on (new graphs run on the CPU)", d->name, d->description, what);
    }
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of %s memory during %s", d->name,
                               r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "device" : "host", what);
    return ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: %s failed (VkResult %d)", d->name, what, (int)r);
}

static enum ggmlc_status create_logical_device(struct vk_device *d) {
    const struct vk_caps *c = &d->caps;
    const char *exts[9];
    uint32_t n_ext = 0;
    exts[n_ext++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    if (c->memory_budget) exts[n_ext++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    if (c->coopmat_nv) exts[n_ext++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    if (c->int_dot) exts[n_ext++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    const bool khr = c->coopmat_khr_frag || c->coopmat_flex;
    if (khr) exts[n_ext++] = "VK_KHR_cooperative_matrix";
    if (c->coopmat_flex) exts[n_ext++] = "VK_NV_cooperative_matrix2";
    if (c->exec_stats) exts[n_ext++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;

    struct vk_coopmat2_features coopmat2 = {.sType = VK_STYPE_COOPMAT2_FEATURES, .flexibleDimensions = VK_TRUE};
    struct vk_coopmat_khr_features coopmat_khr = {
        .sType = VK_STYPE_COOPMAT_KHR_FEATURES, .pNext = c->coopmat_flex ? &coopmat2 : NULL, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = khr ? &coopmat_khr : NULL,
        .shaderIntegerDotProduct = VK_TRUE,
    };
    void *after_nv = c->int_dot ? (void *)&int_dot : khr ? (void *)&coopmat_khr : NULL;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .pNext = after_nv,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = c->coopmat_nv ? (void *)&coopmat : after_nv,
        .shaderFloat16 = c->fp16,
        .shaderInt8 = c->int8,
        .storageBuffer8BitAccess = c->int8,
        .vulkanMemoryModel = c->memory_model,
    };
    VkPhysicalDeviceVulkan11Features f11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &f12,
        .storageBuffer16BitAccess = c->storage16,
    };
    VkPhysicalDeviceFeatures supported;
    vkGetPhysicalDeviceFeatures(d->phys, &supported);
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec_stats = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = &f11,
        .pipelineExecutableInfo = VK_TRUE,
    };
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = c->exec_stats ? (void *)&exec_stats : &f11};
    f2.features.shaderInt16 = supported.shaderInt16;
    f2.features.shaderInt64 = supported.shaderInt64;

    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = d->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f2,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = n_ext,
        .ppEnabledExtensionNames = exts,
    };
    enum ggmlc_status st = vk_check(d, vkCreateDevice(d->phys, &info, NULL, &d->dev), "vkCreateDevice");
    if (st != GGMLC_OK) {
        d->dev = VK_NULL_HANDLE;
        return st;
    }
    vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    d->push_descriptor_set = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(d->dev, "vkCmdPushDescriptorSetKHR");
    if (!d->push_descriptor_set)
        return ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: vkCmdPushDescriptorSetKHR is missing", d->name);
    return GGMLC_OK;
}

enum ggmlc_status vk_cmd_alloc(struct vk_device *d, VkCommandBuffer *cmd) {
    const VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    return vk_check(d, vkAllocateCommandBuffers(d->dev, &alloc, cmd), "vkAllocateCommandBuffers");
}

static enum ggmlc_status create_commands(struct vk_device *d) {
    const VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = d->queue_family,
    };
    enum ggmlc_status st = vk_check(d, vkCreateCommandPool(d->dev, &pool, NULL, &d->cmd_pool), "vkCreateCommandPool");
    if (st != GGMLC_OK) return st;
    st = vk_cmd_alloc(d, &d->cmd);
    if (st != GGMLC_OK) return st;
    const VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    st = vk_check(d, vkCreateFence(d->dev, &fence, NULL, &d->fence), "vkCreateFence");
    d->replay_keep = !vk_tuning()->replay_off;
    d->replay_debug = ggmlc_debug_enabled("vulkan-replay");
    d->reverse_writes = ggmlc_debug_enabled("vulkan-reorder");
    const bool per_dispatch = ggmlc_debug_enabled("vulkan-ops");
    if (st == GGMLC_OK && (per_dispatch || ggmlc_debug_enabled("vulkan")) && d->props.limits.timestampComputeAndGraphics) {
        const VkQueryPoolCreateInfo q = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                         .queryCount = per_dispatch ? 2 + VK_PROFILE_MAX : 2};
        if (vkCreateQueryPool(d->dev, &q, NULL, &d->timestamps) != VK_SUCCESS) d->timestamps = VK_NULL_HANDLE; /* timing is optional */
        d->profile_dispatches = per_dispatch && d->timestamps;
    }
    return st;
}

/* One push-descriptor set layout and pipeline layout per binding count. */
static enum ggmlc_status create_layouts(struct vk_device *d) {
    for (int n = 1; n <= VK_MAX_BINDINGS && (uint32_t)n <= d->props.limits.maxPerStageDescriptorStorageBuffers; n++) {
        VkDescriptorSetLayoutBinding b[VK_MAX_BINDINGS];
        for (int i = 0; i < n; i++)
            b[i] = (VkDescriptorSetLayoutBinding){
                .binding = (uint32_t)i,
                .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
            };
        const VkDescriptorSetLayoutCreateInfo set = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
            .bindingCount = (uint32_t)n,
            .pBindings = b,
        };
        enum ggmlc_status st = vk_check(d, vkCreateDescriptorSetLayout(d->dev, &set, NULL, &d->set_layout[n]), "vkCreateDescriptorSetLayout");
        if (st != GGMLC_OK) return st;
        const VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = VK_PUSH_BYTES};
        const VkPipelineLayoutCreateInfo layout = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
            .setLayoutCount = 1,
            .pSetLayouts = &d->set_layout[n],
            .pushConstantRangeCount = 1,
            .pPushConstantRanges = &push,
        };
        st = vk_check(d, vkCreatePipelineLayout(d->dev, &layout, NULL, &d->pipe_layout[n]), "vkCreatePipelineLayout");
        if (st != GGMLC_OK) return st;
    }
    return GGMLC_OK;
}

enum ggmlc_status vk_device_open(struct vk_device *d) {
    if (d->opened) return d->lost ? ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: the device was lost", d->name) : GGMLC_OK;
    enum ggmlc_status st = create_logical_device(d);
    if (st == GGMLC_OK) st = create_commands(d);
    if (st == GGMLC_OK) st = create_layouts(d);
    if (st == GGMLC_OK) st = vk_pipelines_init(d);
    if (st != GGMLC_OK) {
        vk_device_close(d);
        return st;
    }
    d->opened = true;
    return GGMLC_OK;
}

void vk_device_close(struct vk_device *d) {
    if (d->dev) {
        vkDeviceWaitIdle(d->dev);
        vk_pipeline_cache_save(d);
        vk_pipelines_release(d);
        vk_staging_release(d);
        vk_scratch_release(d);
        vk_checks_release(d);
        vk_mem_release_all(d);
        vk_deferred_release(d);
        vk_replay_release(d);
        for (int n = 1; n <= VK_MAX_BINDINGS; n++) {
            if (d->pipe_layout[n]) vkDestroyPipelineLayout(d->dev, d->pipe_layout[n], NULL);
            if (d->set_layout[n]) vkDestroyDescriptorSetLayout(d->dev, d->set_layout[n], NULL);
            d->pipe_layout[n] = VK_NULL_HANDLE;
            d->set_layout[n] = VK_NULL_HANDLE;
        }
        if (d->timestamps) vkDestroyQueryPool(d->dev, d->timestamps, NULL);
        d->timestamps = VK_NULL_HANDLE;
        if (d->fence) vkDestroyFence(d->dev, d->fence, NULL);
        if (d->cmd_pool) vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
        vkDestroyDevice(d->dev, NULL);
    }
    d->fence = VK_NULL_HANDLE;
    d->cmd_pool = VK_NULL_HANDLE;
    d->cmd = VK_NULL_HANDLE;
    d->dev = VK_NULL_HANDLE;
    d->opened = false;
    d->in_flight = false; /* vkDeviceWaitIdle waited for it */
}

/* How long vk_cmd_wait polls the fence before it blocks: a thread blocked in vkWaitForFences
 * wakes some time after the fence signals, a large share of a decode step on a fast GPU, so on a
 * GPU it polls for up to GGMLC_VK_WAIT_SPIN microseconds (DEFAULT_WAIT_SPIN_US; 0: blocks at
 * once), paying a core meanwhile.  A CPU device (lavapipe) needs that core to compute. */
#define DEFAULT_WAIT_SPIN_US 2000

static int64_t wait_spin_us(const struct vk_device *d) {
    const struct vk_env_value *e = &vk_tuning()->wait_spin;
    if (e->set && e->n == 1) return (int64_t)e->v[0];
    return d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : DEFAULT_WAIT_SPIN_US;
}

/* Whether the fence signalled within the spin time (an error is left to vkWaitForFences). */
static bool fence_spin(const struct vk_device *d) {
    const int64_t limit = wait_spin_us(d);
    if (limit <= 0) return false;
    const int64_t start = ggml_time_us();
    for (;;) {
        const VkResult r = vkGetFenceStatus(d->dev, d->fence);
        if (r != VK_NOT_READY) return r == VK_SUCCESS;
        if (ggml_time_us() - start > limit) return false;
    }
}

enum ggmlc_status vk_cmd_wait(struct vk_device *d) {
    if (!d->in_flight) return GGMLC_OK;
    d->in_flight = false;
    ggmlc_counter_add(GGMLC_COUNTER_WAITS, 1);
    const int64_t start = d->timestamps ? ggml_time_us() : 0;
    const bool spun = fence_spin(d);
    const enum ggmlc_status st =
        spun ? GGMLC_OK : vk_check(d, vkWaitForFences(d->dev, 1, &d->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (d->timestamps) /* GGMLC_DEBUG=vulkan */
        ggmlc_log(GGML_LOG_LEVEL_INFO, "vulkan %s: waited %.1f us for the fence (%s)\n", d->name, (double)(ggml_time_us() - start),
                  spun ? "polled" : "blocked");
    return st;
}

/* A full memory barrier between shaders and transfers (vk-record.c's reason: a later command
 * touches what an earlier one wrote, or writes what it read). */
void vk_barrier_full(VkCommandBuffer cmd) {
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Transfers made visible to the host (a download, the index-check slots read back): a fence
 * wait alone makes the device's work complete, not its writes visible to the host. */
void vk_barrier_to_host(VkCommandBuffer cmd) {
    const VkMemoryBarrier to_host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0,
                         NULL);
}

enum ggmlc_status vk_cmd_begin(struct vk_device *d) {
    if (d->lost) return ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: the device was lost", d->name);
    enum ggmlc_status st = vk_cmd_wait(d); /* the one command buffer is free again */
    d->n_readback = 0; /* what it submits may write the outputs read back */
    if (st == GGMLC_OK) st = vk_check(d, vkResetCommandBuffer(d->cmd, 0), "vkResetCommandBuffer");
    if (st != GGMLC_OK) return st;
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    st = vk_check(d, vkBeginCommandBuffer(d->cmd, &begin), "vkBeginCommandBuffer");
    if (st != GGMLC_OK) return st;
    /* What earlier submissions wrote, visible to everything after: their fence was waited for,
     * which orders their execution before this one but does not make their writes available
     * to it (the whole batch, a replayed command buffer included, comes after this barrier). */
    vk_barrier_full(d->cmd);
    vk_deferred_record(d); /* the writes made since the last one, first */
    return st;
}

enum ggmlc_status vk_cmd_submit_part(struct vk_device *d, VkCommandBuffer cmd, bool first, bool last) {
    enum ggmlc_status st = first ? vk_check(d, vkEndCommandBuffer(d->cmd), "vkEndCommandBuffer") : GGMLC_OK;
    if (st != GGMLC_OK) return st;
    VkCommandBuffer cmds[2];
    uint32_t n = 0;
    if (first) cmds[n++] = d->cmd;
    if (cmd) cmds[n++] = cmd;
    const VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = n, .pCommandBuffers = cmds};
    if (last) st = vk_check(d, vkResetFences(d->dev, 1, &d->fence), "vkResetFences");
    /* no command buffer: only the fence, signalled once everything submitted before is done */
    if (st == GGMLC_OK)
        st = vk_check(d, vkQueueSubmit(d->queue, n ? 1 : 0, &submit, last ? d->fence : VK_NULL_HANDLE), "vkQueueSubmit");
    ggmlc_counter_add(GGMLC_COUNTER_SUBMITS, 1);
    if (last) d->in_flight = st == GGMLC_OK;
    return st;
}

enum ggmlc_status vk_cmd_submit_with(struct vk_device *d, VkCommandBuffer cmd) {
    return vk_cmd_submit_part(d, cmd, true, true);
}

enum ggmlc_status vk_cmd_submit(struct vk_device *d) { return vk_cmd_submit_with(d, VK_NULL_HANDLE); }

enum ggmlc_status vk_cmd_submit_wait(struct vk_device *d) {
    enum ggmlc_status st = vk_cmd_submit(d);
    return st == GGMLC_OK ? vk_cmd_wait(d) : st;
}
