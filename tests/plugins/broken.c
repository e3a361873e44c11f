/*
 * broken.c - deliberately broken test plugins, one per BROKEN_* variant
 * (tests/Makefile.inc builds each as its own .so):
 *
 *   BROKEN_NO_ENTRY    exports no entry symbol at all
 *   BROKEN_BAD_MAGIC   descriptor with a wrong magic number
 *   BROKEN_ABI_MAJOR   built for the next ABI major version
 *   BROKEN_ABI_MINOR   built for a newer ABI minor version
 *   BROKEN_PROBE       probe() says it cannot run here (and why)
 *   BROKEN_SMALL_ENTRY the entry symbol is a 4-byte integer, not a descriptor
 *   BROKEN_ABS_ENTRY   the entry symbol is absolute (SHN_ABS): its "address"
 *                      is a number the plugin chose, outside any mapping
 *   BROKEN_WILD_INIT   a descriptor whose init points outside the plugin
 *   BROKEN_INIT        init() registers a registry and a device, then fails;
 *                      the device's free hook appends "device freed" to the
 *                      file named by the option `marker`, so the test can
 *                      see that the loader cleaned up after it
 *
 * Every function that must never run (because the loader has to refuse
 * the plugin first) aborts, so a loader that calls it fails the test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc-plugin.h"

__attribute__((unused)) static int never_probe(void) { abort(); }
__attribute__((unused)) static enum ggmlc_status never_init(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out) { abort(); }

#if defined(BROKEN_NO_ENTRY)

GGMLC_PLUGIN_EXPORT int not_a_plugin_entry(void);
GGMLC_PLUGIN_EXPORT int not_a_plugin_entry(void) { return never_probe(); }

#elif defined(BROKEN_BAD_MAGIC)

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    0xdeadbeefu, sizeof(struct ggmlc_plugin_desc), GGMLC_PLUGIN_ABI_MAJOR, GGMLC_PLUGIN_ABI_MINOR,
    "badmagic", "0", "wrong magic", never_probe, never_init, NULL,
};

#elif defined(BROKEN_ABI_MAJOR)

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_MAGIC, sizeof(struct ggmlc_plugin_desc), GGMLC_PLUGIN_ABI_MAJOR + 1, 0,
    "abimajor", "0", "next ABI major", never_probe, never_init, NULL,
};

#elif defined(BROKEN_ABI_MINOR)

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_MAGIC, sizeof(struct ggmlc_plugin_desc), GGMLC_PLUGIN_ABI_MAJOR, GGMLC_PLUGIN_ABI_MINOR + 1,
    "abiminor", "0", "newer ABI minor", never_probe, never_init, NULL,
};

#elif defined(BROKEN_PROBE)

static int probe_no(void) {
    ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "the test hardware is missing");
    return 0;
}
GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER, "probefail", "0", "cannot run here", probe_no, never_init, NULL,
};

#elif defined(BROKEN_SMALL_ENTRY)

/* The magic is right, so only the symbol's size tells that no descriptor follows it. */
GGMLC_PLUGIN_EXPORT const uint32_t ggmlc_plugin_entry_v1 = GGMLC_PLUGIN_MAGIC;

#elif defined(BROKEN_ABS_ENTRY)

/* dlsym returns the symbol's value itself for SHN_ABS: reading it crashed the host. */
__asm__(".globl ggmlc_plugin_entry_v1\n"
        ".type ggmlc_plugin_entry_v1, @object\n"
        ".size ggmlc_plugin_entry_v1, 64\n"
        ".set ggmlc_plugin_entry_v1, 0x1000\n");

#elif defined(BROKEN_WILD_INIT)

/* A valid header whose init is an address outside the plugin (a crash when called). */
GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER, "wildinit", "0", "init points nowhere", NULL,
    (enum ggmlc_status (*)(const struct ggmlc_plugin_options *, ggml_backend_reg_t *))(uintptr_t)0x1000, NULL,
};

#elif defined(BROKEN_INIT)

static char marker_path[512];

static const char *dev_name(ggml_backend_dev_t dev) { return "initfail0"; }
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t dev) { return GGML_BACKEND_DEVICE_TYPE_CPU; }

static void dev_free(ggml_backend_dev_t dev) {
    FILE *f = marker_path[0] ? fopen(marker_path, "a") : NULL;
    if (f) {
        fputs("device freed\n", f);
        fclose(f);
    }
}

static const struct ggmlc_device_iface dev_iface = {
    .struct_size = sizeof(struct ggmlc_device_iface),
    .get_name = dev_name,
    .get_type = dev_type,
    .free = dev_free,
};
static const struct ggmlc_reg_iface reg_iface = {.struct_size = sizeof(struct ggmlc_reg_iface)};

static int probe_yes(void) { return 1; }

/* Leaves a registry with a device behind, as a sloppy plugin might. */
static enum ggmlc_status init_fails(const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out) {
    snprintf(marker_path, sizeof marker_path, "%s", ggmlc_plugin_option(opts, "marker", ""));
    ggml_backend_reg_t reg = ggmlc_reg_new(opts->name, &reg_iface, NULL);
    if (reg) ggmlc_device_new(reg, &dev_iface, NULL);
    return ggmlc_set_error(GGMLC_ERR_BACKEND, "the test device is on fire");
}

GGMLC_PLUGIN_EXPORT const struct ggmlc_plugin_desc ggmlc_plugin_entry_v1 = {
    GGMLC_PLUGIN_DESC_HEADER, "initfail", "0", "init fails", probe_yes, init_fails, NULL,
};

#else
#error "define one BROKEN_* variant"
#endif
