/*
 * Byte-level helpers the three parsers (HTTP, JSON, kubeconfig) share, RFC 3339 times, the
 * one way a reason for a failure is written, and the one cleaner of server-sent text for the
 * log. Pure: no I/O, no allocation.
 */
#ifndef TEXT_H
#define TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

/*
 * The error convention of every module: a failing call returns -1 and leaves one line saying
 * why in a buffer its caller provided (as BearSSL and jsmn keep theirs). text_fail formats that
 * line into err[0..errlen), cut to fit, and returns -1, so "return text_fail(...)" both
 * explains and fails.
 */
__attribute__((format(printf, 3, 4)))
int text_fail(char *err, size_t errlen, const char *fmt, ...);

/* text_fail into the char err[] a module's context keeps (struct kube, http_conn, lease...). */
#define TEXT_FAIL(ctx, ...) text_fail((ctx)->err, sizeof (ctx)->err, __VA_ARGS__)

/* The value of a hexadecimal digit, or -1 when c is not one. */
static inline int text_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Writes v as n decimal digits, zero-padded (the top digits dropped if v is wider). */
static inline void text_digits(char *p, unsigned v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * Writes t (Unix seconds) as an RFC 3339 UTC time, "2026-11-30T03:02:35Z", into out, which
 * must hold TEXT_TIME_LEN + 1 bytes. For years 0 to 9999. Without strftime, whose time-zone
 * machinery would cost the static binary 6 KiB for a format that never changes.
 */
#define TEXT_TIME_LEN 20
static inline void text_time(char *out, int64_t t)
{
	int64_t days = t / 86400, secs = t % 86400;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	/* days since 1970-01-01 to a civil date (Howard Hinnant's algorithm, year from March) */
	days += 719468;
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	unsigned doe = (unsigned)(days - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned day = doy - (153 * mp + 2) / 5 + 1;
	unsigned month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = (int64_t)yoe + era * 400 + (month <= 2);

	memcpy(out, "0000-00-00T00:00:00Z", TEXT_TIME_LEN + 1);
	text_digits(out, year < 0 ? 0 : year > 9999 ? 9999 : (unsigned)year, 4);
	text_digits(out + 5, month, 2);
	text_digits(out + 8, day, 2);
	text_digits(out + 11, (unsigned)(secs / 3600), 2);
	text_digits(out + 14, (unsigned)(secs / 60 % 60), 2);
	text_digits(out + 17, (unsigned)(secs % 60), 2);
}

/* FNV-1a, 64 bits: the one hash of a name for the fixed tables that remember nodes between passes. */
static inline uint64_t text_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}
/* An RFC 3339 time (2026-11-30T03:02:35Z; fractions and +hh:mm allowed) in Unix seconds, or
 * -1 when s[0..n) is not one or is before 1970. */
int64_t text_rfc3339(const char *s, size_t n);

/* An HTTP Date header's value in Unix seconds, or -1 when it is not an IMF-fixdate
 * ("Sun, 06 Nov 1994 08:49:37 GMT", the form RFC 9110 says servers send). */
int64_t text_http_date(const char *s, size_t n);

/*
 * Bare decimal digits s[0..n) (no sign, no space, not empty) as a number of at most max (>= 0),
 * checked before it can overflow. The one reader of a decimal count. Returns 0 with *out set,
 * or -1 (*out untouched).
 */
int text_decimal(const char *s, size_t n, int64_t max, int64_t *out);

/* What text_duration made of a setting's text. */
enum text_duration_status {
	TEXT_DURATION_OK = 0,
	TEXT_DURATION_SYNTAX = -1,    /* empty, a unit without a number, a number without a unit after one */
	TEXT_DURATION_FRACTION = -2,  /* 1.5h */
	TEXT_DURATION_SIGN = -3,      /* -5m or +5m */
	TEXT_DURATION_UNIT = -4,      /* a unit other than h, m and s: ms, us, ns, d, a space */
	TEXT_DURATION_ORDER = -5,     /* a unit twice or out of order: 30s1h, 1m1m */
	TEXT_DURATION_RANGE = -6      /* more than max seconds */
};

/*
 * A length of time as kubectl users type it, in whole seconds: bare digits are seconds (90, as
 * the shell watcher's variables were), or Go's duration syntax cut to whole h, m and s, each
 * at most once and in that order (2h, 5m, 90s, 1h30m, 1h0m0s as Go prints it). Anything else
 * is refused with a status rather than read some other way: a typo in a threshold must not
 * become a different threshold. The number is checked against max (>= 0) before it can
 * overflow. Returns TEXT_DURATION_OK with *out set, or a negative enum text_duration_status.
 */
int text_duration(const char *s, int64_t max, int64_t *out);

/* The shortest piece of the token text_clean redacts wherever it appears. */
#define TEXT_SECRET_PIECE 8

/* The length of the UTF-8 sequence at s[0..n) (n > 0): 1 to 4, or 0 when it is not valid UTF-8. */
static inline size_t text_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp, len, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (unsigned i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates and anything past U+10FFFF are not UTF-8 */
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* Writes code point cp (at most U+10FFFF) as UTF-8 into u, which holds 4 bytes; returns its length, 1 to 4. */
static inline size_t text_utf8_put(uint32_t cp, unsigned char *u)
{
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	u[0] = (unsigned char)(0xf0 | cp >> 18);
	u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	u[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Whether s[0..n) is all valid UTF-8. */
static inline int text_utf8_ok(const char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n && (k = text_utf8_len((const unsigned char *)s + i, n - i)) > 0)
		i += k;
	return i == n;
}

/* s appended to the string in dst[0..cap) as a URL query value escapes it (RFC 3986's unreserved
 * bytes as they are, every other as %XX): 0, or -1 when it does not fit. */
int text_query_escape(char *dst, size_t cap, const char *s);

/*
 * Makes s[0..n), a string a server sent (a Status message, a body line, a header value), fit
 * for one log line: written to out (cap > 0 bytes, always NUL-terminated, cut when full).
 * The secret (the bearer token, slen bytes), and any piece of it TEXT_SECRET_PIECE bytes or
 * longer, and whatever follows "Bearer " up to the next space, become "[redacted]": a server or
 * proxy that echoes the Authorization header must not put the token in the log. Control bytes
 * become '?', and bytes that are not valid UTF-8 "\xNN", so the line stays one printable line.
 * Returns out.
 */
char *text_clean(char *out, size_t cap, const char *s, size_t n, const char *secret, size_t slen);

#endif
