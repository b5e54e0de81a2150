/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LB_STUB_FLOW_TABLE
#define LB_STUB_FLOW_TABLE
#endif
