/*
 * check_slurm.c - the Slurm path end to end against a real single-node Slurm that this test starts:
 * Debian's slurm-wlm, slurmctld and slurmd in the foreground on loopback ports, with a generated
 * slurm.conf (auth/none and cred/none, so no munge key; proctrack/linuxproc and task/none, so no
 * cgroups). `--emit-plan --slurm` writes the sbatch array script, `sbatch --wait` runs one array task
 * per plan task, `--merge` joins the parts, and the merged eval dir has the verdict of a direct run of
 * the same plan and is accepted by --record.
 *
 * Skipped (exit 77) with the exact reason when Slurm is not installed, when not running as root
 * (slurmd launches jobs as their user), or when the daemons do not come up (the reason is taken
 * from their logs).
 */
#include "testutil.h"

#include "fsutil.h"
#include "vs_build_info.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *tmp, *conf, *skip_reason;
static pid_t ctld, slurmd;

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &len))
		return 0;
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int on_path(const char *prog)
{
	char *cmd = fs_printf("command -v %s >/dev/null 2>&1", prog);
	int ok = system(cmd) == 0;

	free(cmd);
	return ok;
}

/* Run a shell command with SLURM_CONF set; output into *out. Returns the exit status. */
static int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(char **out, const char *fmt, ...)
{
	va_list ap;
	char *cmd = NULL, *full, buf[4096];
	size_t n = 0, len = 0;
	FILE *p, *m;
	char *text = NULL;
	int status;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	full = fs_printf("export SLURM_CONF='%s'; { %s ; } 2>&1", conf, cmd);
	p = popen(full, "r");
	m = open_memstream(&text, &len);
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		fwrite(buf, 1, n, m);
	status = p ? pclose(p) : -1;
	fclose(m);
	if (out)
		*out = text;
	else
		free(text);
	free(cmd);
	free(full);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static pid_t daemon_start(const char *prog, const char *log, const char *const *args)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *argv[16];
		int n = 0, fd;

		argv[n++] = (char *)prog;
		for (; *args && n < 15; args++)
			argv[n++] = (char *)*args;
		argv[n] = NULL;
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		setsid();
		execvp(prog, argv);
		_exit(127);
	}
	return pid;
}

static void daemon_stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	for (int i = 0; i < 50; i++) {
		if (waitpid(*pid, NULL, WNOHANG) == *pid) {
			*pid = 0;
			return;
		}
		usleep(100000);
	}
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
}

/* The last lines of a log that say error/fatal, for the skip reason. */
static char *log_errors(const char *path)
{
	char *cmd = fs_printf("grep -hiE 'fatal|error' '%s' 2>/dev/null | grep -v 'pmix\\|MPI' | tail -3 | tr '\\n' ' '",
			      path), *out = NULL, buf[2048];
	FILE *p = popen(cmd, "r");
	size_t n = p ? fread(buf, 1, sizeof(buf) - 1, p) : 0;

	buf[n] = '\0';
	if (p)
		pclose(p);
	out = strdup(n ? buf : "(no error in the log)");
	free(cmd);
	return out;
}

/* Start slurmctld + slurmd; NULL when the node is idle, else why not (malloc'd). */
static char *cluster_start(void)
{
	char host[256], *dot, *text, *spool = fs_join(tmp, "spool"), *state = fs_join(tmp, "state");
	char *clog = fs_join(tmp, "slurmctld.log"), *dlog = fs_join(tmp, "slurmd.log"), *out = NULL;
	int cport = free_port(), dport = free_port();
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (gethostname(host, sizeof(host)) != 0)
		return strdup("gethostname failed");
	host[sizeof(host) - 1] = '\0';
	if ((dot = strchr(host, '.')))
		*dot = '\0';
	fs_mkdir_p(spool);
	fs_mkdir_p(state);
	text = fs_printf("ClusterName=vstest\nSlurmctldHost=%s(127.0.0.1)\nSlurmctldPort=%d\nSlurmdPort=%d\n"
			 "AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\n"
			 "StateSaveLocation=%s\nSlurmdSpoolDir=%s/%%n\nSlurmctldPidFile=%s/ctld.pid\n"
			 "SlurmdPidFile=%s/slurmd.pid\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
			 "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
			 "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/builtin\n"
			 "MpiDefault=none\nMailProg=/bin/true\nReturnToService=2\nSlurmctldTimeout=30\n"
			 "SlurmctldLogFile=%s\nSlurmdLogFile=%s\n"
			 "NodeName=vsnode NodeHostname=%s NodeAddr=127.0.0.1 CPUs=%ld RealMemory=100 State=UNKNOWN\n"
			 "PartitionName=vs Nodes=vsnode Default=YES MaxTime=INFINITE State=UP\n",
			 host, cport, dport, state, spool, tmp, tmp, clog, dlog, host, cpus);
	{
		FILE *f = fopen(conf, "w"); /* outside a test: no ck_assert here */

		if (!f || fputs(text, f) < 0 || fclose(f) != 0)
			return fs_printf("cannot write %s", conf);
	}
	free(text);
	{
		const char *cargs[] = {"-D", "-c", "-f", conf, NULL};
		const char *dargs[] = {"-D", "-f", conf, "-N", "vsnode", NULL};

		ctld = daemon_start("slurmctld", clog, cargs);
		usleep(500000);
		slurmd = daemon_start("slurmd", dlog, dargs);
	}
	for (int i = 0; i < 60; i++) {
		free(out);
		out = NULL;
		if (waitpid(ctld, NULL, WNOHANG) == ctld) {
			char *e = log_errors(clog);

			ctld = 0;
			out = fs_printf("slurmctld exited: %s", e);
			free(e);
			goto done;
		}
		if (waitpid(slurmd, NULL, WNOHANG) == slurmd) {
			char *e = log_errors(dlog);

			slurmd = 0;
			out = fs_printf("slurmd exited: %s", e);
			free(e);
			goto done;
		}
		if (sh(&out, "sinfo -h -n vsnode -o %%T") == 0 && out && !strncmp(out, "idle", 4)) {
			free(out);
			out = NULL;
			goto done;
		}
		usleep(500000);
	}
	{
		char *e = log_errors(clog), *f = log_errors(dlog);

		out = fs_printf("node vsnode not idle after 30 s (sinfo: %s); slurmctld: %s; slurmd: %s",
				out ? out : "", e, f);
		free(e);
		free(f);
	}
done:
	free(spool);
	free(state);
	free(clog);
	free(dlog);
	return out;
}

static char *tool_out(int want, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *tool_out(int want, const char *fmt, ...)
{
	va_list ap;
	char *args = NULL, *out = NULL, *err = NULL;
	int status;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == want, "'%s': exit %d\n%s\n%s", args, status, err, out);
	free(err);
	free(args);
	return out;
}

START_TEST(plan_runs_through_slurm_and_merges_to_the_verdict_of_a_direct_run)
{
	char *plan = tu_small_plan(tmp, "--slurm", 3, 1), *out = NULL, *script, *merged, *direct, *rm, *rd;
	char *vm, *vd, *text;
	int status;

	script = fs_printf("%s/plans/mla_decode_cpu_splitkv.sbatch", tmp);
	text = tu_read(script, NULL);
	ck_assert_msg(strstr(text, "#SBATCH --array=0-") && strstr(text, "--part \"$SLURM_ARRAY_TASK_ID\""), "%s",
		      text);
	free(text);
	/* The small plan has 3 tasks: the array is cut to them on the command line. */
	status = sh(&out, "cd '%s' && timeout 600 sbatch --wait --array=0-2 --export=ALL,VS_RUN_ID=S '%s'", tmp, script);
	if (status != 0) {
		char *logs = NULL;

		sh(&logs, "cat '%s'/results/mla_decode_cpu_splitkv/.parts/slurm-*.out; squeue; tail -20 '%s/slurmctld.log'",
		   tmp, tmp);
		ck_abort_msg("sbatch --wait: exit %d: %s\n%s", status, out, logs);
	}
	free(out);
	out = tool_out(0, "--merge results/mla_decode_cpu_splitkv/.parts/S");
	merged = tu_eval_dir_of(out);
	free(out);
	out = tool_out(0, "--run %s --threads 2 --run-id direct", plan);
	direct = tu_eval_dir_of(out);
	free(out);
	rm = fs_printf("%s/%s/result.json", tmp, merged);
	rd = fs_printf("%s/%s/result.json", tmp, direct);
	vm = tu_json_str(rm, "verdict");
	vd = tu_json_str(rd, "verdict");
	ck_assert_msg(vm && vd && !strcmp(vm, vd), "verdict through Slurm '%s', direct '%s'", vm, vd);
	ck_assert_str_eq(vm, "validated");
	if (!VS_KERNELS_DIRTY) {
		/* a direct run of the same plan came after the merge: --older records the merged one */
		free(tool_out(0, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s --older", merged));
		free(tool_out(0, "--verify skills/mla_decode_cpu_splitkv.md"));
	}
	free(vm);
	free(vd);
	free(rm);
	free(rd);
	free(merged);
	free(direct);
	free(script);
	free(plan);
}
END_TEST

int main(void)
{
	SRunner *sr;
	Suite *s;
	TCase *tc;
	int failed;

	if (getuid() != 0) {
		printf("SKIP: slurmd must run as root to launch jobs (this test runs as uid %d)\n", (int)getuid());
		return 77;
	}
	if (!on_path("slurmctld") || !on_path("slurmd") || !on_path("sbatch") || !on_path("sinfo")) {
		printf("SKIP: Slurm is not installed (slurmctld, slurmd, sbatch, sinfo: Debian's slurm-wlm, which "
		       "tools/install-deps installs)\n");
		return 77;
	}
	tmp = tu_tmpdir();
	conf = fs_join(tmp, "slurm.conf");
	skip_reason = cluster_start();
	if (skip_reason) {
		printf("SKIP: the single-node Slurm cluster did not start: %s\n", skip_reason);
		daemon_stop(&slurmd);
		daemon_stop(&ctld);
		return 77;
	}
	s = suite_create("slurm");
	tc = tcase_create("slurm");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, plan_runs_through_slurm_and_merges_to_the_verdict_of_a_direct_run);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	daemon_stop(&slurmd);
	daemon_stop(&ctld);
	fs_remove_tree(tmp);
	return failed ? 1 : 0;
}
