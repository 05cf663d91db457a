// SPDX-License-Identifier: GPL-2.0
/*
 * adaptsim: run the adaptive caps' law (block/blk-adapt-law.c) against the
 * device models, for the benchmark's profiles and a grid of devices nobody
 * tuned for. See Documentation/simulator.md and --help.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blk-adapt-law.h"
#include "sim.h"

#define NR_BS 6
#define NR_QD 3
#define NR_ORACLE (NR_BS * NR_QD)
static const uint64_t oracle_bs[NR_BS] = {
	256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB, 4 * MIB, 8 * MIB,
};
static const unsigned int oracle_qd[NR_QD] = { 1, 2, 4 };

#define CTL_BS (8 * MIB)		/* the controller's runs: W1's 8 MiB x 4 */
#define CTL_QD 4
#define GOAL_P99 1.1			/* goal: p99 <= 1.1 T ... */
#define GOAL_MBS 0.9			/* ... and MB/s >= 0.9 x the best oracle point meeting T */

static unsigned int jobs = 2;
static uint64_t seed = 1;
static uint64_t seconds = 520;		/* 10,000 prober reads after the ramp */
static unsigned int grid_n = 120;

/* ---- devices --------------------------------------------------------- */

static void dev_init(struct sim_dev *d, const char *name, const char *model,
		     unsigned int qd, unsigned int backend, uint64_t max_kb,
		     unsigned int t0, unsigned int t1, unsigned int t2)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->dm = *dm_profile(model);
	d->qd = qd;
	d->backend = backend;
	d->max_bytes = max_kb * KIB;
	d->piece_bytes = 512 * KIB;
	d->disk_bytes = 8 * GIB;
	d->targets_us[0] = t0;
	d->targets_us[1] = t1;
	d->targets_us[2] = t2;
}

/* The benchmark's five profiles, as run-vm.sh serves them. */
#define NR_PROFILES 5
static struct sim_dev profiles[NR_PROFILES];

/*
 * The QEMU guest's path in front of the models: TCG's cost per request (half
 * of it each way), and the NBD socket to nbdkit. Measured on the committed
 * sata-ssd results: a QD1 stream of bs bytes took 0.45 ms + bs / 1600 MB/s
 * per request longer under QEMU than the model gives (256 KiB: +0.65 ms,
 * 8 MiB: +5.4 ms).
 */
#define QEMU_HOP_US 225
#define NBD_HOP_MBS 1600

static void profiles_init(void)
{
	/* QEMU's throttle bucket behind AHCI: NCQ 32, no NBD hop */
	dev_init(&profiles[0], "hdd", "bucket-hdd", 32, 0, 32767, 20000, 50000, 100000);
	/* the nbdkit models: QEMU's NBD client keeps 16 requests in flight */
	dev_init(&profiles[1], "hdd7200", "hdd7200", 32, 16, 32767, 20000, 50000, 100000);
	dev_init(&profiles[2], "hdd5400", "hdd5400", 32, 16, 32767, 20000, 50000, 100000);
	dev_init(&profiles[3], "sata-ssd", "ssd", 32, 16, 32767, 1000, 2000, 5000);
	/* QEMU's NVMe: MDTS 512 KiB, 1023 tags */
	dev_init(&profiles[4], "nvme-ssd", "ssd", 1023, 16, 512, 1000, 2000, 5000);
	for (unsigned int i = 0; i < NR_PROFILES; i++) {
		profiles[i].hop_us = QEMU_HOP_US;
		/* the bucket's disk is a file QEMU reads itself: no socket */
		profiles[i].hop_mbs = i ? NBD_HOP_MBS : 0;
	}
}

static double urand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return (*x * 0x2545F4914F6CDD1DULL >> 11) / 9007199254740992.0;
}

static double uniform(uint64_t *x, double lo, double hi)
{
	return lo + (hi - lo) * urand(x);
}

/*
 * The grid: devices drawn with a fixed seed from datasheet ranges. Disks of
 * 5400-15000 rpm with their class's seek and media rates, a write cache of
 * 8-256 MiB or none and either destage policy; SSDs of 1-16 flash units,
 * 20-100 us reads, a SATA or NVMe link of 250-3500 MB/s, and garbage
 * collection now and then on some; FIFO devices with a per-command cost.
 */
static void grid_dev(struct sim_dev *d, unsigned int i, uint64_t gseed)
{
	static const struct { double rpm, seek_lo, seek_hi, mbs_lo, mbs_hi; } cls[] = {
		{ 5400, 10, 13, 60, 140 }, { 5900, 8.5, 12, 100, 180 },
		{ 7200, 7, 10, 120, 280 }, { 10000, 4, 5.5, 150, 230 },
		{ 15000, 3.5, 4, 180, 280 },
	};
	static const double wcache_mib[] = { 0, 8, 16, 32, 64, 128, 256 };
	uint64_t x = gseed * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL + 1;
	unsigned int kind = i % 5;	/* 2 disks, 2 SSDs, 1 FIFO in 5 */

	urand(&x);
	if (kind < 2) {
		unsigned int c = (unsigned int)(urand(&x) * 5);

		dev_init(d, "", "hdd7200", 32, (urand(&x) < 0.5) ? 16 : 0, 32767,
			 20000, 50000, 100000);
		d->dm.rpm = cls[c].rpm;
		d->dm.seek_avg_us = uniform(&x, cls[c].seek_lo, cls[c].seek_hi) * 1000;
		d->dm.seek_full_us = d->dm.seek_avg_us * uniform(&x, 1.8, 2.2);
		d->dm.seek_track_us = d->dm.seek_avg_us * uniform(&x, 0.06, 0.12);
		d->dm.outer_mbs = uniform(&x, cls[c].mbs_lo, cls[c].mbs_hi);
		d->dm.inner_mbs = d->dm.outer_mbs * uniform(&x, 0.45, 0.6);
		d->dm.heads = 2 + (unsigned int)(urand(&x) * 7);
		d->dm.wcache = wcache_mib[(unsigned int)(urand(&x) * 7)] * MIB;
		d->dm.wc_policy = urand(&x) < 0.5 ? DM_WC_FCFS : DM_WC_READS_FIRST;
		d->dm.rcache = uniform(&x, 8, 256) * MIB;
		d->dm.overhead_us = uniform(&x, 100, 300);
		snprintf(d->name, sizeof(d->name), "g%03u-hdd%.0f-s%.1f-%.0fM-wc%.0f%s", i,
			 d->dm.rpm, d->dm.seek_avg_us / 1000, d->dm.outer_mbs,
			 d->dm.wcache / MIB, d->dm.wc_policy ? "r" : "f");
	} else if (kind < 4) {
		double link = uniform(&x, 250, 3500);
		bool nvme = link > 600;

		dev_init(d, "", "ssd", nvme ? 1023 : 32, 16, nvme ? 512 : 32767, 1000, 2000, 5000);
		d->dm.units = 1 + (unsigned int)(urand(&x) * 16);
		d->dm.read_us = uniform(&x, 20, 100);
		d->dm.link_mbs = link;
		d->dm.cmd_us = uniform(&x, 2, 15);
		d->dm.drain_mbs = uniform(&x, 100, 2000);
		if (urand(&x) < 0.5) {
			d->dm.gc_every_ms = uniform(&x, 100, 1000);
			d->dm.gc_us = uniform(&x, 1000, 20000);
		}
		snprintf(d->name, sizeof(d->name), "g%03u-ssd-u%.0f-r%.0f-l%.0f%s", i,
			 d->dm.units, d->dm.read_us, d->dm.link_mbs, d->dm.gc_every_ms ? "-gc" : "");
	} else {
		double cmd = exp(uniform(&x, log(100), log(10000)));
		unsigned int t = (unsigned int)fmax(1000, 4 * cmd);

		dev_init(d, "", "fifo", 32, 0, 32767, t, 2 * t, 5 * t);
		d->dm.cmd_us = cmd;
		d->dm.media_mbs = uniform(&x, 50, 500);
		snprintf(d->name, sizeof(d->name), "g%03u-fifo-c%.0f-m%.0f", i, cmd,
			 d->dm.media_mbs);
	}
}

/* ---- parallel runs --------------------------------------------------- */

struct item {
	const struct sim_dev *dev;
	struct sim_cfg cfg;
	struct sim_res res;
	int rc;
};

/* Run the items in @jobs processes; results land in the shared array. */
static int run_items(struct item *items, size_t n)
{
	size_t len = n * sizeof(*items), i;
	struct item *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			       -1, 0);
	unsigned int j, started, bad = 0;

	if (sh == MAP_FAILED) {
		perror("adaptsim: mmap");
		return -1;
	}
	memcpy(sh, items, len);
	for (started = 0; started < jobs; started++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("adaptsim: fork");
			bad++;
			break;
		}
		if (!pid) {
			for (i = started; i < n; i += jobs)
				sh[i].rc = sim_run(sh[i].dev, &sh[i].cfg, &sh[i].res);
			_exit(0);
		}
	}
	for (j = 0; j < started; j++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	memcpy(items, sh, len);
	munmap(sh, len);
	for (i = 0; i < n; i++)
		if (items[i].rc)
			bad++;
	return bad ? -1 : 0;
}

static uint64_t run_seed(const struct sim_dev *dev, enum sim_wl wl)
{
	uint64_t h = seed;
	const char *c;

	/* the same prober offsets for every configuration of one device and load */
	for (c = dev->name; *c; c++)
		h = h * 131 + (unsigned char)*c;
	return h * 31 + wl;
}

static struct sim_cfg cfg_of(const struct sim_dev *dev, enum sim_wl wl, unsigned int t_us,
			     uint64_t bs, unsigned int qd, uint64_t secs)
{
	/* W7's prober is idle half the time: twice the seconds for as many reads */
	return (struct sim_cfg){ .wl = wl, .target_us = t_us, .bs = bs, .sqd = qd,
				 .seconds = wl == WL_W7 ? 2 * secs : secs,
				 .seed = run_seed(dev, wl) };
}

/* ---- goal tables ----------------------------------------------------- */

/* Per device and workload: the oracle sweep, the controller at 3 targets, off. */
#define PER_SET (NR_ORACLE + 4)

static void add_set(struct item *it, const struct sim_dev *dev, enum sim_wl wl, uint64_t secs)
{
	unsigned int b, q, t;

	for (b = 0; b < NR_BS; b++)
		for (q = 0; q < NR_QD; q++)
			it[b * NR_QD + q] = (struct item){ dev, cfg_of(dev, wl, 0, oracle_bs[b],
								   oracle_qd[q], secs) };
	for (t = 0; t < 3; t++)
		it[NR_ORACLE + t] = (struct item){ dev, cfg_of(dev, wl, dev->targets_us[t],
							       CTL_BS, CTL_QD, secs) };
	it[NR_ORACLE + 3] = (struct item){ dev, cfg_of(dev, wl, 0, CTL_BS, CTL_QD, secs) };
}

/* The best oracle point whose p99 meets @t_ms: its index, -1 when none. */
static int best_oracle(const struct item *set, double t_ms)
{
	int i, best = -1;

	for (i = 0; i < NR_ORACLE; i++)
		if (set[i].res.p99_ms <= t_ms &&
		    (best < 0 || set[i].res.stream_mbs > set[best].res.stream_mbs))
			best = i;
	return best;
}

static const char *point_name(int i, char *buf, size_t len)
{
	uint64_t bs = oracle_bs[i / NR_QD];

	if (bs >= MIB)
		snprintf(buf, len, "bs%llum-qd%u", (unsigned long long)(bs / MIB), oracle_qd[i % NR_QD]);
	else
		snprintf(buf, len, "bs%lluk-qd%u", (unsigned long long)(bs / KIB), oracle_qd[i % NR_QD]);
	return buf;
}

struct verdict {
	bool reachable, met;
	double ratio;		/* controller MB/s / best oracle point's */
	double p99_t;		/* controller p99 / T */
};

static struct verdict judge(const struct item *set, unsigned int t)
{
	const struct item *c = &set[NR_ORACLE + t];
	double t_ms = c->cfg.target_us / 1000.0;
	int b = best_oracle(set, t_ms);
	struct verdict v = { .reachable = b >= 0 };

	v.p99_t = c->res.p99_ms / t_ms;
	if (b >= 0) {
		v.ratio = c->res.stream_mbs / set[b].res.stream_mbs;
		v.met = v.p99_t <= GOAL_P99 && v.ratio >= GOAL_MBS;
	}
	return v;
}

static void json_res(FILE *f, const struct item *it)
{
	const struct sim_res *r = &it->res;

	fprintf(f, "{\"device\": \"%s\", \"workload\": \"%s\", \"target_us\": %u, "
		"\"bs\": %llu, \"qd\": %u, \"seconds\": %llu, \"reads\": %llu, "
		"\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f, "
		"\"stream_mbs\": %.2f, \"steps\": %llu}",
		it->dev->name, sim_wl_name[it->cfg.wl], it->cfg.target_us,
		(unsigned long long)it->cfg.bs, it->cfg.sqd, (unsigned long long)it->cfg.seconds,
		(unsigned long long)r->reads, r->p50_ms, r->p99_ms, r->p999_ms, r->max_ms,
		r->stream_mbs, (unsigned long long)r->steps);
}

static void json_items(const char *path, const struct item *it, size_t n)
{
	FILE *f;
	size_t i;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "adaptsim: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fprintf(f, "{\"seed\": %llu, \"runs\": [\n", (unsigned long long)seed);
	for (i = 0; i < n; i++) {
		fputs("  ", f);
		json_res(f, &it[i]);
		fputs(i + 1 < n ? ",\n" : "\n", f);
	}
	fputs("]}\n", f);
	fclose(f);
}

static const enum sim_wl table_wls[] = { WL_W1, WL_W1P, WL_W1S, WL_W1PS, WL_W7 };
#define NR_TABLE_WLS (sizeof(table_wls) / sizeof(table_wls[0]))

/*
 * Writes on the two disk models under both destage policies of their write
 * cache: W2d (a direct write stream) and W2 (writeback), the controller off
 * and at each target. A report: the law does not yet act on writes.
 */
static int writes_table(void)
{
	static const enum sim_wl wls[] = { WL_W2D, WL_W2 };
	struct sim_dev devs[4];
	struct item it[4 * 2 * 4];
	size_t d, w, t;

	for (d = 0; d < 4; d++) {
		devs[d] = profiles[1 + d / 2];
		devs[d].dm.wc_policy = d % 2 ? DM_WC_READS_FIRST : DM_WC_FCFS;
		for (w = 0; w < 2; w++)
			for (t = 0; t < 4; t++)
				it[(d * 2 + w) * 4 + t] = (struct item){ &devs[d],
					cfg_of(&devs[d], wls[w], t < 3 ? devs[d].targets_us[t] : 0,
					       CTL_BS, CTL_QD, seconds) };
	}
	if (run_items(it, sizeof(it) / sizeof(it[0])))
		return 1;
	printf("\n### Writes: W2d and W2 under both destage policies\n\n");
	printf("| profile | destage | load | off: p99 ms / MB/s | 20 ms | 50 ms | 100 ms |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (d = 0; d < 4; d++)
		for (w = 0; w < 2; w++) {
			const struct item *r = &it[(d * 2 + w) * 4];

			printf("| %s | %s | %s | %.1f / %.1f |", devs[d].name,
			       d % 2 ? "reads first" : "first come", sim_wl_name[wls[w]],
			       r[3].res.p99_ms, r[3].res.stream_mbs);
			for (t = 0; t < 3; t++)
				printf(" %.1f / %.1f |", r[t].res.p99_ms, r[t].res.stream_mbs);
			printf("\n");
		}
	return 0;
}

/*
 * The QEMU benchmark's own procedure, for the side-by-side: W1 runs of its
 * length (a 2 s ramp, then 10 s: about 200 prober reads), BENCH_RUNS seeds
 * each, so that its single runs can be set against a median and a range.
 */
#define BENCH_SECONDS 12
#define BENCH_RUNS 10

static int cmd_table(const char *json)
{
	size_t nl = NR_PROFILES * NR_TABLE_WLS * PER_SET, p, w, k, i;
	size_t n = nl + NR_PROFILES * BENCH_RUNS * PER_SET;
	struct item *it = calloc(n, sizeof(*it));
	char buf[32];
	unsigned int t;

	if (!it)
		return 1;
	for (p = 0; p < NR_PROFILES; p++)
		for (w = 0; w < NR_TABLE_WLS; w++)
			add_set(&it[(p * NR_TABLE_WLS + w) * PER_SET], &profiles[p],
				table_wls[w], seconds);
	for (p = 0; p < NR_PROFILES; p++)
		for (k = 0; k < BENCH_RUNS; k++) {
			struct item *set = &it[nl + (p * BENCH_RUNS + k) * PER_SET];

			add_set(set, &profiles[p], WL_W1, BENCH_SECONDS);
			for (i = 0; i < PER_SET; i++)
				set[i].cfg.seed += k * 7919;
		}
	if (run_items(it, n))
		return 1;
	for (w = 0; w < NR_TABLE_WLS; w++) {
		printf("\n### %s\n\n", sim_wl_name[table_wls[w]]);
		printf("| profile | target | controller p99 ms / MB/s | goal met | "
		       "best oracle point meeting T: p99 ms / MB/s | MB/s / oracle's | off: p99 ms / MB/s |\n");
		printf("|---|---|---|---|---|---|---|\n");
		for (p = 0; p < NR_PROFILES; p++) {
			const struct item *set = &it[(p * NR_TABLE_WLS + w) * PER_SET];
			const struct item *off = &set[NR_ORACLE + 3];

			for (t = 0; t < 3; t++) {
				const struct item *c = &set[NR_ORACLE + t];
				double t_ms = c->cfg.target_us / 1000.0;
				int b = best_oracle(set, t_ms);
				struct verdict v = judge(set, t);

				printf("| %s | %g ms | %.1f / %.1f | %s | ", profiles[p].name, t_ms,
				       c->res.p99_ms, c->res.stream_mbs,
				       !v.reachable ? "unreachable" : v.met ? "yes" : "no");
				if (b >= 0)
					printf("%s: %.1f / %.1f | %.2fx | ", point_name(b, buf, sizeof(buf)),
					       set[b].res.p99_ms, set[b].res.stream_mbs, v.ratio);
				else
					printf("none | - | ");
				printf("%.1f / %.1f |\n", off->res.p99_ms, off->res.stream_mbs);
			}
		}
	}
	json_items(json, it, n);
	free(it);
	return writes_table();
}

/* ---- the grid -------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct worst {
	double score;
	size_t dev;
	unsigned int t;
};

static int cmp_worst(const void *a, const void *b)
{
	const struct worst *x = a, *y = b;

	return x->score < y->score ? -1 : x->score > y->score;
}

static int cmd_grid(const char *json)
{
	struct sim_dev *devs = calloc(grid_n, sizeof(*devs));
	size_t n = grid_n * PER_SET, i, nw = 0;
	struct item *it = calloc(n, sizeof(*it));
	struct worst *worst = calloc(grid_n * 3, sizeof(*worst));
	double *ratios = calloc(grid_n, sizeof(*ratios));
	unsigned int t;

	if (!devs || !it || !worst || !ratios)
		return 1;
	for (i = 0; i < grid_n; i++) {
		grid_dev(&devs[i], i, seed);
		add_set(&it[i * PER_SET], &devs[i], WL_W1, seconds);
	}
	if (run_items(it, n))
		return 1;
	printf("grid: %u devices (seed %llu), W1, %llu s runs; goal: p99 <= %.1f T and "
	       "MB/s >= %.1f x the best oracle point meeting T\n\n", grid_n,
	       (unsigned long long)seed, (unsigned long long)seconds, GOAL_P99, GOAL_MBS);
	printf("| target | pairs | reachable | goal met | share | median MB/s ratio | worst MB/s ratio | median p99 / T | worst p99 / T |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (t = 0; t < 3; t++) {
		unsigned int reach = 0, met = 0;
		double *p99s = calloc(grid_n, sizeof(*p99s));

		if (!p99s)
			return 1;
		for (i = 0; i < grid_n; i++) {
			struct verdict v = judge(&it[i * PER_SET], t);

			if (!v.reachable)
				continue;
			ratios[reach] = v.ratio;
			p99s[reach++] = v.p99_t;
			met += v.met;
			/* how far from the goal: the worse of the two shortfalls */
			worst[nw++] = (struct worst){ fmin(v.ratio / GOAL_MBS, GOAL_P99 / v.p99_t),
						       i, t };
		}
		qsort(ratios, reach, sizeof(*ratios), cmp_dbl);
		qsort(p99s, reach, sizeof(*p99s), cmp_dbl);
		printf("| %s | %u | %u | %u | %.0f%% | %.2fx | %.2fx | %.2f | %.2f |\n",
		       t == 0 ? "low (20 ms disks, 1 ms SSDs, 4 c FIFO)" :
		       t == 1 ? "middle (50 ms, 2 ms, 8 c)" : "high (100 ms, 5 ms, 20 c)",
		       grid_n, reach, met, reach ? 100.0 * met / reach : 0,
		       reach ? ratios[reach / 2] : 0, reach ? ratios[0] : 0,
		       reach ? p99s[reach / 2] : 0, reach ? p99s[reach - 1] : 0);
		free(p99s);
	}
	qsort(worst, nw, sizeof(*worst), cmp_worst);
	printf("\nthe worst ten (device, target: controller p99 / MB/s against the best oracle point meeting T):\n\n");
	printf("| device | target | controller p99 ms / MB/s | oracle p99 ms / MB/s | off p99 ms / MB/s |\n");
	printf("|---|---|---|---|---|\n");
	for (i = 0; i < nw && i < 10; i++) {
		const struct item *set = &it[worst[i].dev * PER_SET];
		const struct item *c = &set[NR_ORACLE + worst[i].t], *off = &set[NR_ORACLE + 3];
		int b = best_oracle(set, c->cfg.target_us / 1000.0);
		char buf[32];

		printf("| %s | %g ms | %.1f / %.1f | %s %.1f / %.1f | %.1f / %.1f |\n",
		       devs[worst[i].dev].name, c->cfg.target_us / 1000.0, c->res.p99_ms,
		       c->res.stream_mbs, point_name(b, buf, sizeof(buf)), set[b].res.p99_ms,
		       set[b].res.stream_mbs, off->res.p99_ms, off->res.stream_mbs);
	}
	json_items(json, it, n);
	free(devs);
	free(it);
	free(worst);
	free(ratios);
	return 0;
}

/* ---- checks (KTAP) ----------------------------------------------------- */

#define CHECK_SECONDS 300
#define CHECK_GRID 20
#define CONVERGE_WINDOWS 10	/* windows from the ceiling to 3 in a row within 5/4 T */
#define OSC_MAX 4.0		/* budget p90 / p10 over the second half of a run */
#define LONE_MIN 0.99		/* a lone stream keeps this share of its throughput */

static unsigned int ktap_n, ktap_failed;

/* One result. */
static void ktap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ktap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %u ", ok ? "ok" : "not ok", ++ktap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	ktap_failed += !ok;
}

/* One device's check runs: W1's set, then the lone stream on and off. */
#define PER_CHECK (PER_SET + 2)

static void add_check(struct item *it, const struct sim_dev *dev, uint64_t secs)
{
	add_set(it, dev, WL_W1, secs);
	it[PER_SET] = (struct item){ dev, cfg_of(dev, WL_W3, dev->targets_us[1], CTL_BS,
						 CTL_QD, secs) };
	it[PER_SET + 1] = (struct item){ dev, cfg_of(dev, WL_W3, 0, CTL_BS, CTL_QD, secs) };
}

/* The oscillation of one device's controller runs: a result per target on a
 * profile; on a grid device, only a note for a miss (the grid has one
 * result, *@bad counting the misses). */
static void check_osc(const struct item *set, bool profile, unsigned int *bad)
{
	const char *name = set[0].dev->name;
	unsigned int t;

	for (t = 0; t < 3; t++) {
		const struct item *c = &set[NR_ORACLE + t];
		bool ok = c->res.osc_ratio <= OSC_MAX;

		if (profile || !ok)
			printf("# %s %g ms: usable budget p90/p10 %.2f\n", name,
			       c->cfg.target_us / 1000.0, c->res.osc_ratio);
		if (profile)
			ktap(ok, "%s %g ms: bounded oscillation: usable budget p90/p10 at most %.0f",
			     name, c->cfg.target_us / 1000.0, OSC_MAX);
		*bad += !ok && !profile;
	}
}

/* The properties of one device's runs, a result each on a profile. */
static void check_dev(const struct item *set, bool profile, unsigned int *faults,
		      unsigned int *osc_bad, unsigned int *lone_bad)
{
	const char *name = set[0].dev->name;
	double lone = set[PER_SET].res.stream_mbs / set[PER_SET + 1].res.stream_mbs;
	unsigned int t, f = 0;

	for (t = 0; t < 3; t++) {
		const struct sim_res *r = &set[NR_ORACLE + t].res;

		f += r->bound_faults + (r->budget_min < r->floor_bytes) +
		     (r->budget_max > r->ceil_bytes);
	}
	check_osc(set, profile, osc_bad);
	if (!profile) {
		*faults += f;
		*lone_bad += !(lone >= LONE_MIN);
		printf("# %s: lone stream %.4f of off\n", name, lone);
		return;
	}
	ktap(!f, "%s: budget, size cap and depth cap within floor and ceiling at every step", name);
	ktap(lone >= LONE_MIN, "%s: a lone stream keeps at least %.2f of its throughput", name, LONE_MIN);
	printf("# %s: lone stream %.1f MB/s on, %.1f off (%.4f)\n", name,
	       set[PER_SET].res.stream_mbs, set[PER_SET + 1].res.stream_mbs, lone);
	for (t = 0; t < 3; t++) {
		const struct item *c = &set[NR_ORACLE + t];
		double t_ms = c->cfg.target_us / 1000.0;
		const char *skip = NULL;

		if (best_oracle(set, t_ms) < 0)
			skip = "no oracle point meets the target";
		else if (set[NR_ORACLE + 3].res.p99_ms <= t_ms)
			skip = "the stream uncapped meets the target";
		printf("# %s %g ms: converged at window %u\n", name, t_ms, c->res.converge_windows);
		if (skip) {
			ktap(true, "%s %g ms: from the ceiling to within 5/4 T in at most %u windows # SKIP %s",
			     name, t_ms, CONVERGE_WINDOWS, skip);
			continue;
		}
		ktap(c->res.converge_windows && c->res.converge_windows <= CONVERGE_WINDOWS,
		     "%s %g ms: from the ceiling to within 5/4 T in at most %u windows",
		     name, t_ms, CONVERGE_WINDOWS);
	}
}

/*
 * A disk model with a write in its cache and nothing else to do destages
 * within a second and is idle after it, under either destage policy (an
 * event that changed nothing once made the HDD model spin forever there).
 * In a child process, which an alarm ends if the model hangs.
 */
static void noop_done(struct dm_req *r, void *ctx)
{
}

static bool destages_when_idle(const char *profile, double wc_policy)
{
	struct dm_params p = *dm_profile(profile);
	pid_t pid;
	int st;

	p.wc_policy = wc_policy;
	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		struct dm_req w = { .lba = 1000, .n = 8, .write = true };
		struct dm_req r = { .lba = 5000000, .n = 8 };
		char err[256];
		struct dm_disk *d = dm_new(&p, 16ULL << 20, noop_done, NULL, err, sizeof(err));

		alarm(10);
		if (!d)
			_exit(2);
		dm_submit(d, &w, SEC);
		dm_advance(d, 2 * SEC);
		if (!w.done_at || dm_next(d) != UINT64_MAX)
			_exit(1);
		dm_submit(d, &r, 3 * SEC);
		dm_advance(d, 4 * SEC);
		_exit(r.done_at && dm_next(d) == UINT64_MAX ? 0 : 1);
	}
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st);
}

static int cmd_check(void)
{
	size_t np = NR_PROFILES * PER_CHECK, n = np + CHECK_GRID * PER_CHECK, i;
	struct item *it = calloc(n, sizeof(*it)), again[2 * PER_CHECK];
	struct sim_dev *devs = calloc(CHECK_GRID, sizeof(*devs));
	unsigned int faults = 0, osc_bad = 0, lone_bad = 0;
	bool same;

	if (!it || !devs)
		return 1;
	printf("KTAP version 1\n");
	for (i = 0; i < 2; i++) {
		const char *hdd = i ? "hdd5400" : "hdd7200";

		ktap(destages_when_idle(hdd, DM_WC_FCFS) && destages_when_idle(hdd, DM_WC_READS_FIRST),
		     "%s model: a cached write destages when the disk is idle, either policy", hdd);
	}
	for (i = 0; i < NR_PROFILES; i++)
		add_check(&it[i * PER_CHECK], &profiles[i], CHECK_SECONDS);
	for (i = 0; i < CHECK_GRID; i++) {
		/* every sixth device of the grid: every kind and both destage policies */
		grid_dev(&devs[i], i * 6 + 1, seed);
		add_check(&it[np + i * PER_CHECK], &devs[i], CHECK_SECONDS);
	}
	if (run_items(it, n)) {
		ktap(false, "the simulator's runs");
		printf("1..%u\n", ktap_n);
		return 1;
	}
	for (i = 0; i < NR_PROFILES; i++)
		check_dev(&it[i * PER_CHECK], true, &faults, &osc_bad, &lone_bad);
	for (i = 0; i < CHECK_GRID; i++)
		check_dev(&it[np + i * PER_CHECK], false, &faults, &osc_bad, &lone_bad);
	ktap(!faults, "grid (%u devices): caps within floor and ceiling at every step", CHECK_GRID);
	ktap(!osc_bad, "grid (%u devices): bounded oscillation (%u runs over %.0f)",
	     CHECK_GRID, osc_bad, OSC_MAX);
	ktap(!lone_bad, "grid (%u devices): a lone stream keeps at least %.2f of its throughput (%u below)",
	     CHECK_GRID, LONE_MIN, lone_bad);
	/*
	 * The same seed gives the same figures, whatever process ran them:
	 * every run of the first profile and of the first grid device again,
	 * in this process one after the other.
	 */
	memcpy(again, it, PER_CHECK * sizeof(*it));
	memcpy(again + PER_CHECK, it + np, PER_CHECK * sizeof(*it));
	jobs = 1;
	same = !run_items(again, 2 * PER_CHECK);
	for (i = 0; same && i < PER_CHECK; i++)
		same = !memcmp(&again[i].res, &it[i].res, sizeof(it[i].res)) &&
		       !memcmp(&again[PER_CHECK + i].res, &it[np + i].res, sizeof(it[i].res));
	ktap(same, "the same seed gives the same figures (%s and %s, %u runs)",
	     profiles[0].name, devs[0].name, 2 * PER_CHECK);
	printf("1..%u\n", ktap_n);
	free(it);
	free(devs);
	return ktap_failed ? 1 : 0;
}

/* ---- one run ----------------------------------------------------------- */

static const struct sim_dev *find_dev(const char *name)
{
	static struct sim_dev g;
	unsigned int i;

	for (i = 0; i < NR_PROFILES; i++)
		if (!strcmp(name, profiles[i].name))
			return &profiles[i];
	if (name[0] == 'g' && strspn(name + 1, "0123456789") == strlen(name + 1) && name[1]) {
		grid_dev(&g, (unsigned int)atoi(name + 1), seed);
		return &g;
	}
	return NULL;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return 0;
	switch (*end) {
	case 'k': case 'K': v *= KIB; end++; break;
	case 'm': case 'M': v *= MIB; end++; break;
	}
	return *end ? 0 : (uint64_t)v;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: adaptsim [options] run -d DEVICE -w LOAD [-t MS] [-b BS] [-q QD] [-P KEY=V]... [-o TRACE]\n"
"       adaptsim [options] table [--json FILE]\n"
"       adaptsim [options] grid [--json FILE]\n"
"       adaptsim [options] check\n"
"Runs the adaptive caps' control law (block/blk-adapt-law.c, compiled from the\n"
"kernel tree) against the device models (tools/testing/diskmodel/model.c)\n"
"through a model of the block layer, in simulated time.\n"
"  run    one run; prints the prober's p50/p99/p99.9/max and the stream's MB/s;\n"
"         -o FILE writes the law's steps in the block_adapt_step tracepoint's format\n"
"  table  the goal tables of the benchmark's five profiles (W1, W1p, W1s, W1ps,\n"
"         W7): the controller at each target against the oracle sweep (bs x QD);\n"
"         W1 also in runs of the benchmark's length (10 seeds); writes (W2d, W2)\n"
"         on the disk models under both destage policies\n"
"  grid   the same for W1 on a grid of devices drawn from datasheet ranges\n"
"  check  the law's properties on the profiles and part of the grid, as KTAP\n"
"devices: hdd, hdd7200, hdd5400, sata-ssd, nvme-ssd, or gN (grid device N)\n"
"loads: W1 W1p W1s W1ps W2d W2 W3 W7 W8 W9 (Documentation/simulator.md)\n"
"options:\n"
"  -j N          processes (default 2)      --seed N      the seed (default 1)\n"
"  -s SECONDS    simulated seconds per run (default 520: 10,000 prober reads; W7 twice)\n"
"  -n N          grid devices (default 120)\n"
"  -t MS         run: the target (default: off)   -b BS, -q QD: the stream (8M, 4)\n"
"  -P KEY=V      run: a device model parameter, as the nbdkit filter takes it\n"
"                (e.g. -P wc_policy=1: the write cache destages reads first)\n"
"  -h, --help    this text\n");
}

static unsigned long parse_num(const char *s, const char *what, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "adaptsim: %s must be %lu..%lu, not '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { "seed", required_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devname = NULL, *wlname = "W1", *json = NULL, *trace = NULL;
	const char *params[16];
	unsigned int nparams = 0;
	char *end;
	double t_ms = 0;
	uint64_t bs = CTL_BS;
	unsigned int qd = CTL_QD;
	int c;

	profiles_init();
	while ((c = getopt_long(argc, argv, "hj:s:n:d:w:t:b:q:o:P:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return 0;
		case 'j': jobs = parse_num(optarg, "-j", 1, 64); break;
		case 's': seconds = parse_num(optarg, "-s", 5, 100000); break;
		case 'n': grid_n = parse_num(optarg, "-n", 1, 10000); break;
		case 'S': seed = parse_num(optarg, "--seed", 0, ~0UL); break;
		case 'J': json = optarg; break;
		case 'd': devname = optarg; break;
		case 'w': wlname = optarg; break;
		case 'o': trace = optarg; break;
		case 't':
			t_ms = strtod(optarg, &end);
			if (end == optarg || *end || !(t_ms >= 0.001 && t_ms <= BLK_ADAPT_MAX_LAT_US / 1000)) {
				fprintf(stderr, "adaptsim: -t must be a target in ms, 0.001 <= MS <= %llu\n",
					BLK_ADAPT_MAX_LAT_US / 1000);
				return 2;
			}
			break;
		case 'b':
			bs = parse_size(optarg);
			if (!bs || bs % 4096) {
				fprintf(stderr, "adaptsim: -b must be a size in 4 KiB units (e.g. 512k, 8M)\n");
				return 2;
			}
			break;
		case 'q': qd = parse_num(optarg, "-q", 1, 64); break;
		case 'P':
			if (nparams == sizeof(params) / sizeof(params[0])) {
				fprintf(stderr, "adaptsim: at most %zu -P options\n",
					sizeof(params) / sizeof(params[0]));
				return 2;
			}
			params[nparams++] = optarg;
			break;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "table"))
		return cmd_table(json);
	if (!strcmp(argv[optind], "grid"))
		return cmd_grid(json);
	if (!strcmp(argv[optind], "check"))
		return cmd_check();
	if (!strcmp(argv[optind], "run")) {
		const struct sim_dev *found = devname ? find_dev(devname) : NULL;
		struct sim_dev *dev = malloc(sizeof(*dev));
		struct item it;
		char err[256];
		unsigned int i;
		int w;

		if (!found || !dev) {
			fprintf(stderr, "adaptsim: run needs -d DEVICE (hdd, hdd7200, hdd5400, sata-ssd, nvme-ssd, gN)\n");
			return 2;
		}
		*dev = *found;
		for (i = 0; i < nparams; i++)
			if (dm_parse_param(&dev->dm, params[i], err, sizeof(err))) {
				fprintf(stderr, "adaptsim: -P %s\n", err);
				return 2;
			}
		for (w = 0; w < WL_NR && strcmp(wlname, sim_wl_name[w]); w++)
			;
		if (w == WL_NR) {
			fprintf(stderr, "adaptsim: unknown load '%s'\n", wlname);
			return 2;
		}
		it = (struct item){ dev, cfg_of(dev, w, (unsigned int)lround(t_ms * 1000), bs, qd, seconds) };
		if (trace) {
			it.cfg.trace = fopen(trace, "w");
			if (!it.cfg.trace) {
				fprintf(stderr, "adaptsim: %s: %s\n", trace, strerror(errno));
				return 1;
			}
		}
		if (sim_run(it.dev, &it.cfg, &it.res))
			return 1;
		if (it.cfg.trace)
			fclose(it.cfg.trace);
		printf("%s %s %s: prober p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms (%llu reads), "
		       "stream %.1f MB/s, %llu steps\n", dev->name, sim_wl_name[w],
		       t_ms ? "controller" : "off", it.res.p50_ms, it.res.p99_ms, it.res.p999_ms,
		       it.res.max_ms, (unsigned long long)it.res.reads, it.res.stream_mbs,
		       (unsigned long long)it.res.steps);
		return 0;
	}
	usage(stderr);
	return 2;
}
