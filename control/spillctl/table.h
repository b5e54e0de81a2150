/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Aligned text tables for spillctl's human output: headings and rows are
 * collected first, then printed with each column as wide as its widest cell
 * (UTF-8 aware), numbers right-aligned where the heading asks for it.
 * Callers pass server strings through spillctl_esc() (render.h), so no cell
 * holds a tab or a control character; any that still reaches one is '?'.
 */
#ifndef SPILLCTL_TABLE_H
#define SPILLCTL_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#define SPILLCTL_TABLE_MAX_COLS 10

struct spillctl_table {
	unsigned int ncols;
	char *head[SPILLCTL_TABLE_MAX_COLS];
	bool right[SPILLCTL_TABLE_MAX_COLS];
	size_t width[SPILLCTL_TABLE_MAX_COLS];
	char **cell; /* nrows * ncols */
	size_t nrows;
	size_t cap;
};

/* @spec: column headings separated by '|'; a leading '>' right-aligns the column. */
void spillctl_table_init(struct spillctl_table *t, const char *spec);

/* Adds a row; @fmt produces the cells separated by '\t'. */
void __attribute__((format(printf, 2, 3)))
spillctl_table_add(struct spillctl_table *t, const char *fmt, ...);

/* Prints the headings, @indent spaces in. */
void spillctl_table_print_head(const struct spillctl_table *t, unsigned int indent);

/* Prints rows [from, to). */
void spillctl_table_print_rows(const struct spillctl_table *t, unsigned int indent, size_t from,
                               size_t to);

/* Prints the headings and every row. */
void spillctl_table_print(const struct spillctl_table *t, unsigned int indent);

void spillctl_table_free(struct spillctl_table *t);

#endif /* SPILLCTL_TABLE_H */
