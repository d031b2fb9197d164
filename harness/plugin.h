/*
 * plugin.h - implementations of kernels/mla_decode.h loaded from shared objects (dlopen).
 *
 * A plugin is a shared object that exports `const struct mla_decode_impl *mla_decode_plugin(void)`
 * (kernels/mla_decode.h documents the ABI). plugin_load() opens it in this process, checks the
 * descriptor (ABI version first, then every field), and adds it to the registry with
 * mla_decode_impl_register(), so that plans, the runner and its forked workers find it by name.
 * The file is identified by its sha256, which plans and eval dirs record.
 */
#ifndef VS_PLUGIN_H
#define VS_PLUGIN_H

#include "fsutil.h"
#include "mla_decode.h"

/** A loaded plugin. Owned by the process-wide table; valid until exit (never unloaded). */
struct plugin {
	char *path;                 /* as given (what plans record) */
	char *real_path;            /* canonical path of the file */
	char sha256[FS_SHA256_HEX]; /* of the file's bytes when it was loaded */
	const struct mla_decode_impl *impl;
	void *handle; /* dlopen handle */
};

/**
 * Load the plugin at path and register its implementation. Loading the same file again returns
 * the plugin already loaded. *out is set only on success (it points into the process-wide table).
 * Errors, each one line naming the file: VS_ENOTFOUND (no such file), VS_EIO (dlopen failed: not a
 * shared object, wrong architecture, unresolved symbols; dlerror's text is quoted), VS_ESCHEMA (no
 * `mla_decode_plugin` symbol, a NULL descriptor, a missing field or a backend other than cpu/hip),
 * VS_EUNSUPPORTED (built for another MLA_DECODE_ABI_VERSION), VS_EUSAGE (its implementation name
 * is already taken by a built-in or another plugin).
 */
int plugin_load(const struct plugin **out, const char *path);

/** The loaded plugin that provides the implementation called name, or NULL (built-in or unknown). */
const struct plugin *plugin_for_impl(const char *name);

#endif /* VS_PLUGIN_H */
