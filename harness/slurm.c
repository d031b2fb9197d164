#include "slurm.h"
#include "evaldir.h"
#include "fsutil.h"
#include "layout.h"
#include "vs_error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Single-quote s for bash. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

int slurm_write_script(const struct plan *p, const char *path, const struct slurm_options *o)
{
	char cwd[PATH_MAX], exe[PATH_MAX], *buf = NULL, *logdir = NULL;
	const char *results = o->results_root ? o->results_root : vs_layout_default.results;
	const char *tasks = o->tasks_root ? o->tasks_root : vs_layout_default.tasks;
	const char *root = o->root, *tool = o->tool;
	size_t len = 0;
	ssize_t n;
	FILE *f;
	int err, gpu = strcmp(p->candidate.backend, "cpu") != 0;

	if (!root) {
		if (!getcwd(cwd, sizeof(cwd)))
			return vs_error(VS_EIO, "cannot get the current directory");
		root = cwd;
	}
	if (!tool) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return vs_error(VS_EIO, "cannot find this program's path for the script");
		exe[n] = '\0';
		tool = exe;
	}
	logdir = evaldir_parts_root(results, p->card_id);
	VS_CHECK_ALLOC(logdir);
	if ((err = fs_mkdir_p(logdir)))
		goto done;
	f = open_memstream(&buf, &len);
	if (!f) {
		err = vs_oom();
		goto done;
	}
	fprintf(f, "#!/bin/bash\n");
	fprintf(f, "# validate_skill: Slurm array for %s (card %s, %s vs %s on %s, %d tasks).\n", o->plan_path,
		p->card_id, p->baseline.name, p->candidate.name, p->gen, p->ntasks);
	fprintf(f, "# Submit: sbatch %s   (run id slurm-<array job id>; VS_RUN_ID=NAME sbatch ... names it)\n", path);
	fprintf(f, "# Array task I runs plan task I and writes the part %s/%s/.parts/<run id>/I/.\n", results,
		p->card_id);
	fprintf(f, "# When every array task is done, join the parts and record:\n");
	fprintf(f, "#   validate_skill --merge %s/%s/.parts/<run id>\n", results, p->card_id);
	fprintf(f, "#   validate_skill --record %s\n", p->card_path);
	fprintf(f, "#SBATCH --job-name=vs-%s\n", p->card_id);
	fprintf(f, "#SBATCH --array=0-%d\n", p->ntasks - 1);
	fprintf(f, "#SBATCH --ntasks=1\n");
	if (gpu)
		fprintf(f, "#SBATCH --gres=gpu:1\n");
	else
		fprintf(f, "#SBATCH --exclusive\n");
	fprintf(f, "#SBATCH --chdir=%s\n", root);
	fprintf(f, "#SBATCH --output=%s%s%s/slurm-%%A_%%a.out\n", logdir[0] == '/' ? "" : root,
		logdir[0] == '/' ? "" : "/", logdir);
	fprintf(f, "set -euo pipefail\n");
	fprintf(f, "# plan tasks (index: name hash)\n");
	for (int i = 0; i < p->ntasks; i++)
		fprintf(f, "#   %d: %s %s\n", i, p->tasks[i].name, p->task_hash[i]);
	fprintf(f, "VS_TOOL=\"${VS_TOOL:-");
	fputs(tool, f);
	fprintf(f, "}\"\nRUN_ID=\"${VS_RUN_ID:-slurm-${SLURM_ARRAY_JOB_ID}}\"\n");
	fprintf(f, "exec \"$VS_TOOL\" --run ");
	put_quoted(f, o->plan_path);
	fprintf(f, " --part \"$SLURM_ARRAY_TASK_ID\" --run-id \"$RUN_ID\" --results-dir ");
	put_quoted(f, results);
	fprintf(f, " --tasks-dir ");
	put_quoted(f, tasks);
	fprintf(f, "\n");
	fclose(f);
	err = fs_write_atomic(path, buf, len, 0755);
done:
	free(buf);
	free(logdir);
	return err;
}
