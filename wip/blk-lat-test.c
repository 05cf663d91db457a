// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the per-queue latency accounting: histogram bucket
 * mapping, percentile error bound, per-CPU folding and window rollover.
 * Included at the end of blk-lat.c, so that the static helpers are tested
 * as they are, without a queue.
 */
#include <kunit/test.h>
#include <linux/prandom.h>
#include <linux/sort.h>

static void blk_lat_test_bucket_bounds(struct kunit *test)
{
	unsigned int b;

	for (b = 0; b < BLK_LAT_BUCKETS; b++) {
		u64 low = blk_lat_bucket_low(b), width = blk_lat_bucket_width(b);

		KUNIT_EXPECT_EQ_MSG(test, blk_lat_bucket(low), b, "low end of bucket %u", b);
		if (b)
			KUNIT_EXPECT_EQ_MSG(test, blk_lat_bucket(low - 1), b - 1,
					    "value below bucket %u", b);
		if (b < BLK_LAT_BUCKETS - 1) {
			KUNIT_EXPECT_EQ_MSG(test, blk_lat_bucket(low + width - 1), b,
					    "high end of bucket %u", b);
			KUNIT_EXPECT_EQ(test, blk_lat_bucket_low(b + 1), low + width);
		}
		/* the bound the percentiles rely on: width <= low / 8 above the exact range */
		if (b >= BLK_LAT_SUB)
			KUNIT_EXPECT_LE(test, width * BLK_LAT_SUB, low);
	}
	KUNIT_EXPECT_EQ(test, blk_lat_bucket(0), 0U);
	KUNIT_EXPECT_EQ(test, blk_lat_bucket(U64_MAX), BLK_LAT_BUCKETS - 1);
	KUNIT_EXPECT_EQ(test, blk_lat_bucket(1ULL << (BLK_LAT_MAX_MSB + 1)), BLK_LAT_BUCKETS - 1);
}

static void blk_lat_test_size_class(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(512), 0U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_4K), 0U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_4K + 512), 1U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_8K), 1U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_64K), 4U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_1M), 8U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_16M), 12U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_16M + 512), 13U);
	/* an LBA48 request: 65535 sectors, more than an unsigned short can count */
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(65535ULL << SECTOR_SHIFT), 13U);
	KUNIT_EXPECT_EQ(test, blk_lat_size_class(SZ_1G), BLK_LAT_NR_SIZES - 1);
}

static int blk_lat_test_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

#define BLK_LAT_TEST_N	20000

enum blk_lat_test_dist { UNIFORM, BIMODAL, HEAVY_TAIL };

static u64 blk_lat_test_sample(struct rnd_state *rnd, enum blk_lat_test_dist d)
{
	u32 r = prandom_u32_state(rnd);

	switch (d) {
	case UNIFORM:		/* 10 us .. 10 ms */
		return 10000 + (u64)r % 9990000;
	case BIMODAL:		/* 90% around 100 us, 10% around 200 ms */
		if (r % 10)
			return 90000 + (u64)(r >> 8) % 20000;
		return 180000000 + (u64)(r >> 8) % 40000000;
	default:		/* log-uniform over 1 us .. ~1 s: a heavy tail */
		return (1000ULL << (r % 20)) + (r >> 12);
	}
}

static void blk_lat_test_percentiles(struct kunit *test)
{
	static const unsigned int permille[] = { 1, 500, 900, 990, 999, 1000 };
	u64 *values, *buckets;
	struct rnd_state rnd;
	unsigned int d, i, p;

	values = kunit_kmalloc_array(test, BLK_LAT_TEST_N, sizeof(u64), GFP_KERNEL);
	buckets = kunit_kcalloc(test, BLK_LAT_BUCKETS, sizeof(u64), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, values);
	KUNIT_ASSERT_NOT_NULL(test, buckets);
	prandom_seed_state(&rnd, 42);

	for (d = UNIFORM; d <= HEAVY_TAIL; d++) {
		u64 max = 0;

		memset(buckets, 0, BLK_LAT_BUCKETS * sizeof(u64));
		for (i = 0; i < BLK_LAT_TEST_N; i++) {
			values[i] = blk_lat_test_sample(&rnd, d);
			buckets[blk_lat_bucket(values[i])]++;
			max = max(max, values[i]);
		}
		sort(values, BLK_LAT_TEST_N, sizeof(u64), blk_lat_test_cmp, NULL);
		for (p = 0; p < ARRAY_SIZE(permille); p++) {
			u64 rank = DIV_ROUND_UP_ULL((u64)BLK_LAT_TEST_N * permille[p], 1000);
			u64 exact = values[rank - 1];
			u64 est = blk_lat_percentile(buckets, BLK_LAT_TEST_N, max, permille[p]);
			u64 err = est > exact ? est - exact : exact - est;

			/* midpoint of a bucket no wider than 1/8 of its low end: <= 6.25% */
			KUNIT_EXPECT_LE_MSG(test, err * 16, exact,
					    "dist %u p%u: exact %llu estimate %llu",
					    d, permille[p], exact, est);
		}
	}
	KUNIT_EXPECT_EQ(test, blk_lat_percentile(buckets, 0, 0, 990), 0ULL);
}

static void blk_lat_test_delta_wraps(struct kunit *test)
{
	u32 prev = 0xfffffff0;

	KUNIT_EXPECT_EQ(test, blk_lat_delta(0x10, &prev), 0x20U);
	KUNIT_EXPECT_EQ(test, prev, 0x10U);
	KUNIT_EXPECT_EQ(test, blk_lat_delta(0x10, &prev), 0U);
}

/* Record @ns on @cpu as the completion path would there. */
static void blk_lat_test_record_on(struct blk_lat_stats *ls, int cpu, unsigned int cell, u64 ns)
{
	struct blk_lat_pcpu *p = per_cpu_ptr(ls->pcpu[cell], cpu);

	p->buckets[blk_lat_bucket(ns)]++;
	p->sum_ns += ns;
	p->max_ns = max(p->max_ns, ns);
}

static void blk_lat_test_fold_and_windows(struct kunit *test)
{
	unsigned int rd4k = blk_lat_cell(BLK_LAT_READ, 0, BLK_LAT_DEVICE);
	unsigned int wr32m = blk_lat_cell(BLK_LAT_WRITE, BLK_LAT_NR_SIZES - 1, BLK_LAT_DEVICE);
	struct blk_lat_stats *ls = blk_lat_alloc();
	int cpu, ncpu = 0;
	u64 n = 0;

	KUNIT_ASSERT_NOT_NULL(test, ls);
	mutex_lock(&ls->lock);

	/* window 1: 100 reads of 1 ms on every CPU, one CPU's counter about to wrap */
	for_each_possible_cpu(cpu) {
		unsigned int i;

		if (!ncpu++)
			per_cpu_ptr(ls->pcpu[rd4k], cpu)->buckets[blk_lat_bucket(1000000)] = 0xffffffc0;
		for (i = 0; i < 100; i++)
			blk_lat_test_record_on(ls, cpu, rd4k, 1000000);
		n += 100;
	}
	/* the pre-wrap value is history from before this window: fold it away */
	ls->prev[rd4k][blk_lat_bucket(1000000)] = 0xffffffc0;
	blk_lat_roll_window(ls, ls->window_start_ns + NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, ls->window[rd4k].count, n);
	KUNIT_EXPECT_EQ(test, ls->total[rd4k].count, n);
	KUNIT_EXPECT_EQ(test, ls->window[rd4k].sum_ns, n * 1000000);
	KUNIT_EXPECT_EQ(test, ls->window[rd4k].max_ns, 1000000ULL);
	KUNIT_EXPECT_EQ(test, ls->last_window_ns, (u64)NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, ls->nr_windows, 1ULL);

	/* window 2: one 32 MiB write of 500 ms; the reads are not counted again */
	blk_lat_test_record_on(ls, cpumask_first(cpu_possible_mask), wr32m, 500000000);
	blk_lat_roll_window(ls, ls->window_start_ns + NSEC_PER_SEC / 2);
	KUNIT_EXPECT_EQ(test, ls->window[rd4k].count, 0ULL);
	KUNIT_EXPECT_EQ(test, ls->total[rd4k].count, n);
	KUNIT_EXPECT_EQ(test, ls->window[wr32m].count, 1ULL);
	KUNIT_EXPECT_EQ(test, ls->window[wr32m].max_ns, 500000000ULL);
	KUNIT_EXPECT_EQ(test, ls->last_window_ns, (u64)NSEC_PER_SEC / 2);

	/* window 3: nothing happened */
	blk_lat_roll_window(ls, ls->window_start_ns + NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, ls->window[wr32m].count, 0ULL);
	KUNIT_EXPECT_EQ(test, ls->window[wr32m].max_ns, 0ULL);
	KUNIT_EXPECT_EQ(test, ls->total[wr32m].max_ns, 500000000ULL);
	KUNIT_EXPECT_EQ(test, ls->nr_windows, 3ULL);

	mutex_unlock(&ls->lock);
	blk_lat_free(ls);
}

static struct kunit_case blk_lat_test_cases[] = {
	KUNIT_CASE(blk_lat_test_bucket_bounds),
	KUNIT_CASE(blk_lat_test_size_class),
	KUNIT_CASE(blk_lat_test_percentiles),
	KUNIT_CASE(blk_lat_test_delta_wraps),
	KUNIT_CASE(blk_lat_test_fold_and_windows),
	{}
};

static struct kunit_suite blk_lat_test_suite = {
	.name = "blk-lat",
	.test_cases = blk_lat_test_cases,
};
kunit_test_suite(blk_lat_test_suite);
