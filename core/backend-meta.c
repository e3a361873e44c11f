/*
 * backend-meta.c - ggml's "meta" device, which stands for several devices
 * splitting each tensor between them (tensor parallelism).  ggmlc has no
 * collective communication between backends yet, so it serves one device
 * (where every split is the whole tensor) and refuses more.
 */
#include "ggml-impl.h"
#include "ggml-backend.h"

const char *ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis) {
    switch (split_axis) {
    case GGML_BACKEND_SPLIT_AXIS_0:        return "0";
    case GGML_BACKEND_SPLIT_AXIS_1:        return "1";
    case GGML_BACKEND_SPLIT_AXIS_2:        return "2";
    case GGML_BACKEND_SPLIT_AXIS_3:        return "3";
    case GGML_BACKEND_SPLIT_AXIS_MIRRORED: return "MIRRORED";
    case GGML_BACKEND_SPLIT_AXIS_PARTIAL:  return "PARTIAL";
    case GGML_BACKEND_SPLIT_AXIS_NONE:     return "NONE";
    case GGML_BACKEND_SPLIT_AXIS_UNKNOWN:  return "UNKNOWN";
    }
    return "INVALID";
}

ggml_backend_dev_t ggml_backend_meta_device(ggml_backend_dev_t *devs, size_t n_devs,
                                            ggml_backend_meta_get_split_state_t get_split_state, void *get_split_state_ud) {
    if (!devs || n_devs == 0 || n_devs > GGML_BACKEND_META_MAX_DEVICES || !get_split_state) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_meta_device: need 1 to %d devices and a split-state function",
                        GGML_BACKEND_META_MAX_DEVICES);
        return NULL;
    }
    if (n_devs > 1) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "ggml_backend_meta_device: splitting tensors across %zu devices "
                        "(tensor parallelism) is not supported by ggmlc; use one device or layer splitting", n_devs);
        return NULL;
    }
    return devs[0]; /* one device holds every split whole */
}
