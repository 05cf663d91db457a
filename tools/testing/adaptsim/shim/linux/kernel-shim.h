/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What block/blk-adapt-law.c and block/blk-lat-hist.h use of the kernel's
 * headers, for userspace: every linux/ header here includes this one. The
 * law must not grow a dependency this file lacks (the build fails).
 */
#ifndef ADAPTSIM_KERNEL_SHIM_H
#define ADAPTSIM_KERNEL_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IS_ENABLED(option)	0	/* no kernel configuration: no KUnit */

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define U64_MAX		UINT64_MAX
#define BIT(n)		(1UL << (n))
#define BIT_ULL(n)	(1ULL << (n))
#define SZ_4K		0x00001000
#define SZ_64K		0x00010000
#define SZ_1M		0x00100000
#define NSEC_PER_USEC	1000L
#define USEC_PER_SEC	1000000L
#define NSEC_PER_SEC	1000000000L

#define min(a, b) ({ __auto_type _a = (a); __auto_type _b = (b); _a < _b ? _a : _b; })
#define max(a, b) ({ __auto_type _a = (a); __auto_type _b = (b); _a > _b ? _a : _b; })
#define min_t(t, a, b) ({ t _a = (a); t _b = (b); _a < _b ? _a : _b; })
#define max_t(t, a, b) ({ t _a = (a); t _b = (b); _a > _b ? _a : _b; })
#define clamp(v, lo, hi) min(max(v, lo), hi)
#define clamp_t(t, v, lo, hi) min_t(t, max_t(t, v, lo), hi)
#define round_down(x, y) ((x) & ~((__typeof__(x))((y) - 1)))

static inline u64 div_u64(u64 a, u32 b) { return a / b; }
static inline u64 div64_u64(u64 a, u64 b) { return a / b; }
/* The kernel's traps on x86 when the quotient overflows or @c is 0: so does this. */
static inline u64 mul_u64_u64_div_u64(u64 a, u64 b, u64 c)
{
	unsigned __int128 q;

	if (!c)
		abort();
	q = (unsigned __int128)a * b / c;
	if (q > UINT64_MAX)
		abort();
	return (u64)q;
}
static inline int fls64(u64 x) { return x ? 64 - __builtin_clzll(x) : 0; }

#endif
