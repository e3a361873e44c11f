/* type-traits.c - per-type CPU kernels (see cpu-impl.h). */
#include "cpu-impl.h"

const struct cpu_type_traits *cpu_get_type_traits(enum ggml_type type) {
    static const struct cpu_type_traits none = {NULL, NULL, GGML_TYPE_COUNT};
    (void)type;
    return &none;
}
