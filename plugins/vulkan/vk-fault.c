/*
 * vk-fault.c - fault injection for the Vulkan plugin's error paths, so that
 * tests can exercise them on any driver (lavapipe included).
 *
 * $GGMLC_VK_FAULT, read when the plugin initialises, is a comma-separated list:
 *   alloc          every device-local vkAllocateMemory fails (out of device memory)
 *   alloc:N        only the Nth one fails (1 = the first after init)
 *   pipeline       every compute pipeline fails to compile
 *   pipeline:NAME  pipelines of the shaders whose name contains NAME fail
 *   lost           the first graph submission reports VK_ERROR_DEVICE_LOST
 * Unknown words are ignored with a warning.  Unset: no fault, and each hook
 * costs one load.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

static struct {
    bool alloc_all;
    long alloc_at;            /* 0: none */
    bool pipeline;
    char pipeline_name[64];   /* empty: every shader */
    bool lost;
} faults;

static atomic_long n_allocs;
static atomic_bool lost_done;

static void parse_word(const char *w) {
    if (strcmp(w, "alloc") == 0) faults.alloc_all = true;
    else if (strncmp(w, "alloc:", 6) == 0) faults.alloc_at = strtol(w + 6, NULL, 10);
    else if (strcmp(w, "pipeline") == 0) faults.pipeline = true;
    else if (strncmp(w, "pipeline:", 9) == 0) {
        faults.pipeline = true;
        snprintf(faults.pipeline_name, sizeof faults.pipeline_name, "%s", w + 9);
    } else if (strcmp(w, "lost") == 0) faults.lost = true;
    else if (*w) ggmlc_log(GGML_LOG_LEVEL_WARN, "vulkan: GGMLC_VK_FAULT: unknown fault '%s' ignored\n", w);
}

void vk_fault_init(void) {
    memset(&faults, 0, sizeof faults);
    atomic_store(&n_allocs, 0);
    atomic_store(&lost_done, false);
    const char *env = ggmlc_getenv("GGMLC_VK_FAULT");
    if (!env || !*env) return;
    char list[256];
    snprintf(list, sizeof list, "%s", env);
    for (char *save = NULL, *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) parse_word(w);
    ggmlc_log(GGML_LOG_LEVEL_INFO, "vulkan: fault injection on: %s\n", env);
}

bool vk_fault_device_alloc(void) {
    if (!faults.alloc_all && faults.alloc_at == 0) return false;
    const long n = atomic_fetch_add(&n_allocs, 1) + 1;
    return faults.alloc_all || n == faults.alloc_at;
}

bool vk_fault_pipeline(const char *shader_name) {
    return faults.pipeline && (!faults.pipeline_name[0] || strstr(shader_name, faults.pipeline_name) != NULL);
}

bool vk_fault_graph_lost(void) {
    if (!faults.lost) return false;
    return !atomic_exchange(&lost_done, true);
}
