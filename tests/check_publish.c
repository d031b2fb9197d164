/*
 * check_publish.c - publishing results and fetching cards over HTTP (harness/publish.c) against a
 * real HTTP server that this test starts on loopback (127.0.0.1, a port the kernel picks): one that
 * answers, one that answers 500 before it answers 200, one that always fails, one that stalls, one
 * that refuses (401), and no server at all. Nothing is lost: what was not delivered waits in the
 * outbox and --flush delivers it once the server is back. The bearer token travels in the
 * Authorization header only, and never to a non-loopback host over plain http.
 */
#include "testutil.h"

#include "fsutil.h"
#include "publish.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "tok-3f9a-secret-never-logged"

/* ---- the loopback server ------------------------------------------------------------------------ */

struct server {
	pid_t pid;
	int port;
	char *dir;     /* req-<n>.txt: every request as received */
};

static char *tmp, *outbox;

static int listen_loopback(int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A port on which nothing listens (bound, then closed). */
static int dead_port(void)
{
	int port, fd = listen_loopback(&port);

	close(fd);
	return port;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, s, n);

		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

/* Handle one connection in mode m ("200", "500", "401", "stall", "close", "file:<path>", "big"). */
static void serve(int c, const char *m, const char *dir, int n)
{
	char buf[1 << 16], *path, *hdr_end, reply[256];
	size_t len = 0;
	long body_len = 0;

	for (;;) { /* headers, then as much body as Content-Length says */
		ssize_t k = read(c, buf + len, sizeof(buf) - 1 - len);
		const char *cl;

		if (k <= 0)
			break;
		len += (size_t)k;
		buf[len] = '\0';
		hdr_end = strstr(buf, "\r\n\r\n");
		if (!hdr_end)
			continue;
		cl = strcasestr(buf, "Content-Length:");
		body_len = cl ? strtol(cl + 15, NULL, 10) : 0;
		if ((long)(len - (size_t)(hdr_end + 4 - buf)) >= body_len || len >= sizeof(buf) - 1)
			break;
	}
	path = fs_printf("%s/req-%d.txt", dir, n);
	tu_write(path, buf, len);
	free(path);
	if (!strcmp(m, "stall")) {
		sleep(60);
	} else if (!strcmp(m, "close")) {
		/* nothing: the connection closes without an answer */
	} else if (!strncmp(m, "file:", 5) || !strcmp(m, "big")) {
		size_t blen = 0;
		char *body = !strcmp(m, "big") ? calloc(1, blen = (2u << 20)) : tu_read(m + 5, &blen);

		if (!strcmp(m, "big"))
			memset(body, 'x', blen);
		snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", blen);
		send_all(c, reply, strlen(reply));
		send_all(c, body, blen);
		free(body);
	} else {
		int code = atoi(m);

		snprintf(reply, sizeof(reply), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
			 "Connection: close\r\n\r\n{}", code);
		send_all(c, reply, strlen(reply));
	}
	close(c);
}

/* Start a server whose n-th connection gets the n-th of the comma-separated modes (the last repeats). */
static void server_start(struct server *s, const char *modes)
{
	int fd = listen_loopback(&s->port);

	s->dir = fs_printf("%s/server-%d", tmp, s->port);
	fs_mkdir_p(s->dir);
	s->pid = fork();
	ck_assert_int_ge(s->pid, 0);
	if (s->pid == 0) {
		char *list = strdup(modes), *m[16], *save = NULL;
		int nm = 0, n = 0;

		signal(SIGCHLD, SIG_IGN);
		for (char *t = strtok_r(list, ",", &save); t && nm < 16; t = strtok_r(NULL, ",", &save))
			m[nm++] = t;
		alarm(120); /* bounded: the server ends by itself */
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c < 0)
				continue;
			n++;
			if (fork() == 0) {
				close(fd);
				serve(c, m[n - 1 < nm ? n - 1 : nm - 1], s->dir, n);
				_exit(0);
			}
			close(c);
		}
	}
	close(fd);
}

static void server_stop(struct server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

static int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

static char *request(const struct server *s, int n)
{
	char *path = fs_printf("%s/req-%d.txt", s->dir, n), *text;

	ck_assert_msg(fs_exists(path), "the server got no request %d", n);
	text = tu_read(path, NULL);
	free(path);
	return text;
}

static char *url(const struct server *s, const char *path)
{
	return fs_printf("http://127.0.0.1:%d%s", s->port, path);
}

static struct publish_options opts(const char *u)
{
	struct publish_options o;

	memset(&o, 0, sizeof(o));
	o.url = u;
	o.outbox = outbox;
	o.timeout_s = 5;
	o.retries = 3;
	o.backoff_s = 0.05;
	return o;
}

static void setup(void)
{
	tmp = tu_tmpdir();
	outbox = fs_join(tmp, "outbox");
	setenv(VS_PUBLISH_TOKEN_ENV, TOKEN, 1);
	vs_error_set_quiet(1);
}

static void teardown(void)
{
	vs_error_set_quiet(0);
	fs_remove_tree(tmp);
	free(tmp);
	free(outbox);
}

static const char payload[] = "{\"schema\":\"validate_skill.publish/1\",\"card\":{\"id\":\"x\"}}";

/* ---- publishing ------------------------------------------------------------------------------ */

START_TEST(delivered_with_bearer_token_json_and_idempotency_key)
{
	struct server s;
	char *u, *req, hex[65], *key;
	struct publish_options o;

	server_start(&s, "200");
	u = url(&s, "/api/results");
	o = opts(u);
	ck_assert_msg(publish_send(&o, payload) == 0, "%s", vs_last_error());
	req = request(&s, 1);
	fs_sha256_hex(hex, payload, strlen(payload));
	key = fs_printf("Idempotency-Key: %s", hex);
	ck_assert_msg(!strncmp(req, "POST /api/results HTTP/1.1", 26), "%s", req);
	ck_assert_msg(strstr(req, "Authorization: Bearer " TOKEN), "%s", req);
	ck_assert_msg(strstr(req, "Content-Type: application/json"), "%s", req);
	ck_assert_msg(strstr(req, key), "%s", req);
	ck_assert_msg(strstr(req, payload), "body missing: %s", req);
	ck_assert_int_eq(count_files(outbox, "2"), 0);
	free(key);
	free(req);
	free(u);
	server_stop(&s);
}
END_TEST

struct failing_case {
	const char *modes;
	int want;          /* publish_send's return */
	int requests;      /* the server sees this many */
	int queued;
};

static const struct failing_case failing[] = {
	{"500,500,200", 0, 3, 0},  /* retried on 5xx, then delivered */
	{"close,200", 0, 2, 0},    /* a connection closed without an answer is retried */
	{"500", 1, 4, 1},          /* always 500: 1 + 3 retries, then the outbox */
	{"401", VS_EFAIL, 1, 1},   /* refused: not retried, kept */
	{"404", VS_EFAIL, 1, 1},
};

START_TEST(failures_retry_on_5xx_and_keep_the_payload)
{
	const struct failing_case *c = &failing[_i];
	struct server s;
	struct publish_options o;
	char *u;
	int rc;

	server_start(&s, c->modes);
	u = url(&s, "/r");
	o = opts(u);
	rc = publish_send(&o, payload);
	ck_assert_msg(rc == c->want, "%s: returned %d, want %d (%s)", c->modes, rc, c->want, vs_last_error());
	usleep(100000);
	ck_assert_msg(count_files(s.dir, "req-") == c->requests, "%s: %d requests, want %d", c->modes,
		      count_files(s.dir, "req-"), c->requests);
	ck_assert_int_eq(count_files(outbox, "2"), c->queued);
	if (rc == VS_EFAIL)
		ck_assert_msg(strstr(vs_last_error(), "refused") && !strstr(vs_last_error(), TOKEN), "%s",
			      vs_last_error());
	free(u);
	server_stop(&s);
}
END_TEST

START_TEST(unreachable_server_then_flush_delivers_the_outbox)
{
	char *down = fs_printf("http://127.0.0.1:%d/r", dead_port()), *u, *req, *other = NULL;
	struct publish_options o = opts(down);
	struct server s;
	int sent, left;

	ck_assert_int_eq(publish_send(&o, payload), 1);
	ck_assert_int_eq(publish_send(&o, payload), 1); /* the same payload is queued once */
	other = strdup("{\"schema\":\"validate_skill.publish/1\",\"card\":{\"id\":\"y\"}}");
	ck_assert_int_eq(publish_send(&o, other), 1);
	ck_assert_int_eq(count_files(outbox, "2"), 2);
	/* Still down: flush keeps everything. */
	ck_assert_int_eq(publish_flush(&o, &sent, &left), 1);
	ck_assert_int_eq(sent, 0);
	ck_assert_int_eq(left, 2);
	/* Back up. */
	server_start(&s, "200");
	u = url(&s, "/r");
	o = opts(u);
	ck_assert_msg(publish_flush(&o, &sent, &left) == 0, "%s", vs_last_error());
	ck_assert_int_eq(sent, 2);
	ck_assert_int_eq(left, 0);
	ck_assert_int_eq(count_files(outbox, "2"), 0);
	req = request(&s, 1);
	ck_assert_msg(strstr(req, payload) || strstr(req, other), "%s", req);
	free(req);
	free(other);
	free(u);
	free(down);
	server_stop(&s);
}
END_TEST

START_TEST(stalling_server_times_out_and_the_payload_waits)
{
	struct server s;
	struct publish_options o;
	char *u;
	time_t t0 = time(NULL);

	server_start(&s, "stall");
	u = url(&s, "/r");
	o = opts(u);
	o.timeout_s = 1;
	o.retries = 1;
	ck_assert_int_eq(publish_send(&o, payload), 1);
	ck_assert_msg(time(NULL) - t0 < 10, "two 1 s attempts took %ld s", (long)(time(NULL) - t0));
	ck_assert_msg(strstr(vs_last_error(), "") != NULL, "no message");
	ck_assert_int_eq(count_files(outbox, "2"), 1);
	ck_assert_int_eq(count_files(s.dir, "req-"), 2);
	free(u);
	server_stop(&s);
}
END_TEST

struct url_case {
	const char *url;
	const char *message;
};

static const struct url_case bad_urls[] = {
	{"http://example.invalid/r", "over plain http"},
	{"http://user:pw@127.0.0.1:1/r", "carries credentials"},
	{"ftp://127.0.0.1/r", "only http and https"},
	{"not a url", "is not a URL"},
};

START_TEST(token_goes_only_over_https_or_to_loopback)
{
	struct publish_options o = opts(bad_urls[_i].url);

	ck_assert_int_eq(publish_send(&o, payload), VS_EUSAGE);
	ck_assert_msg(strstr(vs_last_error(), bad_urls[_i].message), "%s: %s", bad_urls[_i].url, vs_last_error());
	ck_assert_msg(!strstr(vs_last_error(), TOKEN), "the token leaked: %s", vs_last_error());
	ck_assert_int_eq(count_files(outbox, "2"), 0); /* nothing was attempted */
}
END_TEST

/* ---- fetching ------------------------------------------------------------------------------------ */

static char *card_variant(const char *name, const char *from, const char *to)
{
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *text = tu_read(src, NULL), *path, *at;

	if (from && (at = strstr(text, from))) {
		char *n = fs_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));

		free(text);
		text = n;
	}
	path = fs_join(tmp, name);
	tu_write(path, text, strlen(text));
	free(src);
	free(text);
	return path;
}

START_TEST(fetch_lints_limits_and_never_overwrites_without_force)
{
	char *good = card_variant("good.md", NULL, NULL);
	char *changed = card_variant("changed.md", "isolated_speedup_min: 1.3", "isolated_speedup_min: 1.5");
	char *broken = card_variant("broken.md", "## Mechanism", "## Mechanics");
	char *skills = fs_join(tmp, "skills"), *dst = fs_join(skills, "mla_decode_cpu_splitkv.md");
	char *m_good = fs_printf("file:%s", good), *m_changed = fs_printf("file:%s", changed);
	char *m_broken = fs_printf("file:%s", broken);
	char *modes = fs_printf("%s,%s,%s,%s,%s,big", m_good, m_good, m_changed, m_changed, m_broken), *u, *text;
	struct server s;
	struct publish_options o;

	server_start(&s, modes);
	u = url(&s, "/cards/mla_decode_cpu_splitkv.md");
	o = opts(u);
	ck_assert_msg(publish_fetch(NULL, u, skills, 0, &o) == 0, "%s", vs_last_error());
	ck_assert(fs_exists(dst));
	ck_assert_msg(publish_fetch(NULL, u, skills, 0, &o) == 0, "same bytes again: %s", vs_last_error());
	ck_assert_int_eq(publish_fetch(NULL, u, skills, 0, &o), VS_EUSAGE);
	ck_assert_msg(strstr(vs_last_error(), "--force"), "%s", vs_last_error());
	text = tu_read(dst, NULL);
	ck_assert_ptr_nonnull(strstr(text, "isolated_speedup_min: 1.3"));
	free(text);
	ck_assert_msg(publish_fetch(NULL, u, skills, 1, &o) == 0, "--force: %s", vs_last_error());
	text = tu_read(dst, NULL);
	ck_assert_ptr_nonnull(strstr(text, "isolated_speedup_min: 1.5"));
	free(text);
	/* A card that does not lint is refused, the one on disk stays. */
	ck_assert_int_eq(publish_fetch(NULL, u, skills, 1, &o), VS_ESCHEMA);
	text = tu_read(dst, NULL);
	ck_assert_ptr_nonnull(strstr(text, "isolated_speedup_min: 1.5"));
	free(text);
	/* Over the size limit. */
	ck_assert_int_eq(publish_fetch(NULL, u, skills, 1, &o), VS_EFAIL);
	ck_assert_msg(strstr(vs_last_error(), "larger than"), "%s", vs_last_error());
	ck_assert_int_eq(count_files(skills, "m"), 1);
	server_stop(&s);
	free(u);
	free(modes);
	free(m_good);
	free(m_changed);
	free(m_broken);
	free(good);
	free(changed);
	free(broken);
	free(skills);
	free(dst);
}
END_TEST

/* ---- the CLI, end to end ------------------------------------------------------------------------ */

START_TEST(record_publish_survives_an_outage_and_flush_sends_it)
{
	char *plan = tu_small_plan(tmp, "", 1, 1), *args, *out = NULL, *err = NULL, *eval, *down, *u, *req;
	char *res, hex[65];
	struct server s;
	int status;

	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0, "run: %s", err);
	eval = tu_eval_dir_of(out);
	free(args);
	free(out);
	free(err);
	down = fs_printf("http://127.0.0.1:%d/results", dead_port());
	args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s --publish %s --timeout 2", eval, down);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(!strstr(out, TOKEN) && !strstr(err, TOKEN), "the token leaked:\n%s\n%s", out, err);
	if (VS_KERNELS_DIRTY) {
		ck_assert_msg(status == 1 && strstr(err, "uncommitted kernels/"), "exit %d: %s", status, err);
		goto done;
	}
	ck_assert_msg(status == 0, "record + publish to a dead server: exit %d: %s", status, err);
	ck_assert_msg(strstr(err, "waits in") && strstr(err, "--flush"), "no warning: %s", err);
	{
		char *ob = fs_join(tmp, "results/.outbox");

		ck_assert_int_eq(count_files(ob, "2"), 1);
		free(ob);
	}
	free(out);
	free(err);
	server_start(&s, "200");
	u = url(&s, "/results");
	free(args);
	args = fs_printf("--flush --publish %s", u);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0 && strstr(out, "1 payload sent, 0 waiting"), "flush: %d %s %s", status, out, err);
	req = request(&s, 1);
	res = fs_printf("%s/%s/result.json", tmp, eval);
	ck_assert_int_eq(fs_sha256_file(hex, res), 0);
	ck_assert_msg(strstr(req, "Authorization: Bearer " TOKEN), "%s", req);
	ck_assert_msg(strstr(req, "\"record\":{\"status\":") && strstr(req, "\"result\":{") && strstr(req, hex),
		      "payload lacks the record or the result: %s", req);
	free(req);
	free(res);
	free(u);
	server_stop(&s);
done:
	free(args);
	free(out);
	free(err);
	free(down);
	free(eval);
	free(plan);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("publish");
	TCase *tc = tcase_create("publish");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, delivered_with_bearer_token_json_and_idempotency_key);
	tcase_add_loop_test(tc, failures_retry_on_5xx_and_keep_the_payload, 0, (int)(sizeof(failing) / sizeof(failing[0])));
	tcase_add_test(tc, unreachable_server_then_flush_delivers_the_outbox);
	tcase_add_test(tc, stalling_server_times_out_and_the_payload_waits);
	tcase_add_loop_test(tc, token_goes_only_over_https_or_to_loopback, 0, (int)(sizeof(bad_urls) / sizeof(bad_urls[0])));
	tcase_add_test(tc, fetch_lints_limits_and_never_overwrites_without_force);
	tcase_add_test(tc, record_publish_survives_an_outage_and_flush_sends_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
