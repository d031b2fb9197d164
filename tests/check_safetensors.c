/*
 * check_safetensors.c - the safetensors reader and writer: round trips, a file written by Python's
 * safetensors, and every malformed file the reader must refuse with a clear line.
 */
#include "testutil.h"
#include "safetensors.h"
#include "vs_error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A file image: 8-byte little-endian length of json, json, then data_len bytes 0..255. */
static char *make_file(const char *json, size_t data_len, size_t *len)
{
	size_t n = strlen(json);
	char *buf = malloc(8 + n + data_len + 1);

	ck_assert_ptr_nonnull(buf);
	for (int i = 0; i < 8; i++)
		buf[i] = (char)(unsigned char)((uint64_t)n >> (8 * i));
	memcpy(buf + 8, json, n);
	for (size_t i = 0; i < data_len; i++)
		buf[8 + n + i] = (char)i;
	*len = 8 + n + data_len;
	return buf;
}

START_TEST(round_trip_keeps_names_dtypes_shapes_data_and_metadata)
{
	uint16_t bf[6] = { 0x3f80, 0xbf80, 0x7fc0, 0, 1, 2 };
	float f32[2] = { 1.5f, -2.25f };
	int32_t i32[3] = { -1, 0, 0x40000000 };
	uint8_t u8[5] = { 0x00, 0x7f, 0x80, 0xff, 0x01 };
	struct st_tensor t[5] = {
		{ .name = "q", .dtype = ST_BF16, .ndim = 2, .shape = { 2, 3 }, .data = bf, .bytes = 12 },
		{ .name = "f", .dtype = ST_F32, .ndim = 1, .shape = { 2 }, .data = f32, .bytes = 8 },
		{ .name = "empty", .dtype = ST_F32, .ndim = 2, .shape = { 0, 7 }, .data = NULL, .bytes = 0 },
		{ .name = "i", .dtype = ST_I32, .ndim = 1, .shape = { 3 }, .data = i32, .bytes = 12 },
		{ .name = "codes", .dtype = ST_U8, .ndim = 4, .shape = { 1, 5, 1, 1 }, .data = u8, .bytes = 5 },
	};
	const char *keys[] = { "format", "kv_scale" }, *values[] = { "fp8_e4m3_fnuz", "0.00416667" };
	char *buf = NULL;
	size_t len = 0, hlen = 0;
	struct st_file f;

	ck_assert_int_eq(st_serialize(&buf, &len, t, 5, keys, values, 2), 0);
	for (int i = 0; i < 8; i++)
		hlen |= (size_t)(unsigned char)buf[i] << (8 * i);
	ck_assert_msg(hlen % 8 == 0, "header length %zu is not a multiple of 8", hlen);
	ck_assert_uint_eq(len, 8 + hlen + 12 + 8 + 0 + 12 + 5);
	ck_assert_int_eq(st_parse(&f, buf, len, "round-trip"), 0);
	ck_assert_int_eq(f.count, 5);
	for (int i = 0; i < 5; i++) {
		const struct st_tensor *g = st_find(&f, t[i].name);

		ck_assert_msg(g != NULL, "tensor '%s' lost", t[i].name);
		ck_assert_int_eq(g->dtype, t[i].dtype);
		ck_assert_int_eq(g->ndim, t[i].ndim);
		for (int d = 0; d < g->ndim; d++)
			ck_assert_int_eq(g->shape[d], t[i].shape[d]);
		ck_assert_uint_eq(g->bytes, t[i].bytes);
		if (t[i].bytes)
			ck_assert_msg(!memcmp(g->data, t[i].data, t[i].bytes), "data of '%s' differs",
				      t[i].name);
	}
	ck_assert_str_eq(st_meta(&f, "format"), "fp8_e4m3_fnuz");
	ck_assert_str_eq(st_meta(&f, "kv_scale"), "0.00416667");
	ck_assert_ptr_null(st_meta(&f, "missing"));
	ck_assert_ptr_null(st_find(&f, "missing"));
	st_release(&f);
}
END_TEST

START_TEST(reads_a_file_written_by_python_safetensors)
{
	char *path = tu_resource("python_written.safetensors");
	struct st_file f;
	const struct st_tensor *w, *ids, *codes, *empty;

	ck_assert_int_eq(st_read(&f, path), 0);
	w = st_find(&f, "w");
	ids = st_find(&f, "ids");
	codes = st_find(&f, "codes");
	empty = st_find(&f, "empty");
	ck_assert(w && ids && codes && empty);
	ck_assert_int_eq(w->dtype, ST_F32);
	ck_assert_int_eq(w->shape[0], 2);
	ck_assert_int_eq(w->shape[1], 3);
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq(((const float *)w->data)[i], (float)i);
	ck_assert_int_eq(((const int32_t *)ids->data)[1], -2);
	ck_assert_uint_eq(((const uint8_t *)codes->data)[3], 255);
	ck_assert_uint_eq(empty->bytes, 0);
	ck_assert_str_eq(st_meta(&f, "note"), "fixture");
	st_release(&f);
	free(path);
}
END_TEST

START_TEST(st_read_reports_a_missing_file)
{
	struct st_file f;

	vs_error_set_quiet(1);
	ck_assert_int_eq(st_read(&f, "/nonexistent/x.safetensors"), VS_EIO);
	vs_error_set_quiet(0);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "/nonexistent/x.safetensors"));
}
END_TEST

static const struct {
	const char *what;
	const char *json;  /* NULL: raw bytes below */
	size_t data_len;
	const char *expect;
} bad[] = {
	{ "bad JSON", "{\"a\": ", 0, "not valid JSON" },
	{ "not an object", "[1, 2]", 0, "not a JSON object" },
	{ "text after the JSON", "{}  x", 0, "text after its JSON object" },
	{ "overlapping offsets",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlaps tensor 'a'" },
	{ "offsets past the data",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
	  "tensor 'a' ends at byte 8, past the data section of 4 bytes" },
	{ "gap between tensors",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
	  "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
	  "gap in the data section: bytes [4, 8)" },
	{ "data not covered to the end",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
	  "the tensors cover 4 bytes, but the data section has 8" },
	{ "data not starting at 0",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap in the data section" },
	{ "size differs from dtype x shape",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
	  "tensor 'a' spans 8 bytes, but F32 x its shape is 12 bytes" },
	{ "unknown dtype", "{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
	  "unsupported dtype 'F64'" },
	{ "duplicate names",
	  "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
	  "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate tensor name 'a'" },
	{ "negative shape", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
	  "shape entry 0 is not a non-negative integer" },
	{ "fractional offset", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.5]}}", 2,
	  "data_offsets is not [begin, end]" },
	{ "end before begin", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,1]}}", 2,
	  "end before they begin" },
	{ "missing data_offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, "lacks 'data_offsets'" },
	{ "unknown entry key",
	  "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1,
	  "unknown key 'x'" },
	{ "too many dimensions",
	  "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
	  "at most 6 dimensions" },
	{ "shape size overflow",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
	  "overflows" },
	{ "metadata value not a string", "{\"__metadata__\":{\"k\":1}}", 0,
	  "metadata value 'k' is not a string" },
	{ "metadata not an object", "{\"__metadata__\":[]}", 0, "'__metadata__' is not an object" },
};

START_TEST(reader_refuses_malformed_files)
{
	size_t len;
	char *buf = make_file(bad[_i].json, bad[_i].data_len, &len);
	struct st_file f;
	int rc;

	vs_error_set_quiet(1);
	rc = st_parse(&f, buf, len, "bad.safetensors");
	vs_error_set_quiet(0);
	ck_assert_msg(rc == VS_EPARSE, "%s: st_parse returned %d for %s", bad[_i].what, rc,
		      bad[_i].json);
	ck_assert_msg(strstr(vs_last_error(), bad[_i].expect) != NULL,
		      "%s: error '%s' lacks '%s'", bad[_i].what, vs_last_error(), bad[_i].expect);
	ck_assert_msg(strstr(vs_last_error(), "'bad.safetensors'") != NULL, "%s: error '%s' lacks "
		      "the file name", bad[_i].what, vs_last_error());
	free(buf);
}
END_TEST

START_TEST(reader_refuses_truncated_files_and_lengths_past_the_end)
{
	char tiny[5] = { 1, 0, 0, 0, 0 };
	size_t len;
	char *buf = make_file("{}", 0, &len);
	struct st_file f;

	vs_error_set_quiet(1);
	ck_assert_int_eq(st_parse(&f, tiny, sizeof(tiny), "tiny"), VS_EPARSE);
	ck_assert_msg(strstr(vs_last_error(), "truncated: 5 bytes") != NULL, "got '%s'",
		      vs_last_error());
	buf[0] = (char)0xe8; /* claims 1000 + header bytes */
	buf[1] = 0x03;
	ck_assert_int_eq(st_parse(&f, buf, len, "long"), VS_EPARSE);
	ck_assert_msg(strstr(vs_last_error(), "header length 1000 runs past the end of the file "
			     "(10 bytes)") != NULL, "got '%s'", vs_last_error());
	/* a valid file cut short loses the tail of its data */
	free(buf);
	buf = make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, &len);
	ck_assert_int_eq(st_parse(&f, buf, len - 1, "cut"), VS_EPARSE);
	ck_assert_msg(strstr(vs_last_error(), "past the data section of 3 bytes") != NULL, "got '%s'",
		      vs_last_error());
	vs_error_set_quiet(0);
	free(buf);
}
END_TEST

START_TEST(writer_refuses_inconsistent_tensors)
{
	uint8_t d[4] = { 0 };
	struct st_tensor dup[2] = {
		{ .name = "a", .dtype = ST_U8, .ndim = 1, .shape = { 4 }, .data = d, .bytes = 4 },
		{ .name = "a", .dtype = ST_U8, .ndim = 1, .shape = { 4 }, .data = d, .bytes = 4 },
	};
	struct st_tensor wrong = { .name = "w", .dtype = ST_F32, .ndim = 1, .shape = { 4 }, .data = d,
				   .bytes = 4 };
	char *buf = NULL;
	size_t len = 0;

	vs_error_set_quiet(1);
	ck_assert_int_eq(st_serialize(&buf, &len, dup, 2, NULL, NULL, 0), VS_EUSAGE);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "duplicate tensor name 'a'"));
	ck_assert_int_eq(st_serialize(&buf, &len, &wrong, 1, NULL, NULL, 0), VS_EUSAGE);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "tensor 'w'"));
	vs_error_set_quiet(0);
	ck_assert_ptr_null(buf);
}
END_TEST

static Suite *safetensors_suite(void)
{
	Suite *s = suite_create("safetensors");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, round_trip_keeps_names_dtypes_shapes_data_and_metadata);
	tcase_add_test(tc, reads_a_file_written_by_python_safetensors);
	tcase_add_test(tc, st_read_reports_a_missing_file);
	tcase_add_loop_test(tc, reader_refuses_malformed_files, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, reader_refuses_truncated_files_and_lengths_past_the_end);
	tcase_add_test(tc, writer_refuses_inconsistent_tensors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(safetensors_suite());
}
