/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LB_STUB_SNAPSHOT_BUILD
#define LB_STUB_SNAPSHOT_BUILD
#endif
