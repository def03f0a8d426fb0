/*
 * The out-of-line part of text.h: writing a failure's reason, reading times, counts and durations.
 * Nothing here allocates.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include "text.h"

int text_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen == 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned dd)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + dd - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly k digits (a field of a fixed-width time), or -1. */
static int digits(const char *s, int k)
{
	int64_t v;

	return text_decimal(s, (size_t)k, INT32_MAX, &v) == 0 ? (int)v : -1;
}

int64_t text_rfc3339(const char *s, size_t n)
{
	static const unsigned char mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, dd, h, mi, sec, off = 0;
	size_t i = 19;

	if (n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
	    s[16] != ':')
		return -1;
	y = digits(s, 4), mo = digits(s + 5, 2), dd = digits(s + 8, 2);
	h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || dd < 1 || dd > mdays[mo - 1] || h > 23 || mi > 59 ||
	    sec > 60 || h < 0 || mi < 0 || sec < 0)
		return -1;
	if (mo == 2 && dd == 29 && (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0)))
		return -1;
	if (s[i] == '.') {
		size_t f = ++i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f)
			return -1;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i + 6 <= n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
		int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -1;
		off = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
		i += 6;
	} else {
		return -1;
	}
	if (i != n)
		return -1;
	int64_t t = days_from_civil(y, (unsigned)mo, (unsigned)dd) * 86400 + h * 3600 + mi * 60 + sec - off;
	return t < 0 ? -1 : t;
}

/* The day-month-year-time part of an IMF-fixdate: "06 Nov 1994 08:49:37 GMT". */
int64_t text_http_date(const char *s, size_t n)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char iso[21];
	int mo = -1;

	/* "Sun, " then 24 bytes: anything else (RFC 850 or asctime forms) counts as unreadable */
	if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
	    memcmp(s + 25, " GMT", 4) != 0)
		return -1;
	for (int i = 0; i < 12; i++)
		if (memcmp(s + 8, months + 3 * i, 3) == 0)
			mo = i + 1;
	if (mo < 0)
		return -1;
	/* the same fields in RFC 3339 order, read by the one reader of times */
	memcpy(iso, s + 12, 4);
	iso[4] = '-';
	text_digits(iso + 5, (unsigned)mo, 2);
	iso[7] = '-';
	memcpy(iso + 8, s + 5, 2);
	iso[10] = 'T';
	memcpy(iso + 11, s + 17, 8);
	iso[19] = 'Z';
	iso[20] = '\0';
	return text_rfc3339(iso, 20);
}

int text_decimal(const char *s, size_t n, int64_t max, int64_t *out)
{
	int64_t v = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int d = s[i] - '0';
		/* not a digit, or past max (v only grows: past for good), tested before it can overflow */
		if (d < 0 || d > 9 || v > max / 10 || v * 10 > max - d)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int text_duration(const char *s, int64_t max, int64_t *out)
{
	static const char units[] = "hms";
	static const int64_t secs[] = { 3600, 60, 1 };
	int64_t total = 0;
	int last = -1;

	if (*s == '-' || *s == '+')
		return TEXT_DURATION_SIGN;
	if (*s == '\0')
		return TEXT_DURATION_SYNTAX;
	while (*s) {
		int64_t n = 0;
		size_t len;
		int u;
		if (*s < '0' || *s > '9')
			return *s == '.' ? TEXT_DURATION_FRACTION : TEXT_DURATION_SYNTAX;
		for (; *s >= '0' && *s <= '9'; s++) {
			/* n only grows, and every unit is at least a second: past max is past for good */
			n = n * 10 + (*s - '0');
			if (n > max)
				return TEXT_DURATION_RANGE;
		}
		if (*s == '.')
			return TEXT_DURATION_FRACTION;
		/* the unit runs to the next digit or dot, as in Go, so "5ms" is ms and not m then s */
		len = strcspn(s, "0123456789.");
		if (len == 0) {
			if (last >= 0)
				return TEXT_DURATION_SYNTAX;   /* "5m3": Go's missing unit */
			total = n;                         /* bare digits: seconds */
			break;
		}
		if (len != 1 || !memchr(units, *s, 3))
			return TEXT_DURATION_UNIT;
		u = (int)((const char *)memchr(units, *s, 3) - units);
		if (u <= last)
			return TEXT_DURATION_ORDER;
		if (n > (max - total) / secs[u])
			return TEXT_DURATION_RANGE;
		total += n * secs[u];
		last = u;
		s++;
	}
	*out = total;
	return TEXT_DURATION_OK;
}

/* The longest run at s[0..n) that occurs in secret, if at least TEXT_SECRET_PIECE long (or all of a shorter secret). */
static size_t secret_at(const char *s, size_t n, const char *secret, size_t slen)
{
	size_t min = slen < TEXT_SECRET_PIECE ? slen : TEXT_SECRET_PIECE, best = 0;

	if (min == 0 || n < min)
		return 0;
	for (size_t j = 0; j + min <= slen; j++) {
		size_t k = 0;
		while (k < n && j + k < slen && s[k] == secret[j + k])
			k++;
		if (k >= min && k > best)
			best = k;
	}
	return best;
}

char *text_clean(char *out, size_t cap, const char *s, size_t n, const char *secret, size_t slen)
{
	static const char red[] = "[redacted]", hex[] = "0123456789abcdef";
	size_t i = 0, o = 0, k;

#define TEXT_PUT(p, len) do { if ((len) >= cap - o) goto full; memcpy(out + o, (p), (len)); o += (len); } while (0)
	while (i < n) {
		const unsigned char c = (unsigned char)s[i];
		if ((k = secret_at(s + i, n - i, secret, slen)) > 0) {
			TEXT_PUT(red, sizeof red - 1);
			i += k;
		} else if (n - i >= 7 && strncasecmp(s + i, "bearer ", 7) == 0) {
			TEXT_PUT(s + i, 7);
			for (i += 7; i < n && s[i] == ' '; i++)
				;
			if (i < n)
				TEXT_PUT(red, sizeof red - 1);
			while (i < n && s[i] != ' ')
				i++;
		} else if (c >= 0x20 && c < 0x7f) {
			TEXT_PUT(s + i, 1);
			i++;
		} else if (c < 0x80) {
			TEXT_PUT("?", 1);
			i++;
		} else if ((k = text_utf8_len((const unsigned char *)s + i, n - i)) > 0 &&
		    !(c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)) {       /* C1 controls */
			TEXT_PUT(s + i, k);
			i += k;
		} else {
			char x[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			TEXT_PUT(x, 4);
			i++;
		}
	}
full:
#undef TEXT_PUT
	out[o] = 0;
	return out;
}

int text_query_escape(char *dst, size_t cap, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(dst);

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~';
		if (n + (plain ? 1 : 3) >= cap)
			return -1;
		if (plain) {
			dst[n++] = (char)c;
		} else {
			dst[n++] = '%';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = '\0';
	return 0;
}
