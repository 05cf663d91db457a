// SPDX-License-Identifier: GPL-2.0
/*
 * The device models: when each request completes, from a model of the device.
 * Event driven (a request arrives at time t; the model says when it
 * completes), with no thread and no clock of its own, so that the nbdkit
 * filter (diskmodel.c, wall-clock time) and the simulator
 * (tools/testing/adaptsim, simulated time) run the same code.
 *
 * hdd  A single head assembly over a zoned, rotating platter stack.
 *      Geometry: ZONES zones of equal cylinder count; sectors per track fall
 *      linearly from the outer zone to the inner one, so the media rate does
 *      (outer:inner about 2:1). The exported size is spread over the whole
 *      stroke, so a seek over the full span is a full-stroke seek.
 *      Service of one media access:
 *        overhead + seek(d) + rotational wait + transfer (+ switch per track)
 *      seek(d) for d cylinders of C: a + b*sqrt(d/C) up to the knee, then
 *      linear up to the full-stroke time (the shape of Ruemmler & Wilkes,
 *      "An introduction to disk drive modeling", IEEE Computer 1994); a is
 *      set by the track-to-track time, b is solved at start-up so that the
 *      mean over uniformly random pairs of sectors is the average seek time.
 *      The rotational wait comes from the platter's angle at the time the
 *      seek ends (the platter turns with time); consecutive tracks are skewed
 *      by one switch time, so a sequential transfer only loses the switch at
 *      each track boundary.
 *      Queue: every request that misses the caches waits in the drive's
 *      queue; when the mechanism is free it takes the request with the
 *      shortest positioning time (seek + rotational wait), unless one has
 *      waited longer than the aging bound: then the oldest goes first.
 *      Read cache: SEGMENTS segments, least recently used replaced. After a
 *      read the drive keeps reading ahead into the segment at the sustained
 *      media rate (a switch per track) until the segment is full or the next
 *      request takes the head; a read that lies in what was read ahead costs
 *      overhead + interface transfer, and a read that starts inside it
 *      continues from there.
 *      Write cache (write-back): a write that fits costs overhead + interface
 *      transfer; dirty extents are destaged (SPTF among them) when the queue
 *      is empty. An FUA write goes to the media through the queue. FLUSH
 *      destages everything first. A write that does not fit depends on
 *      wc_policy:
 *        0 (fcfs)        it goes to the media through the queue, SPTF with
 *                        the reads (the model's behaviour before the
 *                        policy existed: sequential writes near the head
 *                        win SPTF until the aging bound); close to what
 *                        drive manuals describe: a Samsung WA3xxxxA manual
 *                        (5-5-2) holds cached data no longer than a
 *                        maximum seek plus a rotation and lets a previous
 *                        write finish before a read starts; a Maxtor
 *                        86480D8 specification stacks writes until the
 *                        buffer is full and may reorder them;
 *        1 (reads first) it waits until destaging makes room, then is
 *                        cached; queued reads go before destaging, except
 *                        that while writes wait for room every other job
 *                        of the mechanism is a destage (so that neither
 *                        starves). No manual at hand states this policy:
 *                        it is the optimistic bound a firmware could
 *                        reach, kept as a parameter to compare against.
 *
 * ssd  A controller that starts one command every CMD_NS, UNITS flash units
 *      (4 KiB pages striped over them), each serving its page reads FIFO in
 *      READ_NS, and a link of LINK_MBS: a request completes when its last page
 *      has crossed the link, so latency grows with the bytes outstanding.
 *      Writes land in a write cache of WCACHE bytes that drains at DRAIN_MBS;
 *      once it is full a write waits until there is room for it. With
 *      gc_every_ms set, every flash unit is busy for gc_us every gc_every_ms
 *      (garbage collection).
 *
 * fifo One command at a time, first come first served: cmd_us + bytes at
 *      media_mbs each (a device with a per-command cost and no reordering).
 *
 * bucket QEMU's I/O throttling (block/throttle-groups.c, util/throttle.c) as
 *      run-vm.sh -p hdd sets it: leaky buckets of bps bytes and iops commands
 *      per second, shared by reads and writes, each letting a request through
 *      while its level is at most a tenth of a second's worth (QEMU's burst
 *      when no max is set); a request that must wait queues FIFO per
 *      direction, and is charged (the levels raised by its bytes and by one
 *      command) when it goes. Then the host's own I/O: io_us plus bytes at
 *      iface_mbs, in parallel.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define SECTOR 512
#define ZONES 16
#define SEGMENTS 16
#define MAX_DIRTY 64
#define NS_PER_US 1000.0
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NONE UINT64_MAX

/*
 * The profiles. Figures are those of the drive class's datasheets, as cited
 * in Documentation/device-models.md; the shape parameters (knee, switch,
 * overhead, aging bound, cache split) are typical values from the disk
 * modelling literature, not from one drive.
 */
static const struct dm_params profiles[] = {
	{ .name = "hdd7200", .kind = DM_HDD,	/* 3.5" desktop, 7200 rpm */
	  .rpm = 7200, .heads = 4, .outer_mbs = 250, .inner_mbs = 120,
	  .seek_track_us = 800, .seek_avg_us = 8500, .seek_full_us = 17000,
	  .seek_knee = 0.2, .write_settle_us = 300, .switch_us = 800,
	  .overhead_us = 200, .iface_mbs = 600, .age_us = 500000,
	  .rcache = 64 << 20, .wcache = 16 << 20 },
	{ .name = "hdd5400", .kind = DM_HDD,	/* 2.5" laptop, 5400 rpm */
	  .rpm = 5400, .heads = 2, .outer_mbs = 130, .inner_mbs = 65,
	  .seek_track_us = 1000, .seek_avg_us = 12000, .seek_full_us = 20000,
	  .seek_knee = 0.2, .write_settle_us = 500, .switch_us = 1000,
	  .overhead_us = 300, .iface_mbs = 600, .age_us = 500000,
	  .rcache = 32 << 20, .wcache = 8 << 20 },
	{ .name = "ssd", .kind = DM_SSD,	/* SATA TLC SSD with DRAM */
	  .cmd_us = 11, .units = 8, .read_us = 55, .page_xfer_us = 3,
	  .fixed_us = 11, .link_mbs = 550, .wcache = 1024 << 20,
	  .drain_mbs = 200, .flush_us = 500 },
	{ .name = "bucket-hdd", .kind = DM_BUCKET,	/* run-vm.sh -p hdd */
	  .bps = 150e6, .iops = 150, .io_us = 50, .iface_mbs = 2000 },
	{ .name = "fifo", .kind = DM_FIFO,	/* a per-command cost, no reordering */
	  .cmd_us = 8000, .media_mbs = 120 },
};

const struct dm_params *dm_profile(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(profiles); i++)
		if (!strcmp(name, profiles[i].name))
			return &profiles[i];
	return NULL;
}

const char *dm_profile_names(void)
{
	return "hdd7200, hdd5400, ssd, bucket-hdd, fifo";
}

bool dm_rotational(const struct dm_params *p)
{
	return p->kind == DM_HDD || p->kind == DM_FIFO || p->kind == DM_BUCKET;
}

/*
 * The parameters each kind uses, and their ranges: wide enough for any
 * device of its kind, narrow enough that no time or size overflows.
 */
enum { WHOLE = 1, ABOVE = 2 };	/* a whole number; more than the lowest */
#define R(f, lo, hi, flags) { #f, offsetof(struct dm_params, f), lo, hi, flags }
static const struct range {
	const char *key;
	size_t off;
	double lo, hi;
	int flags;
} hdd[] = {
	R(wcache, 0, 1e12, 0), R(rpm, 1000, 1e5, 0), R(heads, 1, 64, WHOLE),
	R(outer_mbs, 1, 1e5, 0), R(inner_mbs, 1, 1e5, 0),
	R(seek_track_us, 0, 1e6, 0), R(seek_avg_us, 0, 1e6, 0), R(seek_full_us, 0, 1e6, 0),
	R(seek_knee, 0, 0.999, ABOVE), R(write_settle_us, 0, 1e6, 0),
	R(switch_us, 0, 1e6, 0), R(overhead_us, 0, 1e6, 0), R(iface_mbs, 1, 1e5, 0),
	R(age_us, 0, 1e8, 0), R(rcache, 0, 1e12, 0), R(wc_policy, 0, 1, WHOLE),
}, ssd[] = {
	R(wcache, 0, 1e12, 0), R(cmd_us, 0, 1e6, 0), R(units, 1, 64, WHOLE),
	R(read_us, 0, 1e6, 0), R(page_xfer_us, 0, 1e6, 0), R(fixed_us, 0, 1e6, 0),
	R(link_mbs, 1, 1e5, 0), R(drain_mbs, 1, 1e5, 0), R(flush_us, 0, 1e7, 0),
	R(gc_every_ms, 0, 1e6, 0), R(gc_us, 0, 1e7, 0),
}, fifo[] = {
	R(cmd_us, 0, 1e7, 0), R(media_mbs, 1, 1e5, 0),
}, bucket[] = {
	R(bps, 1e5, 1e12, 0), R(iops, 1, 1e7, 0), R(iface_mbs, 1, 1e5, 0),
	R(io_us, 0, 1e6, 0),
};
#undef R
static const struct { const struct range *r; size_t n; } kinds[] = {
	[DM_HDD] = { hdd, ARRAY_SIZE(hdd) }, [DM_SSD] = { ssd, ARRAY_SIZE(ssd) },
	[DM_FIFO] = { fifo, ARRAY_SIZE(fifo) }, [DM_BUCKET] = { bucket, ARRAY_SIZE(bucket) },
};

int dm_set_param(struct dm_params *p, const char *key, double v)
{
	size_t k, i;

	for (i = 0; i < kinds[p->kind].n; i++)
		if (!strcmp(key, kinds[p->kind].r[i].key)) {
			*(double *)((char *)p + kinds[p->kind].r[i].off) = v;
			return 0;
		}
	for (k = 0; k < ARRAY_SIZE(kinds); k++)
		for (i = 0; i < kinds[k].n; i++)
			if (!strcmp(key, kinds[k].r[i].key))
				return -2;
	return -1;
}

int dm_parse_param(struct dm_params *p, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char key[64], *end;
	double v;
	int rc;

	if (!eq || eq == kv || eq - kv >= (ptrdiff_t)sizeof(key)) {
		snprintf(err, errlen, "'%s' is not KEY=NUMBER", kv);
		return -1;
	}
	v = strtod(eq + 1, &end);
	if (end == eq + 1 || *end) {
		snprintf(err, errlen, "%s: the value must be a number", kv);
		return -1;
	}
	memcpy(key, kv, eq - kv);
	key[eq - kv] = 0;
	rc = dm_set_param(p, key, v);
	if (rc)
		snprintf(err, errlen, "%s: %s", kv, rc == -1 ? "no device model has this parameter" :
			 "a parameter of another kind of device model");
	return rc ? -1 : 0;
}

struct segment {
	uint64_t start, base_end, cap_end;	/* sectors */
	uint64_t fill_from, fill_until;		/* ns: prefetch running */
	double rate;				/* sectors per ns */
	uint64_t used;				/* LRU stamp */
};

struct extent { uint64_t lba, n; };

struct dm_disk {
	struct dm_params p;
	dm_complete_fn complete;
	void *ctx;
	uint64_t sectors;

	/* hdd geometry */
	uint64_t cyls_per_zone, zone_lba[ZONES + 1], cyls;
	double spt[ZONES], rot_ns, seek_a, seek_b;
	uint64_t idle_ns;		/* destage after this long without a write */
	/* hdd state */
	struct dm_req *queue;		/* arrival order */
	struct dm_req *wait_room;	/* writes waiting for room in the cache (reads first) */
	uint64_t head_lba;		/* where the head is (last sector + 1) */
	struct segment seg[SEGMENTS];
	int active_seg;			/* segment the head is reading ahead into */
	uint64_t lru_clock;
	struct extent dirty[MAX_DIRTY];
	int ndirty;
	uint64_t dirty_sectors, last_write;
	/* the mechanism's job: a request, a destage, or none */
	bool busy, last_destage;
	uint64_t busy_until;
	struct dm_req *cur;		/* the request served, NULL: a destage */
	uint64_t destage_n;
	struct dm_req *flushing;	/* a FLUSH destaging everything */

	/* ssd state */
	uint64_t ctrl_free, link_free, unit_free[64], next_gc;
	double wc_level;
	uint64_t wc_when;

	/* fifo: when the device is free */
	uint64_t fifo_free;

	/* bucket state */
	double lvl_b, lvl_i;		/* bucket levels: bytes, commands */
	uint64_t leak_t;
	struct dm_req *thr[2], **thr_tail[2];	/* waiting per direction */
	uint64_t thr_timer;		/* when the head may go, NONE */
};

static double mbs_ns(double mbs, uint64_t bytes)
{
	return bytes / mbs * 1000.0;	/* MB/s = bytes per us */
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void done(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	r->done_at = t ? t : 1;
	d->complete(r, d->ctx);
}

/* ---- HDD geometry ---------------------------------------------------- */

struct chs { uint64_t cyl, track; int zone; double angle; };

static struct chs locate(const struct dm_disk *d, uint64_t lba)
{
	struct chs c;
	int z = 0;
	uint64_t off, trk;

	if (lba >= d->sectors)
		lba = d->sectors - 1;
	while (z < ZONES - 1 && lba >= d->zone_lba[z + 1])
		z++;
	off = lba - d->zone_lba[z];
	trk = off / (uint64_t)d->spt[z];
	c.zone = z;
	c.track = z * d->cyls_per_zone * (uint64_t)d->p.heads + trk;
	c.cyl = c.track / (uint64_t)d->p.heads;
	/* sector's angle, with one switch time of skew per track */
	c.angle = fmod((off % (uint64_t)d->spt[z]) / d->spt[z] +
		       c.track * (d->p.switch_us * NS_PER_US / d->rot_ns), 1.0);
	return c;
}

static double seek_ns_frac(const struct dm_disk *d, double x)	/* x = distance / stroke */
{
	double knee_t;

	if (x <= 0)
		return 0;
	knee_t = d->seek_a + d->seek_b * sqrt(d->p.seek_knee);
	if (x <= d->p.seek_knee)
		return (d->seek_a + d->seek_b * sqrt(x)) * NS_PER_US;
	return (knee_t + (d->p.seek_full_us - knee_t) * (x - d->p.seek_knee) /
		(1 - d->p.seek_knee)) * NS_PER_US;
}

static double seek_ns(const struct dm_disk *d, uint64_t from_cyl, uint64_t to_cyl)
{
	uint64_t dist = from_cyl > to_cyl ? from_cyl - to_cyl : to_cyl - from_cyl;

	return seek_ns_frac(d, (double)dist / (d->cyls - 1));
}

#define GRID 512

/*
 * The seek curve's b for the profile's average seek over the pairs of
 * @cyl: with a = seek_track - b * sqrt(1 / (cyls - 1)), every seek time of
 * seek_ns_frac() is linear in b, and so is their mean: C + K * b.
 */
static double fit_seek_b(const struct dm_disk *d, const uint64_t *cyl)
{
	const struct dm_params *p = &d->p;
	double s = sqrt(1.0 / (d->cyls - 1)), sk = sqrt(p->seek_knee), c = 0, k = 0;
	int i, j;

	for (i = 0; i < GRID; i++)
		for (j = 0; j < GRID; j++) {
			uint64_t dist = cyl[i] > cyl[j] ? cyl[i] - cyl[j] : cyl[j] - cyl[i];
			double x = (double)dist / (d->cyls - 1), r;

			if (!dist)
				continue;
			if (x <= p->seek_knee) {
				c += p->seek_track_us;
				k += sqrt(x) - s;
				continue;
			}
			r = (x - p->seek_knee) / (1 - p->seek_knee);
			c += p->seek_track_us * (1 - r) + p->seek_full_us * r;
			k += (sk - s) * (1 - r);
		}
	return k > 0 ? (p->seek_avg_us * GRID * GRID - c) / k : 0;
}

static int hdd_init(struct dm_disk *d, char *err, size_t errlen)
{
	const struct dm_params *p = &d->p;
	double sum_spt = 0;
	uint64_t grid[GRID];
	int z, i;

	d->rot_ns = 60e9 / p->rpm;
	/* one rotation, an integer: hdd_next() and destage_due() must agree */
	d->idle_ns = (uint64_t)ceil(d->rot_ns);
	for (z = 0; z < ZONES; z++) {
		double mbs = p->outer_mbs - (p->outer_mbs - p->inner_mbs) * z / (ZONES - 1);

		/* the sustained rate includes one switch per track */
		d->spt[z] = floor(mbs * 1e6 * (d->rot_ns + p->switch_us * NS_PER_US) / 1e9 / SECTOR);
		sum_spt += d->spt[z];
	}
	if (d->spt[ZONES - 1] < 1) {
		snprintf(err, errlen, "inner_mbs=%g: less than a sector per track at rpm=%g",
			 p->inner_mbs, p->rpm);
		return -1;
	}
	d->cyls_per_zone = (uint64_t)ceil(d->sectors / (p->heads * sum_spt));
	if (d->cyls_per_zone < 2) {
		snprintf(err, errlen, "the disk is too small for %d zones", ZONES);
		return -1;
	}
	d->cyls = d->cyls_per_zone * ZONES;
	d->zone_lba[0] = 0;
	for (z = 0; z < ZONES; z++)
		d->zone_lba[z + 1] = d->zone_lba[z] +
				     d->cyls_per_zone * (uint64_t)p->heads * (uint64_t)d->spt[z];
	/* b for the average seek; a curve that cannot give it is refused */
	for (i = 0; i < GRID; i++)
		grid[i] = locate(d, (d->sectors * (2 * i + 1)) / (2 * GRID)).cyl;
	d->seek_b = fit_seek_b(d, grid);
	d->seek_a = p->seek_track_us - d->seek_b * sqrt(1.0 / (d->cyls - 1));
	if (d->seek_b <= 0 || d->seek_a < 0 || d->seek_a + d->seek_b * sqrt(p->seek_knee) > p->seek_full_us) {
		snprintf(err, errlen, "no seek curve fits track %g, average %g, full %g us",
			 p->seek_track_us, p->seek_avg_us, p->seek_full_us);
		return -1;
	}
	return 0;
}

/* Time the media needs to transfer @n sectors from @lba on, switches included. */
static double media_ns(const struct dm_disk *d, uint64_t lba, uint64_t n)
{
	double t = 0;

	while (n) {
		struct chs c = locate(d, lba);
		uint64_t per = (uint64_t)d->spt[c.zone];
		uint64_t left = per - (lba - d->zone_lba[c.zone]) % per;
		uint64_t k = n < left ? n : left;

		t += k / d->spt[c.zone] * d->rot_ns;
		n -= k;
		lba += k;
		if (n)
			t += d->p.switch_us * NS_PER_US;
	}
	return t;
}

/* ---- HDD caches ------------------------------------------------------ */

static uint64_t seg_end(const struct segment *s, uint64_t t)
{
	uint64_t until = t < s->fill_until ? t : s->fill_until;
	uint64_t e = s->base_end;

	if (until > s->fill_from)
		e += (uint64_t)((until - s->fill_from) * s->rate);
	return e < s->cap_end ? e : s->cap_end;
}

/* Where the head is at time t: reading ahead, or where it stopped. */
static uint64_t head_at(const struct dm_disk *d, uint64_t t)
{
	return d->active_seg >= 0 ? seg_end(&d->seg[d->active_seg], t) : d->head_lba;
}

/* Positioning time to sector @lba if the mechanism starts at time @t. */
static double position_ns(const struct dm_disk *d, uint64_t lba, bool write, uint64_t t)
{
	struct chs from = locate(d, head_at(d, t)), to = locate(d, lba);
	double s = seek_ns(d, from.cyl, to.cyl), wait, arrive;

	if (!s && from.track != to.track)
		s = d->p.switch_us * NS_PER_US;
	if (write)
		s += d->p.write_settle_us * NS_PER_US;
	arrive = t + s;
	wait = fmod(to.angle - fmod(arrive / d->rot_ns, 1.0) + 2.0, 1.0) * d->rot_ns;
	return s + wait;
}

/* Segment that holds all of [lba, lba + n) at time t, or -1. */
static int cache_hit(const struct dm_disk *d, uint64_t lba, uint64_t n, uint64_t t)
{
	int i;

	for (i = 0; i < SEGMENTS; i++)
		if (d->seg[i].cap_end && lba >= d->seg[i].start &&
		    lba + n <= seg_end(&d->seg[i], t))
			return i;
	return -1;
}

/* The head stops reading ahead at time t (it is taken by a new request). */
static void stop_prefetch(struct dm_disk *d, uint64_t t)
{
	if (d->active_seg < 0)
		return;
	d->head_lba = seg_end(&d->seg[d->active_seg], t);
	d->seg[d->active_seg].fill_until = t;
	d->active_seg = -1;
}

/*
 * A read of [lba, lba + n) ended at t: the drive reads ahead into a segment,
 * the one the read continued or the least recently used one, which then holds
 * at most a segment's worth ending where the read-ahead stops.
 */
static void start_prefetch(struct dm_disk *d, uint64_t lba, uint64_t n, uint64_t t)
{
	uint64_t size = (uint64_t)(d->p.rcache / SEGMENTS / SECTOR);
	struct segment *s;
	int i, victim = 0;

	if (!size)
		return;
	for (i = 0; i < SEGMENTS; i++) {
		if (d->seg[i].cap_end && lba >= d->seg[i].start && lba <= d->seg[i].cap_end) {
			victim = i;
			break;
		}
		if (d->seg[i].used < d->seg[victim].used)
			victim = i;
	}
	s = &d->seg[victim];
	if (i == SEGMENTS)
		s->start = lba;
	s->base_end = lba + n;
	s->cap_end = min64(lba + n + size / 2, d->sectors);
	if (s->cap_end - s->start > size)
		s->start = s->cap_end - size;
	s->fill_from = t;
	s->fill_until = NONE;
	/* read-ahead crosses tracks too: it loses a switch per track */
	s->rate = d->spt[locate(d, lba + n).zone] / (d->rot_ns + d->p.switch_us * NS_PER_US);
	s->used = ++d->lru_clock;
	d->active_seg = victim;
	d->head_lba = lba + n;
}

/* Writes over cached sectors make the cached copy stale: drop the segment. */
static void cache_invalidate(struct dm_disk *d, uint64_t lba, uint64_t n, uint64_t t)
{
	int i;

	for (i = 0; i < SEGMENTS; i++)
		if (d->seg[i].cap_end && lba < seg_end(&d->seg[i], t) &&
		    lba + n > d->seg[i].start) {
			if (i == d->active_seg)
				stop_prefetch(d, t);
			d->seg[i].cap_end = 0;
		}
}

static bool dirty_add(struct dm_disk *d, uint64_t lba, uint64_t n)
{
	int i;

	if ((d->dirty_sectors + n) * SECTOR > d->p.wcache)
		return false;
	for (i = 0; i < d->ndirty; i++)
		if (d->dirty[i].lba + d->dirty[i].n == lba) {
			d->dirty[i].n += n;
			d->dirty_sectors += n;
			return true;
		}
	if (d->ndirty == MAX_DIRTY)
		return false;
	d->dirty[d->ndirty].lba = lba;
	d->dirty[d->ndirty++].n = n;
	d->dirty_sectors += n;
	return true;
}

/* ---- HDD mechanism ---------------------------------------------------- */

/*
 * Positioning and media time of @r if the mechanism takes it at time @t. A
 * read that starts inside what the head is reading ahead continues from there.
 */
static double access_ns(const struct dm_disk *d, const struct dm_req *r, uint64_t t)
{
	uint64_t lba = r->lba, n = r->n;

	if (!r->write && d->active_seg >= 0) {
		const struct segment *s = &d->seg[d->active_seg];
		uint64_t e = seg_end(s, t);

		if (lba >= s->start && lba <= e) {
			if (lba + n <= e)
				return 0;
			n = lba + n - e;
			lba = e;
			if (e < s->cap_end)
				return media_ns(d, lba, n);
		}
	}
	return position_ns(d, lba, r->write, t) + media_ns(d, lba, n);
}

/* Start serving @r (a request, or a destage) at @t: busy until its end. */
static void start_media(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	/* the head goes on reading ahead while the command is processed */
	t += (uint64_t)(d->p.overhead_us * NS_PER_US);
	d->busy_until = t + (uint64_t)access_ns(d, r, t);
	stop_prefetch(d, t);
	d->head_lba = r->lba + r->n;
	d->busy = true;
}

/* Pick the next request: the oldest past the aging bound, or SPTF. */
static struct dm_req **pick(struct dm_disk *d, uint64_t t)
{
	struct dm_req **best = NULL, **pp;
	double best_pos = 0;

	for (pp = &d->queue; *pp; pp = &(*pp)->next)
		if ((*pp)->flush || t - (*pp)->arrival > d->p.age_us * NS_PER_US)
			return pp;	/* the queue is in arrival order */
	for (pp = &d->queue; *pp; pp = &(*pp)->next) {
		double pos = access_ns(d, *pp, t + (uint64_t)(d->p.overhead_us * NS_PER_US));
		if (!best || pos < best_pos) {
			best = pp;
			best_pos = pos;
		}
	}
	return best;
}

/* Write back (at most DESTAGE sectors of) the dirty extent nearest the head. */
#define DESTAGE 2048

static void start_destage(struct dm_disk *d, uint64_t t)
{
	static struct dm_req dst;	/* only its position is read */
	double pos, best_pos = 0;
	int i, best = 0;

	for (i = 0; i < d->ndirty; i++) {
		pos = position_ns(d, d->dirty[i].lba, true,
				  t + (uint64_t)(d->p.overhead_us * NS_PER_US));
		if (!i || pos < best_pos) {
			best = i;
			best_pos = pos;
		}
	}
	dst = (struct dm_req){ .write = true, .lba = d->dirty[best].lba };
	dst.n = d->dirty[best].n < DESTAGE ? d->dirty[best].n : DESTAGE;
	d->dirty[best].lba += dst.n;
	d->dirty[best].n -= dst.n;
	if (!d->dirty[best].n)
		d->dirty[best] = d->dirty[--d->ndirty];
	d->destage_n = dst.n;
	d->cur = NULL;
	d->last_destage = true;
	start_media(d, &dst, t);
}

/* Destage when the cache is half full or no write came for a rotation. */
static bool destage_due(const struct dm_disk *d, uint64_t t)
{
	return d->dirty_sectors * SECTOR * 2 >= d->p.wcache ||
	       t - d->last_write >= d->idle_ns || d->wait_room;
}

/* The mechanism is free at @t: take the next job, if any. */
static void hdd_kick(struct dm_disk *d, uint64_t t)
{
	struct dm_req **pp, *r;

	if (d->busy)
		return;
	if (d->flushing) {
		if (d->ndirty) {
			start_destage(d, t);
			return;
		}
		r = d->flushing;
		d->flushing = NULL;
		done(d, r, t);
	}
	/* reads first: while writes wait for room, every other job destages */
	if (d->wait_room && d->ndirty && !d->last_destage) {
		start_destage(d, t);
		return;
	}
	if (d->queue) {
		pp = pick(d, t);
		r = *pp;
		*pp = r->next;
		d->last_destage = false;
		if (r->flush) {
			d->flushing = r;
			hdd_kick(d, t);
			return;
		}
		d->cur = r;
		start_media(d, r, t);
		return;
	}
	if (d->ndirty && destage_due(d, t))
		start_destage(d, t);
}

/* Writes waiting for room enter the cache as it drains, in order. */
static void admit_waiting(struct dm_disk *d, uint64_t t)
{
	while (d->wait_room && dirty_add(d, d->wait_room->lba, d->wait_room->n)) {
		struct dm_req *r = d->wait_room;

		d->wait_room = r->next;
		d->last_write = t;
		done(d, r, t + (uint64_t)(d->p.overhead_us * NS_PER_US +
					  mbs_ns(d->p.iface_mbs, r->n * SECTOR)));
	}
}

static void hdd_finish(struct dm_disk *d, uint64_t t)
{
	struct dm_req *r = d->cur;

	d->busy = false;
	if (r) {
		d->cur = NULL;
		if (!r->write)
			start_prefetch(d, r->lba, r->n, t);	/* the head reads on */
		done(d, r, t);
	} else {
		d->dirty_sectors -= d->destage_n;
		admit_waiting(d, t);
	}
}

static void enqueue(struct dm_req **q, struct dm_req *r)
{
	while (*q)
		q = &(*q)->next;
	r->next = NULL;
	*q = r;
}

static void hdd_submit(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	uint64_t iface = (uint64_t)(d->p.overhead_us * NS_PER_US +
				    mbs_ns(d->p.iface_mbs, r->n * SECTOR));
	bool cached = false;	/* served by the controller: a read hit, a cached write */
	int hit;

	if (r->write) {
		d->last_write = t;
		cache_invalidate(d, r->lba, r->n, t);
		bool waits = !r->fua && d->p.wc_policy == DM_WC_READS_FIRST &&
			     r->n * SECTOR <= d->p.wcache;

		if (waits && !d->wait_room && dirty_add(d, r->lba, r->n)) {
			cached = true;
		} else if (waits) {
			enqueue(&d->wait_room, r);
			hdd_kick(d, t);
			return;
		} else {
			cached = !r->fua && dirty_add(d, r->lba, r->n);
		}
	} else if (!r->flush) {
		hit = cache_hit(d, r->lba, r->n, t);
		if (hit >= 0) {
			d->seg[hit].used = ++d->lru_clock;
			cached = true;
		}
	}
	if (cached) {
		r->done_at = t + iface;
		return;
	}
	enqueue(&d->queue, r);
	hdd_kick(d, t);
}

static uint64_t hdd_next(const struct dm_disk *d)
{
	if (d->busy)
		return d->busy_until;
	if (d->ndirty && !d->queue)
		return d->last_write + d->idle_ns;	/* destage_due() */
	return NONE;
}

static void hdd_advance(struct dm_disk *d, uint64_t t)
{
	uint64_t ev;

	while ((ev = hdd_next(d)) <= t) {
		if (d->busy)
			hdd_finish(d, ev);
		hdd_kick(d, ev);
		/* an event that changes nothing would come back forever */
		if (!d->busy && hdd_next(d) == ev) {
			fprintf(stderr, "diskmodel: no progress at %llu ns (a bug)\n",
				(unsigned long long)ev);
			abort();
		}
	}
}

/* ---- SSD ------------------------------------------------------------- */

static void ssd_submit(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	const struct dm_params *p = &d->p;
	uint64_t count = r->n * SECTOR, start, end, page, u;
	uint64_t first = r->lba * SECTOR / 4096;
	uint64_t last = (r->lba * SECTOR + (count ? count : 1) - 1) / 4096;

	if (p->gc_every_ms > 0) {
		/* garbage collection: every unit busy for gc_us, now and then */
		uint64_t every = (uint64_t)(p->gc_every_ms * 1e6);

		if (!d->next_gc)
			d->next_gc = every;
		while (t >= d->next_gc) {
			for (u = 0; u < (uint64_t)p->units; u++)
				d->unit_free[u] = max64(d->unit_free[u], d->next_gc) +
						  (uint64_t)(p->gc_us * NS_PER_US);
			d->next_gc += every;
		}
	}
	d->ctrl_free = max64(t, d->ctrl_free) + (uint64_t)(p->cmd_us * NS_PER_US);
	start = d->ctrl_free;
	if (r->flush) {
		end = start + (uint64_t)(p->flush_us * NS_PER_US);
	} else if (r->write) {
		/* over the link into the write cache, which drains continuously */
		uint64_t in = max64(start, d->link_free) + (uint64_t)mbs_ns(p->link_mbs, count);
		double drained = (in > d->wc_when ? in - d->wc_when : 0) * p->drain_mbs / 1000.0;

		d->link_free = in;
		d->wc_level = d->wc_level > drained ? d->wc_level - drained : 0;
		d->wc_when = max64(in, d->wc_when);
		end = in;
		if (d->wc_level + count > p->wcache)
			end += (uint64_t)((d->wc_level + count - p->wcache) / p->drain_mbs * 1000.0);
		d->wc_level += count;
		end += (uint64_t)(p->fixed_us * NS_PER_US);
	} else {
		uint64_t media = start, xfer;

		for (page = first; page <= last; page++) {
			uint64_t *uf = &d->unit_free[page % (uint64_t)p->units];

			*uf = max64(start, *uf) + (uint64_t)((p->read_us + p->page_xfer_us) * NS_PER_US);
			media = max64(media, *uf);
		}
		/* the link streams the data out as the pages become ready */
		xfer = (uint64_t)mbs_ns(p->link_mbs, count);
		d->link_free = max64(max64(media > xfer ? media - xfer : 0, start), d->link_free) + xfer;
		end = max64(d->link_free, media) + (uint64_t)(p->fixed_us * NS_PER_US);
	}
	r->done_at = end;
}

/* ---- FIFO ------------------------------------------------------------ */

static void fifo_submit(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	uint64_t svc = (uint64_t)(d->p.cmd_us * NS_PER_US);

	if (!r->flush)
		svc += (uint64_t)mbs_ns(d->p.media_mbs, r->n * SECTOR);
	d->fifo_free = max64(t, d->fifo_free) + svc;
	r->done_at = d->fifo_free;
}

/* ---- QEMU's throttle bucket ------------------------------------------ */

static void bucket_leak(struct dm_disk *d, uint64_t t)
{
	double s = (t - d->leak_t) / 1e9;

	d->lvl_b = fmax(0, d->lvl_b - s * d->p.bps);
	d->lvl_i = fmax(0, d->lvl_i - s * d->p.iops);
	d->leak_t = t;
}

/* ns until a request may go at the levels now: 0 when it may go at once. */
static uint64_t bucket_wait(const struct dm_disk *d)
{
	double wb = 0, wi = 0;

	if (d->p.bps && d->lvl_b > d->p.bps / 10)
		wb = (d->lvl_b - d->p.bps / 10) / d->p.bps * 1e9;
	if (d->p.iops && d->lvl_i > d->p.iops / 10)
		wi = (d->lvl_i - d->p.iops / 10) / d->p.iops * 1e9;
	return (uint64_t)ceil(fmax(wb, wi));
}

static void bucket_go(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	d->lvl_b += r->n * SECTOR;
	d->lvl_i += 1;
	done(d, r, t + (uint64_t)(d->p.io_us * NS_PER_US + mbs_ns(d->p.iface_mbs, r->n * SECTOR)));
}

/* Let the heads of both directions go while the levels allow, reads first. */
static void bucket_run(struct dm_disk *d, uint64_t t)
{
	int dir;

	bucket_leak(d, t);
	d->thr_timer = NONE;
	for (;;) {
		bool went = false;

		for (dir = 0; dir < 2; dir++) {
			struct dm_req *r = d->thr[dir];

			if (!r || bucket_wait(d))
				continue;
			d->thr[dir] = r->next;
			if (!d->thr[dir])
				d->thr_tail[dir] = &d->thr[dir];
			bucket_go(d, r, t);
			went = true;
		}
		if (!went)
			break;
	}
	if (d->thr[0] || d->thr[1])
		d->thr_timer = t + max64(bucket_wait(d), 1);
}

static void bucket_submit(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	int dir = r->write;

	r->next = NULL;
	*d->thr_tail[dir] = r;
	d->thr_tail[dir] = &r->next;
	bucket_run(d, t);
}

/* ---- common ---------------------------------------------------------- */

/* The parameters each kind uses and their ranges: 0, or -1 with @err naming one. */
static int check_params(const struct dm_params *p, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < kinds[p->kind].n; i++) {
		const struct range *r = &kinds[p->kind].r[i];
		double v = *(const double *)((const char *)p + r->off);

		if (!isfinite(v) || v < r->lo || ((r->flags & ABOVE) && v == r->lo) ||
		    v > r->hi || ((r->flags & WHOLE) && v != floor(v))) {
			snprintf(err, errlen, "%s=%g: must be a %s %s %g and at most %g", r->key, v,
				 r->flags & WHOLE ? "whole number" : "number",
				 r->flags & ABOVE ? "over" : "of at least", r->lo, r->hi);
			return -1;
		}
	}
	if (p->kind == DM_SSD && p->gc_every_ms > 0 && p->gc_every_ms < 1) {
		snprintf(err, errlen, "gc_every_ms=%g: must be 0 (none) or at least 1", p->gc_every_ms);
		return -1;
	}
	if (p->kind == DM_HDD && p->outer_mbs < p->inner_mbs) {
		snprintf(err, errlen, "outer_mbs=%g: must be at least inner_mbs=%g",
			 p->outer_mbs, p->inner_mbs);
		return -1;
	}
	return 0;
}

struct dm_disk *dm_new(const struct dm_params *p, uint64_t sectors,
		       dm_complete_fn fn, void *ctx, char *err, size_t errlen)
{
	struct dm_disk *d;

	if (check_params(p, err, errlen))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return NULL;
	}
	d->p = *p;
	d->p.wc_policy = (int)p->wc_policy;
	d->complete = fn;
	d->ctx = ctx;
	d->sectors = sectors;
	d->active_seg = -1;
	d->thr_tail[0] = &d->thr[0];
	d->thr_tail[1] = &d->thr[1];
	d->thr_timer = NONE;
	if (p->kind == DM_HDD && hdd_init(d, err, errlen)) {
		free(d);
		return NULL;
	}
	return d;
}

void dm_free(struct dm_disk *d)
{
	free(d);
}

void dm_submit(struct dm_disk *d, struct dm_req *r, uint64_t t)
{
	r->arrival = t;
	r->done_at = 0;
	switch (d->p.kind) {
	case DM_HDD:
		hdd_advance(d, t);
		hdd_submit(d, r, t);
		break;
	case DM_SSD:
		ssd_submit(d, r, t);
		break;
	case DM_FIFO:
		fifo_submit(d, r, t);
		break;
	case DM_BUCKET:
		bucket_submit(d, r, t);
		break;
	}
}

uint64_t dm_next(const struct dm_disk *d)
{
	if (d->p.kind == DM_HDD)
		return hdd_next(d);
	if (d->p.kind == DM_BUCKET)
		return d->thr_timer;
	return NONE;
}

void dm_advance(struct dm_disk *d, uint64_t t)
{
	if (d->p.kind == DM_HDD)
		hdd_advance(d, t);
	else if (d->p.kind == DM_BUCKET && d->thr_timer <= t)
		bucket_run(d, d->thr_timer);
}

void dm_info(const struct dm_disk *d, FILE *f)
{
	const struct dm_params *p = &d->p;
	static const char *const kind_names[] = { "hdd", "ssd", "fifo", "bucket" };

	fprintf(f, "profile=%s\nkind=%s\nsectors=%llu\n", p->name ? p->name : "custom",
		kind_names[p->kind], (unsigned long long)d->sectors);
	if (p->kind == DM_HDD) {
		fprintf(f, "rpm=%g\nseek_avg_us=%g\noverhead_us=%g\nouter_mbs=%g\ninner_mbs=%g\n",
			p->rpm, p->seek_avg_us, p->overhead_us, p->outer_mbs, p->inner_mbs);
		fprintf(f, "cylinders=%llu\nseek_a_us=%.1f\nseek_b_us=%.1f\nzone_sectors=%llu\n",
			(unsigned long long)d->cyls, d->seek_a, d->seek_b,
			(unsigned long long)d->zone_lba[1]);
		fprintf(f, "outer_spt=%g\ninner_spt=%g\nwcache=%g\nwc_policy=%s\n",
			d->spt[0], d->spt[ZONES - 1], p->wcache,
			p->wc_policy == DM_WC_READS_FIRST ? "reads-first" : "fcfs");
	} else if (p->kind == DM_SSD) {
		/* what the model gives: one 4 KiB read alone, and the bottleneck */
		double qd1 = p->cmd_us + p->read_us + p->page_xfer_us + p->fixed_us;
		double unit_iops = p->units * 1e6 / (p->read_us + p->page_xfer_us);
		double iops = fmin(fmin(1e6 / p->cmd_us, unit_iops), p->link_mbs * 1e6 / 4096);

		fprintf(f, "link_mbs=%g\nqd1_read_us=%g\nmax_iops=%.0f\n", p->link_mbs, qd1, iops);
	} else if (p->kind == DM_FIFO) {
		fprintf(f, "cmd_us=%g\nmedia_mbs=%g\n", p->cmd_us, p->media_mbs);
	} else {
		fprintf(f, "bps=%g\niops=%g\nio_us=%g\n", p->bps, p->iops, p->io_us);
	}
}
