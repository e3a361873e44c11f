/*
 * fuzz-model.c - libFuzzer target: ggmlc_model_load on arbitrary bytes
 * (a GGUF file describing layers and weights), on the CPU backend that
 * $GGMLC_CONFIG names (fuzz/run-all.sh sets it to the build tree's plugin).
 */
#include <string.h>

#include "fuzz-common.h"
#include "ggmlc-nn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *path;
    if (!path) {
        fuzz_quiet_log();
        path = strdup(fuzz_path("model.gguf"));
    }
    if (fuzz_write_file(path, data, size) != 0) return 0;
    ggmlc_model *m = ggmlc_model_load(path, "cpu");
    ggmlc_model_free(m);
    return 0;
}
