/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LB_STUB_STATS
#define LB_STUB_STATS
#endif
