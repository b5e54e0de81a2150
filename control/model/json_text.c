/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Real numbers of JSON text at their shortest round-trip precision: each
 * number token outside strings that has a fraction or an exponent is read
 * back and rewritten with the fewest significant digits (1 to 17) that read
 * back to the same double, in Jansson's spelling (no '+' and no leading zeros
 * in the exponent, ".0" when neither a point nor an exponent is left).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/json_text.h"

/* x as Jansson spells a real, with prec significant digits, into buf. */
static size_t
spell(char *buf, size_t len, double x, int prec)
{
	char *e, *d;
	size_t n;

	snprintf(buf, len, "%.*g", prec, x);
	e = strchr(buf, 'e');
	if (e != NULL) {
		/* e+05 -> e5, e-05 -> e-5 */
		d = e + 1;
		if (*d == '+')
			memmove(d, d + 1, strlen(d + 1) + 1);
		else if (*d == '-')
			d++;
		while (*d == '0' && d[1] != '\0')
			memmove(d, d + 1, strlen(d + 1) + 1);
	} else if (strchr(buf, '.') == NULL) {
		n = strlen(buf);
		if (n + 2 < len)
			memcpy(buf + n, ".0", 3);
	}
	return strlen(buf);
}

/* The shortest spelling of the real token tok (n bytes) into buf; 0 if none is shorter. */
static size_t
shortest(const char *tok, size_t n, char *buf, size_t len)
{
	char src[64];
	double x;

	if (n >= sizeof(src))
		return 0;
	memcpy(src, tok, n);
	src[n] = '\0';
	x = strtod(src, NULL);
	for (int prec = 1; prec <= 17; prec++) {
		size_t m = spell(buf, len, x, prec);

		if (strtod(buf, NULL) == x)
			return m < n ? m : 0;
	}
	return 0;
}

size_t
lb_json_text_shorten(char *s)
{
	size_t r = 0, w = 0;
	bool in_str = false;

	while (s[r] != '\0') {
		char c = s[r];

		if (in_str) {
			s[w++] = s[r++];
			if (c == '\\' && s[r] != '\0')
				s[w++] = s[r++];
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
			s[w++] = s[r++];
			continue;
		}
		if (c == '-' || (c >= '0' && c <= '9')) {
			size_t n = strspn(s + r, "0123456789+-.eE");
			char buf[40];
			size_t m = 0;

			if (memchr(s + r, '.', n) != NULL || memchr(s + r, 'e', n) != NULL ||
			    memchr(s + r, 'E', n) != NULL)
				m = shortest(s + r, n, buf, sizeof(buf));
			if (m != 0) {
				memcpy(s + w, buf, m);
				w += m;
			} else {
				memmove(s + w, s + r, n);
				w += n;
			}
			r += n;
			continue;
		}
		s[w++] = s[r++];
	}
	s[w] = '\0';
	return w;
}

char *
lb_json_text_dumps(const json_t *j, size_t flags)
{
	char *s = j != NULL ? json_dumps(j, flags) : NULL;

	if (s != NULL)
		lb_json_text_shorten(s);
	return s;
}
