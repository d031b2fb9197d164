/* layout.c - the default names of a repository's directories (layout.h). */
#include "layout.h"

const struct vs_layout vs_layout_default = VS_LAYOUT_INIT;
