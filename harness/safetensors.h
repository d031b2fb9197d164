/*
 * safetensors.h - read and write the safetensors format (huggingface/safetensors, docs "Format"):
 * 8-byte little-endian header length N, N bytes of JSON header {"name": {"dtype", "shape",
 * "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the raw little-endian data.
 * Supported dtypes: BF16, F32, I32, U8 (fp8 codes are stored as U8 with metadata naming the format,
 * since safetensors' F8_E4M3 is OCP e4m3fn, not fnuz).
 * The reader checks everything: header length within the file, JSON well-formed, offsets in
 * bounds, ordered, non-overlapping and covering the data section exactly, sizes matching
 * dtype x shape.
 */
#ifndef VS_SAFETENSORS_H
#define VS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

enum st_dtype { ST_BF16 = 1, ST_F32, ST_I32, ST_U8 };

#define ST_MAX_DIMS 6

struct st_tensor {
	char *name;
	int dtype; /* enum st_dtype */
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	void *data; /* points into the file buffer (reader) or caller memory (writer) */
	size_t bytes;
};

struct st_file {
	char *buf; /* whole file (reader) */
	size_t len;
	struct st_tensor *tensors;
	int count;
	char **meta_keys, **meta_values;
	int meta_count;
};

/** Element size of a dtype; 0 if unknown. */
size_t st_dtype_size(int dtype);

/** "BF16", "F32", "I32", "U8". */
const char *st_dtype_name(int dtype);

/** Parse a safetensors file from memory (takes ownership of buf on success). Errors: VS_EPARSE. */
int st_parse(struct st_file *f, char *buf, size_t len, const char *path_for_messages);

/** Read and parse a file. Errors: VS_EIO, VS_EPARSE. */
int st_read(struct st_file *f, const char *path);

/** The tensor with this name, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);

/** The metadata value for key, or NULL. */
const char *st_meta(const struct st_file *f, const char *key);

/**
 * Serialize tensors (data in the order given, 8-byte aligned header as the format recommends) and
 * metadata into a malloc'd buffer. Errors: VS_ENOMEM, VS_EUSAGE for a bad tensor.
 */
int st_serialize(char **out, size_t *out_len, const struct st_tensor *tensors, int count, const char *const *meta_keys,
		 const char *const *meta_values, int meta_count);

/**
 * The first part of what st_serialize() writes: the 8-byte length and the padded JSON header, into
 * a malloc'd buffer (*out, *out_len); *data_len is the size of the data section that follows (the
 * tensors' bytes in the order given). Tensor data pointers are not used, so a caller can stream or
 * hash a large file without assembling it. Errors: as st_serialize().
 */
int st_serialize_header(char **out, size_t *out_len, size_t *data_len, const struct st_tensor *tensors, int count,
			const char *const *meta_keys, const char *const *meta_values, int meta_count);

/** Free everything f owns (the file buffer included); accepts a zeroed struct. */
void st_release(struct st_file *f);

#endif /* VS_SAFETENSORS_H */
