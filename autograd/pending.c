/*
 * pending.c - the ops of ggmlc-autograd.h marked "(not yet implemented)": each reports
 * GGMLC_ERR_UNSUPPORTED and returns NULL (or -1), so a program that calls one fails clearly.
 * An op leaves this file when it is written.
 */
#include "ggmlc.h"
#include "autograd-impl.h"

static void *not_yet(const char *fn) {
    ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "%s: not yet implemented", fn);
    return NULL;
}

ga_tensor *ga_gather(const ga_tensor *t, int dim, const ga_tensor *indices) {
    return not_yet(__func__);
}

ga_tensor *ga_index_select(const ga_tensor *t, int dim, const ga_tensor *indices) {
    return not_yet(__func__);
}

ga_tensor *ga_scatter_add(const ga_tensor *t, int dim, const ga_tensor *indices,
                          const ga_tensor *src) {
    return not_yet(__func__);
}
