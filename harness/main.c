/* validate_skill: main() only dispatches (harness/cli.c holds the command table). */
#include "cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
