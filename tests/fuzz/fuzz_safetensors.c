/*
 * fuzz_safetensors.c - libFuzzer target: the safetensors reader (st_parse). A file that parses must
 * have every tensor inside the buffer (each byte is read here, so ASan sees any overrun), and must
 * survive a round trip: st_serialize of what was read parses again to the same tensors and metadata.
 */
#include "safetensors.h"
#include "vs_error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	vs_error_set_quiet(1);
	return 0;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_safetensors: %s (last error: %s)\n", what, vs_last_error());
	abort();
}

static void same_files(const struct st_file *a, const struct st_file *b)
{
	if (a->count != b->count || a->meta_count != b->meta_count)
		fail("round trip changed the number of tensors or metadata keys");
	for (int i = 0; i < a->count; i++) {
		const struct st_tensor *x = &a->tensors[i], *y = st_find(b, x->name);

		if (!y || y->dtype != x->dtype || y->ndim != x->ndim || y->bytes != x->bytes ||
		    memcmp(y->shape, x->shape, sizeof(x->shape[0]) * (size_t)x->ndim) ||
		    (x->bytes && memcmp(x->data, y->data, x->bytes)))
			fail("round trip changed a tensor");
	}
	for (int i = 0; i < a->meta_count; i++) {
		const char *v = st_meta(b, a->meta_keys[i]);

		if (!v || strcmp(v, a->meta_values[i]))
			fail("round trip changed a metadata value");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_file f = {0}, g = {0};
	char *buf = malloc(size ? size : 1), *out = NULL;
	size_t out_len = 0;
	unsigned sum = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (st_parse(&f, buf, size, "fuzz.safetensors")) {
		free(buf);
		return 0;
	}
	for (int i = 0; i < f.count; i++) {
		const unsigned char *p = f.tensors[i].data;

		if (f.tensors[i].bytes && (p < (unsigned char *)f.buf || p + f.tensors[i].bytes > (unsigned char *)f.buf + f.len))
			fail("a tensor points outside the file");
		for (size_t k = 0; k < f.tensors[i].bytes; k++)
			sum += p[k];
		if (!st_find(&f, f.tensors[i].name))
			fail("st_find misses a tensor the file has");
	}
	if (!st_serialize(&out, &out_len, f.tensors, f.count, (const char *const *)f.meta_keys,
			  (const char *const *)f.meta_values, f.meta_count)) {
		if (st_parse(&g, out, out_len, "roundtrip.safetensors"))
			fail("st_serialize wrote a file st_parse refuses");
		same_files(&f, &g);
		st_release(&g);
	}
	st_release(&f);
	return (int)(sum & 0);
}
