/*
 * fuzz-dataset.c - libFuzzer target: the dataset readers on arbitrary
 * bytes, gzip'd or plain (zlib reads both).  The first byte chooses the
 * reader: even, a CSV file; odd, an IDX pair whose images and labels are
 * the rest of the input cut in two at a point the second byte chooses.  The
 * dataset limit is lowered to 16 MiB, so inputs can reach it quickly.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "ggmlc-nn.h"

#define FUZZ_DATASET_MAX_BYTES ((size_t)16 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char *csv, *images, *labels;
    if (!csv) {
        fuzz_quiet_log();
        /* a few kB of gzip'd zeros may claim and hold up to this (the library's default is 1 GiB) */
        ggmlc_dataset_set_max_bytes(FUZZ_DATASET_MAX_BYTES);
        csv = strdup(fuzz_path("data.csv"));
        images = strdup(fuzz_path("images.idx"));
        labels = strdup(fuzz_path("labels.idx"));
    }
    if (size < 2) return 0;
    struct ggmlc_dataset d;
    memset(&d, 0, sizeof d);
    if (data[0] % 2 == 0) {
        if (fuzz_write_file(csv, data + 1, size - 1) != 0) return 0;
        if (ggmlc_dataset_load_csv(csv, &d) == GGMLC_OK) ggmlc_dataset_free(&d);
        return 0;
    }
    const size_t rest = size - 2, cut = rest ? (size_t)data[1] * rest / 255 : 0;
    if (fuzz_write_file(images, data + 2, cut) != 0 || fuzz_write_file(labels, data + 2 + cut, rest - cut) != 0) return 0;
    if (ggmlc_dataset_load_idx(images, labels, &d) == GGMLC_OK) ggmlc_dataset_free(&d);
    return 0;
}
