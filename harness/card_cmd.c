/* card_cmd.c - `--static` for one card: card_load() then card_lint(). */
#include "card_cmd.h"

#include "card.h"

#include <stdio.h>
#include <string.h>

int card_check_file(const char *path)
{
	struct card c;
	int err;

	memset(&c, 0, sizeof(c));
	err = card_load(&c, path);
	if (!err)
		err = card_lint(&c);
	if (!err) {
		char planned[320] = "";

		if (!card_operator_planned(&c))
			snprintf(planned, sizeof(planned), " (not planned here: operator '%s'; this tool plans %s)",
				 c.match.operator_name, card_planned_operators());
		printf("%s: ok%s%s\n", path, planned,
		       c.validation.typed ? " (typed validation block: read, never trusted)" : "");
	}
	card_release(&c);
	return err;
}
