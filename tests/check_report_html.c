/*
 * check_report_html.c - `--report --format html`: one self-contained page (no external resources)
 * with the status table and an inline SVG chart of measured against expected speedup per card and
 * per task shape. The page is opened in headless Chromium (Debian's chromium), which runs a probe
 * appended to a copy of it: the table and the chart must be laid out with a real size, one table row
 * per card, one bar per measured number and one expected-speedup line per card.
 * Skipped (77) when chromium is not installed (tools/install-deps installs it).
 */
#include "testutil.h"

#include "fsutil.h"
#include "vs_build_info.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *browser;
static char *tmp;

static void setup(void)
{
	tmp = tu_tmpdir();
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

static const char probe[] =
	"<script>\n"
	"window.addEventListener('load', function () {\n"
	"  var t = document.querySelector('table#status'), s = document.querySelector('svg#speedup-chart');\n"
	"  var bars = 0, lines = 0;\n"
	"  document.querySelectorAll('svg#speedup-chart g.bar rect').forEach(function (r) {\n"
	"    var b = r.getBoundingClientRect(); if (b.width > 0 && b.height > 0) bars++; });\n"
	"  document.querySelectorAll('svg#speedup-chart g.expected line').forEach(function (l) {\n"
	"    if (l.getBoundingClientRect().height > 0) lines++; });\n"
	"  var tb = t ? t.getBoundingClientRect() : {width: 0, height: 0};\n"
	"  var sb = s ? s.getBoundingClientRect() : {width: 0, height: 0};\n"
	"  var p = document.createElement('pre'); p.id = 'probe';\n"
	"  p.textContent = JSON.stringify({rows: t ? t.tBodies[0].rows.length : -1, table_w: tb.width,\n"
	"    table_h: tb.height, svg_w: sb.width, svg_h: sb.height, bars: bars, expected: lines,\n"
	"    first: t ? t.tBodies[0].rows[0].cells[0].textContent : ''});\n"
	"  document.body.appendChild(p);\n"
	"});\n"
	"</script>\n";

START_TEST(html_report_renders_the_table_and_the_chart_in_chromium)
{
	char *plan = tu_small_plan(tmp, "", 2, 1), *out = NULL, *err = NULL, *args, *eval, *html, *page;
	char *probe_path, *cmd, *dom = NULL, *at, *end;
	int status, recorded = !VS_KERNELS_DIRTY;
	cJSON *j;
	size_t len;
	FILE *p;

	/* A second card, never measured: a row with no bar. */
	{
		char *src = tu_resource("skills/mla_decode_hip_port.md"), *text = tu_read(src, &len);
		char *dst = fs_join(tmp, "skills/mla_decode_hip_port.md");

		tu_write(dst, text, len);
		free(src);
		free(text);
		free(dst);
	}
	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0 || status == 1, "run: %s", err);
	eval = tu_eval_dir_of(out);
	free(args);
	free(out);
	free(err);
	args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval);
	status = tu_run_tool(tmp, args, NULL, NULL);
	ck_assert_int_eq(status, recorded ? 0 : 3);
	free(args);
	status = tu_run_tool(tmp, "--report --format html --out report.html", &out, &err);
	ck_assert_msg(status == 0, "report: exit %d: %s", status, err);
	free(out);
	free(err);
	html = fs_join(tmp, "report.html");
	page = tu_read(html, &len);
	ck_assert_ptr_nonnull(strstr(page, "<table id=\"status\">"));
	ck_assert_ptr_nonnull(strstr(page, "<svg id=\"speedup-chart\""));
	/* Self-contained: nothing is loaded from elsewhere. */
	ck_assert_msg(!strstr(page, "<script") && !strstr(page, "<link") && !strstr(page, "<img") &&
		      !strstr(page, "src=") && !strstr(page, "url("), "the page loads external resources");
	/* The page as Chromium lays it out, measured by a probe appended to a copy. */
	at = strstr(page, "</body>");
	ck_assert_ptr_nonnull(at);
	probe_path = fs_join(tmp, "probe.html");
	{
		char *copy = fs_printf("%.*s%s%s", (int)(at - page), page, probe, at);

		tu_write(probe_path, copy, strlen(copy));
		free(copy);
	}
	cmd = fs_printf("cd '%s' && HOME='%s' timeout 120 %s --headless --no-sandbox --disable-gpu "
			"--disable-dev-shm-usage --user-data-dir='%s/chromium' --window-size=1200,1000 "
			"--virtual-time-budget=2000 --dump-dom 'file://%s' 2>/dev/null", tmp, tmp, browser, tmp, probe_path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	{
		size_t n = 0, got;
		FILE *m = open_memstream(&dom, &n);
		char buf[4096];

		while ((got = fread(buf, 1, sizeof(buf), p)) > 0)
			fwrite(buf, 1, got, m);
		fclose(m);
	}
	status = pclose(p);
	ck_assert_msg(status == 0, "chromium failed (status %d): %s", status, cmd);
	at = strstr(dom, "<pre id=\"probe\">");
	ck_assert_msg(at != NULL, "chromium ran no probe; DOM:\n%.2000s", dom);
	at += 16;
	end = strstr(at, "</pre>");
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	j = cJSON_Parse(at);
	ck_assert_msg(j != NULL, "probe output: %s", at);
#define NUM(k) cJSON_GetNumberValue(cJSON_GetObjectItem(j, k))
	ck_assert_msg(NUM("rows") == 2, "table rows %g: %s", NUM("rows"), at);
	ck_assert_msg(NUM("table_w") > 300 && NUM("table_h") > 40, "table not laid out: %s", at);
	ck_assert_msg(NUM("svg_w") > 500 && NUM("svg_h") > 100, "chart not laid out: %s", at);
	ck_assert_msg(NUM("expected") == 2, "one expected-speedup line per card: %s", at);
	/* Recorded: the overall bar and one per task shape; else no bar at all. */
	ck_assert_msg(NUM("bars") == (recorded ? 3 : 0), "bars: %s", at);
#undef NUM
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "first")), "mla_decode_cpu_splitkv");
	cJSON_Delete(j);
	free(dom);
	free(cmd);
	free(probe_path);
	free(page);
	free(html);
	free(eval);
	free(plan);
}
END_TEST

/*
 * Issue 12, case 8: a forged card (a copy claiming the CPU card's eval dir) is drawn red
 * "unverified", with no bar; the CPU card's own claim is drawn.
 */
START_TEST(forged_card_is_shown_unverified_without_a_bar)
{
	char *plan = tu_small_plan(tmp, "", 1, 1), *out = NULL, *err = NULL, *args, *eval, *page, *card, *forged, *at;
	char *path = fs_join(tmp, "skills/mla_decode_cpu_splitkv.md"), *fpath = fs_join(tmp, "skills/forged.md");
	int status;
	size_t len;

	if (VS_KERNELS_DIRTY)
		return; /* a dirty build's run cannot be recorded */
	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0 || status == 1, "run: %s", err);
	eval = tu_eval_dir_of(out);
	free(args);
	free(out);
	free(err);
	args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval);
	ck_assert_int_eq(tu_run_tool(tmp, args, NULL, NULL), 0);
	free(args);
	card = tu_read(path, &len);
	at = strstr(card, "id: mla_decode_cpu_splitkv");
	ck_assert_ptr_nonnull(at);
	forged = fs_printf("%.*sid: forged%s", (int)(at - card), card, at + strlen("id: mla_decode_cpu_splitkv"));
	tu_write(fpath, forged, strlen(forged));
	status = tu_run_tool(tmp, "--report --format html --out report.html", &out, &err);
	ck_assert_int_ne(status, 0); /* a claim the evidence does not prove fails the report */
	free(out);
	free(err);
	{
		char *html = fs_join(tmp, "report.html");

		page = tu_read(html, &len);
		free(html);
	}
	ck_assert_msg(strstr(page, "<tr><td>forged</td><td class=\"status-unverified\">unverified</td>"), "%s", page);
	at = strstr(page, "data-card=\"forged\"");
	ck_assert_ptr_nonnull(at);
	ck_assert_msg(!strncmp(strstr(at, "overall (geomean)</text>\n") + 25, "<text class=\"none\"", strlen("<text class=\"none\"")),
		      "the forged card has a bar: %.400s", at);
	at = strstr(page, "data-card=\"mla_decode_cpu_splitkv\"");
	ck_assert_ptr_nonnull(at);
	ck_assert_msg(!strncmp(strstr(at, "overall (geomean)</text>\n") + 25, "<g class=\"bar overall\"", strlen("<g class=\"bar overall\"")),
		      "the verified card has no bar: %.400s", at);
	ck_assert_ptr_nonnull(strstr(page, "mla_decode_cpu_splitkv</td><td class=\"status-"));
	ck_assert_ptr_nonnull(strstr(page, "<td>cpu.naive -&gt; cpu.splitkv</td>"));
	free(page);
	free(card);
	free(forged);
	free(path);
	free(fpath);
	free(eval);
	free(plan);
}
END_TEST

START_TEST(html_escapes_what_cards_contain)
{
	char *dir = fs_join(tmp, "skills"), *path = fs_join(dir, "evil.md"), *out = NULL, *err = NULL;
	int status;

	fs_mkdir_p(dir);
	/* An invalid card named like markup: the page must show it as text. */
	tu_write(path, "---\nid: <script>x</script>\n---\n", 31);
	status = tu_run_tool(tmp, "--report --format html", &out, &err);
	ck_assert_msg(status == 3, "an invalid card makes the report fail: %d", status);
	ck_assert_msg(!strstr(out, "<script>x"), "unescaped markup in the page");
	ck_assert_msg(strstr(out, "&lt;") || strstr(out, "evil"), "%s", out);
	free(out);
	free(err);
	free(dir);
	free(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report_html");
	TCase *tc = tcase_create("html");

	if (system("command -v chromium >/dev/null 2>&1") == 0)
		browser = "chromium";
	else if (system("command -v chromium-browser >/dev/null 2>&1") == 0)
		browser = "chromium-browser";
	else {
		printf("SKIP: headless Chromium is not installed (Debian's chromium: tools/install-deps installs it)\n");
		return 77;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, html_report_renders_the_table_and_the_chart_in_chromium);
	tcase_add_test(tc, html_escapes_what_cards_contain);
	tcase_add_test(tc, forged_card_is_shown_unverified_without_a_bar);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
