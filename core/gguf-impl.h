/*
 * gguf-impl.h - the in-memory form of a GGUF file shared by gguf.c
 * (context, getters, setters), gguf-read.c and gguf-write.c.
 */
#ifndef GGMLC_GGUF_IMPL_H
#define GGMLC_GGUF_IMPL_H

#include "ggml-impl.h"
#include "gguf.h"

/* One key-value pair; scalars are arrays of one element with type == elem_type. */
struct gguf_kv {
    char          *key;
    enum gguf_type type;      /* GGUF_TYPE_ARRAY for arrays */
    enum gguf_type elem_type; /* type of each element */
    size_t         n;         /* number of elements */
    void          *data;      /* n elements; for strings an array of n NUL-terminated char * */
};

struct gguf_tensor_info {
    struct ggml_tensor t; /* name, type, ne, nb; t.data: where gguf_write takes the data from */
    uint64_t offset;      /* from the start of the data section */
};

struct gguf_context {
    uint32_t version;
    size_t   alignment;
    size_t   data_offset; /* of the data section in the file it was read from */
    int64_t  n_kv, cap_kv;
    struct gguf_kv *kv;
    int64_t  n_info, cap_info;
    struct gguf_tensor_info *info;
};

/* The largest general.alignment accepted, read or set: the GGUF spec asks for a multiple of 8,
 * ggml for a power of two, neither gives a maximum.  64 KiB is the largest page size in use
 * (what an alignment is for: mapping tensors); a larger one only makes every file that
 * rewrites the context write that many zeros per tensor (2^31: 2 GiB from a 57-byte file). */
#define GGUF_MAX_ALIGNMENT 65536

/* Whether a value (type, n elements at data) is a valid general.alignment: one u32, a power
 * of two, at most GGUF_MAX_ALIGNMENT; stores it in *alignment when so. */
GGMLC_HIDDEN bool ggmlc__gguf_alignment_valid(enum gguf_type type, const void *data, size_t n, size_t *alignment);
/* Bytes of one element of a fixed-size type; 0 for strings, arrays and invalid types. */
GGMLC_HIDDEN size_t ggmlc__gguf_type_size(enum gguf_type type);
/* Append a pair that takes ownership of key and data (no duplicate check); false when out of memory. */
GGMLC_HIDDEN bool ggmlc__gguf_kv_append(struct gguf_context *ctx, char *key, enum gguf_type type, enum gguf_type elem_type,
                                 size_t n, void *data);
/* Free a pair's key and data. */
GGMLC_HIDDEN void ggmlc__gguf_kv_release(struct gguf_kv *kv);
/* Fill nb[] of a tensor info from its type and ne[]. */
GGMLC_HIDDEN void ggmlc__gguf_info_set_strides(struct ggml_tensor *t);
/* Append a tensor info (the caller checked the name); false when out of memory. */
GGMLC_HIDDEN bool ggmlc__gguf_info_append(struct gguf_context *ctx,
                                          const struct gguf_tensor_info *info);

#endif /* GGMLC_GGUF_IMPL_H */
