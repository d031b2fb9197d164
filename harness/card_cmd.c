/* card_cmd.c - `--static` for one card: card_load() then card_lint(). */
#include "card_cmd.h"

#include "card.h"

#include <string.h>

int card_check_file(const char *path)
{
	struct card c;
	int err;

	memset(&c, 0, sizeof(c));
	err = card_load(&c, path);
	if (!err)
		err = card_lint(&c);
	card_release(&c);
	return err;
}
