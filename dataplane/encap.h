/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LB_STUB_ENCAP
#define LB_STUB_ENCAP
#endif
