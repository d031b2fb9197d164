/*
 * fuzz_card.c - libFuzzer target: the front-matter splitter and the card parser (card_parse), then,
 * for a card that parses, lint, the card hash and recording (card_set_validation). Beyond memory and
 * UB errors (ASan, UBSan), it aborts when recording breaks its own promises: the recorded card must
 * parse again with the same card hash and the values written, and recording the same values twice
 * must give identical bytes.
 */
#include "card.h"
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

static void fail(const char *what, const char *text, size_t len)
{
	fprintf(stderr, "fuzz_card: %s (last error: %s)\n%.*s\n", what, vs_last_error(), (int)len, text);
	abort();
}

static const struct card_validation evidence = {
	"validated", "2026-01-31", "NVIDIA H200", "sm_90", "DeepSeek-V3 MLA, h_q 16-128",
	1, 1.234, 0, 0, "pass", "results/fuzz/20260131T000000Z-sm_90",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct card c, c2;
	char hash[65], hash2[65], *out = NULL, *out2 = NULL;
	size_t len = 0, len2 = 0;
	int err;

	memset(&c, 0, sizeof(c));
	memset(&c2, 0, sizeof(c2));
	if (card_parse(&c, "skills/fuzz.md", (const char *)data, size))
		return 0;
	card_lint(&c);
	for (int i = 0; i < c.loc_count; i++) {
		int line, col;

		if (card_locate(&c, c.locs[i].key, &line, &col) || line < 1 || col < 1)
			fail("card_locate lost a key it listed", c.text, c.text_len);
	}
	if (card_hash(&c, hash))
		fail("card_hash failed on a parsed card", c.text, c.text_len);
	err = card_set_validation(&out, &len, &c, &evidence);
	if (err) {
		if (strstr(vs_last_error(), "internal error"))
			fail("recording broke the card", c.text, c.text_len);
		goto done;
	}
	if (card_parse(&c2, "skills/fuzz.md", out, len))
		fail("the recorded card does not parse", out, len);
	if (card_hash(&c2, hash2) || strcmp(hash, hash2))
		fail("recording changed the card hash", out, len);
	if (strcmp(c2.validation.status, evidence.status) || strcmp(c2.validation.gen, evidence.gen) ||
	    !c2.validation.has_isolated || c2.validation.measured_isolated != evidence.measured_isolated)
		fail("the recorded card does not hold the values written", out, len);
	if (card_set_validation(&out2, &len2, &c2, &evidence))
		fail("recording a recorded card failed", out, len);
	if (len2 != len || memcmp(out, out2, len))
		fail("recording the same evidence twice changed the bytes", out, len);
done:
	free(out);
	free(out2);
	card_release(&c2);
	card_release(&c);
	return 0;
}
