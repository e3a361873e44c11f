/*
 * vk-pipeline.c - compute pipelines built lazily from the embedded SPIR-V,
 * one per (shader, specialization constants), and the VkPipelineCache kept
 * on disk under $XDG_CACHE_HOME/ggmlc (or ~/.cache/ggmlc) so that drivers
 * which compile slowly do it once per machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vk-impl.h"

struct vk_pipeline_variant {
    uint32_t spec[VK_MAX_SPEC];
    int n_spec;
    VkPipeline pipeline; /* VK_NULL_HANDLE: the driver failed to build it; not tried again */
};

struct vk_pipeline_set {
    struct vk_pipeline_variant *v;
    int n, cap;
};

int vk_shader_bindings(enum vk_shader_id id) { return vk_shader_blobs[id].n_bindings; }

/* "<cache dir>/ggmlc/vulkan-<vendor>-<device>.cache" into path; false when no home is known. */
static bool cache_path(const struct vk_device *d, char *path, size_t size, bool create_dir) {
    const char *xdg = ggmlc_getenv("XDG_CACHE_HOME"), *home = ggmlc_getenv("HOME");
    char dir[768];
    if (xdg && xdg[0] == '/') snprintf(dir, sizeof dir, "%s/ggmlc", xdg);
    else if (home && home[0] == '/') snprintf(dir, sizeof dir, "%s/.cache/ggmlc", home);
    else return false;
    if (create_dir) {
        char parent[768];
        snprintf(parent, sizeof parent, "%s", dir);
        char *slash = strrchr(parent, '/');
        if (slash) *slash = '\0';
        mkdir(parent, 0755); /* ~/.cache may not exist yet */
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return false;
    }
    int n = snprintf(path, size, "%s/vulkan-%04x-%04x.cache", dir, d->props.vendorID, d->props.deviceID);
    return n > 0 && (size_t)n < size;
}

/* Read the cache file if its header names this very device and driver; NULL otherwise. */
static void *read_cache_file(const struct vk_device *d, size_t *size) {
    char path[1024];
    if (!cache_path(d, path, sizeof path, false)) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *data = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    const long header = 16 + VK_UUID_SIZE;
    if (len >= header && len < (256L << 20) && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)len)) &&
        fread(data, 1, (size_t)len, f) == (size_t)len) {
        uint32_t h[4];
        memcpy(h, data, sizeof h);
        const bool same = h[0] >= (uint32_t)header && h[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && h[2] == d->props.vendorID &&
                          h[3] == d->props.deviceID &&
                          memcmp((char *)data + 16, d->props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
        if (!same) {
            free(data);
            data = NULL;
        }
    } else {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = data ? (size_t)len : 0;
    return data;
}

enum ggmlc_status vk_pipelines_init(struct vk_device *d) {
    d->pipelines = calloc(VK_SHADER_COUNT, sizeof *d->pipelines);
    if (!d->pipelines) return ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory", d->name);
    size_t size = 0;
    void *data = read_cache_file(d, &size);
    const VkPipelineCacheCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = data,
    };
    VkResult r = vkCreatePipelineCache(d->dev, &info, NULL, &d->pipeline_cache);
    if (r != VK_SUCCESS && data) { /* a cache the driver rejects: start empty */
        const VkPipelineCacheCreateInfo empty = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
        r = vkCreatePipelineCache(d->dev, &empty, NULL, &d->pipeline_cache);
    }
    free(data);
    if (r != VK_SUCCESS) d->pipeline_cache = VK_NULL_HANDLE; /* works without a cache, only slower */
    d->n_new_pipelines = 0;
    return GGMLC_OK;
}

void vk_pipeline_cache_save(struct vk_device *d) {
    if (!d->pipeline_cache || d->n_new_pipelines == 0) return;
    size_t size = 0;
    if (vkGetPipelineCacheData(d->dev, d->pipeline_cache, &size, NULL) != VK_SUCCESS || size == 0) return;
    void *data = malloc(size);
    char path[1024], tmp[1100];
    if (data && vkGetPipelineCacheData(d->dev, d->pipeline_cache, &size, data) == VK_SUCCESS &&
        cache_path(d, path, sizeof path, true)) {
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(data, 1, size, f) == size;
        if (f && fclose(f) != 0) ok = false;
        if (ok && rename(tmp, path) == 0) d->n_new_pipelines = 0;
        else {
            remove(tmp);
            ggmlc_log(GGML_LOG_LEVEL_WARN, "vulkan %s: could not write the pipeline cache %s\n", d->name, path);
        }
    }
    free(data);
}

void vk_pipelines_release(struct vk_device *d) {
    if (d->pipelines) {
        for (int i = 0; i < VK_SHADER_COUNT; i++) {
            for (int j = 0; j < d->pipelines[i].n; j++)
                if (d->pipelines[i].v[j].pipeline) vkDestroyPipeline(d->dev, d->pipelines[i].v[j].pipeline, NULL);
            free(d->pipelines[i].v);
        }
        free(d->pipelines);
        d->pipelines = NULL;
    }
    if (d->pipeline_cache) vkDestroyPipelineCache(d->dev, d->pipeline_cache, NULL);
    d->pipeline_cache = VK_NULL_HANDLE;
}

/* The driver's statistics of a pipeline's first executable (registers, spills, shared memory
 * on NVIDIA's driver), as one debug line: what the tile overrides are tuned against. */
static void log_pipeline_statistics(struct vk_device *d, VkPipeline pipeline, const char *name) {
    PFN_vkGetPipelineExecutableStatisticsKHR get_stats =
        (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(d->dev, "vkGetPipelineExecutableStatisticsKHR");
    if (!get_stats) return;
    const VkPipelineExecutableInfoKHR exe = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipeline};
    VkPipelineExecutableStatisticKHR stats[16];
    uint32_t n = 16;
    for (uint32_t i = 0; i < n; i++) stats[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    const VkResult r = get_stats(d->dev, &exe, &n, stats);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return;
    char line[1024];
    int len = 0;
    for (uint32_t i = 0; i < n && len < (int)sizeof line - 80; i++) {
        const VkPipelineExecutableStatisticKHR *st = &stats[i];
        const int room = (int)sizeof line - len;
        switch (st->format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: len += snprintf(line + len, room, "; %s %u", st->name, st->value.b32); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: len += snprintf(line + len, room, "; %s %lld", st->name, (long long)st->value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
            len += snprintf(line + len, room, "; %s %llu", st->name, (unsigned long long)st->value.u64);
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: len += snprintf(line + len, room, "; %s %g", st->name, st->value.f64); break;
        default: break;
        }
    }
    ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan %s: pipeline %s statistics%s\n", d->name, name, len ? line : ": none");
}

static VkPipeline build_pipeline(struct vk_device *d, enum vk_shader_id id, const uint32_t *spec, int n_spec, bool has_fallback) {
    const struct vk_shader_blob *blob = &vk_shader_blobs[id];
    if (!blob->code) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan: shader %s was not compiled into this build", blob->name);
        return VK_NULL_HANDLE;
    }
    const VkShaderModuleCreateInfo mod_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = blob->size,
        .pCode = blob->code,
    };
    VkShaderModule module;
    if (vk_check(d, vkCreateShaderModule(d->dev, &mod_info, NULL, &module), "vkCreateShaderModule") != GGMLC_OK)
        return VK_NULL_HANDLE;
    VkSpecializationMapEntry entries[VK_MAX_SPEC];
    for (int i = 0; i < n_spec; i++)
        entries[i] = (VkSpecializationMapEntry){.constantID = (uint32_t)i, .offset = (uint32_t)(i * 4), .size = 4};
    const VkSpecializationInfo spec_info = {
        .mapEntryCount = (uint32_t)n_spec,
        .pMapEntries = entries,
        .dataSize = (size_t)n_spec * 4,
        .pData = spec,
    };
    const VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = d->caps.exec_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = module,
            .pName = "main",
            .pSpecializationInfo = n_spec ? &spec_info : NULL,
        },
        .layout = d->pipe_layout[blob->n_bindings],
    };
    VkPipeline pipeline = VK_NULL_HANDLE;
    /* a shader binding more storage buffers than the device has no layout (vk-device.c): as if it failed to compile */
    const bool fails = vk_fault_pipeline(blob->name) || !info.layout; /* tests: vk-fault.c */
    VkResult r = VK_ERROR_INITIALIZATION_FAILED;
    if (!fails) r = vkCreateComputePipelines(d->dev, d->pipeline_cache, 1, &info, NULL, &pipeline);
    vkDestroyShaderModule(d->dev, module, NULL);
    if (r == VK_ERROR_DEVICE_LOST) {
        vk_check(d, r, "vkCreateComputePipelines");
        return VK_NULL_HANDLE;
    }
    if (r != VK_SUCCESS && has_fallback) { /* the caller takes another kernel and says so */
        ggmlc_set_error(GGMLC_ERR_BACKEND, "vulkan %s: the driver failed to compile shader %s (VkResult %d)", d->name, blob->name, (int)r);
        return VK_NULL_HANDLE;
    }
    if (r != VK_SUCCESS) { /* not an error of the computation: its nodes go to the CPU (vk-record.c); said once */
        const bool first = !d->warned_pipeline;
        if (first || ggmlc_debug_enabled("vulkan"))
            ggmlc_log(first ? GGML_LOG_LEVEL_WARN : GGML_LOG_LEVEL_DEBUG, "vulkan %s: the driver failed to compile shader %s "
                      "(VkResult %d); nodes needing a shader that does not compile are computed on the CPU\n", d->name, blob->name, (int)r);
        d->warned_pipeline = true;
        return VK_NULL_HANDLE;
    }
    d->n_new_pipelines++;
    if (ggmlc_debug_enabled("vulkan")) { /* which kernels a graph takes, with which constants */
        char consts[16 * VK_MAX_SPEC] = "";
        for (int i = 0, len = 0; i < n_spec; i++) len += snprintf(consts + len, sizeof consts - (size_t)len, "%s%u", i ? "," : "", spec[i]);
        ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan %s: pipeline %s built (specialization constants: %s)\n", d->name, blob->name,
                  n_spec ? consts : "none");
    }
    if (d->caps.exec_stats) log_pipeline_statistics(d, pipeline, blob->name);
    return pipeline;
}

VkPipeline vk_pipeline_get(struct vk_device *d, enum vk_shader_id id, const uint32_t *spec, int n_spec, bool has_fallback) {
    struct vk_pipeline_set *set = &d->pipelines[id];
    for (int i = 0; i < set->n; i++) {
        if (set->v[i].n_spec != n_spec || memcmp(set->v[i].spec, spec, (size_t)n_spec * 4) != 0) continue;
        return set->v[i].pipeline;
    }
    if (set->n == set->cap) {
        const int cap = set->cap ? 2 * set->cap : 2;
        struct vk_pipeline_variant *grown = realloc(set->v, (size_t)cap * sizeof *grown);
        if (!grown) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan %s: out of host memory", d->name);
            return VK_NULL_HANDLE;
        }
        set->v = grown;
        set->cap = cap;
    }
    VkPipeline p = build_pipeline(d, id, spec, n_spec, has_fallback);
    if (!p && d->lost) return VK_NULL_HANDLE;
    struct vk_pipeline_variant *v = &set->v[set->n++];
    memset(v, 0, sizeof *v);
    memcpy(v->spec, spec, (size_t)n_spec * 4);
    v->n_spec = n_spec;
    v->pipeline = p;
    return p;
}

bool vk_optional_pipeline(struct vk_device *d, enum vk_shader_id id, const uint32_t *spec,
                          int n_spec, enum vk_path path, const char *instead) {
    static const uint32_t no_spec[1] = {0};
    if (vk_path_disabled(d, path)) return false;
    if (vk_pipeline_get(d, id, spec ? spec : no_spec, spec ? n_spec : 0, true)) return true;
    if (!d->lost) ggmlc_log(GGML_LOG_LEVEL_WARN, "%s; %s instead\n", ggmlc_last_error(), instead);
    vk_path_disable(d, path);
    return false;
}
