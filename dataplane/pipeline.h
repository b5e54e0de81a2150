/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LB_STUB_PIPELINE
#define LB_STUB_PIPELINE
#endif
