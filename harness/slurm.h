/*
 * slurm.h - `--emit-plan CARD --slurm`: an sbatch array script that runs a plan on a cluster.
 *
 * One array task per plan task: array task I runs `validate_skill --run PLAN --part I --run-id RUN`
 * and writes the part results/<card>/.parts/RUN/I/ (RUN is $VS_RUN_ID, default
 * slurm-<array job id>). When the array is done, `validate_skill --merge results/<card>/.parts/RUN`
 * joins the parts into results/<card>/RUN/, which --record accepts. GPU plans ask for one GPU per
 * array task (--gres=gpu:1); CPU plans ask for a whole node (--exclusive: timings need quiet cores).
 */
#ifndef VS_SLURM_H
#define VS_SLURM_H

#include "plan.h"

struct slurm_options {
	const char *plan_path;    /* as the script should name it (relative to root) */
	const char *root;         /* directory the array tasks run in (default: the current directory) */
	const char *tool;         /* validate_skill binary (default: this process's executable) */
	const char *results_root; /* default "results" */
	const char *tasks_root;   /* default "tasks" */
};

/**
 * Write the script for plan p to path (atomically, mode 0755) and create the directory its
 * Slurm output files go to. Errors: VS_EIO, VS_ENOMEM.
 */
int slurm_write_script(const struct plan *p, const char *path, const struct slurm_options *o);

#endif /* VS_SLURM_H */
