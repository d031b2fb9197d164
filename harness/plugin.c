#include "plugin.h"
#include "vs_error.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLUGINS 16

static struct plugin loaded[MAX_PLUGINS];
static int nloaded;

const struct plugin *plugin_for_impl(const char *name)
{
	for (int i = 0; name && i < nloaded; i++)
		if (!strcmp(loaded[i].impl->name, name))
			return &loaded[i];
	return NULL;
}

/* Check every field of a descriptor once its ABI version is known to match. */
static int check_descriptor(const struct mla_decode_impl *impl, const char *path)
{
	if (!impl->name || !*impl->name || strlen(impl->name) > 64)
		return vs_error(VS_ESCHEMA,
				"plugin '%s': the descriptor has no name (or one longer than 64 "
				"characters)",
				path);
	if (!impl->backend || (strcmp(impl->backend, "cpu") && strcmp(impl->backend, "hip")))
		return vs_error(VS_ESCHEMA,
				"plugin '%s': implementation '%s' has backend '%s'; the backends are "
				"'cpu' and 'hip'",
				path, impl->name, impl->backend ? impl->backend : "");
	if (!impl->configs || !impl->workspace_size || !impl->launch)
		return vs_error(VS_ESCHEMA, "plugin '%s': implementation '%s' lacks %s()", path, impl->name,
				!impl->configs        ? "configs" :
				!impl->workspace_size ? "workspace_size" :
							"launch");
	return 0;
}

int plugin_load(const struct plugin **out, const char *path)
{
	char *real = NULL, *open_path = NULL, sha[FS_SHA256_HEX];
	void *handle = NULL;
	const struct mla_decode_impl *impl;
	mla_decode_plugin_fn fn;
	int err = 0, rc;

	if (nloaded >= MAX_PLUGINS)
		return vs_error(VS_EUNSUPPORTED, "plugin '%s': at most %d plugins can be loaded", path, MAX_PLUGINS);
	if (!fs_exists(path))
		return vs_error(VS_ENOTFOUND, "plugin '%s' does not exist", path);
	real = realpath(path, NULL);
	if (!real)
		return vs_error(VS_EIO, "plugin '%s': cannot resolve its path", path);
	if ((err = fs_sha256_file(sha, real)))
		goto done;
	for (int i = 0; i < nloaded; i++) {
		if (strcmp(loaded[i].real_path, real))
			continue;
		if (strcmp(loaded[i].sha256, sha)) {
			err = vs_error(VS_EVERIFY, "plugin '%s' changed on disk since this process loaded it", path);
			goto done;
		}
		*out = &loaded[i];
		goto done;
	}
	/* dlopen searches the library path for a name without a slash: always give it a path. */
	open_path = strchr(path, '/') ? strdup(path) : fs_printf("./%s", path);
	if (!open_path) {
		err = vs_oom();
		goto done;
	}
	dlerror();
	handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		const char *why = dlerror();

		err = vs_error(VS_EIO, "cannot load plugin '%s': %s", path, why ? why : "dlopen failed");
		goto done;
	}
	dlerror();
	*(void **)&fn = dlsym(handle, MLA_DECODE_PLUGIN_SYMBOL);
	if (!fn) {
		err = vs_error(VS_ESCHEMA,
			       "plugin '%s' does not export '%s' (a plugin exports "
			       "`const struct mla_decode_impl *%s(void)`, see kernels/mla_decode.h)",
			       path, MLA_DECODE_PLUGIN_SYMBOL, MLA_DECODE_PLUGIN_SYMBOL);
		goto done;
	}
	impl = fn();
	if (!impl) {
		err = vs_error(VS_ESCHEMA, "plugin '%s': %s() returned NULL", path, MLA_DECODE_PLUGIN_SYMBOL);
		goto done;
	}
	if (impl->abi_version != MLA_DECODE_ABI_VERSION) {
		err = vs_error(VS_EUNSUPPORTED,
			       "plugin '%s' was built for kernel ABI version %u, this "
			       "validate_skill speaks version %d: rebuild it against this kernels/mla_decode.h%s",
			       path, (unsigned)impl->abi_version, MLA_DECODE_ABI_VERSION,
			       impl->abi_version == 1 ? " (version 2 appended supports() and prepare() to the "
							"descriptor; NULL for both keeps version 1's behaviour)" :
							"");
		goto done;
	}
	if ((err = check_descriptor(impl, path)))
		goto done;
	if (mla_decode_impl_find(impl->name)) {
		err = vs_error(VS_EUSAGE, "plugin '%s': implementation name '%s' is already taken (%s)", path,
			       impl->name, plugin_for_impl(impl->name) ? "by another plugin" : "by a built-in");
		goto done;
	}
	rc = mla_decode_impl_register(impl);
	if (rc != MLA_OK) {
		err = vs_error(VS_EUNSUPPORTED, "plugin '%s': the registry refused '%s' (%s)", path, impl->name,
			       rc == MLA_EUNSUPPORTED ? "registry full" : "invalid descriptor");
		goto done;
	}
	loaded[nloaded].path = strdup(path);
	loaded[nloaded].real_path = real;
	memcpy(loaded[nloaded].sha256, sha, sizeof(sha));
	loaded[nloaded].impl = impl;
	loaded[nloaded].handle = handle;
	if (!loaded[nloaded].path) {
		err = vs_oom();
		goto done;
	}
	real = NULL;
	handle = NULL;
	*out = &loaded[nloaded++];
done:
	if (handle)
		dlclose(handle);
	free(open_path);
	free(real);
	return err;
}
