/*
 * backend.c - registries, devices, backends and events: the core's objects
 * around a plugin's ifaces, and the ggml-backend.h functions on them.
 */
#include <stdlib.h>

#include "ggml-cpu.h"
#include "plugin-loader.h"

/* ---------------------------------------------------------- registries */

ggml_backend_reg_t ggmlc_reg_new(const char *name, const struct ggmlc_reg_iface *iface, void *context) {
    if (!name || !iface) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_reg_new: NULL name or iface");
        return NULL;
    }
    struct ggml_backend_reg *reg = calloc(1, sizeof *reg);
    if (!reg) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_reg_new: out of memory");
        return NULL;
    }
    GGMLC_COPY_IFACE(reg->iface, iface);
    snprintf(reg->name, sizeof reg->name, "%s", name);
    reg->context = context;
    ggmlc__plugin_note_new_reg(reg);
    return reg;
}

void *ggmlc_reg_context(ggml_backend_reg_t reg) { return reg->context; }

static void device_free(ggml_backend_dev_t dev) {
    for (struct ggml_backend_buffer_type *buft = dev->bufts, *next; buft; buft = next) {
        next = buft->next;
        if (buft->iface.free) buft->iface.free(buft);
        free(buft);
    }
    if (dev->iface.free) dev->iface.free(dev);
    free(dev);
}

void ggmlc__reg_free(ggml_backend_reg_t reg) {
    if (!reg) return;
    for (struct ggml_backend_device *dev = reg->devices, *next; dev; dev = next) {
        next = dev->next;
        device_free(dev);
    }
    if (reg->iface.free) reg->iface.free(reg);
    free(reg);
}

const char *ggml_backend_reg_name(ggml_backend_reg_t reg) { return reg ? reg->name : "(null)"; }
size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg) { return reg ? reg->n_devices : 0; }

ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index) {
    if (!reg || index >= reg->n_devices) return NULL;
    struct ggml_backend_device *dev = reg->devices;
    while (index--) dev = dev->next;
    return dev;
}

void *ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char *name) {
    if (!reg || !name) return NULL;
    void *fn = reg->iface.get_proc_address ? reg->iface.get_proc_address(reg, name) : NULL;
    /* ggml's CPU registry also hands out functions that live in libggmlc here (llama-bench
     * calls its "ggml_threadpool_new" unchecked) */
    if (!fn && reg == ggml_backend_cpu_reg()) fn = ggmlc__cpu_reg_proc(name);
    return fn;
}

/* ------------------------------------------------------------- devices */

ggml_backend_dev_t ggmlc_device_new(ggml_backend_reg_t reg, const struct ggmlc_device_iface *iface, void *context) {
    if (!reg || !iface) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_device_new: NULL registry or iface");
        return NULL;
    }
    struct ggml_backend_device *dev = calloc(1, sizeof *dev);
    if (!dev) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_device_new: out of memory");
        return NULL;
    }
    GGMLC_COPY_IFACE(dev->iface, iface);
    dev->reg = reg;
    dev->context = context;
    struct ggml_backend_device **tail = &reg->devices; /* keep the plugin's order */
    while (*tail) tail = &(*tail)->next;
    *tail = dev;
    reg->n_devices++;
    return dev;
}

void *ggmlc_device_context(ggml_backend_dev_t dev) { return dev->context; }

ggmlc_op_fn ggmlc_device_op(ggml_backend_dev_t dev, const struct ggml_tensor *node) {
    if (!node || !ggmlc_device_has_op(dev, node->op)) return NULL;
    ggmlc_op_fn fn = dev->iface.ops[node->op];
    /* One entry covers every UNARY/GLU sub-operator: supports_op tells which ones really work. */
    if (fn && dev->iface.supports_op && !dev->iface.supports_op(dev, node)) return NULL;
    return fn;
}

bool ggmlc_device_has_op(ggml_backend_dev_t dev, enum ggml_op op) {
    return dev && dev->iface.ops && (int)op >= 0 && (int)op < dev->iface.n_ops && op < GGML_OP_COUNT && dev->iface.ops[op];
}

const char *ggml_backend_dev_name(ggml_backend_dev_t device) { return device->iface.get_name(device); }

const char *ggml_backend_dev_description(ggml_backend_dev_t device) {
    return device->iface.get_description ? device->iface.get_description(device) : ggml_backend_dev_name(device);
}

void ggml_backend_dev_memory(ggml_backend_dev_t device, size_t *free_mem, size_t *total) {
    *free_mem = *total = 0;
    if (device->iface.get_memory) device->iface.get_memory(device, free_mem, total);
}

enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t device) { return device->iface.get_type(device); }

void ggml_backend_dev_get_props(ggml_backend_dev_t device, struct ggml_backend_dev_props *props) {
    memset(props, 0, sizeof *props);
    props->name = ggml_backend_dev_name(device);
    props->description = ggml_backend_dev_description(device);
    ggml_backend_dev_memory(device, &props->memory_free, &props->memory_total);
    props->type = ggml_backend_dev_type(device);
    props->caps.async = false; /* the plugin ABI has no device-level async flag: transfers may fall back to sync */
    props->caps.host_buffer = device->iface.get_host_buffer_type != NULL;
    props->caps.buffer_from_host_ptr = device->iface.buffer_from_host_ptr != NULL;
    props->caps.events = false; /* events are emulated by synchronize */
}

const char *ggmlc_device_caps(ggml_backend_dev_t dev) {
    const char *caps = dev && dev->iface.get_caps ? dev->iface.get_caps(dev) : NULL;
    return caps ? caps : "";
}

ggml_backend_reg_t ggml_backend_dev_backend_reg(ggml_backend_dev_t device) { return device->reg; }

ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t device, const char *params) {
    if (!device) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_dev_init: NULL device");
        return NULL;
    }
    ggmlc_clear_error(); /* so that the plugin's own reason, if any, is recognised below */
    ggml_backend_t backend = device->iface.init_backend(device, params);
    if (!backend && ggmlc_last_status() == GGMLC_OK)
        ggmlc_set_error(GGMLC_ERR_BACKEND, "ggml_backend_dev_init: device %s could not start a backend",
                        ggml_backend_dev_name(device));
    return backend;
}

ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t device) {
    return device->iface.get_buffer_type(device);
}

ggml_backend_buffer_type_t ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device) {
    return device->iface.get_host_buffer_type ? device->iface.get_host_buffer_type(device) : NULL;
}

ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void *ptr, size_t size,
                                                            size_t max_tensor_size) {
    if (!device->iface.buffer_from_host_ptr) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "device %s cannot wrap host memory", ggml_backend_dev_name(device));
        return NULL;
    }
    return device->iface.buffer_from_host_ptr(device, ptr, size, max_tensor_size);
}

bool ggml_backend_dev_supports_op(ggml_backend_dev_t device, const struct ggml_tensor *op) {
    if (!device || !op) return false;
    if (ggmlc_op_is_view(op->op)) return true; /* computes nothing */
    return ggmlc_device_op(device, op) != NULL;
}

bool ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft) {
    if (!device || !buft) return false;
    if (device->iface.supports_buft) return device->iface.supports_buft(device, buft);
    /* default: its own types, and host memory when the device is the CPU */
    return buft->device == device ||
           (ggml_backend_dev_type(device) == GGML_BACKEND_DEVICE_TYPE_CPU && ggml_backend_buft_is_host(buft));
}

bool ggml_backend_dev_offload_op(ggml_backend_dev_t device, const struct ggml_tensor *op) {
    return device && op && device->iface.offload_op && device->iface.offload_op(device, op);
}

/* ------------------------------------------------------------ backends */

/* A backend's guid names its kind (its registry), as ggml's guids do, so
 * that e.g. "is this the CPU backend" can be asked of any backend. */
static void guid_from_name(ggml_guid guid, const char *name) {
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h1 = (h1 ^ *p) * 0x100000001b3ull;
        h2 = (h2 ^ (unsigned char)(*p ^ 0x5a)) * 0x100000001b3ull;
    }
    memcpy(guid, &h1, 8);
    memcpy(guid + 8, &h2, 8);
}

ggml_backend_t ggmlc_backend_new(ggml_backend_dev_t dev, const struct ggmlc_backend_iface *iface, void *context) {
    if (!dev || !iface) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_backend_new: NULL device or iface");
        return NULL;
    }
    struct ggml_backend *backend = calloc(1, sizeof *backend);
    if (!backend) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_backend_new: out of memory");
        return NULL;
    }
    GGMLC_COPY_IFACE(backend->iface, iface);
    backend->device = dev;
    backend->context = context;
    guid_from_name(backend->guid, dev->reg->name);
    return backend;
}

void *ggmlc_backend_context(ggml_backend_t backend) { return backend->context; }

ggml_guid_t ggml_backend_guid(ggml_backend_t backend) { return &backend->guid; }

const char *ggml_backend_name(ggml_backend_t backend) {
    if (!backend) return "NULL";
    return backend->iface.get_name ? backend->iface.get_name(backend) : ggml_backend_dev_name(backend->device);
}

void ggml_backend_free(ggml_backend_t backend) {
    if (!backend) return;
    ggmlc__fallback_free(backend); /* its scheduler still holds backend */
    if (backend->iface.free) backend->iface.free(backend);
    free(backend);
}

ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend) { return backend->device; }

ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend) {
    return ggml_backend_dev_buffer_type(backend->device);
}

ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size) {
    return ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend), size);
}

size_t ggml_backend_get_alignment(ggml_backend_t backend) {
    return ggml_backend_buft_get_alignment(ggml_backend_get_default_buffer_type(backend));
}

size_t ggml_backend_get_max_size(ggml_backend_t backend) {
    return ggml_backend_buft_get_max_size(ggml_backend_get_default_buffer_type(backend));
}

void ggml_backend_tensor_set_async(ggml_backend_t backend, struct ggml_tensor *tensor, const void *data, size_t offset,
                                   size_t size) {
    if (!backend->iface.set_tensor_async) {
        ggml_backend_tensor_set(tensor, data, offset, size);
        return;
    }
    if (!ggmlc__check_tensor_range(__func__, tensor, offset, size) || size == 0) return;
    if (backend->iface.set_tensor_async(backend, tensor, data, offset, size) != GGML_STATUS_SUCCESS)
        ggmlc_set_error(GGMLC_ERR_BACKEND, "%s: %s failed to write tensor '%s'", __func__, ggml_backend_name(backend), tensor->name);
}

void ggml_backend_tensor_get_async(ggml_backend_t backend, const struct ggml_tensor *tensor, void *data, size_t offset,
                                   size_t size) {
    if (!backend->iface.get_tensor_async) {
        ggml_backend_tensor_get(tensor, data, offset, size);
        return;
    }
    if (!ggmlc__check_tensor_range(__func__, tensor, offset, size) || size == 0) return;
    if (backend->iface.get_tensor_async(backend, tensor, data, offset, size) != GGML_STATUS_SUCCESS)
        ggmlc_set_error(GGMLC_ERR_BACKEND, "%s: %s failed to read tensor '%s'", __func__, ggml_backend_name(backend), tensor->name);
}

void ggml_backend_tensor_set_2d_async(ggml_backend_t backend, struct ggml_tensor *tensor, const void *data, size_t offset,
                                      size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data) {
    for (size_t i = 0; i < n_copies; i++)
        ggml_backend_tensor_set_async(backend, tensor, (const char *)data + i * stride_data, offset + i * stride_tensor, size);
}

void ggml_backend_tensor_get_2d_async(ggml_backend_t backend, const struct ggml_tensor *tensor, void *data, size_t offset,
                                      size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data) {
    for (size_t i = 0; i < n_copies; i++)
        ggml_backend_tensor_get_async(backend, tensor, (char *)data + i * stride_data, offset + i * stride_tensor, size);
}

void ggml_backend_synchronize(ggml_backend_t backend) {
    if (backend && backend->iface.synchronize) backend->iface.synchronize(backend);
}

bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor *op) {
    return backend && ggml_backend_dev_supports_op(backend->device, op);
}

bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft) {
    return backend && ggml_backend_dev_supports_buft(backend->device, buft);
}

bool ggml_backend_offload_op(ggml_backend_t backend, const struct ggml_tensor *op) {
    return backend && ggml_backend_dev_offload_op(backend->device, op);
}

void ggml_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor *src,
                                    struct ggml_tensor *dst) {
    if (backend_dst->iface.cpy_tensor_async && backend_dst->iface.cpy_tensor_async(backend_src, backend_dst, src, dst)) return;
    /* no asynchronous path: finish both streams and copy synchronously */
    ggml_backend_synchronize(backend_src);
    ggml_backend_synchronize(backend_dst);
    ggml_backend_tensor_copy(src, dst);
}

/* -------------------------------------------------------------- events
 * The plugin ABI has no events: recording remembers the stream, and
 * waiting for the event waits for that whole stream. */

struct ggml_backend_event {
    ggml_backend_dev_t device;
    ggml_backend_t recorded_on;
};

ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device) {
    struct ggml_backend_event *event = calloc(1, sizeof *event);
    if (!event) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_event_new: out of memory");
        return NULL;
    }
    event->device = device;
    return event;
}

void ggml_backend_event_free(ggml_backend_event_t event) { free(event); }

void ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend) {
    if (event) event->recorded_on = backend;
}

void ggml_backend_event_synchronize(ggml_backend_event_t event) {
    if (event) ggml_backend_synchronize(event->recorded_on);
}

void ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    ggml_backend_event_synchronize(event);
}
