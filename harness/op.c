/*
 * op.c - the operators this tool plans (op.h).
 */
#include "op.h"

#include <string.h>

static const struct vs_operator *const operators[] = {&vs_op_mla_decode, NULL};

const struct vs_operator *vs_operator_find(const char *name)
{
	for (int i = 0; name && operators[i]; i++)
		if (!strcmp(operators[i]->name, name))
			return operators[i];
	return NULL;
}

const struct vs_operator *vs_operator_at(int i)
{
	return i >= 0 && i < (int)(sizeof(operators) / sizeof(operators[0])) - 1 ? operators[i] : NULL;
}

const struct vs_operator *vs_operator_for_card(const char *card_operator)
{
	for (int i = 0; card_operator && operators[i]; i++)
		if (!strcmp(operators[i]->card_operator, card_operator))
			return operators[i];
	return NULL;
}

const struct vs_operator *vs_op_of(const struct task_spec *s)
{
	(void)s;
	return &vs_op_mla_decode;
}
