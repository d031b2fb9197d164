/*
 * fuzz_plan.c - libFuzzer target: the plan reader (plan_parse: JSON, schema, implementations, task
 * specs and their hashes, protocol, gates). A plan that parses must print its summary, serialize
 * (plan_to_text), and read back to the same text.
 */
#include "plan.h"
#include "vs_error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	vs_error_set_quiet(1);
	devnull = fopen("/dev/null", "w");
	return 0;
}

static void fail(const char *what, const char *text)
{
	fprintf(stderr, "fuzz_plan: %s (last error: %s)\n%s\n", what, vs_last_error(), text ? text : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan p, q;
	char *text = NULL, *text2 = NULL;

	memset(&q, 0, sizeof(q));
	if (plan_parse(&p, (const char *)data, size, "plans/fuzz.plan.json"))
		return 0;
	plan_print_summary(&p, devnull);
	if (plan_to_text(&text, &p))
		fail("a plan that reads does not serialize", NULL);
	if (plan_parse(&q, text, strlen(text), "plans/roundtrip.plan.json"))
		fail("a serialized plan does not read back", text);
	if (plan_to_text(&text2, &q) || strcmp(text, text2))
		fail("a plan changes on its round trip", text);
	free(text);
	free(text2);
	plan_release(&q);
	plan_release(&p);
	return 0;
}
