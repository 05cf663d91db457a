// SPDX-License-Identifier: GPL-2.0
/*
 * nbdkit filter: the timing of a real disk in front of any nbdkit plugin.
 *
 * The plugin below (file, memory) stores the data; this filter only decides
 * when each request completes, from the device models of model.c (hdd,
 * ssd, fifo, bucket: see there), which the simulator (tools/testing/adaptsim)
 * runs too. Here they run in wall-clock time (CLOCK_MONOTONIC), multiplied
 * by timescale= (default 1): timescale=8 makes every modelled time 8 times
 * longer, so that a host-side validation can see the model and not the
 * transport when the modelled times are microseconds. One thread runs the
 * model's own events (a queued request's completion, a destage) when they
 * are due; the request threads sleep until their request completes.
 *
 * Parameters: profile=NAME selects a parameter set of model.c; any parameter
 * can then be overridden by name (times in microseconds, rates in MB/s, sizes
 * in bytes). info=PATH writes the effective parameters and derived figures to
 * PATH as key=value lines once the disk's size is known.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "model.h"

#define SECTOR 512

static struct dm_params p;		/* the effective parameters */
static struct dm_disk *disk;
static double timescale = 1;
static const char *info_path;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;		/* on CLOCK_MONOTONIC: dm_load() */
static pthread_t events_thread;
static bool events_running, stopping;
static uint64_t t0;			/* CLOCK_MONOTONIC ns at start */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Model time: wall-clock time since start, divided by the timescale. */
static uint64_t now(void)
{
	return (uint64_t)((mono_ns() - t0) / timescale);
}

static struct timespec real_ts(uint64_t t)
{
	uint64_t real = t0 + (uint64_t)(t * timescale);

	return (struct timespec){ real / 1000000000, real % 1000000000 };
}

/* Sleep until model time @t. */
static void sleep_until(uint64_t t)
{
	struct timespec ts = real_ts(t);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A queued request completed in the model: its thread is waiting on cond. */
static void completed(struct dm_req *r, void *ctx)
{
	pthread_cond_broadcast(&cond);
}

/* Run the model's own events when they are due. */
static void *events(void *arg)
{
	prctl(PR_SET_TIMERSLACK, 1UL);
	pthread_mutex_lock(&lock);
	while (!stopping) {
		uint64_t next;

		dm_advance(disk, now());
		next = dm_next(disk);
		if (next == UINT64_MAX) {
			pthread_cond_wait(&cond, &lock);
		} else if (next > now()) {
			struct timespec ts = real_ts(next);

			pthread_cond_timedwait(&cond, &lock, &ts);
		}
	}
	pthread_mutex_unlock(&lock);
	return arg;
}

static void model_io(uint64_t offset, uint32_t count, bool write, bool fua, bool flush)
{
	struct dm_req r = { .lba = offset / SECTOR, .write = write, .fua = fua, .flush = flush };

	r.n = flush ? 0 : (offset + count + SECTOR - 1) / SECTOR - r.lba;
	prctl(PR_SET_TIMERSLACK, 1UL);
	pthread_mutex_lock(&lock);
	dm_submit(disk, &r, now());
	pthread_cond_broadcast(&cond);	/* the next event may be earlier now */
	while (!r.done_at)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	sleep_until(r.done_at);
}

static bool profile_set;
static char *overrides[64];
static int noverrides;

static int dm_config(nbdkit_next_config *next, nbdkit_backend *nxdata,
		     const char *key, const char *value)
{
	struct dm_params probe = { 0 };

	if (!strcmp(key, "profile")) {
		const struct dm_params *pr = dm_profile(value);

		if (!pr) {
			nbdkit_error("diskmodel: unknown profile '%s' (%s)", value,
				     dm_profile_names());
			return -1;
		}
		p = *pr;
		profile_set = true;
		return 0;
	}
	if (!strcmp(key, "timescale")) {
		char *end;

		timescale = strtod(value, &end);
		if (*end || !(timescale >= 1 && timescale <= 1000)) {
			nbdkit_error("diskmodel: timescale must be 1..1000, not '%s'", value);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "info")) {
		info_path = value;
		return 0;
	}
	if (dm_set_param(&probe, key, 0) != -1) {	/* a parameter of some model */
		char buf[256];

		if (noverrides == 64) {
			nbdkit_error("diskmodel: too many parameters");
			return -1;
		}
		snprintf(buf, sizeof(buf), "%s=%s", key, value);
		overrides[noverrides] = strdup(buf);
		if (!overrides[noverrides++]) {
			nbdkit_error("diskmodel: %m");
			return -1;
		}
		return 0;
	}
	return next(nxdata, key, value);
}

static int dm_config_complete(nbdkit_next_config_complete *next, nbdkit_backend *nxdata)
{
	struct dm_disk *check;
	char err[256];
	int i;

	if (!profile_set) {
		nbdkit_error("diskmodel: profile= is required (%s)", dm_profile_names());
		return -1;
	}
	for (i = 0; i < noverrides; i++)
		if (dm_parse_param(&p, overrides[i], err, sizeof(err))) {
			nbdkit_error("diskmodel: profile %s: %s", p.name, err);
			return -1;
		}
	/* the parameters' own checks, on a disk of 8 GiB: the real size comes later */
	check = dm_new(&p, 16ULL << 20, completed, NULL, err, sizeof(err));
	if (!check) {
		nbdkit_error("diskmodel: %s", err);
		return -1;
	}
	dm_free(check);
	return next(nxdata);
}

static int dm_after_fork(nbdkit_backend *nxdata)
{
	t0 = mono_ns();
	return 0;
}

static void write_info(void)
{
	FILE *f = fopen(info_path, "w");

	if (!f) {
		nbdkit_error("diskmodel: %s: %m", info_path);
		return;
	}
	fprintf(f, "timescale=%g\n", timescale);
	dm_info(disk, f);
	fclose(f);
}

static int dm_prepare(nbdkit_next *next, void *handle, int readonly)
{
	int64_t size = next->get_size(next);
	char err[256];
	int ret = 0;

	if (size < 0)
		return -1;
	pthread_mutex_lock(&lock);
	if (!disk) {
		disk = dm_new(&p, size / SECTOR, completed, NULL, err, sizeof(err));
		if (!disk) {
			nbdkit_error("diskmodel: %s", err);
			ret = -1;
		} else if (pthread_create(&events_thread, NULL, events, NULL)) {
			nbdkit_error("diskmodel: cannot start the model's thread");
			dm_free(disk);
			disk = NULL;
			ret = -1;
		} else {
			events_running = true;
			if (info_path)
				write_info();
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

static void dm_load(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &a);
	pthread_condattr_destroy(&a);
}

static void dm_unload(void)
{
	int i;

	if (events_running) {
		pthread_mutex_lock(&lock);
		stopping = true;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		pthread_join(events_thread, NULL);
	}
	for (i = 0; i < noverrides; i++)
		free(overrides[i]);
	dm_free(disk);
}

static int dm_is_rotational(nbdkit_next *next, void *handle)
{
	return dm_rotational(&p);
}

static int dm_can_fua(nbdkit_next *next, void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

static int dm_pread(nbdkit_next *next, void *handle, void *buf, uint32_t count,
		    uint64_t offset, uint32_t flags, int *err)
{
	model_io(offset, count, false, false, false);
	return next->pread(next, buf, count, offset, flags, err);
}

static int dm_pwrite(nbdkit_next *next, void *handle, const void *buf,
		     uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
	bool fua = flags & NBDKIT_FLAG_FUA;

	model_io(offset, count, true, fua, false);
	if (fua && next->can_fua(next) != NBDKIT_FUA_NATIVE)
		flags &= ~NBDKIT_FLAG_FUA;	/* timing modelled here; data is safe below */
	return next->pwrite(next, buf, count, offset, flags, err);
}

static int dm_zero(nbdkit_next *next, void *handle, uint32_t count,
		   uint64_t offset, uint32_t flags, int *err)
{
	model_io(offset, count, true, flags & NBDKIT_FLAG_FUA, false);
	flags &= ~NBDKIT_FLAG_FUA;
	return next->zero(next, count, offset, flags, err);
}

static int dm_flush(nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
	model_io(0, 0, false, false, true);
	return next->flush(next, flags, err);
}

static struct nbdkit_filter filter = {
	.name = "diskmodel",
	.longname = "nbdkit disk timing model filter",
	.config = dm_config,
	.config_complete = dm_config_complete,
	.config_help =
		"profile=NAME                 (required) the device model: hdd7200,\n"
		"                             hdd5400, ssd, bucket-hdd, fifo\n"
		"timescale=K                  run the model K times slower (1..1000)\n"
		"info=PATH                    write the effective parameters to PATH\n"
		"PARAM=VALUE                  override one of the profile's parameters",
	.load = dm_load,
	.after_fork = dm_after_fork,
	.unload = dm_unload,
	.prepare = dm_prepare,
	.is_rotational = dm_is_rotational,
	.can_fua = dm_can_fua,
	.pread = dm_pread,
	.pwrite = dm_pwrite,
	.zero = dm_zero,
	.flush = dm_flush,
};

NBDKIT_REGISTER_FILTER(filter)
