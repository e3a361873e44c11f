/*
 * backend-select.c - choosing a device: by name, by type, or the best one
 * (the first GPU in the configured preference order, else the CPU).
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

ggml_backend_t ggml_backend_init_best(void) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    if (!dev) dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggml_backend_init_best: no GPU and no CPU backend is loaded (see ggmlc-info)");
        return NULL;
    }
    return ggml_backend_dev_init(dev, NULL);
}
