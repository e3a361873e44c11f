/*
 * vk-instance.c - the Vulkan instance and the discovery of physical devices
 * that can run compute shaders, with what each offers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

static pthread_mutex_t instance_lock = PTHREAD_MUTEX_INITIALIZER;
static VkInstance instance;

VkInstance vk_instance_get(void) {
    pthread_mutex_lock(&instance_lock);
    if (!instance) {
        uint32_t version = VK_API_VERSION_1_0;
        if (vkEnumerateInstanceVersion(&version) != VK_SUCCESS || version < VK_API_VERSION_1_2) {
            ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan: the Vulkan loader offers version %u.%u, 1.2 is needed",
                            VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
        } else {
            const VkApplicationInfo app = {
                .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                .pApplicationName = "ggmlc",
                .pEngineName = "ggmlc",
                .apiVersion = VK_API_VERSION_1_2,
            };
            const VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
            VkResult r = vkCreateInstance(&info, NULL, &instance);
            if (r != VK_SUCCESS) {
                instance = VK_NULL_HANDLE;
                ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan: vkCreateInstance failed (VkResult %d)", (int)r);
            }
        }
    }
    VkInstance result = instance;
    pthread_mutex_unlock(&instance_lock);
    return result;
}

void vk_instance_release(void) {
    pthread_mutex_lock(&instance_lock);
    if (instance) vkDestroyInstance(instance, NULL);
    instance = VK_NULL_HANDLE;
    pthread_mutex_unlock(&instance_lock);
}

static bool has_extension(const VkExtensionProperties *exts, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(exts[i].extensionName, name) == 0) return true;
    return false;
}

/* The n entries (*n) of a physical-device property list that a vkGetPhysicalDevice*Properties*
 * function of the name given fills, each element `size` bytes starting with its sType; NULL when
 * the function is missing, the list empty or memory short (caller frees). */
static void *property_list(VkPhysicalDevice phys, const char *fn_name, size_t size, VkStructureType stype, uint32_t *n) {
    typedef VkResult (*get_fn)(VkPhysicalDevice, uint32_t *, void *);
    get_fn get = (get_fn)vkGetInstanceProcAddr(instance, fn_name);
    *n = 0;
    if (!get || get(phys, n, NULL) != VK_SUCCESS || *n == 0) return NULL;
    unsigned char *p = calloc(*n, size);
    if (!p) return NULL;
    for (uint32_t i = 0; i < *n; i++) memcpy(p + i * size, &stype, sizeof stype);
    if (get(phys, n, p) == VK_SUCCESS) return p;
    free(p);
    return NULL;
}

/* The NV cooperative-matrix shapes we use: 16x16x16, f16 inputs, f32 accumulator. */
static bool nv_coopmat_has_f16_shape(VkPhysicalDevice phys) {
    uint32_t n;
    VkCooperativeMatrixPropertiesNV *p = property_list(phys, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", sizeof *p,
                                                       VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV, &n);
    bool found = false;
    for (uint32_t i = 0; p && i < n && !found; i++)
        found = p[i].MSize == 16 && p[i].NSize == 16 && p[i].KSize == 16 && p[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                p[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV && p[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                p[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV && p[i].scope == VK_SCOPE_SUBGROUP_NV;
    free(p);
    return found;
}

/* The KHR cooperative-matrix shape of the coopmat kernel's fragments (f16 inputs, f32 accumulator,
 * subgroup scope, M, N and K each 8 or 16): 16x16x16 where the device offers it, else the largest. */
static bool khr_coopmat_f16_shape(VkPhysicalDevice phys, uint32_t shape[3]) {
    uint32_t n;
    struct vk_coopmat_khr_properties *p = property_list(phys, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", sizeof *p,
                                                        VK_STYPE_COOPMAT_KHR_PROPERTIES, &n);
    uint32_t best = 0;
    for (uint32_t i = 0; p && i < n; i++) {
        const uint32_t dims[3] = {p[i].MSize, p[i].NSize, p[i].KSize};
        bool ok = p[i].AType == 0 && p[i].BType == 0 && p[i].CType == 1 && p[i].ResultType == 1 && !p[i].saturatingAccumulation &&
                  p[i].scope == 3;
        for (int k = 0; k < 3; k++) ok &= dims[k] == 8 || dims[k] == 16;
        if (!ok || dims[0] * dims[1] * dims[2] <= best) continue;
        best = dims[0] * dims[1] * dims[2];
        memcpy(shape, dims, sizeof dims);
    }
    free(p);
    return best > 0;
}

/* Subgroup-scope f16 x f16 -> f32 matrices of flexible size: the features, and the entry of
 * VK_NV_cooperative_matrix2's flexible-dimension list that the coopmat kernel's FLEX variant needs. */
static void query_coopmat_flex(struct vk_device *d, const struct vk_coopmat_khr_features *khr, const struct vk_coopmat2_features *nv2) {
    struct vk_caps *c = &d->caps;
    if (!khr->cooperativeMatrix || !nv2->flexibleDimensions || !c->memory_model || !c->fp16) return;
    uint32_t n;
    struct vk_coopmat_flexible_properties *p = property_list(d->phys, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV",
                                                             sizeof *p, VK_STYPE_COOPMAT_FLEXIBLE_PROPERTIES, &n);
    if (!p) return;
    for (uint32_t i = 0; i < n && !c->coopmat_flex; i++) {
        if (p[i].AType != 0 || p[i].BType != 0 || p[i].CType != 1 || p[i].ResultType != 1 || p[i].scope != 3 ||
            p[i].saturatingAccumulation || !p[i].MGranularity || !p[i].NGranularity || !p[i].KGranularity)
            continue;
        c->coopmat_flex = true;
        c->coopmat_flex_gran[0] = p[i].MGranularity;
        c->coopmat_flex_gran[1] = p[i].NGranularity;
        c->coopmat_flex_gran[2] = p[i].KGranularity;
    }
    free(p);
    struct vk_coopmat2_properties props = {.sType = VK_STYPE_COOPMAT2_PROPERTIES};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &props};
    vkGetPhysicalDeviceProperties2(d->phys, &props2);
    c->coopmat_flex_max_dim = props.flexibleDimensionsMaxDimension;
}

static void query_caps(struct vk_device *d) {
    uint32_t n_ext = 0;
    vkEnumerateDeviceExtensionProperties(d->phys, NULL, &n_ext, NULL);
    VkExtensionProperties *exts = calloc(n_ext ? n_ext : 1, sizeof *exts);
    if (exts) vkEnumerateDeviceExtensionProperties(d->phys, NULL, &n_ext, exts);
    else n_ext = 0;

    /* the integer dot-product structs are chained only when the extension is there (instance
     * version 1.2: the extension, not core 1.3, makes them known) */
    const bool int_dot_ext = has_extension(exts, n_ext, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    const bool sm_ext = has_extension(exts, n_ext, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
    const bool amd_cores_ext = has_extension(exts, n_ext, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
    VkPhysicalDeviceShaderIntegerDotProductProperties dot_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD amd_cores = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    void *chain = NULL; /* the property structs of the extensions present */
    if (int_dot_ext) dot_props.pNext = chain, chain = &dot_props;
    if (sm_ext) sm.pNext = chain, chain = &sm;
    if (amd_cores_ext) amd_cores.pNext = chain, chain = &amd_cores;
    VkPhysicalDeviceSubgroupProperties subgroup = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = chain};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &subgroup};
    vkGetPhysicalDeviceProperties2(d->phys, &props2);
    d->props = props2.properties;

    /* likewise the cooperative-matrix ones */
    const bool khr_ext = has_extension(exts, n_ext, "VK_KHR_cooperative_matrix");
    const bool coopmat2_ext = khr_ext && has_extension(exts, n_ext, "VK_NV_cooperative_matrix2");
    struct vk_coopmat2_features nv2 = {.sType = VK_STYPE_COOPMAT2_FEATURES};
    struct vk_coopmat_khr_features khr = {.sType = VK_STYPE_COOPMAT_KHR_FEATURES, .pNext = coopmat2_ext ? &nv2 : NULL};
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES, .pNext = khr_ext ? &khr : NULL};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = int_dot_ext ? (void *)&dot_features : khr_ext ? (void *)&khr : NULL};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
    const bool exec_ext = has_extension(exts, n_ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, .pNext = &f11};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = exec_ext ? (void *)&exec : &f11};
    vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->memprops);

    struct vk_caps *c = &d->caps;
    c->subgroup_size = subgroup.subgroupSize;
    c->compute_units = sm_ext ? sm.shaderSMCount
                       : amd_cores_ext ? amd_cores.shaderEngineCount * amd_cores.shaderArraysPerEngineCount * amd_cores.computeUnitsPerShaderArray
                                       : 0;
    c->subgroup_arith = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                        (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c->subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    c->int_dot = int_dot_ext && dot_features.shaderIntegerDotProduct;
    c->int_dot_fast = c->int_dot && dot_props.integerDotProduct4x8BitPackedSignedAccelerated;
    c->storage16 = f11.storageBuffer16BitAccess;
    c->fp16 = f12.shaderFloat16 && c->storage16;
    c->int8 = f12.shaderInt8 && f12.storageBuffer8BitAccess;
    c->bf16 = has_extension(exts, n_ext, "VK_KHR_shader_bfloat16");
    c->push_descriptor = has_extension(exts, n_ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    c->memory_budget = has_extension(exts, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    c->memory_model = f12.vulkanMemoryModel;
    /* a channel of its own: capturing the statistics can change the code the driver compiles (and its speed) */
    c->exec_stats = exec_ext && exec.pipelineExecutableInfo && ggmlc_debug_enabled("vulkan-stats");
    c->coopmat_khr = khr_ext;
    c->coopmat_khr_frag = khr_ext && khr.cooperativeMatrix && c->memory_model && c->fp16 && khr_coopmat_f16_shape(d->phys, c->coopmat_khr_shape);
    c->coopmat_nv = has_extension(exts, n_ext, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) && c->fp16 &&
                    nv_coopmat_has_f16_shape(d->phys);
    if (coopmat2_ext) query_coopmat_flex(d, &khr, &nv2);
    free(exts);
}

static const char *device_type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

static VkDeviceSize device_local_bytes(const struct vk_device *d) {
    VkDeviceSize total = 0;
    for (uint32_t i = 0; i < d->memprops.memoryHeapCount; i++)
        if (d->memprops.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) total += d->memprops.memoryHeaps[i].size;
    return total;
}

static void format_caps(struct vk_device *d) {
    const struct vk_caps *c = &d->caps;
    const VkPhysicalDeviceLimits *l = &d->props.limits;
    snprintf(d->caps_str, sizeof d->caps_str,
             "type=%s vulkan=%u.%u memory=%lluMiB subgroup=%u%s%s%s%s%s%s%s%s max_buffer_range=%lluMiB shared=%uKiB units=%u",
             device_type_name(d->props.deviceType), VK_API_VERSION_MAJOR(d->props.apiVersion),
             VK_API_VERSION_MINOR(d->props.apiVersion), (unsigned long long)(device_local_bytes(d) >> 20), c->subgroup_size,
             c->fp16 ? " fp16" : "", c->int8 ? " int8" : "", c->bf16 ? " bf16" : "", c->coopmat_nv ? " coopmat-nv" : "",
             c->coopmat_khr ? " coopmat-khr" : "", c->coopmat_flex ? " coopmat-flex" : "", c->subgroup_arith ? " subgroup-arith" : "",
             c->int_dot_fast ? " int-dot" : c->int_dot ? " int-dot-emulated" : "",
             (unsigned long long)(l->maxStorageBufferRange >> 20), l->maxComputeSharedMemorySize >> 10, c->compute_units);
}

static bool find_compute_queue(VkPhysicalDevice phys, uint32_t *family) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    if (!q) return false;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, q);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++) {
        if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            *family = i;
            found = true;
        }
    }
    free(q);
    return found;
}

enum ggmlc_status vk_discover_devices(struct vk_device **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    VkInstance inst = vk_instance_get();
    if (!inst) return ggmlc_last_status();
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
    if (r != VK_SUCCESS || n == 0)
        return ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan: no physical device found (VkResult %d)", (int)r);
    VkPhysicalDevice *phys = calloc(n, sizeof *phys);
    struct vk_device *devs = calloc(n, sizeof *devs);
    if (!phys || !devs) {
        free(phys);
        free(devs);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "vulkan: out of memory while listing devices");
    }
    vkEnumeratePhysicalDevices(inst, &n, phys);
    int count = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct vk_device *d = &devs[count];
        d->phys = phys[i];
        if (!find_compute_queue(phys[i], &d->queue_family)) continue;
        query_caps(d);
        if (!d->caps.push_descriptor) {
            ggmlc_log(GGML_LOG_LEVEL_WARN, "vulkan: skipping %s: VK_KHR_push_descriptor is missing\n", d->props.deviceName);
            continue;
        }
        d->index = (int)i;
        snprintf(d->description, sizeof d->description, "%s", d->props.deviceName);
        format_caps(d);
        count++;
    }
    free(phys);
    if (count == 0) {
        free(devs);
        return ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "vulkan: no device with a compute queue and VK_KHR_push_descriptor");
    }
    *out = devs;
    *n_out = count;
    return GGMLC_OK;
}
