#include "publish.h"
#include "card.h"
#include "fsutil.h"
#include "jsonfile.h"
#include "evaldir.h"
#include "layout.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- the payload ------------------------------------------------------------------------------ */

static cJSON *str_or_null(const char *s)
{
	return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

int publish_payload(char **out, const char *card_path, const char *eval_dir)
{
	struct card c;
	struct evidence e;
	cJSON *root = NULL, *card, *rec, *m;
	char hash[65], *text;
	int err, status, oom = 0;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	if ((err = card_load(&c, card_path)) || (err = evidence_load(&e, &status, eval_dir, &c)) ||
	    (err = card_hash(&c, hash)))
		goto done;
	root = cJSON_CreateObject();
	if (!root) {
		err = vs_oom();
		goto done;
	}
	jsonfile_put_str(&oom, root, "schema", VS_PUBLISH_SCHEMA);
	jsonfile_put_str(&oom, root, "tool_version", VS_TOOL_VERSION);
	card = jsonfile_put_obj(&oom, root, "card");
	jsonfile_put_str(&oom, card, "id", c.id);
	jsonfile_put_str(&oom, card, "path", card_path);
	jsonfile_put_str(&oom, card, "hash", hash);
	rec = jsonfile_put_obj(&oom, root, "record");
	jsonfile_put(&oom, rec, "status", str_or_null(c.validation.status));
	jsonfile_put(&oom, rec, "last_verified", str_or_null(c.validation.last_verified));
	jsonfile_put(&oom, rec, "gpu", str_or_null(c.validation.gpu));
	jsonfile_put(&oom, rec, "gen", str_or_null(c.validation.gen));
	jsonfile_put(&oom, rec, "model", str_or_null(c.validation.model));
	m = jsonfile_put_obj(&oom, rec, "measured");
	if (c.validation.has_isolated)
		jsonfile_put_num(&oom, m, "isolated", c.validation.measured_isolated);
	else
		jsonfile_put(&oom, m, "isolated", cJSON_CreateNull());
	jsonfile_put(&oom, m, "parity", str_or_null(c.validation.measured_parity));
	jsonfile_put(&oom, rec, "artifact", str_or_null(c.validation.artifact));
	jsonfile_put(&oom, root, "result", cJSON_Duplicate(e.result, 1));
	jsonfile_put_str(&oom, root, "result_sha256", e.result_sha256);
	text = oom ? NULL : cJSON_PrintUnformatted(root);
	if (!text) {
		err = vs_oom();
		goto done;
	}
	*out = strdup(text);
	cJSON_free(text);
	if (!*out)
		err = vs_oom();
done:
	cJSON_Delete(root);
	evidence_release(&e);
	card_release(&c);
	return err;
}

/* ---- HTTP ------------------------------------------------------------------------------------ */

static void global_init(void)
{
	static int done;

	if (!done) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		done = 1;
	}
}

/*
 * Check that url can be used: http or https, no credentials in it, and the token (when set) only
 * over https or to a loopback host. *token is the token to send (NULL: none).
 */
static int check_url(const char *url, const char **token)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *user = NULL;
	const char *tok = getenv(VS_PUBLISH_TOKEN_ENV);
	int err = 0, loopback;

	VS_CHECK_ALLOC(u);
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		err = vs_error(VS_EUSAGE, "'%s' is not a URL (http://HOST/PATH or https://HOST/PATH)", url);
		goto done;
	}
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
		err = vs_error(VS_EUSAGE, "'%s': only http and https URLs are supported", url);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK && user) {
		err = vs_error(VS_EUSAGE,
			       "the URL carries credentials: put the token in %s, never on the command "
			       "line",
			       VS_PUBLISH_TOKEN_ENV);
		goto done;
	}
	loopback = !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "[::1]") ||
		   !strcmp(host, "::1");
	if (tok && *tok && strcasecmp(scheme, "https") && !loopback) {
		err = vs_error(VS_EUSAGE, "refusing to send the %s bearer token over plain http to '%s': use https",
			       VS_PUBLISH_TOKEN_ENV, host);
		goto done;
	}
	*token = tok && *tok ? tok : NULL;
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_url_cleanup(u);
	return err;
}

struct body {
	char *buf;
	size_t len, max;
	int over;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t k = size * n;
	char *nb;

	if (b->len + k > b->max) {
		b->over = 1;
		return 0; /* aborts the transfer */
	}
	nb = realloc(b->buf, b->len + k + 1);
	if (!nb)
		return 0;
	b->buf = nb;
	memcpy(b->buf + b->len, data, k);
	b->len += k;
	b->buf[b->len] = '\0';
	return k;
}

enum attempt { ATTEMPT_OK, ATTEMPT_RETRY, ATTEMPT_REFUSED };

/*
 * One request. post NULL: GET. Fills *code (HTTP status or 0), why (a message without secrets)
 * and body. Returns the class of the outcome.
 */
static enum attempt attempt(const char *url, const char *token, const char *post, const char *idem,
			    const struct publish_options *o, long *code, char *why, size_t cap, struct body *body)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char errbuf[CURL_ERROR_SIZE] = "", *auth = NULL, *key = NULL;
	CURLcode rc;
	enum attempt out;

	*code = 0;
	if (!h) {
		snprintf(why, cap, "libcurl could not start a transfer");
		return ATTEMPT_RETRY;
	}
	if (token) {
		auth = fs_printf("Authorization: Bearer %s", token);
		hdr = curl_slist_append(hdr, auth);
	}
	if (post) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		key = fs_printf("Idempotency-Key: %s", idem);
		hdr = curl_slist_append(hdr, key);
	}
	hdr = curl_slist_append(hdr, "Expect:");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "validate_skill/" VS_TOOL_VERSION);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->connect_timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(o->timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	if (body->max)
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)body->max);
	if (post) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(post));
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
	if (rc == CURLE_OK && *code >= 200 && *code < 300) {
		out = ATTEMPT_OK;
	} else if (rc == CURLE_OK) {
		snprintf(why, cap, "the server answered HTTP %ld", *code);
		out = *code >= 500 ? ATTEMPT_RETRY : ATTEMPT_REFUSED;
	} else if (body->over || rc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(why, cap, "the answer is larger than %zu bytes", body->max);
		out = ATTEMPT_REFUSED;
	} else {
		snprintf(why, cap, "%s", *errbuf ? errbuf : curl_easy_strerror(rc));
		switch (rc) {
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_RESOLVE_PROXY:
		case CURLE_COULDNT_CONNECT:
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_GOT_NOTHING:
		case CURLE_PARTIAL_FILE:
		case CURLE_SSL_CONNECT_ERROR:
			out = ATTEMPT_RETRY;
			break;
		default:
			out = ATTEMPT_REFUSED; /* TLS verification, protocol errors: retrying will not help */
		}
	}
	curl_slist_free_all(hdr);
	if (auth) {
		memset(auth, 0, strlen(auth)); /* the token does not linger in freed memory */
		free(auth);
	}
	free(key);
	curl_easy_cleanup(h);
	return out;
}

static void defaults(struct publish_options *eff, const struct publish_options *o)
{
	const char *ms = getenv("VS_PUBLISH_BACKOFF_MS");

	*eff = *o;
	if (eff->timeout_s <= 0)
		eff->timeout_s = 60;
	if (eff->connect_timeout_s <= 0)
		eff->connect_timeout_s = eff->timeout_s < 10 ? eff->timeout_s : 10;
	if (eff->retries <= 0)
		eff->retries = 3;
	if (eff->backoff_s <= 0)
		eff->backoff_s = ms && *ms ? atof(ms) / 1000.0 : 1.0;
	if (!eff->outbox)
		eff->outbox = "results/.outbox";
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* POST with retries. Returns an enum attempt; why holds the last failure. */
static enum attempt post_with_retries(const struct publish_options *o, const char *token, const char *payload,
				      char *why, size_t cap)
{
	char idem[65];
	double wait = o->backoff_s;
	enum attempt a = ATTEMPT_RETRY;

	fs_sha256_hex(idem, payload, strlen(payload));
	for (int k = 0; k <= o->retries; k++) {
		struct body b = {NULL, 0, 1u << 20, 0};
		long code;

		if (k) {
			sleep_s(wait);
			wait *= 2;
		}
		a = attempt(o->url, token, payload, idem, o, &code, why, cap, &b);
		free(b.buf);
		if (a != ATTEMPT_RETRY)
			break;
	}
	return a;
}

/* Write payload into the outbox (once: a payload already queued is not queued twice). */
static int queue(const struct publish_options *o, const char *payload, char **path_out)
{
	char hex[65], stamp[32], *name = NULL, *path = NULL, suffix[40];
	time_t now = time(NULL);
	struct tm tm;
	DIR *d;
	struct dirent *de;
	int err;

	fs_sha256_hex(hex, payload, strlen(payload));
	snprintf(suffix, sizeof(suffix), "-%.16s.json", hex);
	if ((err = fs_mkdir_p(o->outbox)))
		return err;
	d = opendir(o->outbox);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > strlen(suffix) && !strcmp(de->d_name + n - strlen(suffix), suffix)) {
			*path_out = fs_join(o->outbox, de->d_name);
			closedir(d);
			return 0;
		}
	}
	if (d)
		closedir(d);
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	name = fs_printf("%s%s", stamp, suffix);
	path = name ? fs_join(o->outbox, name) : NULL;
	free(name);
	VS_CHECK_ALLOC(path);
	err = fs_write_atomic(path, payload, strlen(payload), 0600);
	if (err) {
		free(path);
		return err;
	}
	*path_out = path;
	return 0;
}

int publish_send(const struct publish_options *opt, const char *payload)
{
	struct publish_options o;
	const char *token = NULL;
	char why[CURL_ERROR_SIZE + 64] = "", *queued = NULL;
	enum attempt a;
	int err;

	defaults(&o, opt);
	global_init();
	if ((err = check_url(o.url, &token)))
		return err;
	a = post_with_retries(&o, token, payload, why, sizeof(why));
	if (a == ATTEMPT_OK) {
		printf("published to %s\n", o.url);
		return 0;
	}
	if ((err = queue(&o, payload, &queued)))
		return err;
	if (a == ATTEMPT_RETRY) {
		vs_warn("could not publish to '%s' after %d attempts (%s); the payload waits in '%s': send it later "
			"with --flush --publish URL",
			o.url, o.retries + 1, why, queued);
		free(queued);
		return 1;
	}
	err = vs_error(VS_EFAIL,
		       "'%s' refused the payload: %s; it waits in '%s' (--flush --publish URL sends it "
		       "again)",
		       o.url, why, queued);
	free(queued);
	return err;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int publish_flush(const struct publish_options *opt, int *sent, int *left)
{
	struct publish_options o;
	const char *token = NULL;
	char **names = NULL;
	int n = 0, err = 0, result = 0;
	DIR *d;
	struct dirent *de;

	*sent = *left = 0;
	defaults(&o, opt);
	global_init();
	if ((err = check_url(o.url, &token)))
		return err;
	d = opendir(o.outbox);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **nn;

		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		nn = realloc(names, (size_t)(n + 1) * sizeof(*names));
		if (!nn) {
			err = vs_oom();
			break;
		}
		names = nn;
		names[n++] = strdup(de->d_name);
	}
	if (d)
		closedir(d);
	if (names)
		qsort(names, (size_t)n, sizeof(*names), cmp_str);
	for (int i = 0; i < n && !err; i++) {
		char *path = fs_join(o.outbox, names[i]), *payload = NULL, why[CURL_ERROR_SIZE + 64] = "";
		size_t len;
		enum attempt a;

		if (!path || (err = fs_read_file(&payload, &len, path, 256u << 20))) {
			free(path);
			break;
		}
		a = post_with_retries(&o, token, payload, why, sizeof(why));
		if (a == ATTEMPT_OK) {
			if (unlink(path) != 0)
				err = vs_error(VS_EIO, "sent '%s' but cannot remove it: %s", path, strerror(errno));
			(*sent)++;
			printf("published %s to %s\n", path, o.url);
		} else if (a == ATTEMPT_REFUSED) {
			result = vs_error(VS_EFAIL, "'%s' refused '%s': %s (it stays in the outbox)", o.url, path, why);
		} else {
			vs_warn("'%s' cannot be reached (%s): %d payload%s stay in '%s'", o.url, why, n - i,
				n - i == 1 ? "" : "s", o.outbox);
			result = result ? result : 1;
			free(payload);
			free(path);
			break;
		}
		free(payload);
		free(path);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	*left = 0;
	d = opendir(o.outbox);
	while (d && (de = readdir(d)))
		*left += de->d_name[0] != '.' && strstr(de->d_name, ".json") != NULL;
	if (d)
		closedir(d);
	return err ? err : result;
}

/* ---- fetching a card --------------------------------------------------------------------------- */

static int plain_id(const char *id)
{
	if (!id || !*id || id[0] == '.' || strlen(id) > 200)
		return 0;
	for (const char *s = id; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return 0;
	return 1;
}

int publish_fetch(char **path_out, const char *url, const char *skills_dir, int force,
		  const struct publish_options *opt)
{
	struct publish_options o;
	struct body b = {NULL, 0, VS_FETCH_MAX_BYTES, 0};
	struct card c;
	const char *token = NULL, *dir = skills_dir ? skills_dir : vs_layout_default.skills;
	char why[CURL_ERROR_SIZE + 64] = "", *path = NULL, *old = NULL;
	size_t old_len;
	long code;
	enum attempt a = ATTEMPT_RETRY;
	double wait;
	int err;

	memset(&c, 0, sizeof(c));
	defaults(&o, opt);
	o.url = url;
	global_init();
	if ((err = check_url(url, &token)))
		return err;
	wait = o.backoff_s;
	for (int k = 0; k <= o.retries && a == ATTEMPT_RETRY; k++) {
		if (k) {
			sleep_s(wait);
			wait *= 2;
		}
		free(b.buf);
		b.buf = NULL;
		b.len = 0;
		a = attempt(url, token, NULL, NULL, &o, &code, why, sizeof(why), &b);
	}
	if (a != ATTEMPT_OK) {
		err = vs_error(VS_EFAIL, "cannot fetch '%s': %s", url, why);
		goto done;
	}
	if (!b.buf || memchr(b.buf, '\0', b.len)) {
		err = vs_error(VS_EPARSE, "'%s': the answer is empty or not text", url);
		goto done;
	}
	/* Parse once to learn the id, then again under the path it will have, and lint. */
	if ((err = card_parse(&c, url, b.buf, b.len)))
		goto done;
	if (!plain_id(c.id)) {
		err = vs_error(VS_ESCHEMA, "%s: id '%s' cannot name a file in %s/", url, c.id ? c.id : "", dir);
		goto done;
	}
	path = fs_printf("%s/%s.md", dir, c.id);
	card_release(&c);
	memset(&c, 0, sizeof(c));
	if (!path) {
		err = vs_oom();
		goto done;
	}
	if ((err = card_parse(&c, path, b.buf, b.len)) || (err = card_lint(&c))) {
		err = vs_error(err, "the card fetched from '%s' is refused (see above); nothing was written", url);
		goto done;
	}
	if (fs_exists(path)) {
		if ((err = fs_read_file(&old, &old_len, path, 64u << 20)))
			goto done;
		if (old_len == b.len && !memcmp(old, b.buf, b.len)) {
			printf("%s: unchanged (same bytes as %s)\n", path, url);
			goto out;
		}
		if (!force) {
			err = vs_error(VS_EUSAGE,
				       "%s exists and differs from the card at '%s': pass --force to replace it", path,
				       url);
			goto done;
		}
	}
	if ((err = fs_mkdir_p(dir)) || (err = fs_write_atomic(path, b.buf, b.len, 0644)))
		goto done;
	printf("%s: imported from %s\n", path, url);
out:
	if (path_out) {
		*path_out = path;
		path = NULL;
	}
done:
	free(old);
	free(path);
	free(b.buf);
	card_release(&c);
	return err;
}
