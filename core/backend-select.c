/*
 * backend-select.c - choosing a device: by name, by type, or the best one (the first GPU in
 * the configured preference order, else the CPU; a software GPU such as lavapipe only when the
 * configuration names it, since the CPU backend is faster than its emulation).
 */
#include <strings.h>

#include "backend-impl.h"

ggml_backend_dev_t ggml_backend_dev_by_name(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0, n = ggml_backend_dev_count(); i < n; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (dev && strcasecmp(ggml_backend_dev_name(dev), name) == 0) return dev;
    }
    return NULL;
}

ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type) {
    for (size_t i = 0, n = ggml_backend_dev_count(); i < n; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (dev && ggml_backend_dev_type(dev) == type) return dev;
    }
    return NULL;
}

ggml_backend_t ggml_backend_init_by_name(const char *name, const char *params) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
    if (!dev) {
        ggml_backend_reg_t reg = ggml_backend_reg_by_name(name);
        dev = reg ? ggml_backend_reg_dev_get(reg, 0) : NULL;
    }
    if (!dev) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggml_backend_init_by_name: no device or backend named '%s'", name ? name : "(null)");
        return NULL;
    }
    return ggml_backend_dev_init(dev, params);
}

ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char *params) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(type);
    if (!dev) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggml_backend_init_by_type: no device of type %d is loaded", (int)type);
        return NULL;
    }
    return ggml_backend_dev_init(dev, params);
}

bool ggmlc_device_is_default_choice(ggml_backend_dev_t dev, const char **why) {
    const char *reason = "no device";
    bool chosen = false;
    if (dev && dev->iface.is_default_choice) {
        chosen = dev->iface.is_default_choice(dev, &reason);
    } else if (dev) {
        switch (ggml_backend_dev_type(dev)) {
        case GGML_BACKEND_DEVICE_TYPE_CPU:
            chosen = true, reason = "the CPU backend, the default without a GPU";
            break;
        case GGML_BACKEND_DEVICE_TYPE_GPU: chosen = true, reason = "a GPU"; break;
        case GGML_BACKEND_DEVICE_TYPE_IGPU:
            chosen = true, reason = "an integrated GPU, after any discrete one";
            break;
        default: reason = "an accelerator, used beside the CPU only when named"; break;
        }
    }
    if (why) *why = reason ? reason : "";
    return chosen;
}

/* The first default-choice device of type in the preference order. */
static ggml_backend_dev_t first_default_of_type(enum ggml_backend_dev_type type) {
    for (size_t i = 0, n = ggml_backend_dev_count(); i < n; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (dev && ggml_backend_dev_type(dev) == type && ggmlc_device_is_default_choice(dev, NULL))
            return dev;
    }
    return NULL;
}

ggml_backend_dev_t ggmlc_device_default(void) {
    ggml_backend_dev_t dev = first_default_of_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    if (!dev) dev = first_default_of_type(GGML_BACKEND_DEVICE_TYPE_IGPU);
    if (!dev) dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    return dev;
}

ggml_backend_t ggml_backend_init_best(void) {
    ggml_backend_dev_t dev = ggmlc_device_default();
    if (!dev) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggml_backend_init_best: no GPU and no CPU backend is loaded (see ggmlc-info)");
        return NULL;
    }
    return ggml_backend_dev_init(dev, NULL);
}
