/*
 * vk-tuning.c - the Vulkan plugin's tuning, read once when the plugin initialises: the
 * [backend.vulkan] options (device, f16, coopmat) and the GGMLC_VK_* variables, into one
 * struct vk_tuning that the kernels consult (no dispatch looks the environment up).
 *
 * The variables are read through ggmlc_getenv, the core's secure getter: in a set-uid or
 * set-gid program it finds none, so whoever starts such a program cannot choose its devices,
 * kernels or tiles.  Values that do not fit a device are ignored where they are used.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "vk-impl.h"

static struct vk_tuning tuning;

const struct vk_tuning *vk_tuning(void) { return &tuning; }

/* The variables read into a struct vk_env_value, by their field. */
static const struct {
    const char *name;
    size_t at;
} env_values[] = {
    {"GGMLC_VK_MM_TILE", offsetof(struct vk_tuning, mm_tile)},
    {"GGMLC_VK_MV", offsetof(struct vk_tuning, mv)},
    {"GGMLC_VK_MVQ", offsetof(struct vk_tuning, mvq)},
    {"GGMLC_VK_MVQL", offsetof(struct vk_tuning, mvql)},
    {"GGMLC_VK_MVQG", offsetof(struct vk_tuning, mvqg)},
    {"GGMLC_VK_MVQD", offsetof(struct vk_tuning, mvqd)},
    {"GGMLC_VK_MVQ_SELF", offsetof(struct vk_tuning, mvq_self)},
    {"GGMLC_VK_COOPMAT_TILE", offsetof(struct vk_tuning, coopmat_tile)},
    {"GGMLC_VK_COOPMAT_DEQUANT", offsetof(struct vk_tuning, coopmat_dequant)},
    {"GGMLC_VK_COOPMAT_FLEX", offsetof(struct vk_tuning, coopmat_flex)},
    {"GGMLC_VK_COOPMAT_PACK", offsetof(struct vk_tuning, coopmat_pack)},
    {"GGMLC_VK_COOPMAT_SPLIT", offsetof(struct vk_tuning, coopmat_split)},
    {"GGMLC_VK_COOPMAT_BLOCKS", offsetof(struct vk_tuning, coopmat_blocks)},
    {"GGMLC_VK_COOPMAT_MID", offsetof(struct vk_tuning, coopmat_mid)},
    {"GGMLC_VK_FA_SPLIT", offsetof(struct vk_tuning, fa_split)},
    {"GGMLC_VK_FA_TILE", offsetof(struct vk_tuning, fa_tile)},
    {"GGMLC_VK_FA_CM", offsetof(struct vk_tuning, fa_cm)},
    {"GGMLC_VK_FA_VEC", offsetof(struct vk_tuning, fa_vec)},
    {"GGMLC_VK_CONV_CM", offsetof(struct vk_tuning, conv_cm)},
    {"GGMLC_VK_MM_SPLIT", offsetof(struct vk_tuning, mm_split)},
    {"GGMLC_VK_SUBMIT_EVERY", offsetof(struct vk_tuning, submit_every)},
    {"GGMLC_VK_TRANSIENT_SLOTS", offsetof(struct vk_tuning, transient_slots)},
    {"GGMLC_VK_WAIT_SPIN", offsetof(struct vk_tuning, wait_spin)},
};

static struct vk_env_value *env_value(size_t i) {
    return (struct vk_env_value *)((char *)&tuning + env_values[i].at);
}

static void read_env_value(const char *name, struct vk_env_value *e) {
    const char *s = ggmlc_getenv(name);
    memset(e, 0, sizeof *e);
    if (!s) return;
    e->set = true;
    snprintf(e->text, sizeof e->text, "%s", s);
    e->n = sscanf(e->text, "%u,%u,%u,%u,%u,%u,%u", &e->v[0], &e->v[1], &e->v[2], &e->v[3], &e->v[4],
                  &e->v[5], &e->v[6]);
    e->number = strtoll(e->text, NULL, 10);
}

static enum vk_mvq_kernel read_mvq_kernel(void) {
    const char *s = ggmlc_getenv("GGMLC_VK_MVQ_KERNEL");
    if (!s) return VK_MVQ_AUTO;
    if (strcmp(s, "dot") == 0) return VK_MVQ_DOT;
    if (strcmp(s, "staged") == 0) return VK_MVQ_STAGED;
    return strcmp(s, "group") == 0 ? VK_MVQ_GROUP : VK_MVQ_OTHER;
}

/* "off" or "0": a feature turned off. */
static bool says_off(const char *v) { return strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0; }

/* $name when set and not empty, else option key (def when absent). */
static const char *env_or_option(const char *name, const struct ggmlc_plugin_options *opts,
                                 const char *key, const char *def) {
    const char *env = ggmlc_getenv(name);
    return env && *env ? env : ggmlc_plugin_option(opts, key, def);
}

static void log_tuning(void) {
    ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: device = %s, f16 %s, coopmat %s\n",
              tuning.device, tuning.f16_off ? "off" : "auto", tuning.coopmat_off ? "off" : "auto");
    for (size_t i = 0; i < sizeof env_values / sizeof env_values[0]; i++)
        if (env_value(i)->set)
            ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: %s=%s\n", env_values[i].name,
                      env_value(i)->text);
    static const char *const kernels[] = {"auto", "dot", "staged", "group", "other"};
    if (tuning.mvq_kernel != VK_MVQ_AUTO)
        ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: GGMLC_VK_MVQ_KERNEL %s\n",
                  kernels[tuning.mvq_kernel]);
    if (tuning.coopmat_khr_off)
        ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: GGMLC_VK_COOPMAT_KHR=0\n");
    if (tuning.replay_off) ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: GGMLC_VK_REPLAY=0\n");
    if (tuning.fuse_off) ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: GGMLC_VK_FUSE=0\n");
    if (tuning.reorder_off) ggmlc_log(GGML_LOG_LEVEL_DEBUG, "vulkan: tuning: GGMLC_VK_REORDER=0\n");
}

void vk_tuning_read(const struct ggmlc_plugin_options *opts) {
    memset(&tuning, 0, sizeof tuning);
    snprintf(tuning.device, sizeof tuning.device, "%s",
             env_or_option("GGMLC_VK_DEVICE", opts, "device", "auto"));
    tuning.f16_off = says_off(ggmlc_plugin_option(opts, "f16", "auto"));
    tuning.coopmat_off = says_off(env_or_option("GGMLC_VK_COOPMAT", opts, "coopmat", "auto"));
    for (size_t i = 0; i < sizeof env_values / sizeof env_values[0]; i++)
        read_env_value(env_values[i].name, env_value(i));
    tuning.mvq_kernel = read_mvq_kernel();
    const char *khr = ggmlc_getenv("GGMLC_VK_COOPMAT_KHR");
    tuning.coopmat_khr_off = khr && strcmp(khr, "0") == 0;
    const char *replay = ggmlc_getenv("GGMLC_VK_REPLAY");
    tuning.replay_off = replay && says_off(replay);
    const char *fuse = ggmlc_getenv("GGMLC_VK_FUSE");
    tuning.fuse_off = fuse && says_off(fuse);
    const char *reorder = ggmlc_getenv("GGMLC_VK_REORDER");
    tuning.reorder_off = reorder && says_off(reorder);
    if (ggmlc_debug_enabled("vulkan")) log_tuning();
}
