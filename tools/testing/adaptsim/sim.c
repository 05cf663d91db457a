// SPDX-License-Identifier: GPL-2.0
/*
 * The block layer as the adaptive caps' law sees it, in simulated time, in
 * front of a device model (tools/testing/diskmodel/model.c), with the law
 * itself compiled from the kernel tree (block/blk-adapt-law.c, unchanged).
 *
 * What is modelled, as in Linux 7.3 with the series:
 *  - submission by tasks: each workload job is one task that submits its
 *    bios in order and blocks where the kernel's submitter blocks: a bio is
 *    split at the size cap (and, for ordinary buffers, where its pages end
 *    a request), and each piece in turn tries a back merge into a queued
 *    request, then is throttled (a large piece waits FIFO for a slot under
 *    the depth cap; waiters are never passed), then takes a scheduler tag
 *    (nr_requests; the task sleeps FIFO when none is free);
 *  - a piece that merges is never held; the request it makes large is
 *    counted (->merge);
 *  - mq-deadline's dispatch as far as the law can tell: reads before writes,
 *    a write after 2 x 16 reads while writes wait, FIFO otherwise;
 *  - the driver's queue depth (driver tags), then the backend's own limit
 *    (QEMU's NBD client: 16 in flight, the rest wait FIFO in QEMU);
 *  - blk-lat's accounting: windows armed by the first completion after a
 *    quiet spell, rolled every second while requests complete; per window
 *    the small requests' total and device times (blk-lat-hist.h buckets),
 *    large requests, bytes; busy time and peak of large requests in flight
 *    as blk-adapt.c keeps them, and the time since the window before.
 * Not modelled: CPU time (TCG's cost per request), plugging across tasks,
 * timer granularity (windows are exactly one second).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blk-adapt-law.h"
#include "sim.h"

#define SECTOR 512
#define SMALL_BYTES (64 * KIB)		/* blk-lat and blk-adapt: small requests */
#define PROBER_BS (4 * KIB)
#define PROBER_NS (SEC / 20)		/* 20 IOPS */
#define RAMP (2 * SEC)			/* fio's ramp_time */
#define STREAM_SPAN (2 * GIB)		/* the stream's file: size=2g */
#define W1S_STREAM_AT (2 * SEC)	/* W1s, W1ps: the stream starts two windows in */
#define PROBER_OFF (2 * GIB)		/* the prober's: offset=2g size=1g */
#define PROBER_SPAN (1 * GIB)
#define WB_BS (1 * MIB)			/* writeback bios */
#define WB_QUEUED 64			/* writeback bios kept in flight (nr_requests) */
#define WRITES_STARVED 32		/* mq-deadline: 2 batches of 16 */
#define MIN_KB_DEF (256 * KIB)		/* adapt_min_sectors_kb's default */
#define CONVERGE_RUN 3			/* windows in a row that make convergence */

const char *const sim_wl_name[WL_NR] = {
	[WL_W1] = "W1", [WL_W1P] = "W1p", [WL_W1S] = "W1s", [WL_W1PS] = "W1ps",
	[WL_W2D] = "W2d",
	[WL_W2] = "W2", [WL_W3] = "W3", [WL_W7] = "W7", [WL_W8] = "W8", [WL_W9] = "W9",
};

struct task;
struct rq;

struct bio {
	struct task *task;
	uint64_t off, bytes, split;	/* bytes already split off */
	bool write;
	uint64_t t_submit;
	unsigned int pieces;		/* pieces not completed */
	struct bio *next;		/* the task's queue of bios to submit */
};

struct rq {
	uint64_t off, bytes;
	bool write, counted;		/* counted as large by the controller */
	bool reported;			/* its completion came through the callback */
	uint64_t t_alloc, t_issue;
	struct bio *bios[64];		/* bios merged into it */
	unsigned int nbios;
	struct dm_req dm;
	struct rq *next;		/* scheduler or backend queue */
	struct task *owner;		/* for back merges of the task's next bio */
};

enum task_kind { T_STREAM, T_PROBER, T_WB };

struct task {
	enum task_kind kind;
	bool write;
	uint64_t bs, base, span, pos;
	unsigned int qd, inflight;	/* bios */
	struct bio *queue, **tail;	/* bios to submit, in order */
	bool blocked;			/* in the throttle or the tag wait */
	bool has_tag;			/* a freed tag was handed to it while it waited */
	bool tag_waiting;		/* its piece waits for a tag, since tag_since */
	uint64_t tag_since;
	bool piece_has_slot;		/* the blocked piece already has its slot */
	bool on;			/* the workload wants it running */
	uint64_t next_at;		/* prober: the next read's slot */
	struct task *wnext;		/* throttle or tag wait queue */
	struct rq *last_rq;		/* its last queued request, for back merges */
	bool stream;			/* its bytes count as the stream's */
};

/* Objects of one size, freed with the run: what is in flight at its end too. */
struct pool {
	size_t size;
	void *free;			/* free objects, linked through their first word */
	void **chunks;
	size_t nchunks;
};

static void *pool_get(struct pool *p)
{
	void *o = p->free;

	if (!o) {
		char *c = calloc(64, p->size);
		size_t i;

		p->chunks = realloc(p->chunks, (p->nchunks + 1) * sizeof(*p->chunks));
		if (!c || !p->chunks)
			abort();
		p->chunks[p->nchunks++] = c;
		for (i = 0; i < 64; i++) {
			*(void **)(c + i * p->size) = p->free;
			p->free = c + i * p->size;
		}
		o = p->free;
	}
	p->free = *(void **)o;
	memset(o, 0, p->size);
	return o;
}

static void pool_put(struct pool *p, void *o)
{
	*(void **)o = p->free;
	p->free = o;
}

static void pool_destroy(struct pool *p)
{
	while (p->nchunks)
		free(p->chunks[--p->nchunks]);
	free(p->chunks);
}

enum ev_kind { EV_DONE, EV_PROBE, EV_WINDOW, EV_PHASE, EV_RESUME, EV_ARRIVE, EV_START };

struct event {
	uint64_t t, seq;
	enum ev_kind kind;
	void *p;
};

struct acct {
	uint64_t all[BLK_LAT_BUCKETS], dev[BLK_LAT_BUCKETS];
	uint64_t small, all_max, dev_max, large, bytes, requests;
};

struct sim {
	const struct sim_dev *dev;
	const struct sim_cfg *cfg;
	struct dm_disk *disk;
	uint64_t now, seq, rng;
	struct event *heap;
	size_t nheap, heap_cap;

	/* the controller */
	bool on;
	struct blk_adapt_limits lim;
	struct blk_adapt_state st;
	struct blk_adapt_tail tail;
	uint64_t cap;			/* q->adapt_max_sectors in bytes, 0: none */
	unsigned int depth, inflight, peak;
	uint64_t busy_ns, busy_start, last_window;
	unsigned int conv_run;		/* windows in a row within 5/4 T */
	uint64_t conv_from;		/* the first of them */
	struct task *twait, **twait_tail;	/* throttle waiters */
	/* blk-lat */
	struct acct acc;
	bool parked;
	uint64_t win_start;
	/* tags and queues */
	unsigned int sched_used, nr_requests, drv_inflight, be_inflight;
	struct task *tagwait, **tagwait_tail;
	struct rq *sched_q[2], **sched_tail[2];	/* read, write */
	struct rq *be_q, **be_tail;
	unsigned int reads_since_write;
	/* workloads */
	struct task tasks[4];
	unsigned int ntasks;
	uint64_t measure_from, end;
	double *lat;			/* prober latencies, ms */
	size_t nlat, lat_cap;
	uint64_t stream_bytes;
	/* the law's path */
	uint64_t *budgets;
	size_t nbudgets, budgets_cap;
	struct sim_res *res;
	struct pool rqs, bios;
	uint64_t demand;		/* the streams' bytes in flight at most: bs x qd */
	uint64_t hop_free;		/* when the hop's link is free */
};

/* ---- events ---------------------------------------------------------- */

static bool ev_before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct sim *s, uint64_t t, enum ev_kind kind, void *p)
{
	size_t i;

	if (s->nheap == s->heap_cap) {
		s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 256;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	i = s->nheap++;
	s->heap[i] = (struct event){ t, s->seq++, kind, p };
	while (i && ev_before(&s->heap[i], &s->heap[(i - 1) / 2])) {
		struct event tmp = s->heap[i];

		s->heap[i] = s->heap[(i - 1) / 2];
		s->heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static struct event pop(struct sim *s)
{
	struct event top = s->heap[0];
	size_t i = 0;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct event tmp;

		if (l < s->nheap && ev_before(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->nheap && ev_before(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		tmp = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = tmp;
		i = m;
	}
	return top;
}

static uint64_t rnd(struct sim *s)
{
	/* xorshift64*: deterministic per seed */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545F4914F6CDD1DULL;
}

/* ---- the controller's counting and windows ---------------------------- */

static void busy_take_slot(struct sim *s)
{
	if (s->inflight++ == 0)
		s->busy_start = s->now;
	if (s->inflight > s->peak)
		s->peak = s->inflight;
}

static void task_resume(struct sim *s, struct task *tk);

static void grant_waiters(struct sim *s)
{
	while (s->twait && s->inflight < s->depth) {
		struct task *tk = s->twait;

		s->twait = tk->wnext;
		if (!s->twait)
			s->twait_tail = &s->twait;
		busy_take_slot(s);
		tk->piece_has_slot = true;
		push(s, s->now, EV_RESUME, tk);
	}
}

static void release_slot(struct sim *s)
{
	if (--s->inflight == 0)
		s->busy_ns += s->now - s->busy_start;
	grant_waiters(s);
}

static void trace_step(struct sim *s, const struct blk_adapt_window *w)
{
	const struct blk_adapt_state *st = &s->st;

	if (!s->cfg->trace)
		return;
	fprintf(s->cfg->trace,
		"  adaptsim-0 [000] ..... %llu.%06llu: block_adapt_step: sim: small=%llu lat=%lluus "
		"target=%lluus good=%lluKiB large=%llu bw=%lluKiB/s cmd=%lluus budget=%lluKiB "
		"cap=%lluKiB depth=%u %s\n",
		(unsigned long long)(s->now / SEC), (unsigned long long)(s->now % SEC / 1000),
		(unsigned long long)w->small, (unsigned long long)(w->small_lat_ns / 1000),
		(unsigned long long)(s->lim.target_ns / 1000),
		(unsigned long long)(st->good >> 10), (unsigned long long)w->large,
		(unsigned long long)(st->bw >> 10), (unsigned long long)(st->cmd_ns / 1000),
		(unsigned long long)(st->budget >> 10), (unsigned long long)(st->cap_bytes >> 10),
		st->depth, blk_adapt_action_name[st->action]);
}

/* The law's caps to the queue, as blk-adapt.c applies them: one at the ceiling is none. */
static void take_caps(struct sim *s)
{
	s->cap = s->st.cap_bytes < s->lim.max_bytes ? s->st.cap_bytes : 0;
	s->depth = s->st.depth;
}

static void law_step(struct sim *s, uint64_t window_ns)
{
	struct blk_adapt_input in = { .window_ns = window_ns };
	struct blk_adapt_window w;
	struct acct *a = &s->acc;
	struct sim_res *res = s->res;

	in.gap_ns = s->now - s->last_window;
	s->last_window = s->now;

	in.large = a->large;
	in.small_dev_p50_ns = blk_lat_percentile(a->dev, a->small, a->dev_max, 500);
	in.small_n = a->small;
	in.small_max_ns = a->all_max;
	in.small_buckets = a->all;
	in.bytes = a->bytes;
	in.busy_ns = s->busy_ns + (s->inflight ? s->now - s->busy_start : 0);
	s->busy_ns = 0;
	if (s->inflight)
		s->busy_start = s->now;
	in.peak = s->peak;
	s->peak = s->inflight;

	blk_adapt_window_step(&s->st, &s->tail, &s->lim, &in, &w);
	take_caps(s);
	grant_waiters(s);
	trace_step(s, &w);

	res->steps++;
	/* converged: the first of CONVERGE_RUN windows in a row with p99 <= 5/4 T */
	if (!res->converge_windows && w.small) {
		uint64_t t = s->lim.target_ns;

		if (w.small_lat_ns > t + t / 4)
			s->conv_run = 0;
		else if (!s->conv_run++)
			s->conv_from = res->steps;
		if (s->conv_run == CONVERGE_RUN)
			res->converge_windows = s->conv_from;
	}
	if (res->steps == 1 || s->st.budget < res->budget_min)
		res->budget_min = s->st.budget;
	if (s->st.budget > res->budget_max)
		res->budget_max = s->st.budget;
	if (s->st.budget < s->lim.min_bytes || s->st.budget > blk_adapt_ceiling(&s->lim) ||
	    s->st.cap_bytes < s->lim.min_bytes || s->st.cap_bytes > s->lim.max_bytes ||
	    s->st.depth < 1 || s->st.depth > s->lim.max_depth)
		res->bound_faults++;
	if (s->nbudgets == s->budgets_cap) {
		s->budgets_cap = s->budgets_cap ? 2 * s->budgets_cap : 256;
		s->budgets = realloc(s->budgets, s->budgets_cap * sizeof(*s->budgets));
		if (!s->budgets)
			abort();
	}
	/* the budget as far as the load can use it: its bytes in flight at most */
	s->budgets[s->nbudgets++] = s->st.budget < s->demand ? s->st.budget : s->demand;
}

/* blk-lat's window work: roll, call the law if anything completed, or park. */
static void window_tick(struct sim *s)
{
	uint64_t len = s->now - s->win_start;

	s->win_start = s->now;
	if (!s->acc.requests) {
		s->parked = true;
		return;
	}
	if (s->on)
		law_step(s, len);
	memset(&s->acc, 0, sizeof(s->acc));
	push(s, s->now + SEC, EV_WINDOW, NULL);
}

static void account(struct sim *s, const struct rq *rq)
{
	struct acct *a = &s->acc;

	if (s->parked) {
		/* the first completion after a quiet spell arms a window */
		s->parked = false;
		s->win_start = s->now;
		push(s, s->now + SEC, EV_WINDOW, NULL);
	}
	a->requests++;
	a->bytes += rq->bytes;
	if (rq->bytes <= SMALL_BYTES) {
		uint64_t all = s->now - rq->t_alloc, dev = s->now - rq->t_issue;

		a->small++;
		a->all[blk_lat_bucket(all)]++;
		a->dev[blk_lat_bucket(dev)]++;
		if (all > a->all_max)
			a->all_max = all;
		if (dev > a->dev_max)
			a->dev_max = dev;
	} else {
		a->large++;
	}
}

/* ---- dispatch and completion ----------------------------------------- */

/* The device completed @rq at @t: seen after the hop, if the device has one. */
static void dev_done(struct sim *s, struct rq *rq, uint64_t t)
{
	const struct sim_dev *d = s->dev;

	if (d->hop_mbs > 0) {
		uint64_t xfer = (uint64_t)(rq->bytes / d->hop_mbs * 1000.0);

		s->hop_free = (t > s->hop_free ? t : s->hop_free) + xfer;
		t = s->hop_free;
	}
	push(s, t + (uint64_t)(d->hop_us * 1000.0), EV_DONE, rq);
}

/* The request reaches the device model. */
static void dev_arrive(struct sim *s, struct rq *rq)
{
	dm_submit(s->disk, &rq->dm, s->now);
	if (rq->dm.done_at && !rq->reported)
		dev_done(s, rq, rq->dm.done_at);
}

/* The driver issues the request: it reaches the device after the hop, if any. */
static void dev_submit(struct sim *s, struct rq *rq)
{
	if (s->dev->hop_us > 0)
		push(s, s->now + (uint64_t)(s->dev->hop_us * 1000.0), EV_ARRIVE, rq);
	else
		dev_arrive(s, rq);
}

static void completed_cb(struct dm_req *r, void *ctx)
{
	struct sim *s = ctx;
	struct rq *rq = r->priv;

	rq->reported = true;
	dev_done(s, rq, r->done_at);
}

static struct rq *sched_pop(struct sim *s)
{
	int dir = 0;
	struct rq *rq;

	if (!s->sched_q[0] || (s->sched_q[1] && s->reads_since_write >= WRITES_STARVED))
		dir = 1;
	rq = s->sched_q[dir];
	if (!rq)
		return NULL;
	s->sched_q[dir] = rq->next;
	if (!s->sched_q[dir])
		s->sched_tail[dir] = &s->sched_q[dir];
	s->reads_since_write = dir ? 0 : s->reads_since_write + 1;
	return rq;
}

static void dispatch(struct sim *s)
{
	unsigned int be = s->dev->backend ? s->dev->backend : s->dev->qd;
	struct rq *rq;

	while (s->drv_inflight < s->dev->qd && (rq = sched_pop(s))) {
		if (rq->owner && rq->owner->last_rq == rq)
			rq->owner->last_rq = NULL;	/* dispatched: no more merges */
		s->drv_inflight++;
		rq->t_issue = s->now;
		rq->dm = (struct dm_req){ .lba = rq->off / SECTOR, .n = rq->bytes / SECTOR,
					  .write = rq->write, .priv = rq };
		if (s->be_inflight < be) {
			s->be_inflight++;
			dev_submit(s, rq);
		} else {
			rq->next = NULL;
			*s->be_tail = rq;
			s->be_tail = &rq->next;
		}
	}
}

static void bio_done(struct sim *s, struct bio *b);

static void tag_put(struct sim *s);

static void rq_done(struct sim *s, struct rq *rq)
{
	unsigned int i, be = s->dev->backend ? s->dev->backend : s->dev->qd;

	s->be_inflight--;
	if (s->be_q) {
		struct rq *next = s->be_q;

		s->be_q = next->next;
		if (!s->be_q)
			s->be_tail = &s->be_q;
		if (s->be_inflight < be) {
			s->be_inflight++;
			dev_submit(s, next);
		}
	}
	s->drv_inflight--;
	account(s, rq);
	if (rq->counted)
		release_slot(s);
	tag_put(s);
	for (i = 0; i < rq->nbios; i++) {
		struct bio *b = rq->bios[i];

		/* done when every piece is: the task may not have split it all yet */
		if (!--b->pieces && b->split == b->bytes)
			bio_done(s, b);
	}
	pool_put(&s->rqs, rq);
	dispatch(s);
}

/* ---- submission ------------------------------------------------------ */

static uint64_t split_limit(const struct sim *s, const struct task *tk)
{
	uint64_t lim = s->dev->max_bytes;

	if (s->cap && s->cap < lim)
		lim = s->cap;
	if ((s->cfg->wl == WL_W1P || s->cfg->wl == WL_W1PS) && tk->kind == T_STREAM && s->dev->piece_bytes < lim)
		lim = s->dev->piece_bytes;
	return lim;
}

/*
 * A freed scheduler tag goes to the first task waiting for one, which is
 * woken with it (sbitmap's wake-up, without another task taking it first).
 */
static void tag_put(struct sim *s)
{
	struct task *tk = s->tagwait;

	if (!tk) {
		s->sched_used--;
		return;
	}
	s->tagwait = tk->wnext;
	if (!s->tagwait)
		s->tagwait_tail = &s->tagwait;
	tk->has_tag = true;
	push(s, s->now, EV_RESUME, tk);
}

/* A back merge of the piece into the task's last queued request. */
static bool try_merge(struct sim *s, struct task *tk, struct bio *b, uint64_t off,
		      uint64_t len, uint64_t lim)
{
	struct rq *rq = tk->last_rq;

	if (!rq || rq->write != b->write || rq->off + rq->bytes != off ||
	    rq->bytes + len > lim || rq->nbios == 64)
		return false;
	if (!rq->counted && s->on && rq->bytes + len > SMALL_BYTES) {
		rq->counted = true;	/* ->merge: counted, never held */
		busy_take_slot(s);
	}
	rq->bytes += len;
	rq->bios[rq->nbios++] = b;
	b->pieces++;
	return true;
}

/*
 * Submit the task's bios in order until it blocks (a slot or a tag) or has
 * nothing left to submit.
 */
static void task_run(struct sim *s, struct task *tk)
{
	struct bio *b;

	while (!tk->blocked && (b = tk->queue)) {
		uint64_t lim = split_limit(s, tk);
		uint64_t len = b->bytes - b->split, off = b->off + b->split;
		bool large;
		struct rq *rq;

		if (len > lim)
			len = lim;
		large = len > SMALL_BYTES;
		if (!tk->piece_has_slot && try_merge(s, tk, b, off, len, lim)) {
			if (tk->has_tag) {
				tk->has_tag = false;
				tk->tag_waiting = false;
				tag_put(s);
			}
			goto advance;
		}
		if (large && s->on && !tk->piece_has_slot) {
			/* rq_qos_wait(): FIFO behind sleepers, else a slot below the cap */
			if (s->twait || s->inflight >= s->depth) {
				if (tk->has_tag) {	/* never holds a tag while throttled */
					tk->has_tag = false;
					tk->tag_waiting = false;
					tag_put(s);
				}
				tk->blocked = true;
				tk->wnext = NULL;
				*s->twait_tail = tk;
				s->twait_tail = &tk->wnext;
				return;
			}
			busy_take_slot(s);
			tk->piece_has_slot = true;
		}
		if (!tk->has_tag) {
			if (s->sched_used >= s->nr_requests) {
				/* blk-lat's queue time starts before the tag wait */
				if (!tk->tag_waiting) {
					tk->tag_waiting = true;
					tk->tag_since = s->now;
				}
				tk->blocked = true;
				tk->wnext = NULL;
				*s->tagwait_tail = tk;
				s->tagwait_tail = &tk->wnext;
				return;
			}
			s->sched_used++;
		}
		tk->has_tag = false;
		rq = pool_get(&s->rqs);
		rq->off = off;
		rq->bytes = len;
		rq->write = b->write;
		rq->counted = large && s->on;
		rq->t_alloc = tk->tag_waiting ? tk->tag_since : s->now;
		tk->tag_waiting = false;
		rq->bios[rq->nbios++] = b;
		rq->owner = tk;
		b->pieces++;
		tk->piece_has_slot = false;
		tk->last_rq = rq;
		*s->sched_tail[rq->write] = rq;
		s->sched_tail[rq->write] = &rq->next;
		dispatch(s);
advance:
		b->split += len;
		if (b->split == b->bytes) {
			tk->queue = b->next;
			if (!tk->queue)
				tk->tail = &tk->queue;
			if (!b->pieces)
				bio_done(s, b);
		}
	}
}

static void task_resume(struct sim *s, struct task *tk)
{
	tk->blocked = false;
	task_run(s, tk);
}

static void submit_bio(struct sim *s, struct task *tk, uint64_t off, uint64_t bytes)
{
	struct bio *b = pool_get(&s->bios);

	b->task = tk;
	b->off = off;
	b->bytes = bytes;
	b->write = tk->write;
	b->t_submit = s->now;
	tk->inflight++;
	*tk->tail = b;
	tk->tail = &b->next;
	task_run(s, tk);
}

/* ---- workloads -------------------------------------------------------- */

/* A stream or writeback task keeps qd bios in flight while it is on. */
static void stream_fill(struct sim *s, struct task *tk)
{
	while (tk->on && tk->inflight < tk->qd) {
		uint64_t off = tk->base + tk->pos;

		tk->pos = (tk->pos + tk->bs) % tk->span;
		submit_bio(s, tk, off, tk->bs);
	}
}

static void probe(struct sim *s, struct task *tk)
{
	uint64_t blocks = PROBER_SPAN / PROBER_BS;

	if (!tk->on || tk->inflight)
		return;
	submit_bio(s, tk, PROBER_OFF + rnd(s) % blocks * PROBER_BS, PROBER_BS);
}

static void lat_add(struct sim *s, double ms)
{
	if (s->nlat == s->lat_cap) {
		s->lat_cap = s->lat_cap ? 2 * s->lat_cap : 4096;
		s->lat = realloc(s->lat, s->lat_cap * sizeof(*s->lat));
		if (!s->lat)
			abort();
	}
	s->lat[s->nlat++] = ms;
}

static void bio_done(struct sim *s, struct bio *b)
{
	struct task *tk = b->task;
	uint64_t when;

	tk->inflight--;
	if (tk->kind == T_PROBER) {
		if (b->t_submit >= s->measure_from && s->now <= s->end)
			lat_add(s, (s->now - b->t_submit) / 1e6);
		/*
		 * fio's rate_iops: one read per 50 ms slot, at once when behind.
		 * At a random point of its slot: under a guest's timer fio's
		 * reads are not periodic, and a periodic prober phase-locks with
		 * a stream (on a disk it never meets the seek back to the stream
		 * its previous read caused).
		 */
		tk->next_at += PROBER_NS;
		when = tk->next_at + rnd(s) % PROBER_NS;
		if (when <= s->now)
			probe(s, tk);
		else
			push(s, when, EV_PROBE, tk);
	} else {
		if (tk->stream && s->now >= s->measure_from && s->now <= s->end)
			s->stream_bytes += b->bytes;
		stream_fill(s, tk);
	}
	pool_put(&s->bios, b);
}

static struct task *add_task(struct sim *s, enum task_kind kind, bool write, uint64_t bs,
			     unsigned int qd, uint64_t base, uint64_t span)
{
	struct task *tk = &s->tasks[s->ntasks++];

	*tk = (struct task){ .kind = kind, .write = write, .bs = bs, .qd = qd, .base = base,
			     .span = span, .on = true, .stream = kind != T_PROBER };
	tk->tail = &tk->queue;
	return tk;
}

/* Phases: W7's prober bursts (5 s on, 5 s off), W9's stream (15 s on, 5 s off). */
static void phase(struct sim *s, struct task *tk)
{
	bool prober = tk->kind == T_PROBER;
	uint64_t on = prober ? 5 * SEC : 15 * SEC, off = 5 * SEC;

	tk->on = !tk->on;
	push(s, s->now + (tk->on ? on : off), EV_PHASE, tk);
	if (!tk->on)
		return;
	if (prober) {
		tk->next_at = s->now;
		probe(s, tk);
	} else {
		stream_fill(s, tk);
	}
}

static void setup_workload(struct sim *s)
{
	const struct sim_cfg *c = s->cfg;
	struct task *pr = NULL, *st;

	switch (c->wl) {
	case WL_W2:
		add_task(s, T_WB, true, WB_BS, WB_QUEUED, 0, STREAM_SPAN);
		break;
	case WL_W2D:
		add_task(s, T_STREAM, true, c->bs, c->sqd, 0, STREAM_SPAN);
		break;
	case WL_W8:
		add_task(s, T_STREAM, false, c->bs, c->sqd, 0, STREAM_SPAN);
		add_task(s, T_STREAM, false, c->bs, c->sqd, 4 * GIB, STREAM_SPAN);
		break;
	default:
		add_task(s, T_STREAM, false, c->bs, c->sqd, 0, STREAM_SPAN);
		break;
	}
	if (c->wl != WL_W3)
		pr = add_task(s, T_PROBER, false, PROBER_BS, 1, PROBER_OFF, PROBER_SPAN);
	for (unsigned int i = 0; i < s->ntasks; i++)
		if (s->tasks[i].kind != T_PROBER)
			s->demand += s->tasks[i].bs * s->tasks[i].qd;
	s->measure_from = c->wl == WL_W1S || c->wl == WL_W1PS ? 0 : RAMP;
	for (unsigned int i = 0; i < s->ntasks; i++) {
		st = &s->tasks[i];
		if (st->kind == T_PROBER) {
			st->next_at = 0;
			push(s, 0, EV_PROBE, st);
		} else if (c->wl == WL_W1S || c->wl == WL_W1PS) {
			/* the prober is there when the stream starts */
			push(s, W1S_STREAM_AT, EV_START, st);
		} else {
			stream_fill(s, st);
		}
	}
	if (c->wl == WL_W7 && pr)
		push(s, 5 * SEC, EV_PHASE, pr);
	if (c->wl == WL_W9)
		push(s, 15 * SEC, EV_PHASE, &s->tasks[0]);
}

/* ---- a run ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The value at rank ceil(n * permille / 1000) of the sorted samples, as fio's. */
static double quantile(const double *v, size_t n, unsigned int permille)
{
	size_t k = (n * permille + 999) / 1000;

	if (!n)
		return 0;
	return v[k ? k - 1 : 0];
}

/* The prober's figures from its latencies (sorted here). */
static void lat_results(struct sim_res *r, double *lat, size_t n)
{
	qsort(lat, n, sizeof(*lat), cmp_double);
	r->reads = n;
	r->p50_ms = quantile(lat, n, 500);
	r->p99_ms = quantile(lat, n, 990);
	r->p999_ms = quantile(lat, n, 999);
	r->max_ms = n ? lat[n - 1] : 0;
}

static void results(struct sim *s)
{
	struct sim_res *r = s->res;
	double secs = (s->end - s->measure_from) / 1e9;

	lat_results(r, s->lat, s->nlat);
	r->stream_mbs = s->stream_bytes / secs / 1e6;
	r->floor_bytes = s->lim.min_bytes;
	r->ceil_bytes = blk_adapt_ceiling(&s->lim);
	if (s->nbudgets) {
		size_t half = s->nbudgets / 2, n = s->nbudgets - half;
		uint64_t *tail = malloc(n * sizeof(*tail));

		if (!tail)
			abort();
		memcpy(tail, s->budgets + half, n * sizeof(*tail));
		qsort(tail, n, sizeof(*tail), cmp_u64);
		r->osc_ratio = (double)tail[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] /
			       tail[n / 10];
		free(tail);
	}
}

/* One run; with @keep, its prober latencies are appended there. */
static int run_once(const struct sim_dev *dev, const struct sim_cfg *cfg, struct sim_res *res,
		    struct sim_lat *keep)
{
	struct sim s = { .dev = dev, .cfg = cfg, .res = res, .parked = true,
			 .rqs.size = sizeof(struct rq), .bios.size = sizeof(struct bio) };
	char err[256];
	uint64_t max_bytes = dev->max_bytes;

	memset(res, 0, sizeof(*res));
	s.rng = cfg->seed * 0x9E3779B97F4A7C15ULL + 1;
	s.disk = dm_new(&dev->dm, dev->disk_bytes / SECTOR, completed_cb, &s, err, sizeof(err));
	if (!s.disk) {
		fprintf(stderr, "adaptsim: %s: %s\n", dev->name, err);
		return -1;
	}
	s.twait_tail = &s.twait;
	s.tagwait_tail = &s.tagwait;
	s.sched_tail[0] = &s.sched_q[0];
	s.sched_tail[1] = &s.sched_q[1];
	s.be_tail = &s.be_q;
	/* mq-deadline's nr_requests: twice the depth, at most 2 x BLKDEV_DEFAULT_RQ */
	s.nr_requests = 2 * (dev->qd < 128 ? dev->qd : 128);
	s.end = cfg->seconds * SEC;
	s.on = cfg->target_us;
	s.lim = (struct blk_adapt_limits){
		.target_ns = (uint64_t)cfg->target_us * 1000,
		.max_bytes = max_bytes,
		.min_bytes = MIN_KB_DEF < max_bytes ? MIN_KB_DEF : max_bytes,
		.max_depth = dev->qd,
		.parallel = !dm_rotational(&dev->dm),
	};
	s.depth = UINT32_MAX;
	if (s.on) {
		blk_adapt_law_init(&s.st, &s.tail, &s.lim);
		take_caps(&s);
	}
	setup_workload(&s);
	for (;;) {
		uint64_t dn = dm_next(s.disk);
		struct event e;

		if (dn != UINT64_MAX && (!s.nheap || dn <= s.heap[0].t)) {
			if (dn > s.end)
				break;
			s.now = dn;
			dm_advance(s.disk, dn);
			continue;
		}
		if (!s.nheap || s.heap[0].t > s.end)
			break;
		e = pop(&s);
		s.now = e.t;
		switch (e.kind) {
		case EV_DONE:
			rq_done(&s, e.p);
			break;
		case EV_PROBE:
			probe(&s, e.p);
			break;
		case EV_WINDOW:
			window_tick(&s);
			break;
		case EV_PHASE:
			phase(&s, e.p);
			break;
		case EV_RESUME:
			task_resume(&s, e.p);
			break;
		case EV_ARRIVE:
			dev_arrive(&s, e.p);
			break;
		case EV_START:
			stream_fill(&s, e.p);
			break;
		}
	}
	results(&s);
	/* what is still in flight at the end goes with the pools */
	pool_destroy(&s.rqs);
	pool_destroy(&s.bios);
	dm_free(s.disk);
	free(s.heap);
	if (keep && s.nlat) {
		keep->v = realloc(keep->v, (keep->n + s.nlat) * sizeof(*keep->v));
		if (!keep->v)
			abort();
		memcpy(keep->v + keep->n, s.lat, s.nlat * sizeof(*s.lat));
		keep->n += s.nlat;
	}
	free(s.lat);
	free(s.budgets);
	return 0;
}

/*
 * W1s and W1ps: what a fresh start costs is in its first windows, a few dozen reads,
 * under the 1% a p99 of one long run sees. So they are W1S_EPISODE s runs from
 * a fresh start (device, queue and law), as many as the run's seconds
 * hold, with the prober's reads pooled: every read of every episode is
 * measured, the stream's MB/s is the episodes' mean, the law's path and
 * trace are the first episode's (convergence, budget range, oscillation),
 * the steps and bound faults summed over all of them.
 */
#define W1S_EPISODE 20

int sim_run(const struct sim_dev *dev, const struct sim_cfg *cfg, struct sim_res *res)
{
	struct sim_cfg c = *cfg;
	struct sim_lat pool = { 0 };
	uint64_t n, e;
	double mbs = 0;

	if (cfg->wl != WL_W1S && cfg->wl != WL_W1PS)
		return run_once(dev, cfg, res, NULL);
	n = cfg->seconds / W1S_EPISODE ? cfg->seconds / W1S_EPISODE : 1;
	c.seconds = W1S_EPISODE;
	for (e = 0; e < n; e++) {
		struct sim_res r;

		c.seed = cfg->seed * 1000003 + e;
		c.trace = e ? NULL : cfg->trace;
		if (run_once(dev, &c, &r, &pool)) {
			free(pool.v);
			return -1;
		}
		mbs += r.stream_mbs;
		if (!e)
			*res = r;
		res->steps += e ? r.steps : 0;
		res->bound_faults += e ? r.bound_faults : 0;
	}
	lat_results(res, pool.v, pool.n);
	res->stream_mbs = mbs / n;
	free(pool.v);
	return 0;
}
