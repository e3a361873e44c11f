/*
 * ggmlc.h - what ggmlc adds to ggml's API: status codes and per-thread
 * errors, the configuration and plugin registry, and logging switches.
 *
 * Configuration (ini, see docs/configuration.md): the first of
 * $GGMLC_CONFIG, $XDG_CONFIG_HOME/ggmlc/ggmlc.ini (or ~/.config/...),
 * $(sysconfdir)/ggmlc/ggmlc.ini is read, plus drop-in files
 * backends.d/ *.ini beside it.  $GGMLC_BACKENDS overrides the preference
 * order for one run; $GGMLC_DEBUG=loader,sched traces the loader/scheduler.
 */
#ifndef GGMLC_H
#define GGMLC_H

#include "ggml.h"
#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGMLC_VERSION_MAJOR 0
#define GGMLC_VERSION_MINOR 1
#define GGMLC_VERSION_PATCH 0

/* Status of every ggmlc function that can fail. */
enum ggmlc_status {
    GGMLC_OK = 0,
    GGMLC_ERR_INVALID_ARG,  /* a NULL or out-of-range argument */
    GGMLC_ERR_SHAPE,        /* operand shapes do not fit the operator */
    GGMLC_ERR_TYPE,         /* operand types do not fit the operator */
    GGMLC_ERR_NOMEM,        /* host or device memory exhausted */
    GGMLC_ERR_IO,           /* a file could not be read or written */
    GGMLC_ERR_FORMAT,       /* a file is truncated, damaged or not of the expected format */
    GGMLC_ERR_CONFIG,       /* the configuration is invalid */
    GGMLC_ERR_PLUGIN,       /* a plugin could not be loaded or initialised */
    GGMLC_ERR_ABI,          /* a plugin was built for an incompatible ABI */
    GGMLC_ERR_UNSUPPORTED,  /* no backend supports the request */
    GGMLC_ERR_BACKEND,      /* a backend failed while computing */
    GGMLC_ERR_NOT_FOUND,    /* a named backend, device, tensor or key does not exist */
    GGMLC_ERR_INTERNAL,     /* a bug in ggmlc */
    GGMLC_STATUS_COUNT
};

/* Name of a status ("GGMLC_ERR_SHAPE") and a sentence describing it. */
GGML_API const char *ggmlc_status_name(enum ggmlc_status status);
GGML_API const char *ggmlc_status_str(enum ggmlc_status status);

/* The last error recorded on the calling thread: its message ("" if none) and status. */
GGML_API const char *ggmlc_last_error(void);
GGML_API enum ggmlc_status ggmlc_last_status(void);
/* Forget the calling thread's last error. */
GGML_API void ggmlc_clear_error(void);
/* Record an error on the calling thread and log it once; returns status. */
GGML_API enum ggmlc_status ggmlc_set_error(enum ggmlc_status status, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(2, 3);

/* Library version, "MAJOR.MINOR.PATCH". */
GGML_API const char *ggmlc_version(void);

/* Read the configuration and load the plugins it names (idempotent, thread-safe).
 * A broken plugin does not fail the call: it stays listed with its reason. */
GGML_API enum ggmlc_status ggmlc_init(void);
/* Unload every plugin and forget the configuration; the next call reloads it.
 * All backends, buffers and devices must have been freed. */
GGML_API void ggmlc_shutdown(void);

/* The configuration files that were read, in order. */
GGML_API size_t      ggmlc_config_file_count(void);
GGML_API const char *ggmlc_config_file(size_t index);

/* One configured backend, loaded or not. */
struct ggmlc_backend_info {
    const char *name;          /* section name after "backend." */
    const char *library;       /* the library value as written */
    const char *path;          /* the resolved path, or NULL */
    const char *config_file;   /* where it was configured */
    int         config_line;
    bool        enabled;       /* false: disabled in the config or left out by GGMLC_BACKENDS */
    bool        loaded;
    int         priority;      /* position in the preference order, 0 first; -1 if unused */
    enum ggmlc_status status;  /* GGMLC_OK when loaded */
    const char *reason;        /* why it failed, or NULL */
    const char *version;       /* the plugin's version string, when loaded */
    ggml_backend_reg_t reg;    /* its registry, when loaded */
};

/* Number of configured backends and their description (false when index is out of range);
 * the strings stay valid until ggmlc_shutdown. */
GGML_API size_t ggmlc_backend_count(void);
GGML_API bool   ggmlc_backend_get_info(size_t index, struct ggmlc_backend_info *info);

/* The device's capabilities as its plugin describes them, e.g. "fp16 int8 subgroup=32"
 * ("" when the plugin gives none). */
GGML_API const char *ggmlc_device_caps(ggml_backend_dev_t dev);

/* Whether dev may be chosen without being named: the CPU device, GPUs, and software devices
 * (a CPU-type Vulkan device such as lavapipe) only where the configuration names them.  *why
 * (when why is not NULL) gets a short reason, as ggmlc-info prints it. */
GGML_API bool ggmlc_device_is_default_choice(ggml_backend_dev_t dev, const char **why);

/* The device that ggml_backend_init_best initialises: the first default-choice GPU in the
 * preference order, else the first such integrated GPU, else the CPU (NULL when none). */
GGML_API ggml_backend_dev_t ggmlc_device_default(void);

/* Whether a debug channel ("loader", "sched", ...) was named in $GGMLC_DEBUG. */
GGML_API bool ggmlc_debug_enabled(const char *channel);

/* Whether ggmlc could save a file at path (a model, a GGUF file, a plot): run it before a
 * long job so a bad path fails at once.  GGMLC_OK when path's folder exists and a file can
 * be created in it, the name fits the file system, and path is absent or (after following
 * symbolic links) a regular file this user may replace; else GGMLC_ERR_IO with the reason.
 * Nothing is left behind.  Saving later can still fail (a full disk, a changed folder). */
GGML_API enum ggmlc_status ggmlc_check_writable(const char *path);

/* Progress of long work (a conversion, a load) as ggmlc-train shows an epoch's: on a terminal
 * (stderr), "LABEL  done/total MiB [====>.....] ETA 3s", rewritten in place at most ten times a
 * second and cut to the terminal's width; nothing at all when stderr is not a terminal.  Begin
 * with the total in bytes, update with the bytes done, clear before printing other lines to the
 * terminal (the next update draws the bar again), end to finish the line. */
struct ggmlc_progress {
    const char *label;
    int64_t total, done;
    int64_t t_start, t_last;
    bool tty, drawn;
};
GGML_API void ggmlc_progress_begin(struct ggmlc_progress *p, const char *label,
                                   int64_t total_bytes);
GGML_API void ggmlc_progress_update(struct ggmlc_progress *p, int64_t done_bytes);
GGML_API void ggmlc_progress_clear(struct ggmlc_progress *p);
GGML_API void ggmlc_progress_end(struct ggmlc_progress *p);

/* Counters of the work that costs a trip between the host and a device, summed over all
 * backends since the process started or the last ggmlc_counters_reset: what makes a small
 * step slow on a GPU whatever its kernels' speed (ggmlc-bench train-epoch prints them per
 * step).  Transfers count ggml_backend_tensor_set/get calls on buffers that are not host
 * memory; submits and waits are counted by the plugins that have them (Vulkan: command
 * buffers handed to the queue, fences waited for). */
struct ggmlc_counters {
    uint64_t submits;           /* batches of work handed to a device queue */
    uint64_t waits;             /* times the host waited for a device to finish */
    uint64_t writes_to_device;  /* tensor writes from host memory, and their bytes */
    uint64_t bytes_to_device;
    uint64_t reads_from_device; /* tensor reads into host memory, and their bytes */
    uint64_t bytes_from_device;
    uint64_t fallback_nodes;    /* graph nodes computed on the CPU for another backend */
};
/* The counters now (out must not be NULL). */
GGML_API void ggmlc_counters_get(struct ggmlc_counters *out);
/* Every counter back to 0. */
GGML_API void ggmlc_counters_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_H */
