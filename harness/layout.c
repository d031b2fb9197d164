/* layout.c - the default names of a repository's directories, and its root (layout.h). */
#include <stdlib.h>
#include <unistd.h>

#include "layout.h"

#ifndef VS_REPO_ROOT
#define VS_REPO_ROOT "."
#endif

const struct vs_layout vs_layout_default = VS_LAYOUT_INIT;

const char *vs_repo_root(void)
{
	const char *e = getenv("VS_REPO_ROOT");

	if (e && *e)
		return e;
	/* The checkout this binary was built from, while it is where it was (a bundle copied to another
	 * machine runs from the repository root it is started in). */
	if (!access(VS_REPO_ROOT "/kernels/python/mla_decode.py", R_OK))
		return VS_REPO_ROOT;
	return ".";
}
