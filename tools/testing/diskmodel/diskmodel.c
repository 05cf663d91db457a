// SPDX-License-Identifier: GPL-2.0
/*
 * nbdkit filter: the timing of a real disk in front of any nbdkit plugin.
 *
 * The plugin below (file, memory) stores the data; this filter only decides
 * when each request completes, from a model of the device:
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
 *      seek ends (the platter turns with wall-clock time); consecutive tracks
 *      are skewed by one switch time, so a sequential transfer only loses
 *      the switch at each track boundary.
 *      Queue: every request that misses the caches waits in the drive's
 *      queue; when the mechanism is free it takes the request with the
 *      shortest positioning time (seek + rotational wait), unless one has
 *      waited longer than the aging bound: then the oldest goes first.
 *      Read cache: SEGMENTS segments, least recently used replaced. After a
 *      read the drive keeps reading ahead into the segment at the sustained
 *      media rate (a switch per track) until the segment is full or the next
 *      request takes the head;
 *      a read that lies in what was read ahead costs overhead + interface
 *      transfer, and a read that starts inside it continues from there.
 *      Write cache (write-back): a write that fits costs overhead + interface
 *      transfer; dirty extents are destaged (SPTF among them) when the queue
 *      is empty. A write that does not fit and an FUA write go to the media
 *      through the queue. FLUSH destages everything first.
 *
 * ssd  A controller that starts one command every CMD_NS, UNITS flash units
 *      (4 KiB pages striped over them), each serving its page reads FIFO in
 *      READ_NS, and a link of LINK_MBS: a request completes when its last page
 *      has crossed the link, so latency grows with the bytes outstanding.
 *      Writes land in a write cache of WCACHE bytes that drains at DRAIN_MBS;
 *      once it is full a write waits until there is room for it.
 *
 * The model runs in wall-clock time (CLOCK_MONOTONIC), multiplied by
 * timescale= (default 1): timescale=8 makes every modelled time 8 times
 * longer, so that a host-side validation can see the model and not the
 * transport when the modelled times are microseconds.
 *
 * Parameters: profile=NAME selects a parameter set below; any parameter can
 * then be overridden by name (times in microseconds, rates in MB/s, sizes in
 * bytes). info=PATH writes the effective parameters and derived figures to
 * PATH as key=value lines once the disk's size is known.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define SECTOR 512
#define ZONES 16
#define SEGMENTS 16
#define MAX_DIRTY 64
#define NS_PER_US 1000.0
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum kind { HDD, SSD };

/* One parameter set. Times in microseconds, rates in MB/s (10^6 bytes/s). */
struct params {
	const char *name;
	enum kind kind;
	/* hdd */
	double rpm, heads, outer_mbs, inner_mbs;
	double seek_track_us, seek_avg_us, seek_full_us, seek_knee;
	double write_settle_us, switch_us, overhead_us, iface_mbs;
	double age_us, rcache, wcache;
	/* ssd */
	double cmd_us, units, read_us, page_xfer_us, fixed_us, link_mbs, drain_mbs;
	double flush_us;
};

/*
 * The profiles. Figures are those of the drive class's datasheets, as cited
 * in Documentation/device-models.md; the shape parameters (knee, switch,
 * overhead, aging bound, cache split) are typical values from the disk
 * modelling literature, not from one drive.
 */
static const struct params profiles[] = {
	{ .name = "hdd7200", .kind = HDD,	/* 3.5" desktop, 7200 rpm */
	  .rpm = 7200, .heads = 4, .outer_mbs = 250, .inner_mbs = 120,
	  .seek_track_us = 800, .seek_avg_us = 8500, .seek_full_us = 17000,
	  .seek_knee = 0.2, .write_settle_us = 300, .switch_us = 800,
	  .overhead_us = 200, .iface_mbs = 600, .age_us = 500000,
	  .rcache = 64 << 20, .wcache = 16 << 20 },
	{ .name = "hdd5400", .kind = HDD,	/* 2.5" laptop, 5400 rpm */
	  .rpm = 5400, .heads = 2, .outer_mbs = 130, .inner_mbs = 65,
	  .seek_track_us = 1000, .seek_avg_us = 12000, .seek_full_us = 20000,
	  .seek_knee = 0.2, .write_settle_us = 500, .switch_us = 1000,
	  .overhead_us = 300, .iface_mbs = 600, .age_us = 500000,
	  .rcache = 32 << 20, .wcache = 8 << 20 },
	{ .name = "ssd", .kind = SSD,		/* SATA TLC SSD with DRAM */
	  .cmd_us = 11, .units = 8, .read_us = 55, .page_xfer_us = 3,
	  .fixed_us = 11, .link_mbs = 550, .wcache = 1024 << 20,
	  .drain_mbs = 200, .flush_us = 500 },
};

/* A request in the HDD's queue (or a destage of a dirty extent). */
struct req {
	uint64_t lba, n;		/* sectors */
	bool write, flush;
	uint64_t arrival;		/* model ns */
	bool done;
	struct req *next;
};

struct segment {
	uint64_t start, base_end, cap_end;	/* sectors */
	uint64_t fill_from, fill_until;		/* model ns: prefetch running */
	double rate;				/* sectors per model ns */
	uint64_t used;				/* LRU stamp */
};

struct extent { uint64_t lba, n; };

static struct params p;			/* the effective parameters */
static double timescale = 1;
static const char *info_path;
static bool initialised;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;		/* on CLOCK_MONOTONIC: dm_load() */
static pthread_t drive_thread;
static bool drive_running, stopping;
static uint64_t t0;			/* CLOCK_MONOTONIC ns at start */

/* hdd geometry and state */
static uint64_t sectors, cyls_per_zone, zone_lba[ZONES + 1];
static double spt[ZONES], rot_ns, seek_a, seek_b;
static uint64_t cyls;
static struct req *queue;
static uint64_t head_lba;		/* where the head is (last sector + 1) */
static struct segment seg[SEGMENTS];
static int active_seg = -1;		/* segment the head is reading ahead into */
static uint64_t lru_clock;
static struct extent dirty[MAX_DIRTY];
static int ndirty;
static uint64_t dirty_sectors, last_write;

/* ssd state, in model ns */
static uint64_t ctrl_free, link_free, unit_free[64];
static double wc_level;			/* bytes in the write cache */
static uint64_t wc_when;

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

/* Sleep until model time @t. */
static void sleep_until(uint64_t t)
{
	uint64_t real = t0 + (uint64_t)(t * timescale);
	struct timespec ts = { real / 1000000000, real % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static double mbs_ns(double mbs, uint64_t bytes)
{
	return bytes / mbs * 1000.0;	/* MB/s = bytes per us */
}

/* ---- HDD geometry ---------------------------------------------------- */

struct chs { uint64_t cyl, track; int zone; double angle; };

static struct chs locate(uint64_t lba)
{
	struct chs c;
	int z = 0;
	uint64_t off, trk;

	if (lba >= sectors)
		lba = sectors - 1;
	while (z < ZONES - 1 && lba >= zone_lba[z + 1])
		z++;
	off = lba - zone_lba[z];
	trk = off / (uint64_t)spt[z];
	c.zone = z;
	c.track = z * cyls_per_zone * (uint64_t)p.heads + trk;
	c.cyl = c.track / (uint64_t)p.heads;
	/* sector's angle, with one switch time of skew per track */
	c.angle = fmod((off % (uint64_t)spt[z]) / spt[z] +
		       c.track * (p.switch_us * NS_PER_US / rot_ns), 1.0);
	return c;
}

static double seek_ns_frac(double x)	/* x = distance / stroke, 0..1 */
{
	double knee_t;

	if (x <= 0)
		return 0;
	knee_t = seek_a + seek_b * sqrt(p.seek_knee);
	if (x <= p.seek_knee)
		return (seek_a + seek_b * sqrt(x)) * NS_PER_US;
	return (knee_t + (p.seek_full_us - knee_t) * (x - p.seek_knee) /
		(1 - p.seek_knee)) * NS_PER_US;
}

static double seek_ns(uint64_t from_cyl, uint64_t to_cyl)
{
	uint64_t d = from_cyl > to_cyl ? from_cyl - to_cyl : to_cyl - from_cyl;

	return seek_ns_frac((double)d / (cyls - 1));
}

#define GRID 512

/* Mean seek time over pairs of sectors drawn uniformly, for seek_b = b. */
static double mean_seek_us(double b, const uint64_t *cyl)
{
	double sum = 0;
	int i, j;

	seek_b = b;
	seek_a = p.seek_track_us - b * sqrt(1.0 / (cyls - 1));
	for (i = 0; i < GRID; i++)
		for (j = 0; j < GRID; j++)
			sum += seek_ns(cyl[i], cyl[j]) / NS_PER_US;
	return sum / GRID / GRID;
}

static int hdd_init(void)
{
	double sum_spt = 0, lo = 0, hi = p.seek_full_us * 4;
	uint64_t grid[GRID];
	int z, i;

	rot_ns = 60e9 / p.rpm;
	for (z = 0; z < ZONES; z++) {
		double mbs = p.outer_mbs - (p.outer_mbs - p.inner_mbs) * z / (ZONES - 1);

		/* the sustained rate includes one switch per track */
		spt[z] = floor(mbs * 1e6 * (rot_ns + p.switch_us * NS_PER_US) / 1e9 / SECTOR);
		sum_spt += spt[z];
	}
	cyls_per_zone = (uint64_t)ceil(sectors / (p.heads * sum_spt));
	if (cyls_per_zone < 2) {
		nbdkit_error("diskmodel: the disk is too small for %d zones", ZONES);
		return -1;
	}
	cyls = cyls_per_zone * ZONES;
	zone_lba[0] = 0;
	for (z = 0; z < ZONES; z++)
		zone_lba[z + 1] = zone_lba[z] +
				  cyls_per_zone * (uint64_t)p.heads * (uint64_t)spt[z];
	/* solve for b: the mean seek grows with b */
	for (i = 0; i < GRID; i++)
		grid[i] = locate((sectors * (2 * i + 1)) / (2 * GRID)).cyl;
	for (i = 0; i < 40; i++) {
		double mid = (lo + hi) / 2;

		if (mean_seek_us(mid, grid) < p.seek_avg_us)
			lo = mid;
		else
			hi = mid;
	}
	mean_seek_us((lo + hi) / 2, grid);
	if (seek_a < 0 || seek_a + seek_b * sqrt(p.seek_knee) > p.seek_full_us) {
		nbdkit_error("diskmodel: no seek curve fits track %g, average %g, full %g us",
			     p.seek_track_us, p.seek_avg_us, p.seek_full_us);
		return -1;
	}
	return 0;
}

/* Time the media needs to transfer @n sectors from @lba on, switches included. */
static double media_ns(uint64_t lba, uint64_t n)
{
	double t = 0;

	while (n) {
		struct chs c = locate(lba);
		uint64_t per = (uint64_t)spt[c.zone];
		uint64_t left = per - (lba - zone_lba[c.zone]) % per;
		uint64_t k = n < left ? n : left;

		t += k / spt[c.zone] * rot_ns;
		n -= k;
		lba += k;
		if (n)
			t += p.switch_us * NS_PER_US;
	}
	return t;
}

static uint64_t seg_end(const struct segment *s, uint64_t t);

/* Where the head is at time t: reading ahead, or where it stopped. */
static uint64_t head_at(uint64_t t)
{
	return active_seg >= 0 ? seg_end(&seg[active_seg], t) : head_lba;
}

/* Positioning time to sector @lba if the mechanism starts at model time @t. */
static double position_ns(uint64_t lba, bool write, uint64_t t)
{
	struct chs from = locate(head_at(t)), to = locate(lba);
	double s = seek_ns(from.cyl, to.cyl), wait, arrive;

	if (!s && from.track != to.track)
		s = p.switch_us * NS_PER_US;
	if (write)
		s += p.write_settle_us * NS_PER_US;
	arrive = t + s;
	wait = fmod(to.angle - fmod(arrive / rot_ns, 1.0) + 2.0, 1.0) * rot_ns;
	return s + wait;
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

/* Segment that holds all of [lba, lba + n) at time t, or -1. */
static int cache_hit(uint64_t lba, uint64_t n, uint64_t t)
{
	int i;

	for (i = 0; i < SEGMENTS; i++)
		if (seg[i].cap_end && lba >= seg[i].start && lba + n <= seg_end(&seg[i], t))
			return i;
	return -1;
}

/* The head stops reading ahead at time t (it is taken by a new request). */
static void stop_prefetch(uint64_t t)
{
	if (active_seg < 0)
		return;
	head_lba = seg_end(&seg[active_seg], t);
	seg[active_seg].fill_until = t;
	active_seg = -1;
}

/*
 * A read of [lba, lba + n) ended at t: the drive reads ahead into a segment,
 * the one the read continued or the least recently used one, which then holds
 * at most a segment's worth ending where the read-ahead stops.
 */
static void start_prefetch(uint64_t lba, uint64_t n, uint64_t t)
{
	uint64_t size = (uint64_t)(p.rcache / SEGMENTS / SECTOR);
	struct segment *s;
	int i, victim = 0;

	if (!size)
		return;
	for (i = 0; i < SEGMENTS; i++) {
		if (seg[i].cap_end && lba >= seg[i].start && lba <= seg[i].cap_end) {
			victim = i;
			break;
		}
		if (seg[i].used < seg[victim].used)
			victim = i;
	}
	s = &seg[victim];
	if (i == SEGMENTS)
		s->start = lba;
	s->base_end = lba + n;
	s->cap_end = lba + n + size / 2 < sectors ? lba + n + size / 2 : sectors;
	if (s->cap_end - s->start > size)
		s->start = s->cap_end - size;
	s->fill_from = t;
	s->fill_until = UINT64_MAX;
	/* read-ahead crosses tracks too: it loses a switch per track */
	s->rate = spt[locate(lba + n).zone] / (rot_ns + p.switch_us * NS_PER_US);
	s->used = ++lru_clock;
	active_seg = victim;
	head_lba = lba + n;
}

/* Writes over cached sectors make the cached copy stale: drop the segment. */
static void cache_invalidate(uint64_t lba, uint64_t n, uint64_t t)
{
	int i;

	for (i = 0; i < SEGMENTS; i++)
		if (seg[i].cap_end && lba < seg_end(&seg[i], t) && lba + n > seg[i].start) {
			if (i == active_seg)
				stop_prefetch(t);
			seg[i].cap_end = 0;
		}
}

static bool dirty_add(uint64_t lba, uint64_t n)
{
	int i;

	if ((dirty_sectors + n) * SECTOR > p.wcache)
		return false;
	for (i = 0; i < ndirty; i++)
		if (dirty[i].lba + dirty[i].n == lba) {
			dirty[i].n += n;
			dirty_sectors += n;
			return true;
		}
	if (ndirty == MAX_DIRTY)
		return false;
	dirty[ndirty].lba = lba;
	dirty[ndirty++].n = n;
	dirty_sectors += n;
	return true;
}

/* ---- HDD mechanism: one thread serves the queue ---------------------- */

/*
 * Positioning and media time of @r if the mechanism takes it at time @t. A
 * read that starts inside what the head is reading ahead continues from there.
 */
static double access_ns(const struct req *r, uint64_t t)
{
	uint64_t lba = r->lba, n = r->n;

	if (!r->write && active_seg >= 0) {
		const struct segment *s = &seg[active_seg];
		uint64_t e = seg_end(s, t);

		if (lba >= s->start && lba <= e) {
			if (lba + n <= e)
				return 0;
			n = lba + n - e;
			lba = e;
			if (e < s->cap_end)
				return media_ns(lba, n);
		}
	}
	return position_ns(lba, r->write, t) + media_ns(lba, n);
}

static void serve_media(struct req *r, uint64_t t)
{
	uint64_t end;

	/* the head goes on reading ahead while the command is processed */
	t += (uint64_t)(p.overhead_us * NS_PER_US);
	end = t + (uint64_t)access_ns(r, t);
	stop_prefetch(t);
	head_lba = r->lba + r->n;
	pthread_mutex_unlock(&lock);
	sleep_until(end);
	pthread_mutex_lock(&lock);
	if (!r->write)
		start_prefetch(r->lba, r->n, end);	/* the head reads on from the end */
}

/* Pick the next request: the oldest past the aging bound, or SPTF. */
static struct req **pick(uint64_t t)
{
	struct req **best = NULL, **pp;
	double best_pos = 0;

	for (pp = &queue; *pp; pp = &(*pp)->next)
		if ((*pp)->flush || t - (*pp)->arrival > p.age_us * NS_PER_US)
			return pp;	/* the queue is in arrival order */
	for (pp = &queue; *pp; pp = &(*pp)->next) {
		double pos = access_ns(*pp, t + (uint64_t)(p.overhead_us * NS_PER_US));

		if (!best || pos < best_pos) {
			best = pp;
			best_pos = pos;
		}
	}
	return best;
}

/* Write back (at most DESTAGE sectors of) the dirty extent nearest the head. */
#define DESTAGE 2048

static void destage_one(uint64_t t)
{
	struct req d = { .write = true };
	double pos, best_pos = 0;
	int i, best = 0;

	for (i = 0; i < ndirty; i++) {
		pos = position_ns(dirty[i].lba, true, t + (uint64_t)(p.overhead_us * NS_PER_US));
		if (!i || pos < best_pos) {
			best = i;
			best_pos = pos;
		}
	}
	d.lba = dirty[best].lba;
	d.n = dirty[best].n < DESTAGE ? dirty[best].n : DESTAGE;
	dirty[best].lba += d.n;
	dirty[best].n -= d.n;
	if (!dirty[best].n)
		dirty[best] = dirty[--ndirty];
	serve_media(&d, t);
	dirty_sectors -= d.n;
	pthread_cond_broadcast(&cond);
}

/* Destage when the cache is half full or no write came for a rotation. */
static bool destage_due(uint64_t t)
{
	return dirty_sectors * SECTOR * 2 >= p.wcache || t - last_write >= rot_ns;
}

static void *drive(void *arg)
{
	prctl(PR_SET_TIMERSLACK, 1UL);
	pthread_mutex_lock(&lock);
	while (!stopping) {
		uint64_t t = now();

		if (queue) {
			struct req **pp = pick(t), *r = *pp;

			*pp = r->next;
			if (r->flush) {
				while (ndirty)
					destage_one(now());
			} else {
				serve_media(r, t);
			}
			r->done = true;
			pthread_cond_broadcast(&cond);
		} else if (ndirty && destage_due(t)) {
			destage_one(t);
		} else if (ndirty) {
			uint64_t real = t0 + (uint64_t)((last_write + rot_ns) * timescale);
			struct timespec ts = { real / 1000000000, real % 1000000000 };

			pthread_cond_timedwait(&cond, &lock, &ts);
		} else {
			pthread_cond_wait(&cond, &lock);
		}
	}
	pthread_mutex_unlock(&lock);
	return arg;
}

/* Queue @r for the mechanism and wait for it. Called with the lock held. */
static void hdd_queue(struct req *r)
{
	struct req **pp = &queue;

	while (*pp)
		pp = &(*pp)->next;
	*pp = r;
	pthread_cond_broadcast(&cond);
	while (!r->done)
		pthread_cond_wait(&cond, &lock);
}

static void hdd_io(uint64_t offset, uint32_t count, bool write, bool fua, bool flush)
{
	struct req r = { .lba = offset / SECTOR, .write = write, .flush = flush };
	bool cached = false;	/* served by the controller: a read hit, a cached write */
	uint64_t t, iface;
	int hit;

	r.n = (offset + count + SECTOR - 1) / SECTOR - r.lba;
	iface = (uint64_t)(p.overhead_us * NS_PER_US + mbs_ns(p.iface_mbs, count));
	pthread_mutex_lock(&lock);
	t = now();
	r.arrival = t;
	if (write) {
		last_write = t;
		cache_invalidate(r.lba, r.n, t);
		cached = !fua && dirty_add(r.lba, r.n);
	} else if (!flush) {
		hit = cache_hit(r.lba, r.n, t);
		if (hit >= 0) {
			seg[hit].used = ++lru_clock;
			cached = true;
		}
	}
	if (!cached)
		hdd_queue(&r);
	pthread_mutex_unlock(&lock);
	if (cached)
		sleep_until(t + iface);
}

/* ---- SSD ------------------------------------------------------------- */

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void ssd_io(uint64_t offset, uint32_t count, bool write, bool flush)
{
	uint64_t t, start, done, page;
	uint64_t first = offset / 4096, last = (offset + (count ? count : 1) - 1) / 4096;

	pthread_mutex_lock(&lock);
	t = now();
	ctrl_free = max64(t, ctrl_free) + (uint64_t)(p.cmd_us * NS_PER_US);
	start = ctrl_free;
	if (flush) {
		done = start + (uint64_t)(p.flush_us * NS_PER_US);
	} else if (write) {
		/* over the link into the write cache, which drains continuously */
		uint64_t in = max64(start, link_free) + (uint64_t)mbs_ns(p.link_mbs, count);
		double drained = (in > wc_when ? in - wc_when : 0) * p.drain_mbs / 1000.0;

		link_free = in;
		wc_level = wc_level > drained ? wc_level - drained : 0;
		wc_when = max64(in, wc_when);
		done = in;
		if (wc_level + count > p.wcache)
			done += (uint64_t)((wc_level + count - p.wcache) / p.drain_mbs * 1000.0);
		wc_level += count;
		done += (uint64_t)(p.fixed_us * NS_PER_US);
	} else {
		uint64_t media = start;

		for (page = first; page <= last; page++) {
			uint64_t *u = &unit_free[page % (uint64_t)p.units];

			*u = max64(start, *u) +
			     (uint64_t)((p.read_us + p.page_xfer_us) * NS_PER_US);
			media = max64(media, *u);
		}
		/* the link streams the data out as the pages become ready */
		uint64_t xfer = (uint64_t)mbs_ns(p.link_mbs, count);

		link_free = max64(max64(media > xfer ? media - xfer : 0, start), link_free) + xfer;
		done = max64(link_free, media) + (uint64_t)(p.fixed_us * NS_PER_US);
	}
	pthread_mutex_unlock(&lock);
	sleep_until(done);
}

/* ---- nbdkit glue ----------------------------------------------------- */

static void model_io(uint64_t offset, uint32_t count, bool write, bool fua, bool flush)
{
	prctl(PR_SET_TIMERSLACK, 1UL);
	if (p.kind == HDD)
		hdd_io(offset, count, write, fua, flush);
	else
		ssd_io(offset, count, write, flush);
}

static double *param_field(const char *key)
{
#define F(f) { #f, offsetof(struct params, f) }
	static const struct { const char *key; size_t off; } fields[] = {
		F(rpm), F(heads), F(outer_mbs), F(inner_mbs), F(seek_track_us),
		F(seek_avg_us), F(seek_full_us), F(seek_knee), F(write_settle_us),
		F(switch_us), F(overhead_us), F(iface_mbs), F(age_us), F(rcache),
		F(wcache), F(cmd_us), F(units), F(read_us), F(page_xfer_us),
		F(fixed_us), F(link_mbs), F(drain_mbs), F(flush_us),
	};
#undef F
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (!strcmp(key, fields[i].key))
			return (double *)((char *)&p + fields[i].off);
	return NULL;
}

static bool profile_set;
static char *overrides[64];
static int noverrides;

static int dm_config(nbdkit_next_config *next, nbdkit_backend *nxdata,
		     const char *key, const char *value)
{
	size_t i;

	if (!strcmp(key, "profile")) {
		for (i = 0; i < ARRAY_SIZE(profiles); i++)
			if (!strcmp(value, profiles[i].name)) {
				p = profiles[i];
				profile_set = true;
				return 0;
			}
		nbdkit_error("diskmodel: unknown profile '%s' (hdd7200, hdd5400, ssd)", value);
		return -1;
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
	if (param_field(key)) {
		char buf[256];

		if (noverrides == 64) {
			nbdkit_error("diskmodel: too many parameters");
			return -1;
		}
		snprintf(buf, sizeof(buf), "%s=%s", key, value);
		overrides[noverrides++] = strdup(buf);
		return 0;
	}
	return next(nxdata, key, value);
}

static int dm_config_complete(nbdkit_next_config_complete *next, nbdkit_backend *nxdata)
{
	int i;

	if (!profile_set) {
		nbdkit_error("diskmodel: profile= is required (hdd7200, hdd5400, ssd)");
		return -1;
	}
	for (i = 0; i < noverrides; i++) {
		char *eq = strchr(overrides[i], '='), *end;
		double v;

		*eq = 0;
		v = strtod(eq + 1, &end);
		if (*end || !(v >= 0)) {
			nbdkit_error("diskmodel: %s must be a non-negative number, not '%s'",
				     overrides[i], eq + 1);
			return -1;
		}
		*param_field(overrides[i]) = v;
	}
	if (p.kind == SSD && (p.units < 1 || p.units > 64)) {
		nbdkit_error("diskmodel: units must be 1..64");
		return -1;
	}
	if (p.kind == HDD && (p.heads < 1 || p.rpm <= 0 || p.inner_mbs <= 0 ||
			      p.outer_mbs < p.inner_mbs || p.seek_knee <= 0 || p.seek_knee >= 1)) {
		nbdkit_error("diskmodel: need heads >= 1, rpm > 0, %s",
			     "outer_mbs >= inner_mbs > 0 and 0 < seek_knee < 1");
		return -1;
	}
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
	fprintf(f, "profile=%s\nkind=%s\ntimescale=%g\nsectors=%llu\n", p.name,
		p.kind == HDD ? "hdd" : "ssd", timescale, (unsigned long long)sectors);
	if (p.kind == HDD) {
		fprintf(f, "rpm=%g\nseek_avg_us=%g\noverhead_us=%g\nouter_mbs=%g\ninner_mbs=%g\n",
			p.rpm, p.seek_avg_us, p.overhead_us, p.outer_mbs, p.inner_mbs);
		fprintf(f, "cylinders=%llu\nseek_a_us=%.1f\nseek_b_us=%.1f\nzone_sectors=%llu\n",
			(unsigned long long)cyls, seek_a, seek_b,
			(unsigned long long)zone_lba[1]);
		fprintf(f, "outer_spt=%g\ninner_spt=%g\n", spt[0], spt[ZONES - 1]);
	} else {
		/* what the model gives: one 4 KiB read alone, and the bottleneck */
		double qd1 = p.cmd_us + p.read_us + p.page_xfer_us + p.fixed_us;
		double unit_iops = p.units * 1e6 / (p.read_us + p.page_xfer_us);
		double iops = fmin(fmin(1e6 / p.cmd_us, unit_iops), p.link_mbs * 1e6 / 4096);

		fprintf(f, "link_mbs=%g\nqd1_read_us=%g\nmax_iops=%.0f\n", p.link_mbs, qd1, iops);
	}
	fclose(f);
}

static int dm_prepare(nbdkit_next *next, void *handle, int readonly)
{
	int64_t size = next->get_size(next);
	int ret = 0;

	if (size < 0)
		return -1;
	pthread_mutex_lock(&lock);
	if (!initialised) {
		sectors = size / SECTOR;
		if (p.kind == HDD)
			ret = hdd_init();
		if (!ret && p.kind == HDD) {
			if (pthread_create(&drive_thread, NULL, drive, NULL)) {
				nbdkit_error("diskmodel: cannot start the drive thread");
				ret = -1;
			} else {
				drive_running = true;
			}
		}
		if (!ret && info_path)
			write_info();
		initialised = !ret;
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

	if (drive_running) {
		pthread_mutex_lock(&lock);
		stopping = true;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		pthread_join(drive_thread, NULL);
	}
	for (i = 0; i < noverrides; i++)
		free(overrides[i]);
}

static int dm_is_rotational(nbdkit_next *next, void *handle)
{
	return p.kind == HDD;
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
		"profile=hdd7200|hdd5400|ssd  (required) the device model\n"
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
