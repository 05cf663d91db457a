/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The device models, event driven: no threads, no clock. A request arrives
 * at a time; the model says when it completes. The nbdkit filter
 * (diskmodel.c) runs it in wall-clock time; the simulator
 * (tools/testing/adaptsim) runs it in simulated time. See model.c.
 */
#ifndef DISKMODEL_MODEL_H
#define DISKMODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum dm_kind {
	DM_HDD,		/* rotating disk: seek, rotation, SPTF queue, caches */
	DM_SSD,		/* flash units behind a command processor and a link */
	DM_FIFO,	/* one command at a time: a fixed cost plus a media rate */
	DM_BUCKET,	/* QEMU's throttle bucket (throttling.bps-total, .iops-total) */
};

/* The write-back cache's policy between reads and destaging (HDD). */
enum dm_wc_policy {
	DM_WC_FCFS,		/* writes that miss the cache queue with the reads (SPTF) */
	DM_WC_READS_FIRST,	/* reads first; destage first only while writes wait for room */
};

/* One parameter set. Times in microseconds, rates in MB/s (10^6 bytes/s). */
struct dm_params {
	const char *name;
	enum dm_kind kind;
	/* hdd */
	double rpm, heads, outer_mbs, inner_mbs;
	double seek_track_us, seek_avg_us, seek_full_us, seek_knee;
	double write_settle_us, switch_us, overhead_us, iface_mbs;
	double age_us, rcache, wcache, wc_policy;
	/* ssd */
	double cmd_us, units, read_us, page_xfer_us, fixed_us, link_mbs, drain_mbs;
	double flush_us, gc_every_ms, gc_us;
	/* fifo: cmd_us + bytes / media_mbs; bucket: bps, iops, then io_us */
	double media_mbs, bps, iops, io_us;
};

struct dm_req {
	uint64_t lba, n;		/* sectors; n may be 0 for a flush */
	bool write, fua, flush;
	uint64_t arrival;		/* set by dm_submit() */
	uint64_t done_at;		/* 0 until its completion time is known */
	void *priv;			/* the caller's */
	struct dm_req *next;		/* the model's queue */
};

struct dm_disk;

/* The completion of a request that waited in the model: done_at is set. */
typedef void (*dm_complete_fn)(struct dm_req *r, void *ctx);

const struct dm_params *dm_profile(const char *name);
const char *dm_profile_names(void);
/* Set one parameter by name: 0; -1 when @key is no parameter, -2 when not one of p->kind's. */
int dm_set_param(struct dm_params *p, const char *key, double v);
/* Set one parameter from "KEY=NUMBER": 0, or -1 with the reason in @err. */
int dm_parse_param(struct dm_params *p, const char *kv, char *err, size_t errlen);
/* Create a disk of @sectors sectors; NULL with a message in @err on bad parameters. */
struct dm_disk *dm_new(const struct dm_params *p, uint64_t sectors,
		       dm_complete_fn fn, void *ctx, char *err, size_t errlen);
void dm_free(struct dm_disk *d);
/*
 * Request @r arrives at @t (ns, never before an earlier call's time). Its
 * completion is reported once: either @r->done_at is set on return and the
 * callback is not called, or the callback is called with @r->done_at set,
 * from dm_advance() or already from this call.
 */
void dm_submit(struct dm_disk *d, struct dm_req *r, uint64_t t);
/* The time of the model's next internal event, UINT64_MAX when none. */
uint64_t dm_next(const struct dm_disk *d);
/* Run the model's internal events up to @t. */
void dm_advance(struct dm_disk *d, uint64_t t);
/* Write the effective parameters and derived figures as key=value lines. */
void dm_info(const struct dm_disk *d, FILE *f);
bool dm_rotational(const struct dm_params *p);

#endif /* DISKMODEL_MODEL_H */
