/* SPDX-License-Identifier: GPL-2.0 */
/* The simulator is no KUnit build: what the kernel keeps static stays static. */
#define VISIBLE_IF_KUNIT static
