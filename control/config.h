/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LB_STUB_CONFIG
#define LB_STUB_CONFIG
#endif
