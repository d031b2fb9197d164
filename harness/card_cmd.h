/*
 * card_cmd.h - the card checks behind `validate_skill --static CARD...`: load and lint one card.
 */
#ifndef VS_CARD_CMD_H
#define VS_CARD_CMD_H

/**
 * Load the card at path (card_load()) and, when it loads, lint it (card_lint()). Every problem
 * is printed as one line "<path>:<line>:<col>: <key>: <what is wrong>" through vs_error(); a clean
 * card prints "<path>: ok" on stdout, saying so when its operator is not planned here or its
 * validation block is typed. Returns 0 when the card is clean, else the first error code (VS_EIO,
 * VS_EPARSE, VS_ESCHEMA).
 */
int card_check_file(const char *path);

#include <stdio.h>

struct card;

/** What a plan measures that the field's keys (enforcement, match.profile_signature, runtime) ask. */
struct card_plan_facts {
	int capture_required; /* the plan's capture gate */
	int parity_required;  /* parity gates every task */
	int e2e_stage;        /* the plan has the e2e stage */
};

/**
 * The keys the field added to GEAK's cards, which the card keeps byte for byte: every leaf of
 * `enforcement`, `match.profile_signature` and `runtime`, one line each on f, saying what the plan
 * does with it: "honored: ..." where it states a gate the plan holds (require.capture_safe: the
 * capture gate; require.correctness: parity on every task), else "not checked: <why>". Prints
 * nothing for a card without them. Returns the number of lines, or VS_EPARSE / VS_ENOMEM.
 */
int card_print_field_keys(FILE *f, const struct card *c, const struct card_plan_facts *facts);

#endif /* VS_CARD_CMD_H */
