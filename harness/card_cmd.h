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

#endif /* VS_CARD_CMD_H */
