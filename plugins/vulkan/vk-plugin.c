/*
 * vk-plugin.c - the plugin descriptor, the registry with one ggml device per
 * chosen Vulkan device, and the backends (streams) on them.
 *
 * Options ([backend.vulkan] of the config):
 *   device = auto | any | all | <index>[,<index>...] | <name substring>
 *            (auto: every GPU, or the CPU-type devices such as lavapipe when
 *            there is no GPU; any: the same, naming them); $GGMLC_VK_DEVICE
 *            overrides it.  A CPU-type device is a default choice (ahead of the
 *            CPU backend) only when the value names it: any value but auto.
 *   f16    = auto | on | off   use f16 kernels where the device has them.
 *   coopmat = auto | off       cooperative-matrix (tensor core) kernels where the
 *            device and this build have them; $GGMLC_VK_COOPMAT=0 turns them off.
 * They and the GGMLC_VK_* variables are read once, at init (vk-tuning.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vk-impl.h"

struct vk_registry {
    struct vk_device *devs;
    int n;
};

/* ------------------------------------------------------------ backend */

static const char *backend_name(ggml_backend_t backend) { return ((struct vk_device *)ggmlc_backend_context(backend))->name; }
static void backend_free(ggml_backend_t backend) {}
/* Wait for the graph compute_async submitted last (transfers wait for it by themselves). */
static void backend_synchronize(ggml_backend_t backend) {
    struct vk_device *d = ggmlc_backend_context(backend);
    int64_t mark = vk_time_mark(d);
    pthread_mutex_lock(&d->lock);
    if (d->opened) vk_cmd_wait(d);
    pthread_mutex_unlock(&d->lock);
    vk_time_add(d, VK_TIME_WAIT, &mark);
}

static enum ggml_status backend_graph_compute_from(ggml_backend_t backend,
                                                   struct ggml_cgraph *cgraph, int first,
                                                   int *stopped_at) {
    struct vk_device *d = ggmlc_backend_context(backend);
    return vk_compute_from(d, ggml_graph_nodes(cgraph), first, ggml_graph_n_nodes(cgraph),
                           stopped_at);
}

static const struct ggmlc_backend_iface vk_backend_iface = {
    .struct_size = sizeof(struct ggmlc_backend_iface),
    .get_name = backend_name,
    .free = backend_free,
    .synchronize = backend_synchronize,
    .graph_compute_from = backend_graph_compute_from,
    .order_nodes = vk_order_nodes,
};

/* ------------------------------------------------------------- device */

/* The op-vtable entry of every supported op: computes one node by itself (the core uses
 * graph_compute_from; this is for callers of the vtable, which have no CPU to hand it to). */
static enum ggml_status node_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    if (call->ith != 0) return GGML_STATUS_SUCCESS;
    struct vk_device *d = call->backend_ctx;
    int stopped_at = 1;
    enum ggml_status s = vk_compute_from(d, &dst, 0, 1, &stopped_at);
    if (s == GGML_STATUS_SUCCESS && stopped_at == 0) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan %s: %s (node '%s') cannot run on the GPU",
                        d->name, ggml_op_desc(dst), dst->name);
        return GGML_STATUS_FAILED;
    }
    pthread_mutex_lock(&d->lock);
    if (s == GGML_STATUS_SUCCESS && vk_cmd_wait(d) != GGMLC_OK) s = GGML_STATUS_FAILED;
    pthread_mutex_unlock(&d->lock);
    return s;
}

static ggmlc_op_fn op_fns[GGML_OP_COUNT];

static const char *dev_name(ggml_backend_dev_t dev) { return ((struct vk_device *)ggmlc_device_context(dev))->name; }
static const char *dev_description(ggml_backend_dev_t dev) { return ((struct vk_device *)ggmlc_device_context(dev))->description; }
static const char *dev_caps(ggml_backend_dev_t dev) { return ((struct vk_device *)ggmlc_device_context(dev))->caps_str; }
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t dev) {
    const struct vk_device *d = ggmlc_device_context(dev);
    return d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? GGML_BACKEND_DEVICE_TYPE_IGPU : GGML_BACKEND_DEVICE_TYPE_GPU;
}

/* A CPU-type device emulates a GPU on the host's cores, slower than the CPU backend: chosen by
 * default only when the configuration named it (device = anything but auto). */
static bool dev_is_default_choice(ggml_backend_dev_t dev, const char **why) {
    const struct vk_device *d = ggmlc_device_context(dev);
    if (d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) {
        *why = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
                   ? "an integrated GPU, after any discrete one"
                   : "a GPU";
        return true;
    }
    if (strcasecmp(vk_tuning()->device, "auto") != 0) {
        *why =
            "a CPU-type Vulkan device (software), chosen because [backend.vulkan] device names it";
        return true;
    }
    *why =
        "a CPU-type Vulkan device (software, slower than the CPU backend); name it with --backend "
        "or device = in [backend.vulkan]";
    return false;
}

static void dev_memory(ggml_backend_dev_t dev, size_t *free_bytes, size_t *total_bytes) {
    const struct vk_device *d = ggmlc_device_context(dev);
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                            .pNext = d->caps.memory_budget ? &budget : NULL};
    vkGetPhysicalDeviceMemoryProperties2(d->phys, &p2);
    size_t total = 0, used = 0;
    for (uint32_t i = 0; i < p2.memoryProperties.memoryHeapCount; i++) {
        if (!(p2.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
        total += p2.memoryProperties.memoryHeaps[i].size;
        if (d->caps.memory_budget) used += budget.heapUsage[i];
    }
    *total_bytes = total;
    *free_bytes = total > used ? total - used : 0;
}

static ggml_backend_t dev_init_backend(ggml_backend_dev_t dev, const char *params) {
    struct vk_device *d = ggmlc_device_context(dev);
    pthread_mutex_lock(&d->lock);
    enum ggmlc_status st = vk_device_open(d);
    d->host_time.on = ggmlc_debug_enabled("vulkan-time");
    pthread_mutex_unlock(&d->lock);
    return st == GGMLC_OK ? ggmlc_backend_new(dev, &vk_backend_iface, d) : NULL;
}

static ggml_backend_buffer_type_t dev_buffer_type(ggml_backend_dev_t dev) {
    return ((struct vk_device *)ggmlc_device_context(dev))->buft;
}

static ggml_backend_buffer_type_t dev_host_buffer_type(ggml_backend_dev_t dev) {
    return ((struct vk_device *)ggmlc_device_context(dev))->host_buft;
}

static bool dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    return vk_supports_node(ggmlc_device_context(dev), op);
}

/* Its device memory only: tensors in its host buffer type are computed by the CPU backend. */
static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return buft == ((struct vk_device *)ggmlc_device_context(dev))->buft;
}

/* Worth copying host weights over only for batched matrix products. */
static bool dev_offload_op(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    return (op->op == GGML_OP_MUL_MAT || op->op == GGML_OP_MUL_MAT_ID) && op->ne[1] >= 32;
}

static void dev_free(ggml_backend_dev_t dev) {
    struct vk_device *d = ggmlc_device_context(dev);
    pthread_mutex_lock(&d->lock);
    vk_device_close(d);
    pthread_mutex_unlock(&d->lock);
}

static const struct ggmlc_device_iface vk_device_iface = {
    .struct_size = sizeof(struct ggmlc_device_iface),
    .get_name = dev_name,
    .get_description = dev_description,
    .get_memory = dev_memory,
    .get_type = dev_type,
    .get_caps = dev_caps,
    .init_backend = dev_init_backend,
    .get_buffer_type = dev_buffer_type,
    .get_host_buffer_type = dev_host_buffer_type,
    .ops = op_fns,
    .n_ops = GGML_OP_COUNT,
    .supports_op = dev_supports_op,
    .supports_buft = dev_supports_buft,
    .offload_op = dev_offload_op,
    .free = dev_free,
    .is_default_choice = dev_is_default_choice,
};

/* ------------------------------------------------------ device choice */

static bool is_index_list(const char *s) {
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && *s != ',' && *s != ' ') return false;
    return true;
}

/* Whether device d (of all n) is chosen by the option value sel. */
static bool device_chosen(const struct vk_device *d, const struct vk_device *all, int n, const char *sel) {
    if (strcasecmp(sel, "all") == 0) return true;
    if (strcasecmp(sel, "auto") == 0 || strcasecmp(sel, "any") == 0) {
        bool any_gpu = false;
        for (int i = 0; i < n; i++) any_gpu |= all[i].props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
        return !any_gpu || d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    }
    if (is_index_list(sel)) {
        for (const char *p = sel; *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) {
                p++;
                continue;
            }
            if (v == (long)(d - all)) return true;
            p = end;
        }
        return false;
    }
    return strcasestr(d->description, sel) != NULL;
}

/* ------------------------------------------------------------- plugin */

static void reg_free(ggml_backend_reg_t reg) {
    struct vk_registry *r = ggmlc_reg_context(reg);
    for (int i = 0; i < r->n; i++) pthread_mutex_destroy(&r->devs[i].lock);
    free(r->devs);
    free(r);
}

static const struct ggmlc_reg_iface vk_reg_iface = {
    .struct_size = sizeof(struct ggmlc_reg_iface),
    .free = reg_free,
};

static int vk_probe(void) {
    struct vk_device *devs;
    int n;
    if (vk_discover_devices(&devs, &n) != GGMLC_OK) return 0;
    free(devs);
    return n > 0;
}

static void fill_op_fns(void) {
    const struct vk_op_kernel *table = vk_op_table();
    for (int op = 0; op < GGML_OP_COUNT; op++) op_fns[op] = table[op].record ? node_compute : NULL;
}

static enum ggmlc_status vk_init(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out) {
    vk_tuning_read(opts);
    const struct vk_tuning *tune = vk_tuning();
    const char *sel = tune->device;
    vk_fault_init();
    struct vk_registry *r = calloc(1, sizeof *r);
    if (!r) return ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan: out of memory");
    struct vk_device *all;
    int n_all;
    enum ggmlc_status st = vk_discover_devices(&all, &n_all);
    if (st != GGMLC_OK) {
        free(r);
        return st;
    }
    r->devs = calloc((size_t)n_all, sizeof *r->devs);
    for (int i = 0; r->devs && i < n_all; i++)
        if (device_chosen(&all[i], all, n_all, sel)) r->devs[r->n++] = all[i];
    free(all);
    if (!r->devs || r->n == 0) {
        free(r->devs);
        free(r);
        return ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "vulkan: no Vulkan device matches device = %s", sel);
    }
    fill_op_fns();
    ggml_backend_reg_t reg = ggmlc_reg_new(opts && opts->name ? opts->name : "vulkan", &vk_reg_iface, r);
    if (!reg) {
        free(r->devs);
        free(r);
        return ggmlc_last_status();
    }
    for (int i = 0; i < r->n; i++) {
        struct vk_device *d = &r->devs[i];
        pthread_mutex_init(&d->lock, NULL);
        snprintf(d->name, sizeof d->name, "Vulkan%d", i);
        d->use_f16 = d->caps.storage16 && !tune->f16_off;
        d->use_coopmat = d->use_f16 && d->caps.subgroup_size >= 4 && !tune->coopmat_off &&
                         ((d->caps.coopmat_nv && vk_shader_present(vk_shader_find("mm_coopmat_nv_f16_f32"))) ||
                          (d->caps.coopmat_khr_frag && vk_shader_present(vk_shader_find("mm_coopmat_khr_f16_f32"))));
        ggml_backend_dev_t gdev = ggmlc_device_new(reg, &vk_device_iface, d);
        if (!gdev || !(d->buft = vk_buffer_type_new(d, gdev)) || !(d->host_buft = vk_host_buffer_type_new(d, gdev)))
            return ggmlc_last_status();
    }
    *reg_out = reg;
    return GGMLC_OK;
}

static void vk_fini(void) { vk_instance_release(); }

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER,
    "vulkan",
    "0.1.0",
    "Vulkan compute backend (GLSL shaders compiled to SPIR-V, f16 and cooperative matrices where available)",
    vk_probe,
    vk_init,
    vk_fini,
};
