/*
 * The suites' validate_skill (VS_TOOL): the tool itself with plan_trimmed_for_tests set, so that a
 * test's plan may hold fewer tasks, configs and pairs than its card plans and still run and record
 * in seconds. Every other check is the tool's. The holes that setting leaves (a deleted task, a
 * shortened protocol) are tested against build/validate_skill itself (VS_TOOL_STRICT).
 */
#include "cli.h"
#include "plan.h"

int main(int argc, char **argv)
{
	plan_trimmed_for_tests = 1;
	return cli_main(argc, argv);
}
