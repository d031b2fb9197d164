/* PLACEHOLDER: the command table comes with the runner. */
#include "cli.h"

#include <stdio.h>

int cli_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "validate_skill: not built yet\n");
	return 2;
}
