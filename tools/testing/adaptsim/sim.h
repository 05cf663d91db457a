/* SPDX-License-Identifier: GPL-2.0 */
/*
 * adaptsim: the adaptive caps' control law against the device models, in
 * simulated time. sim.c is the block layer as the law sees it and the
 * workloads; main.c the runs, sweeps, tables and checks.
 */
#ifndef ADAPTSIM_SIM_H
#define ADAPTSIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define MSEC 1000000ULL
#define SEC 1000000000ULL

/* A device as the block layer sees it: the model behind a host interface. */
struct sim_dev {
	char name[48];
	struct dm_params dm;
	unsigned int qd;		/* the queue depth the driver gives (NCQ 32) */
	unsigned int backend;		/* requests the backend serves at once (QEMU's NBD: 16), 0: qd */
	uint64_t max_bytes;		/* max_sectors_kb */
	uint64_t piece_bytes;		/* W1p: where ordinary buffers end a request */
	uint64_t disk_bytes;
	/*
	 * The QEMU guest's own path (the five profiles only; 0 on the grid):
	 * a request reaches the device hop_us after the driver issued it, and
	 * its completion is seen hop_us after the device completed it and its
	 * data crossed a link of hop_mbs one request at a time (TCG's cost per
	 * request each way; the NBD socket between nbdkit and QEMU; 0: none).
	 */
	double hop_us, hop_mbs;
	unsigned int targets_us[3];	/* the targets judged on it */
};

enum sim_wl {
	WL_W1,		/* stream bs x qd (hugepage buffers) next to the 4 KiB prober at 20 IOPS */
	WL_W1P,		/* W1 with ordinary buffers: requests end at piece_bytes */
	WL_W1S,		/* W1 from a fresh start with the prober there, no ramp (episodes) */
	WL_W1PS,	/* W1s with ordinary buffers */
	WL_W2D,		/* a direct write stream next to the prober */
	WL_W2,		/* buffered writeback: 1 MiB writes kept queued, next to the prober */
	WL_W3,		/* the stream alone */
	WL_W7,		/* the prober in bursts: 5 s on, 5 s idle */
	WL_W8,		/* two streams next to the prober */
	WL_W9,		/* the stream stops for 5 s every 20 s, next to the prober */
	WL_NR,
};

extern const char *const sim_wl_name[WL_NR];

struct sim_cfg {
	enum sim_wl wl;
	unsigned int target_us;		/* the controller's target, 0: off */
	uint64_t bs;			/* the stream's block size */
	unsigned int sqd;		/* the stream's iodepth */
	uint64_t seconds;		/* simulated run time, ramp included */
	uint64_t seed;
	FILE *trace;			/* block_adapt_step lines, or NULL */
};

/* Prober latencies in ms, pooled over runs. */
struct sim_lat {
	double *v;
	size_t n;
};

/* What one run gave. */
struct sim_res {
	uint64_t reads;			/* prober reads measured */
	double p50_ms, p99_ms, p999_ms, max_ms;
	double stream_mbs;		/* all streams, over the measured time */
	uint64_t steps;			/* law steps */
	/* the law's path, for the checks */
	unsigned int converge_windows;	/* the first of 3 windows in a row with p99 <= 5/4 T, 0: never */
	uint64_t budget_min, budget_max;	/* over all steps */
	uint64_t floor_bytes, ceil_bytes;	/* the law's limits */
	double osc_ratio;		/* usable budget p90 / p10 over the second half of the steps */
	unsigned int bound_faults;	/* steps with a cap outside the limits */
};

int sim_run(const struct sim_dev *dev, const struct sim_cfg *cfg, struct sim_res *res);

#endif /* ADAPTSIM_SIM_H */
