/*
 * task.c - task specs, input generation, and immutable task dirs (see task.h).
 *
 * A task dir is built in a temporary dir beside its final place and renamed into place when every
 * file and the manifest are written, so a crash leaves no half dir. The manifest is canonical: it
 * is rebuilt from the values it holds and must match its own bytes, its spec must hash to the dir
 * name, and the values no file hash covers (kv_scale, the sha256 of inputs that are not stored) are
 * repeated in the metadata of the reference files, which are hashed. So every byte of a task dir is
 * checked by task_verify().
 */
#include "task.h"
#include "fsutil.h"
#include "jsonfile.h"
#include "rng.h"
#include "safetensors.h"
#include "vs_error.h"
#include "op.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TASK_FORMAT "validate_skill task/1"
#define MANIFEST_NAME "manifest.json"
#define HEADER_SLACK ((uint64_t)64 << 10) /* disk estimate: per-file header allowance */
#define MANIFEST_SLACK ((uint64_t)1 << 20)

/* ---- specs, through their operator (op.h) ---------------------------------------------------- */

int task_spec_copy(struct task_spec *dst, const struct task_spec *src)
{
	return vs_op_of(src)->spec_copy(dst, src);
}

void task_spec_release(struct task_spec *s)
{
	if (s)
		vs_op_of(s)->spec_release(s);
}

cJSON *task_tol_to_json(const struct task_tol *t)
{
	cJSON *o = cJSON_CreateObject();

	if (!jsonfile_add(o, "atol", jsonfile_raw_double(t->atol)) ||
	    !jsonfile_add(o, "rtol", jsonfile_raw_double(t->rtol)) ||
	    !jsonfile_add(o, "cos_tol", jsonfile_raw_double(t->cos_tol))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int task_spec_hash(const struct task_spec *s, char hex[65])
{
	return task_spec_hash_for(s, VS_GENERATOR_VERSION, hex);
}

int task_spec_hash_for(const struct task_spec *s, const char *generator, char hex[65])
{
	const struct vs_operator *op = vs_op_of(s);
	cJSON *j = op->spec_to_json(s);
	char *text = j ? cJSON_PrintUnformatted(j) : NULL;
	struct fs_sha256 h;
	int err;

	cJSON_Delete(j);
	if (!text)
		return vs_error(VS_ENOMEM, "out of memory hashing task spec");
	err = fs_sha256_init(&h);
	if (!err) {
		fs_sha256_update(&h, text, strlen(text));
		fs_sha256_update(&h, "\n", 1);
		fs_sha256_update(&h, generator, strlen(generator));
		fs_sha256_update(&h, "\n", 1);
		fs_sha256_update(&h, op->oracle_version, strlen(op->oracle_version));
		fs_sha256_final(&h, hex);
	}
	free(text);
	return err;
}

size_t task_store_limit(void)
{
	const char *e = getenv("VS_TASK_STORE_LIMIT_BYTES");
	char *end = NULL;
	unsigned long long v;

	if (!e || !*e)
		return VS_TASK_STORE_LIMIT;
	errno = 0;
	v = strtoull(e, &end, 10);
	if (*end || errno) {
		vs_warn("ignoring VS_TASK_STORE_LIMIT_BYTES='%s': not a byte count", e);
		return VS_TASK_STORE_LIMIT;
	}
	return (size_t)v;
}

uint64_t task_set_seed(const struct task_spec *s, int k)
{
	return rng_u64(s->seed, VS_STREAM_SET_SEED, (uint64_t)k);
}

void task_meta_add(struct task_meta *m, const char *key, const char *value)
{
	m->keys[m->count] = key;
	snprintf(m->text[m->count], sizeof(m->text[0]), "%s", value);
	m->values[m->count] = m->text[m->count];
	m->count++;
}

void task_meta_add_u64(struct task_meta *m, const char *key, uint64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%llu", (unsigned long long)v);
	task_meta_add(m, key, t);
}

void task_meta_add_float(struct task_meta *m, const char *key, float v)
{
	char t[40];

	jsonfile_fmt_float(t, v);
	task_meta_add(m, key, t);
}

/* Build a file image: header for tensors t[0..n) and metadata, then room for the data. */
int task_image_alloc(char **buf, size_t *len, size_t *data_off, const struct st_tensor *t, int n,
		     const struct task_meta *m)
{
	char *head = NULL, *img;
	size_t hlen = 0, dlen = 0;
	int err = st_serialize_header(&head, &hlen, &dlen, t, n, m->keys, m->values, m->count);

	if (err)
		return err;
	img = realloc(head, hlen + dlen);
	if (!img) {
		free(head);
		return vs_error(VS_ENOMEM, "out of memory for a %zu-byte task file", hlen + dlen);
	}
	*buf = img;
	*len = hlen + dlen;
	*data_off = hlen;
	return 0;
}

/* Point the set's tensor `name` at data (bytes long). */
static void set_assign(struct task_set *ts, const char *name, void *data, size_t bytes)
{
	static const char *const names[] = {"q",
					    "kv_cache",
					    "block_table",
					    "seqlens",
					    "indices",
					    "topk_length",
					    "attn_sink",
					    "extra_kv_cache",
					    "extra_block_table",
					    "extra_seqlens",
					    "extra_indices",
					    "extra_topk_length"};
	void **ptrs[] = {&ts->q,
			 &ts->kv_cache,
			 (void **)&ts->block_table,
			 (void **)&ts->seqlens,
			 (void **)&ts->indices,
			 (void **)&ts->topk_length,
			 (void **)&ts->attn_sink,
			 &ts->extra_kv_cache,
			 (void **)&ts->extra_block_table,
			 (void **)&ts->extra_seqlens,
			 (void **)&ts->extra_indices,
			 (void **)&ts->extra_topk_length};
	size_t *sizes[] = {&ts->q_bytes,
			   &ts->kv_bytes,
			   &ts->block_table_bytes,
			   &ts->seqlens_bytes,
			   &ts->indices_bytes,
			   &ts->topk_length_bytes,
			   &ts->attn_sink_bytes,
			   &ts->extra_kv_bytes,
			   &ts->extra_block_table_bytes,
			   &ts->extra_seqlens_bytes,
			   &ts->extra_indices_bytes,
			   &ts->extra_topk_length_bytes};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*ptrs[i] = data;
			*sizes[i] = bytes;
		}
}

int task_set_inputs(struct task_input out[VS_TASK_MAX_INPUTS], const struct task_set *ts)
{
	const struct task_input all[] = {
		{"q", ts->q, ts->q_bytes},
		{"kv_cache", ts->kv_cache, ts->kv_bytes},
		{"block_table", ts->block_table, ts->block_table_bytes},
		{"seqlens", ts->seqlens, ts->seqlens_bytes},
		{"indices", ts->indices, ts->indices_bytes},
		{"topk_length", ts->topk_length, ts->topk_length_bytes},
		{"attn_sink", ts->attn_sink, ts->attn_sink_bytes},
		{"extra_kv_cache", ts->extra_kv_cache, ts->extra_kv_bytes},
		{"extra_block_table", ts->extra_block_table, ts->extra_block_table_bytes},
		{"extra_seqlens", ts->extra_seqlens, ts->extra_seqlens_bytes},
		{"extra_indices", ts->extra_indices, ts->extra_indices_bytes},
		{"extra_topk_length", ts->extra_topk_length, ts->extra_topk_length_bytes},
	};
	int n = 0;

	for (int i = 0; i < VS_TASK_MAX_INPUTS; i++)
		if (i < 4 || all[i].host)
			out[n++] = all[i];
	return n;
}

/* The bytes of a spec's input tensors (op.h inputs), together. */
static size_t inputs_bytes(const struct task_spec *s)
{
	struct st_tensor t[VS_TASK_MAX_INPUTS];
	int n = vs_op_of(s)->inputs(t, s);
	size_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += t[i].bytes;
	return bytes;
}

/* Point a set's tensors into an inputs image's data (after its header), in file order. */
static void set_view(struct task_set *ts, const struct task_spec *s, char *data)
{
	struct st_tensor t[VS_TASK_MAX_INPUTS], o[2];
	int n = vs_op_of(s)->inputs(t, s);

	vs_op_of(s)->outputs(o, s);
	memset(ts, 0, sizeof(*ts));
	ts->kv_scale = 1.0f;
	for (int i = 0; i < n; i++) {
		set_assign(ts, t[i].name, data, t[i].bytes);
		data += t[i].bytes;
	}
	ts->out_elems = o[0].bytes / 4;
	ts->lse_elems = o[1].bytes / 4;
}

/* ---- manifest ------------------------------------------------------------------------------- */

struct manifest_set {
	float kv_scale;
	int generated; /* inputs not stored: regenerated on load */
	uint64_t inputs_bytes;
	char inputs_sha[65];
	uint64_t reference_bytes;
	char reference_sha[65];
};

struct manifest {
	struct task_spec spec;
	char hash[65];
	struct manifest_set sets[VS_TASK_MAX_SETS];
};

static void manifest_release(struct manifest *m)
{
	task_spec_release(&m->spec);
}

static void file_name(char out[64], const char *stem, int k)
{
	if (k == 0)
		snprintf(out, 64, "%s.safetensors", stem);
	else
		snprintf(out, 64, "%s.%d.safetensors", stem, k);
}

static cJSON *file_json(const char *name, uint64_t bytes, const char *sha)
{
	cJSON *o = cJSON_CreateObject();

	if (!jsonfile_add(o, "name", cJSON_CreateString(name)) || !jsonfile_add(o, "bytes", jsonfile_raw_u64(bytes)) ||
	    !jsonfile_add(o, "sha256", cJSON_CreateString(sha))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The manifest's canonical text (malloc'd, ends with a newline); NULL when out of memory. */
static char *manifest_text(const struct manifest *m)
{
	const struct task_spec *s = &m->spec;
	cJSON *j = cJSON_CreateObject(), *o, *sets, *files;
	cJSON *shapes, *dtypes;
	char *text = NULL, *out = NULL;
	const struct vs_operator *op = vs_op_of(s);

	if (!jsonfile_add(j, "format", cJSON_CreateString(TASK_FORMAT)) ||
	    !jsonfile_add(j, "operator", cJSON_CreateString(op->name)) ||
	    !jsonfile_add(j, "task", cJSON_CreateString(m->hash)) ||
	    !jsonfile_add(j, "generator", cJSON_CreateString(VS_GENERATOR_VERSION)) ||
	    !jsonfile_add(j, "rng", cJSON_CreateString(RNG_NAME)) ||
	    !jsonfile_add(j, "oracle", cJSON_CreateString(op->oracle_version)) ||
	    !jsonfile_add(j, "spec", op->spec_to_json(s)) || !jsonfile_add(j, "seed", jsonfile_raw_u64(s->seed)) ||
	    !jsonfile_add(j, "shapes", shapes = cJSON_CreateObject()) ||
	    !jsonfile_add(j, "dtypes", dtypes = cJSON_CreateObject()) || !op->manifest_tensors(shapes, dtypes, s) ||
	    !jsonfile_add(j, "page_offset", jsonfile_raw_i64(s->page_offset)) ||
	    !jsonfile_add(j, "block_table_sentinel", cJSON_CreateNumber(VS_BLOCK_TABLE_SENTINEL)) ||
	    !jsonfile_add(j, "tolerances", o = cJSON_CreateObject()) ||
	    !jsonfile_add(o, "out", task_tol_to_json(&s->tol_out)) ||
	    !jsonfile_add(o, "lse", task_tol_to_json(&s->tol_lse)) ||
	    !jsonfile_add(j, "sets", sets = cJSON_CreateArray()))
		goto done;
	for (int k = 0; k < s->input_sets; k++) {
		const struct manifest_set *ms = &m->sets[k];
		cJSON *set = cJSON_CreateObject(), *lens, *in;
		char name[64];

		if (!jsonfile_add(sets, NULL, set) || !jsonfile_add(set, "set", cJSON_CreateNumber(k)) ||
		    !jsonfile_add(set, "seed", jsonfile_raw_u64(task_set_seed(s, k))) ||
		    !jsonfile_add(set, "kv_scale", jsonfile_raw_float(ms->kv_scale)) ||
		    !jsonfile_add(set, "seqlens", lens = cJSON_CreateArray()))
			goto done;
		for (int b = 0; b < s->batch; b++)
			if (!jsonfile_add(lens, NULL, cJSON_CreateNumber(s->seqlens[(b + k) % s->batch])))
				goto done;
		file_name(name, "inputs", k);
		if (!jsonfile_add(set, "inputs", in = cJSON_CreateObject()) ||
		    !jsonfile_add(in, "name", cJSON_CreateString(name)) ||
		    !jsonfile_add(in, "generated", cJSON_CreateBool(ms->generated)) ||
		    !jsonfile_add(in, "bytes", jsonfile_raw_u64(ms->inputs_bytes)) ||
		    !jsonfile_add(in, "sha256", cJSON_CreateString(ms->inputs_sha)))
			goto done;
		file_name(name, "reference", k);
		if (!jsonfile_add(set, "reference", cJSON_CreateString(name)))
			goto done;
	}
	if (!jsonfile_add(j, "files", files = cJSON_CreateArray()))
		goto done;
	for (int k = 0; k < s->input_sets; k++) {
		const struct manifest_set *ms = &m->sets[k];
		char name[64];

		file_name(name, "inputs", k);
		if (!ms->generated && !jsonfile_add(files, NULL, file_json(name, ms->inputs_bytes, ms->inputs_sha)))
			goto done;
		file_name(name, "reference", k);
		if (!jsonfile_add(files, NULL, file_json(name, ms->reference_bytes, ms->reference_sha)))
			goto done;
	}
	text = cJSON_Print(j);
	if (text)
		out = fs_printf("%s\n", text);
done:
	free(text);
	cJSON_Delete(j);
	return out;
}

static int is_sha_hex(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

static int json_u64(uint64_t *out, const cJSON *j)
{
	double v;

	if (jsonfile_number(&v, j) || v < 0 || v != floor(v) || v > 9007199254740992.0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/*
 * Read the values a manifest holds (the rest is derived from them and checked by comparing the
 * canonical text with the file). Errors: VS_EVERIFY with one line naming the manifest.
 */
static int manifest_parse(struct manifest *m, const char *text, const char *path)
{
	cJSON *j = cJSON_Parse(text), *sets, *files, *it;
	const struct vs_operator *op;
	const char *str;
	int err = 0, quiet, k;

	memset(m, 0, sizeof(*m));
	if (!j)
		return vs_error(VS_EVERIFY, "'%s' is not valid JSON", path);
	str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "format"));
	if (!str || strcmp(str, TASK_FORMAT)) {
		err = vs_error(VS_EVERIFY, "'%s': format is not \"%s\"", path, TASK_FORMAT);
		goto done;
	}
	str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "generator"));
	if (!str || strcmp(str, VS_GENERATOR_VERSION)) {
		err = vs_error(VS_EVERIFY, "'%s': generator is '%s', this build generates '%s'", path,
			       str ? str : "(missing)", VS_GENERATOR_VERSION);
		goto done;
	}
	str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "operator"));
	if (!(op = vs_operator_find(str))) {
		err = vs_error(VS_EVERIFY, "'%s': operator '%s' is not one this build knows", path,
			       str ? str : "(missing)");
		goto done;
	}
	str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "oracle"));
	if (!str || strcmp(str, op->oracle_version)) {
		err = vs_error(VS_EVERIFY, "'%s': oracle is '%s', this build's is '%s'", path, str ? str : "(missing)",
			       op->oracle_version);
		goto done;
	}
	str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "task"));
	if (!str || !is_sha_hex(str)) {
		err = vs_error(VS_EVERIFY, "'%s': 'task' is not a sha256", path);
		goto done;
	}
	memcpy(m->hash, str, 65);
	quiet = vs_error_set_quiet(1);
	err = op->spec_from_json(&m->spec, cJSON_GetObjectItemCaseSensitive(j, "spec"), path);
	vs_error_set_quiet(quiet);
	if (err) {
		err = vs_error(VS_EVERIFY, "%s", vs_last_error());
		goto done;
	}
	sets = cJSON_GetObjectItemCaseSensitive(j, "sets");
	if (!cJSON_IsArray(sets) || cJSON_GetArraySize(sets) != m->spec.input_sets) {
		err = vs_error(VS_EVERIFY, "'%s': 'sets' is not a list of %d input sets", path, m->spec.input_sets);
		goto done;
	}
	k = 0;
	cJSON_ArrayForEach(it, sets)
	{
		struct manifest_set *ms = &m->sets[k];
		const cJSON *in = cJSON_GetObjectItemCaseSensitive(it, "inputs");
		const cJSON *gen = cJSON_GetObjectItemCaseSensitive(in, "generated");
		double v;

		str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "sha256"));
		if (jsonfile_number(&v, cJSON_GetObjectItemCaseSensitive(it, "kv_scale")) || !cJSON_IsBool(gen) ||
		    !is_sha_hex(str) || json_u64(&ms->inputs_bytes, cJSON_GetObjectItemCaseSensitive(in, "bytes"))) {
			err = vs_error(VS_EVERIFY,
				       "'%s': input set %d lacks kv_scale or inputs "
				       "{generated, bytes, sha256}",
				       path, k);
			goto done;
		}
		ms->kv_scale = (float)v;
		ms->generated = cJSON_IsTrue(gen);
		memcpy(ms->inputs_sha, str, 65);
		k++;
	}
	/* sizes and hashes of the reference files (and stored inputs) come from "files" */
	files = cJSON_GetObjectItemCaseSensitive(j, "files");
	if (!cJSON_IsArray(files)) {
		err = vs_error(VS_EVERIFY, "'%s': 'files' is not a list", path);
		goto done;
	}
	cJSON_ArrayForEach(it, files)
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
		uint64_t bytes;
		int found = 0;

		str = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "sha256"));
		if (!name || !is_sha_hex(str) || json_u64(&bytes, cJSON_GetObjectItemCaseSensitive(it, "bytes"))) {
			err = vs_error(VS_EVERIFY, "'%s': an entry of 'files' lacks name, bytes or sha256", path);
			goto done;
		}
		for (k = 0; k < m->spec.input_sets; k++) {
			char in[64], ref[64];

			file_name(in, "inputs", k);
			file_name(ref, "reference", k);
			if (!strcmp(name, ref)) {
				m->sets[k].reference_bytes = bytes;
				memcpy(m->sets[k].reference_sha, str, 65);
				found = 1;
			} else if (!strcmp(name, in)) {
				found = 1; /* its size and hash are the set's; the text comparison checks */
			}
		}
		if (!found) {
			err = vs_error(VS_EVERIFY,
				       "'%s': 'files' lists '%s', which is no file of this "
				       "task",
				       path, name);
			goto done;
		}
	}
done:
	cJSON_Delete(j);
	if (err)
		manifest_release(m);
	return err;
}

/* ---- verification --------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	size_t n = strlen(path);
	const char *p;

	while (n > 1 && path[n - 1] == '/')
		n--;
	p = path + n;
	while (p > path && p[-1] != '/')
		p--;
	return p;
}

/* The dir's name, without trailing slashes, into out[65]; "" if it does not fit. */
static void dir_name(char out[65], const char *dir)
{
	const char *b = base_name(dir);
	size_t n = strcspn(b, "/");

	out[0] = '\0';
	if (n == 64) {
		memcpy(out, b, 64);
		out[64] = '\0';
	}
}

/* A file of the task: its name, and whether and where to keep its bytes. */
struct vfile {
	char name[64];
	uint64_t bytes;
	const char *sha;
	int set;
	int is_reference;
};

/*
 * Verify dir. On success *m holds the manifest; when keep is non-NULL, keep[2k] and keep[2k+1]
 * receive the bytes of set k's inputs (NULL when generated) and reference files (caller frees).
 */
static int verify_dir(const char *dir, struct manifest *m, char **keep, size_t *keep_len)
{
	char *mpath = NULL, *text = NULL, *canon = NULL, *path = NULL, *buf = NULL;
	char name[65];
	size_t tlen = 0, blen = 0;
	struct vfile files[2 * VS_TASK_MAX_SETS];
	int nfiles = 0, err = 0, have = 0, quiet;
	DIR *d = NULL;
	struct dirent *e;
	struct st_file st = {0};

	memset(m, 0, sizeof(*m));
	if (!fs_is_dir(dir))
		return vs_error(VS_ENOTFOUND, "task dir '%s' does not exist", dir);
	if (fs_is_link(dir))
		return vs_error(VS_EVERIFY,
				"task dir '%s' is a symlink: task dirs are real directories under "
				"the tasks root",
				dir);
	mpath = fs_join(dir, MANIFEST_NAME);
	VS_CHECK_ALLOC(mpath);
	if (!fs_exists(mpath)) {
		err = vs_error(VS_EVERIFY, "'%s' is missing", mpath);
		goto done;
	}
	if ((err = fs_read_file(&text, &tlen, mpath, 64u << 20)))
		goto done;
	if ((err = manifest_parse(m, text, mpath)))
		goto done;
	have = 1;
	if ((err = task_spec_hash(&m->spec, name)))
		goto done;
	if (strcmp(name, m->hash)) {
		err = vs_error(VS_EVERIFY, "'%s': its spec hashes to %s, not to its 'task' %s", mpath, name, m->hash);
		goto done;
	}
	{
		char dn[65];

		dir_name(dn, dir);
		if (strcmp(dn, m->hash)) {
			err = vs_error(VS_EVERIFY, "'%s': the spec's hash %s is not the dir's name '%s'", mpath,
				       m->hash, base_name(dir));
			goto done;
		}
	}
	canon = manifest_text(m);
	if (!canon) {
		err = vs_oom();
		goto done;
	}
	if (strlen(canon) != tlen || memcmp(canon, text, tlen)) {
		size_t at = 0;

		while (at < tlen && canon[at] == text[at])
			at++;
		err = vs_error(VS_EVERIFY,
			       "'%s' differs from the canonical manifest of its own values "
			       "at byte %zu (edited?)",
			       mpath, at);
		goto done;
	}
	for (int k = 0; k < m->spec.input_sets; k++) {
		struct manifest_set *ms = &m->sets[k];

		if (!ms->generated) {
			file_name(files[nfiles].name, "inputs", k);
			files[nfiles].bytes = ms->inputs_bytes;
			files[nfiles].sha = ms->inputs_sha;
			files[nfiles].set = k;
			files[nfiles++].is_reference = 0;
		}
		file_name(files[nfiles].name, "reference", k);
		files[nfiles].bytes = ms->reference_bytes;
		files[nfiles].sha = ms->reference_sha;
		files[nfiles].set = k;
		files[nfiles++].is_reference = 1;
	}
	d = opendir(dir);
	if (!d) {
		err = vs_error(VS_EIO, "cannot list task dir '%s': %s", dir, strerror(errno));
		goto done;
	}
	while ((e = readdir(d))) {
		int known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, MANIFEST_NAME);

		for (int i = 0; i < nfiles && !known; i++)
			known = !strcmp(e->d_name, files[i].name);
		if (!known) {
			err = vs_error(VS_EVERIFY, "'%s/%s' is not listed in the manifest", dir, e->d_name);
			goto done;
		}
	}
	for (int i = 0; i < nfiles; i++) {
		const struct vfile *f = &files[i];
		struct stat sb;
		char sha[65];
		const char *meta;
		char want[40];

		free(path);
		path = fs_join(dir, f->name);
		if (!path) {
			err = vs_oom();
			goto done;
		}
		if (lstat(path, &sb) != 0) {
			err = vs_error(VS_EVERIFY, "'%s' is missing", path);
			goto done;
		}
		if (!S_ISREG(sb.st_mode)) {
			err = vs_error(VS_EVERIFY, "'%s' is not a regular file", path);
			goto done;
		}
		if ((uint64_t)sb.st_size != f->bytes) {
			err = vs_error(VS_EVERIFY, "'%s' has %llu bytes, the manifest says %llu", path,
				       (unsigned long long)sb.st_size, (unsigned long long)f->bytes);
			goto done;
		}
		if ((err = fs_read_file(&buf, &blen, path, 0)))
			goto done;
		fs_sha256_hex(sha, buf, blen);
		if (strcmp(sha, f->sha)) {
			err = vs_error(VS_EVERIFY, "'%s': sha256 is %s, the manifest says %s", path, sha, f->sha);
			goto done;
		}
		if (f->is_reference) {
			/* the reference repeats what no other hash covers: kv_scale and the inputs' sha256 */
			const struct manifest_set *ms = &m->sets[f->set];

			quiet = vs_error_set_quiet(1);
			err = st_parse(&st, buf, blen, path);
			vs_error_set_quiet(quiet);
			if (err) {
				char why[1024];

				snprintf(why, sizeof(why), "%s", vs_last_error());
				err = vs_error(VS_EVERIFY,
					       "%s (the file matches its sha256 in the manifest: the "
					       "task dir was written wrong)",
					       why);
				goto done;
			}
			buf = NULL; /* owned by st */
			jsonfile_fmt_float(want, ms->kv_scale);
			meta = st_meta(&st, "kv_scale");
			if (!meta || strcmp(meta, want)) {
				err = vs_error(VS_EVERIFY,
					       "'%s': manifest kv_scale of set %d is %s, the "
					       "reference was computed with %s",
					       mpath, f->set, want, meta ? meta : "(none)");
				goto done;
			}
			meta = st_meta(&st, "inputs_sha256");
			if (!meta || strcmp(meta, ms->inputs_sha)) {
				err = vs_error(VS_EVERIFY,
					       "'%s': manifest inputs sha256 of set %d is %s, the "
					       "reference was computed from %s",
					       mpath, f->set, ms->inputs_sha, meta ? meta : "(none)");
				goto done;
			}
			if (keep) {
				buf = st.buf;
				st.buf = NULL;
			}
			st_release(&st);
		}
		if (keep) {
			keep[2 * f->set + f->is_reference] = buf;
			keep_len[2 * f->set + f->is_reference] = blen;
			buf = NULL;
		}
		free(buf);
		buf = NULL;
	}
done:
	if (d)
		closedir(d);
	st_release(&st);
	free(buf);
	free(path);
	free(canon);
	free(text);
	free(mpath);
	if (err && have)
		manifest_release(m);
	return err;
}

int task_verify(const char *dir)
{
	struct manifest m;
	int err = verify_dir(dir, &m, NULL, NULL);

	if (!err)
		manifest_release(&m);
	return err;
}

/* ---- materialize ---------------------------------------------------------------------------- */

static int progress_wanted(const struct task_spec *s)
{
	struct st_tensor t[VS_TASK_MAX_INPUTS];
	int n;

	if (!isatty(STDERR_FILENO))
		return 0;
	if (vs_op_of(s)->flops(s) * s->input_sets > 2e10)
		return 1;
	n = vs_op_of(s)->inputs(t, s);
	for (int i = 0; i < n; i++)
		if (t[i].bytes > ((size_t)64 << 20))
			return 1;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Compute the reference of one generated input set into a reference file image. */
static int reference_image(char **buf, size_t *len, const struct task_spec *s, int k, const char *hash,
			   const char *inputs, size_t inputs_len, float kv_scale, int threads)
{
	struct st_tensor t[2];
	struct task_meta m = {.count = 0};
	const struct vs_operator *op = vs_op_of(s);
	struct task_set view;
	char sha[65], format[64], *img = NULL;
	size_t ilen = 0, off = 0, in_off;
	int err;

	in_off = inputs_len - inputs_bytes(s);
	set_view(&view, s, (char *)inputs + in_off);
	view.kv_scale = kv_scale;
	fs_sha256_hex(sha, inputs, inputs_len);
	op->outputs(t, s);
	snprintf(format, sizeof(format), "validate_skill %s reference", op->name);
	task_meta_add(&m, "format", format);
	task_meta_add(&m, "task", hash);
	task_meta_add(&m, "oracle", op->oracle_version);
	task_meta_add_u64(&m, "set", (uint64_t)k);
	task_meta_add(&m, "inputs_sha256", sha);
	task_meta_add_float(&m, "kv_scale", kv_scale);
	if ((err = task_image_alloc(&img, &ilen, &off, t, 2, &m)))
		return err;
	if ((err = op->reference((float *)(img + off), (float *)(img + off + t[0].bytes), s, &view, NULL, threads)))
		goto done;
	*buf = img;
	*len = ilen;
	img = NULL;
done:
	free(img);
	return err;
}

/* Bytes the stored files of a task will take (headers estimated generously). */
static uint64_t disk_estimate(const struct task_spec *s, size_t limit)
{
	struct st_tensor o[2];
	uint64_t in, total = MANIFEST_SLACK;

	vs_op_of(s)->outputs(o, s);
	in = inputs_bytes(s) + HEADER_SLACK;
	for (int k = 0; k < s->input_sets; k++) {
		if (in <= limit)
			total += in;
		total += o[0].bytes + o[1].bytes + HEADER_SLACK;
	}
	return total;
}

/* Write every file of the task into tmp; the manifest last. */
static int materialize_into(const char *tmp, const struct task_spec *s, const char *hash, int threads)
{
	struct manifest m;
	size_t limit = task_store_limit();
	char *inputs = NULL, *ref = NULL, *path = NULL, *text = NULL;
	size_t ilen = 0, rlen = 0;
	int err = 0, progress = progress_wanted(s);
	double t0 = now_s();

	memset(&m, 0, sizeof(m));
	m.spec = *s; /* borrowed: never released here */
	memcpy(m.hash, hash, 65);
	for (int k = 0; k < s->input_sets; k++) {
		struct manifest_set *ms = &m.sets[k];
		char name[64];

		if (progress)
			fprintf(stderr, "materializing %.12s '%s': set %d of %d: inputs (%.0fs)\n", hash, s->name,
				k + 1, s->input_sets, now_s() - t0);
		if ((err = vs_op_of(s)->generate_inputs(&inputs, &ilen, &ms->kv_scale, s, k)))
			goto done;
		ms->inputs_bytes = ilen;
		fs_sha256_hex(ms->inputs_sha, inputs, ilen);
		ms->generated = ilen > limit;
		if (!ms->generated) {
			file_name(name, "inputs", k);
			free(path);
			if (!(path = fs_join(tmp, name))) {
				err = vs_oom();
				goto done;
			}
			if ((err = fs_write_atomic(path, inputs, ilen, 0444)))
				goto done;
		}
		if (progress)
			fprintf(stderr,
				"materializing %.12s '%s': set %d of %d: reference, %d threads "
				"(%.0fs)\n",
				hash, s->name, k + 1, s->input_sets, threads, now_s() - t0);
		if ((err = reference_image(&ref, &rlen, s, k, hash, inputs, ilen, ms->kv_scale, threads)))
			goto done;
		ms->reference_bytes = rlen;
		fs_sha256_hex(ms->reference_sha, ref, rlen);
		file_name(name, "reference", k);
		free(path);
		if (!(path = fs_join(tmp, name))) {
			err = vs_oom();
			goto done;
		}
		if ((err = fs_write_atomic(path, ref, rlen, 0444)))
			goto done;
		free(inputs);
		free(ref);
		inputs = ref = NULL;
	}
	text = manifest_text(&m);
	free(path);
	path = fs_join(tmp, MANIFEST_NAME);
	if (!text || !path) {
		err = vs_oom();
		goto done;
	}
	err = fs_write_atomic(path, text, strlen(text), 0444);
done:
	free(text);
	free(path);
	free(inputs);
	free(ref);
	return err;
}

static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Verify an existing task dir quietly; on failure report one line about refusing it. */
static int reuse_existing(const char *dir)
{
	int quiet = vs_error_set_quiet(1);
	int err = task_verify(dir);
	char why[1024];

	vs_error_set_quiet(quiet);
	if (!err)
		return 0;
	snprintf(why, sizeof(why), "%s", vs_last_error());
	return vs_error(VS_EVERIFY,
			"existing task dir '%s' fails verification, refusing to overwrite "
			"it (remove it to rebuild): %s",
			dir, why);
}

int task_materialize(char **dir_out, const char *root, const struct task_spec *s, int threads)
{
	char hash[65];
	char *parent = NULL, *dir = NULL, *tmp = NULL, *tmpname = NULL;
	uint64_t need, avail;
	int err;

	if ((err = vs_op_of(s)->spec_validate(s, "materialize")))
		return err;
	if ((err = task_spec_hash(s, hash)))
		return err;
	parent = fs_join(root, vs_op_of(s)->name);
	dir = parent ? fs_join(parent, hash) : NULL;
	tmpname = fs_printf(".%s.tmp.%ld", hash, (long)getpid());
	tmp = parent && tmpname ? fs_join(parent, tmpname) : NULL;
	if (!tmp || !dir) {
		err = vs_oom();
		goto done;
	}
	if (fs_exists(dir)) {
		err = reuse_existing(dir);
		goto done;
	}
	if ((err = fs_mkdir_p(parent)))
		goto done;
	need = disk_estimate(s, task_store_limit());
	avail = fs_free_bytes(parent);
	if (avail < need) {
		err = vs_error(VS_ENOSPACE,
			       "not enough free disk for task '%s' under '%s': it needs "
			       "about %llu bytes, %llu are free",
			       s->name, parent, (unsigned long long)need, (unsigned long long)avail);
		goto done;
	}
	if (fs_exists(tmp) && (err = fs_remove_tree(tmp)))
		goto done;
	if (mkdir(tmp, 0755) != 0) {
		err = vs_error(VS_EIO, "cannot create '%s': %s", tmp, strerror(errno));
		goto done;
	}
	if ((err = materialize_into(tmp, s, hash, threads)))
		goto done;
	if (chmod(tmp, 0555) != 0) {
		err = vs_error(VS_EIO, "cannot make '%s' read-only: %s", tmp, strerror(errno));
		goto done;
	}
	if (rename(tmp, dir) != 0) {
		if (errno == EEXIST || errno == ENOTEMPTY) {
			/* another process materialized it first: use theirs if it verifies */
			err = reuse_existing(dir);
			goto done;
		}
		err = vs_error(VS_EIO, "cannot move '%s' to '%s': %s", tmp, dir, strerror(errno));
		goto done;
	}
	sync_dir(parent);
done:
	if (tmp && fs_exists(tmp)) {
		int quiet = vs_error_set_quiet(1);

		fs_remove_tree(tmp);
		vs_error_set_quiet(quiet);
	}
	if (!err) {
		*dir_out = dir;
		dir = NULL;
	}
	free(parent);
	free(dir);
	free(tmp);
	free(tmpname);
	return err;
}

/* ---- load ----------------------------------------------------------------------------------- */

/* Check that a parsed file holds tensor name with dtype and shape; VS_EVERIFY naming the file. */
static int expect_tensor(void **data, const struct st_file *f, const char *name, int dtype, const int64_t *shape,
			 int ndim, const char *path)
{
	const struct st_tensor *t = st_find(f, name);

	if (!t)
		return vs_error(VS_EVERIFY, "'%s' has no tensor '%s'", path, name);
	if (t->dtype != dtype || t->ndim != ndim || memcmp(t->shape, shape, (size_t)ndim * 8))
		return vs_error(VS_EVERIFY, "'%s': tensor '%s' is not %s of the task's shape", path, name,
				st_dtype_name(dtype));
	*data = t->data;
	return 0;
}

static int load_set(struct task_data *t, const struct manifest *m, int k, char **bufs, size_t *lens, const char *dir)
{
	const struct task_spec *s = &t->spec; /* m->spec has moved there */
	struct task_set *ts = &t->sets[k];
	struct st_tensor tens[VS_TASK_MAX_INPUTS], outs[2];
	int nt = vs_op_of(s)->inputs(tens, s);
	struct st_file in = {0}, ref = {0};
	char name[64], sha[65], want[40], *path = NULL, *ibuf = bufs[2 * k];
	size_t ilen = lens[2 * k];
	float kv_scale = 0;
	const char *meta;
	void *p = NULL;
	int err = 0;

	vs_op_of(s)->outputs(outs, s);
	file_name(name, "inputs", k);
	path = fs_join(dir, name);
	VS_CHECK_ALLOC(path);
	if (!ibuf) {
		if ((err = vs_op_of(s)->generate_inputs(&ibuf, &ilen, &kv_scale, s, k)))
			goto done;
		fs_sha256_hex(sha, ibuf, ilen);
		if (ilen != m->sets[k].inputs_bytes || strcmp(sha, m->sets[k].inputs_sha)) {
			err = vs_error(VS_EVERIFY,
				       "'%s' (not stored) regenerates to %zu bytes with sha256 "
				       "%s, the manifest says %llu bytes with %s",
				       path, ilen, sha, (unsigned long long)m->sets[k].inputs_bytes,
				       m->sets[k].inputs_sha);
			free(ibuf);
			goto done;
		}
	}
	bufs[2 * k] = NULL;
	if ((err = st_parse(&in, ibuf, ilen, path))) {
		free(ibuf);
		goto done;
	}
	jsonfile_fmt_float(want, m->sets[k].kv_scale);
	meta = st_meta(&in, "kv_scale");
	if (!meta || strcmp(meta, want)) {
		err = vs_error(VS_EVERIFY, "'%s': kv_scale %s, the manifest says %s", path, meta ? meta : "(none)",
			       want);
		goto done;
	}
	for (int i = 0; i < nt; i++) {
		if ((err = expect_tensor(&p, &in, tens[i].name, tens[i].dtype, tens[i].shape, tens[i].ndim, path)))
			goto done;
		set_assign(ts, tens[i].name, p, tens[i].bytes);
	}
	if (in.count != nt) {
		err = vs_error(VS_EVERIFY, "'%s' holds %d tensors, the task has %d inputs", path, in.count, nt);
		goto done;
	}
	file_name(name, "reference", k);
	free(path);
	path = fs_join(dir, name);
	if (!path) {
		err = vs_oom();
		goto done;
	}
	if ((err = st_parse(&ref, bufs[2 * k + 1], lens[2 * k + 1], path)))
		goto done;
	bufs[2 * k + 1] = NULL;
	if ((err = expect_tensor(&p, &ref, outs[0].name, outs[0].dtype, outs[0].shape, outs[0].ndim, path)))
		goto done;
	ts->ref_out = p;
	if ((err = expect_tensor(&p, &ref, outs[1].name, outs[1].dtype, outs[1].shape, outs[1].ndim, path)))
		goto done;
	ts->ref_lse = p;
	ts->kv_scale = m->sets[k].kv_scale;
	ts->out_elems = outs[0].bytes / 4;
	ts->lse_elems = outs[1].bytes / 4;
	t->owned[2 * k] = in.buf;
	t->owned[2 * k + 1] = ref.buf;
	in.buf = ref.buf = NULL;
done:
	if (err)
		memset(ts, 0, sizeof(*ts));
	st_release(&in);
	st_release(&ref);
	free(path);
	return err;
}

int task_load(struct task_data *out, const char *dir)
{
	struct task_data t;
	struct manifest m;
	char *bufs[2 * VS_TASK_MAX_SETS] = {0};
	size_t lens[2 * VS_TASK_MAX_SETS] = {0};
	int err;

	memset(&t, 0, sizeof(t));
	if ((err = verify_dir(dir, &m, bufs, lens)))
		goto done; /* m is zeroed */
	t.dir = strdup(dir);
	if (!t.dir) {
		err = vs_oom();
		goto done;
	}
	memcpy(t.hash, m.hash, 65);
	t.spec = m.spec;
	memset(&m.spec, 0, sizeof(m.spec));
	for (int k = 0; k < t.spec.input_sets; k++) {
		if ((err = load_set(&t, &m, k, bufs, lens, dir)))
			goto done;
		t.nsets = k + 1;
	}
	*out = t;
	memset(&t, 0, sizeof(t));
done:
	for (int i = 0; i < 2 * VS_TASK_MAX_SETS; i++)
		free(bufs[i]);
	manifest_release(&m);
	task_data_release(&t);
	return err;
}

void task_data_release(struct task_data *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < sizeof(t->owned) / sizeof(t->owned[0]); i++)
		free(t->owned[i]);
	free(t->dir);
	task_spec_release(&t->spec);
	memset(t, 0, sizeof(*t));
}

int task_set_is_softmax(const struct task_spec *s, int k)
{
	return k % 2 == 1 || s->input_sets == 1;
}
