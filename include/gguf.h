/*
 * gguf.h - GGUF files: the binary container of ggml models (ggml's API).
 *
 * Layout (little-endian): "GGUF", u32 version (2 or 3), i64 tensor count,
 * i64 key-value count; the key-value pairs (string key, i32 gguf_type,
 * value; arrays as i32 element type, u64 count, elements; strings as u64
 * length and bytes without a terminator); the tensor infos (string name,
 * u32 n_dims, i64 ne[n_dims], i32 ggml_type, u64 offset into the data
 * section); padding to the alignment ("general.alignment", u32, default
 * 32); the tensor data, each tensor starting at an aligned offset.
 *
 * ggmlc validates every count, length and offset of a file against its
 * size before use: a damaged file makes gguf_init_from_file return NULL
 * with ggmlc_last_error() describing what is wrong (GGMLC_ERR_FORMAT).
 * Getters called with a wrong id or type log an error and return 0/NULL
 * instead of aborting.
 */
#ifndef GGUF_H
#define GGUF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGUF_MAGIC   "GGUF"
#define GGUF_VERSION 3

#define GGUF_KEY_GENERAL_ALIGNMENT "general.alignment"

#define GGUF_DEFAULT_ALIGNMENT 32

/* Types of key-value data (the values are those stored in files). */
enum gguf_type {
    GGUF_TYPE_UINT8   = 0,
    GGUF_TYPE_INT8    = 1,
    GGUF_TYPE_UINT16  = 2,
    GGUF_TYPE_INT16   = 3,
    GGUF_TYPE_UINT32  = 4,
    GGUF_TYPE_INT32   = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL    = 7,
    GGUF_TYPE_STRING  = 8,
    GGUF_TYPE_ARRAY   = 9,
    GGUF_TYPE_UINT64  = 10,
    GGUF_TYPE_INT64   = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT,
};

struct gguf_context;

struct gguf_init_params {
    /* with ctx: create the tensors without data (metadata only) */
    bool no_alloc;
    /* if not NULL, receives a new ggml context holding one tensor per tensor info
     * (after a first I8 tensor holding the whole data section unless no_alloc) */
    struct ggml_context **ctx;
};

/* An empty context (version 3, default alignment) to fill and write. */
GGML_API struct gguf_context *gguf_init_empty(void);
/* Read and validate a file; NULL with an error set when it cannot be opened or is not a
 * valid GGUF file.  Only regular files are read (a FIFO, device or folder is refused at
 * once, GGMLC_ERR_IO); the file is read with pread, never mapped, so a file that another
 * process truncates meanwhile gives "file changed while reading" (GGMLC_ERR_IO), not a
 * crash.  general.alignment must be a u32 power of two of at most 65536. */
GGML_API struct gguf_context *gguf_init_from_file(const char *fname, struct gguf_init_params params);
/* The same from an open stream: reads from its current position, on demand and in order,
 * only as far as the file needs (a stream that is not a GGUF file, /dev/zero included, is
 * refused from its first bytes); the stream stays open and the caller's.  NULL with an
 * error set on an invalid file. */
GGML_API struct gguf_context *gguf_init_from_file_ptr(FILE *file, struct gguf_init_params params);
/* The same from size bytes in memory (not kept: the context copies what it needs). */
GGML_API struct gguf_context *gguf_init_from_buffer(const void *data, size_t size, struct gguf_init_params params);

/* Reads len bytes at offset into output; returns the bytes read (fewer = a failed read). */
typedef size_t (*gguf_reader_callback_t)(void *userdata, void *output, uint64_t offset, size_t len);
/* The same from a source read through a callback, on demand and never past what the file
 * needs, in reads of at most max_chunk_read bytes (0: any size); the source is taken to
 * hold at most max_expected_size bytes (a bound for the counts and lengths read). The
 * tensor data is read only when params asks for an allocated ggml context. */
GGML_API struct gguf_context *gguf_init_from_callback(gguf_reader_callback_t read, void *userdata, size_t max_chunk_read,
                                                      uint64_t max_expected_size, struct gguf_init_params params);
/* Free a context (NULL is allowed); a ggml context made by init stays valid. */
GGML_API void gguf_free(struct gguf_context *ctx);

/* Short name of a value type ("u8", "str", "arr", ...); NULL for an invalid type. */
GGML_API const char *gguf_type_name(enum gguf_type type);

/* File format version, alignment of tensor data, and byte offset of the data section. */
GGML_API uint32_t gguf_get_version(const struct gguf_context *ctx);
GGML_API size_t   gguf_get_alignment(const struct gguf_context *ctx);
GGML_API size_t   gguf_get_data_offset(const struct gguf_context *ctx);

/* Number of key-value pairs, the id of a key (-1 if absent), the key of an id. */
GGML_API int64_t      gguf_get_n_kv(const struct gguf_context *ctx);
GGML_API int64_t      gguf_find_key(const struct gguf_context *ctx, const char *key);
GGML_API const char  *gguf_get_key(const struct gguf_context *ctx, int64_t key_id);

/* Type of a value (GGUF_TYPE_ARRAY for arrays) and the element type of an array. */
GGML_API enum gguf_type gguf_get_kv_type(const struct gguf_context *ctx, int64_t key_id);
GGML_API enum gguf_type gguf_get_arr_type(const struct gguf_context *ctx, int64_t key_id);

/* Scalar values; the getter must match the stored type (else an error and 0). */
GGML_API uint8_t      gguf_get_val_u8(const struct gguf_context *ctx, int64_t key_id);
GGML_API int8_t       gguf_get_val_i8(const struct gguf_context *ctx, int64_t key_id);
GGML_API uint16_t     gguf_get_val_u16(const struct gguf_context *ctx, int64_t key_id);
GGML_API int16_t      gguf_get_val_i16(const struct gguf_context *ctx, int64_t key_id);
GGML_API uint32_t     gguf_get_val_u32(const struct gguf_context *ctx, int64_t key_id);
GGML_API int32_t      gguf_get_val_i32(const struct gguf_context *ctx, int64_t key_id);
GGML_API float        gguf_get_val_f32(const struct gguf_context *ctx, int64_t key_id);
GGML_API uint64_t     gguf_get_val_u64(const struct gguf_context *ctx, int64_t key_id);
GGML_API int64_t      gguf_get_val_i64(const struct gguf_context *ctx, int64_t key_id);
GGML_API double       gguf_get_val_f64(const struct gguf_context *ctx, int64_t key_id);
GGML_API bool         gguf_get_val_bool(const struct gguf_context *ctx, int64_t key_id);
/* A string value (NUL-terminated, owned by ctx). */
GGML_API const char  *gguf_get_val_str(const struct gguf_context *ctx, int64_t key_id);
/* Raw bytes of a non-string scalar value. */
GGML_API const void  *gguf_get_val_data(const struct gguf_context *ctx, int64_t key_id);
/* Number of elements of an array. */
GGML_API size_t       gguf_get_arr_n(const struct gguf_context *ctx, int64_t key_id);
/* First element of a non-string array (bools are one byte each). */
GGML_API const void  *gguf_get_arr_data(const struct gguf_context *ctx, int64_t key_id);
/* Element i of a string array. */
GGML_API const char  *gguf_get_arr_str(const struct gguf_context *ctx, int64_t key_id, size_t i);

/* Tensor infos: count, id by name (-1 if absent), offset in the data section,
 * name, type and size in bytes. */
GGML_API int64_t        gguf_get_n_tensors(const struct gguf_context *ctx);
GGML_API int64_t        gguf_find_tensor(const struct gguf_context *ctx, const char *name);
GGML_API size_t         gguf_get_tensor_offset(const struct gguf_context *ctx, int64_t tensor_id);
GGML_API const char    *gguf_get_tensor_name(const struct gguf_context *ctx, int64_t tensor_id);
/* The tensor's GGML_MAX_DIMS sizes (1 beyond its dimensions); NULL for a bad id. */
GGML_API const int64_t *gguf_get_tensor_ne(const struct gguf_context *ctx, int64_t tensor_id);
GGML_API enum ggml_type gguf_get_tensor_type(const struct gguf_context *ctx, int64_t tensor_id);
GGML_API size_t         gguf_get_tensor_size(const struct gguf_context *ctx, int64_t tensor_id);

/* Remove a key; returns the id it had, or -1 if it was absent.  key may be the
 * context's own string (gguf_get_key). */
GGML_API int64_t gguf_remove_key(struct gguf_context *ctx, const char *key);

/* Set a value: an existing key is replaced, the pair always moves to the end.  key and
 * value may be the context's own strings (gguf_get_key, gguf_get_val_str): they are copied
 * before the old pair goes.  general.alignment accepts only a u32 power of two of at most
 * 65536 (else an error, and the old value stays). */
GGML_API void gguf_set_val_u8(struct gguf_context *ctx, const char *key, uint8_t val);
GGML_API void gguf_set_val_i8(struct gguf_context *ctx, const char *key, int8_t val);
GGML_API void gguf_set_val_u16(struct gguf_context *ctx, const char *key, uint16_t val);
GGML_API void gguf_set_val_i16(struct gguf_context *ctx, const char *key, int16_t val);
GGML_API void gguf_set_val_u32(struct gguf_context *ctx, const char *key, uint32_t val);
GGML_API void gguf_set_val_i32(struct gguf_context *ctx, const char *key, int32_t val);
GGML_API void gguf_set_val_f32(struct gguf_context *ctx, const char *key, float val);
GGML_API void gguf_set_val_u64(struct gguf_context *ctx, const char *key, uint64_t val);
GGML_API void gguf_set_val_i64(struct gguf_context *ctx, const char *key, int64_t val);
GGML_API void gguf_set_val_f64(struct gguf_context *ctx, const char *key, double val);
GGML_API void gguf_set_val_bool(struct gguf_context *ctx, const char *key, bool val);
GGML_API void gguf_set_val_str(struct gguf_context *ctx, const char *key, const char *val);

/* An array of n elements of a non-string type, copied from data. */
GGML_API void gguf_set_arr_data(struct gguf_context *ctx, const char *key, enum gguf_type type, const void *data, size_t n);
/* An array of n strings, copied. */
GGML_API void gguf_set_arr_str(struct gguf_context *ctx, const char *key, const char **data, size_t n);

/* Copy every key-value pair of src into ctx (replacing equal keys); src == ctx changes
 * nothing. */
GGML_API void gguf_set_kv(struct gguf_context *ctx, const struct gguf_context *src);

/* Add a tensor info (unique name) placed after the previous tensor; its data is
 * read from tensor at write time (host memory or a backend buffer). */
GGML_API void gguf_add_tensor(struct gguf_context *ctx, const struct ggml_tensor *tensor);

/* Change a tensor's type; the offsets of the following tensors are recomputed so
 * that the data stays one packed, aligned block. */
GGML_API void gguf_set_tensor_type(struct gguf_context *ctx, const char *name, enum ggml_type type);

/* Take a tensor's data from data (gguf_get_tensor_size bytes, not copied: it must
 * stay valid until written). */
GGML_API void gguf_set_tensor_data(struct gguf_context *ctx, const char *name, const void *data);

/* Write the context (header, key-value pairs, tensor infos, and unless only_meta
 * the tensor data) through a temporary file in the same folder, synced and renamed
 * into place; false with an error set on failure. */
GGML_API bool gguf_write_to_file(const struct gguf_context *ctx, const char *fname, bool only_meta);
/* Write the same bytes to an open stream at its current position, then flush it
 * (no temporary file, the stream stays open); false with an error set on failure. */
GGML_API bool gguf_write_to_file_ptr(const struct gguf_context *ctx, FILE *file, bool only_meta);

/* Bytes of the metadata including the padding before the data section. */
GGML_API size_t gguf_get_meta_size(const struct gguf_context *ctx);

/* Write the metadata (gguf_get_meta_size bytes) to data. */
GGML_API void gguf_get_meta_data(const struct gguf_context *ctx, void *data);

#ifdef __cplusplus
}
#endif

#endif /* GGUF_H */
