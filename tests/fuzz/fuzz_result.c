/*
 * fuzz_result.c - libFuzzer target: the result reader (evidence_load on an eval dir whose result.json
 * is the input). The other files of the eval dir (plan.json, samples.csv, run.log, manifest copies)
 * and the card are the known-good evidence of tests/resources/evidence, copied to a scratch dir once,
 * so the hashes result.json lists still match and the fuzzer reaches the checks behind them:
 * recomputation of every speedup from the samples, the card identity, then recording into the card.
 * The unmodified result.json must verify (else the fixture is stale: tests/fuzz/make_evidence.sh).
 */
#include "card.h"
#include "fsutil.h"
#include "plan.h"
#include "record.h"
#include "vs_error.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef VS_FUZZ_EVIDENCE
#error "VS_FUZZ_EVIDENCE (the path of tests/resources/evidence) must be defined"
#endif

#define EVAL_REL "results/mla_decode_cpu_splitkv/run1"
#define CARD_REL "skills/mla_decode_cpu_splitkv.md"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *scratch, *eval_dir, *result_path;
static struct card card;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_result: %s: %s\n", what, vs_last_error());
	abort();
}

static void copy_tree(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *e;

	if (!d || fs_mkdir_p(to))
		die("cannot copy the evidence fixture");
	while ((e = readdir(d))) {
		char *src, *dst;
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		src = fs_join(from, e->d_name);
		dst = fs_join(to, e->d_name);
		if (stat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
			copy_tree(src, dst);
		} else {
			char *buf = NULL;
			size_t len = 0;

			if (fs_read_file(&buf, &len, src, 0) || fs_write_atomic(dst, buf, len, 0644))
				die("cannot copy the evidence fixture");
			free(buf);
		}
		free(src);
		free(dst);
	}
	closedir(d);
}

static void cleanup(void)
{
	card_release(&card);
	if (scratch)
		fs_remove_tree(scratch);
	free(scratch);
	free(eval_dir);
	free(result_path);
}

static int check(const char *text, size_t len)
{
	struct evidence e;
	struct card_validation v;
	char *out = NULL;
	size_t out_len;
	int status, err;

	if (fs_write_atomic(result_path, text, len, 0644))
		die("cannot write result.json");
	err = evidence_load(&e, &status, eval_dir, &card);
	if (!err) {
		evidence_validation(&v, &e, EVAL_REL);
		if (!card_set_validation(&out, &out_len, &card, &v))
			free(out);
	}
	evidence_release(&e);
	return err;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the fixture is a trimmed run (tests/fuzz/make_evidence.sh): as the suites' tool reads it (plan.h) */
	plan_trimmed_for_tests = 1;
	const char *tmp = getenv("TMPDIR");
	char *src = NULL, *seed = NULL, *text = NULL;
	size_t len;

	(void)argc;
	(void)argv;
	vs_error_set_quiet(1);
	scratch = fs_printf("%s/vs_fuzz_result_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!scratch || !mkdtemp(scratch))
		die("cannot create a scratch dir");
	atexit(cleanup);
	copy_tree(VS_FUZZ_EVIDENCE, scratch);
	eval_dir = fs_join(scratch, EVAL_REL);
	result_path = fs_join(eval_dir, "result.json");
	src = fs_join(scratch, CARD_REL);
	if (card_load(&card, src))
		die("the fixture card does not load");
	seed = fs_join(VS_FUZZ_EVIDENCE, EVAL_REL "/result.json");
	if (fs_read_file(&text, &len, seed, 0))
		die("no result.json in the fixture");
	if (check(text, len))
		die("the fixture's evidence does not verify (stale? rerun tests/fuzz/make_evidence.sh)");
	free(text);
	free(seed);
	free(src);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check((const char *)data, size);
	return 0;
}
