/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Aligned text tables for spillctl's human output: every cell is kept until
 * the table is printed, so each column is as wide as its widest cell; a
 * column can be right-aligned, and trailing empty cells print nothing.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

/* Display width: UTF-8 continuation bytes take no column. */
static size_t
text_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

void
spillctl_table_init(struct spillctl_table *t, const char *spec)
{
	const char *p = spec;

	memset(t, 0, sizeof(*t));
	while (t->ncols < SPILLCTL_TABLE_MAX_COLS) {
		const char *end = strchr(p, '|');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		if (*p == '>') {
			t->right[t->ncols] = true;
			p++;
			n--;
		}
		t->head[t->ncols] = strndup(p, n);
		t->width[t->ncols] = text_width(t->head[t->ncols]);
		t->ncols++;
		if (end == NULL)
			break;
		p = end + 1;
	}
}

void __attribute__((format(printf, 2, 3)))
spillctl_table_add(struct spillctl_table *t, const char *fmt, ...)
{
	char *line = NULL;
	char *p;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (t->nrows == t->cap) {
		size_t ncap = t->cap != 0 ? t->cap * 2 : 16;
		char **nc = realloc(t->cell, ncap * t->ncols * sizeof(*nc));

		if (nc == NULL) {
			free(line);
			return;
		}
		t->cell = nc;
		t->cap = ncap;
	}
	p = line;
	for (unsigned int i = 0; i < t->ncols; i++) {
		char *tab = p != NULL ? strchr(p, '\t') : NULL;
		char *cell;

		if (tab != NULL)
			*tab = '\0';
		cell = strdup(p != NULL ? p : "");
		/* Server strings reach the terminal: no control characters. */
		for (char *q = cell; q != NULL && *q != '\0'; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				*q = '?';
		t->cell[t->nrows * t->ncols + i] = cell;
		if (cell != NULL && text_width(cell) > t->width[i])
			t->width[i] = text_width(cell);
		p = tab != NULL ? tab + 1 : NULL;
	}
	t->nrows++;
	free(line);
}

static void
table_line(const struct spillctl_table *t, char *const *cells, unsigned int indent)
{
	unsigned int last = t->ncols;

	/* Trailing empty left-aligned cells would only print spaces. */
	while (last > 1 && !t->right[last - 1] && (cells[last - 1] == NULL || !*cells[last - 1]))
		last--;
	printf("%*s", (int)indent, "");
	for (unsigned int i = 0; i < last; i++) {
		const char *s = cells[i] != NULL ? cells[i] : "";
		size_t pad = t->width[i] - text_width(s);

		if (i > 0)
			fputs("  ", stdout);
		if (t->right[i])
			printf("%*s%s", (int)pad, "", s);
		else if (i + 1 < last)
			printf("%s%*s", s, (int)pad, "");
		else
			fputs(s, stdout);
	}
	fputc('\n', stdout);
}

void
spillctl_table_print_head(const struct spillctl_table *t, unsigned int indent)
{
	table_line(t, t->head, indent);
}

void
spillctl_table_print_rows(const struct spillctl_table *t, unsigned int indent, size_t from,
                          size_t to)
{
	for (size_t r = from; r < to && r < t->nrows; r++)
		table_line(t, &t->cell[r * t->ncols], indent);
}

void
spillctl_table_print(const struct spillctl_table *t, unsigned int indent)
{
	spillctl_table_print_head(t, indent);
	spillctl_table_print_rows(t, indent, 0, t->nrows);
}

void
spillctl_table_free(struct spillctl_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	for (unsigned int i = 0; i < t->ncols; i++)
		free(t->head[i]);
	free(t->cell);
	memset(t, 0, sizeof(*t));
}
