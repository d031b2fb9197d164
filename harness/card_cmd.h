/* card_cmd.h - `--static`: load and lint one card, printing one line per problem. */
#ifndef VS_CARD_CMD_H
#define VS_CARD_CMD_H

/** Load and lint the card at path; returns 0 or the first error code. */
int card_check_file(const char *path);

#endif /* VS_CARD_CMD_H */
