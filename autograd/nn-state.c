/*
 * nn-state.c - a module's parameters and buffers to a GGUF file and back (ga_module_save,
 * ga_module_load).  Tensors are F32 and named as PyTorch's state_dict names them; the file is
 * written through gguf_write_to_file (a temporary file renamed into place), and a load checks
 * every name and shape, reading all values, before it changes anything.
 */
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "gguf.h"
#include "autograd-impl.h"
#include "nn-impl.h"

#define STATE_FORMAT_KEY "ggmlc.autograd.state_version"
#define STATE_FORMAT     1

/* A context holding one F32 tensor per entry of list, filled with the values. */
static struct ggml_context *state_tensors(const ga_param_list *list, struct gguf_context *g) {
    size_t bytes = 0;
    for (int k = 0; k < list->n; k++)
        bytes += ggml_row_size(GGML_TYPE_F32, ga_numel(list->params[k])) + ggml_tensor_overhead();
    struct ggml_init_params ip = {bytes + 1024, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) return NULL;
    for (int k = 0; k < list->n; k++) {
        const ga_tensor *t = list->params[k];
        struct ggml_tensor *s = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, t->ne);
        if (!s || strlen(list->names[k]) >= GGML_MAX_NAME ||
            ga_to_host(t, s->data, (size_t)ga_numel(t)) != GGMLC_OK) {
            ggml_free(ctx);
            return NULL;
        }
        ggml_set_name(s, list->names[k]);
        gguf_add_tensor(g, s);
    }
    return ctx;
}

enum ggmlc_status ga_module_save(const ga_module *m, const char *path) {
    if (!m || !path)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_module_save: NULL module or path");
    ga_param_list list = ggmlc__ga_module_walk((ga_module *)m, true);
    if (list.n < 0) return ggmlc_last_status();
    struct gguf_context *g = gguf_init_empty();
    if (!g) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_module_save: out of memory");
    gguf_set_val_u32(g, STATE_FORMAT_KEY, STATE_FORMAT);
    struct ggml_context *ctx = state_tensors(&list, g);
    enum ggmlc_status st = GGMLC_OK;
    if (!ctx)
        st = ggmlc_last_status() != GGMLC_OK
                 ? ggmlc_last_status()
                 : ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_module_save: cannot gather the values");
    else if (!gguf_write_to_file(g, path, false))
        st = ggmlc_last_status();
    gguf_free(g);
    if (ctx) ggml_free(ctx);
    return st;
}

/* The file's tensor for t, checked against t's name and shape; NULL with an error. */
static const struct ggml_tensor *matching(struct ggml_context *data, const char *name,
                                          const ga_tensor *t, const char *path) {
    const struct ggml_tensor *s = ggml_get_tensor(data, name);
    if (!s) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "ga_module_load: %s has no tensor '%s'", path, name);
        return NULL;
    }
    if (s->type != GGML_TYPE_F32 || memcmp(s->ne, t->ne, sizeof s->ne) != 0) {
        ggmlc_set_error(GGMLC_ERR_SHAPE,
                        "ga_module_load: '%s' in %s is [%lld %lld %lld %lld] %s, the module's is "
                        "[%lld %lld %lld %lld] f32 (ggml order)",
                        name, path, (long long)s->ne[0], (long long)s->ne[1], (long long)s->ne[2],
                        (long long)s->ne[3], ggml_type_name(s->type), (long long)t->ne[0],
                        (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
        return NULL;
    }
    return s;
}

static enum ggmlc_status check_file(struct gguf_context *g, struct ggml_context *data,
                                    const ga_param_list *list, const char *path) {
    const int64_t key = gguf_find_key(g, STATE_FORMAT_KEY);
    if (key < 0 || gguf_get_kv_type(g, key) != GGUF_TYPE_UINT32 ||
        gguf_get_val_u32(g, key) != STATE_FORMAT)
        return ggmlc_set_error(GGMLC_ERR_FORMAT,
                               "ga_module_load: %s is not a module state of this version", path);
    if (gguf_get_n_tensors(g) != list->n)
        return ggmlc_set_error(GGMLC_ERR_FORMAT,
                               "ga_module_load: %s holds %lld tensors, the module has %d", path,
                               (long long)gguf_get_n_tensors(g), list->n);
    for (int k = 0; k < list->n; k++)
        if (!matching(data, list->names[k], list->params[k], path)) return ggmlc_last_status();
    return GGMLC_OK;
}

/* Every value replaced, recorded nothing: each tensor takes the file's values. */
static enum ggmlc_status assign_all(struct ggml_context *data, const ga_param_list *list) {
    bool was = ga_set_grad_enabled(false);
    enum ggmlc_status st = GGMLC_OK;
    for (int k = 0; k < list->n && st == GGMLC_OK; k++) {
        ga_tensor *t = list->params[k];
        const struct ggml_tensor *s = ggml_get_tensor(data, list->names[k]);
        int64_t shape[GA_MAX_DIMS];
        int nd = ga_shape(t, shape);
        ggmlc__ga_untracked(1);
        enum ga_dtype dtype = ga_set_default_dtype(t->dtype); /* rounded to the parameter's */
        ga_tensor *v = ga_from_array(t->dev, s->data, (size_t)ga_numel(t), nd, shape);
        ga_set_default_dtype(dtype);
        ggmlc__ga_untracked(-1);
        st = v ? ga_assign_(t, v) : ggmlc_last_status();
        ga_release(v);
    }
    ga_set_grad_enabled(was);
    return st;
}

enum ggmlc_status ga_module_load(ga_module *m, const char *path) {
    if (!m || !path)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_module_load: NULL module or path");
    ga_param_list list = ggmlc__ga_module_walk(m, true);
    if (list.n < 0) return ggmlc_last_status();
    struct ggml_context *data = NULL;
    struct gguf_init_params params = {false, &data};
    struct gguf_context *g = gguf_init_from_file(path, params);
    if (!g)
        return ggmlc_last_status() != GGMLC_OK
                   ? ggmlc_last_status()
                   : ggmlc_set_error(GGMLC_ERR_IO, "ga_module_load: cannot read %s", path);
    enum ggmlc_status st = check_file(g, data, &list, path);
    if (st == GGMLC_OK) st = assign_all(data, &list);
    gguf_free(g);
    ggml_free(data);
    return st;
}
