/*
 * The JSON grammar (json_scan.c): RFC 8259 checked byte by byte as it arrives, in pieces of any
 * size, strings valid UTF-8 without lone surrogates, nesting at most JSON_DEPTH_MAX; and the
 * decoding of the strings it checked. It knows JSON only. Its user (json_list.c, the Node
 * layout) names the containers worth watching and hears of their keys and values through
 * three hooks; everywhere else the scanner only checks. The caller owns every buffer; nothing
 * here allocates.
 */
#ifndef JSON_SCAN_H
#define JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 64
#define JSON_CTX_DEPTH 6  /* the depths whose containers the scanner tells apart (the list down to an item's labels) */

/*
 * What a container is, as the user names it (json_scan.kind[d]): 0 is a container nobody
 * watches, and every container inside one is 0 too, so the scanner asks nothing there
 * (managedFields, images: most of a node).
 */
#define JSON_UNWATCHED 0

/* JSON's white space: space, tab, line feed, carriage return (not YAML's, not C's isspace). */
static inline __attribute__((always_inline)) int json_is_space(int c)
{
	return c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t');
}

/*
 * What the scanner tells its user, only inside watched containers (kind cx at depth d, i an
 * index in the piece being fed, ctx the json_scan's). A hook that fails the scan calls
 * json_scan_fail and returns -1; the scan then stops with that return.
 */
struct json_scan_hooks {
	/* A value starting with c at p[i]: the kind of the container it opens (JSON_UNWATCHED for
	 * any other value), or -1. The hook may capture a string value (json_scan_capture). */
	int (*value)(void *ctx, int cx, int d, int c, size_t i);
	/* A key was read: its bytes as written are keybuf[0..caplen), unless full (it did not fit). */
	void (*key)(void *ctx, int cx, int d);
	/* A value ended just before p[i]: 0, or nonzero to stop the scan with that return. */
	int (*done)(void *ctx, int cx, int d, const char *p, size_t i);
};

/*
 * Where the scan stands between two pieces. Readable: kind, depth, off, caplen and full, reason
 * and err_at; the rest is private.
 */
struct json_scan {
	int st;                   /* between two tokens, or inside one */
	int depth, seq, key;      /* nesting; a stream of values, not one; the string being read is a key */
	int str, hexn, num, litn; /* the place inside a string, its \u digits, a number, a literal */
	uint32_t u;               /* the \u escape being read */
	unsigned char pend[4], npend; /* a character a piece cut: its bytes so far */
	const char *lit;          /* the literal being read */
	unsigned char array[JSON_DEPTH_MAX + 1]; /* [d]: the container at depth d is an array */
	unsigned char kind[JSON_CTX_DEPTH];      /* [d]: what the container at depth d is, as the user named it */
	size_t off;               /* bytes fed before this piece */
	char *to;                 /* the string being captured goes to to[0..tocap); NULL: none */
	size_t tocap, caplen;     /* and how many bytes it has so far */
	int full;                 /* it did not fit (its bytes are then not all there) */
	char *keybuf;             /* where keys of watched containers are captured */
	size_t keycap;
	void *ctx;                /* handed to the hooks */
	const char *reason;       /* after a failure: why, without where */
	size_t err_at;            /* and the byte of the text where */
};

/*
 * Starts a scan of one value (seq 0) or of a stream of values (seq 1: white space between them
 * never needed) whose top level is of kind kind0 (JSON_UNWATCHED: only checked). Keys of
 * watched containers are captured into keybuf[0..keycap).
 */
void json_scan_init(struct json_scan *s, int kind0, int seq, char *keybuf, size_t keycap, void *ctx);
/*
 * Feeds n bytes. Returns 0; -1 when the text is not JSON (reason and err_at set) or a hook
 * failed; or what a done hook returned if nonzero. After a nonzero return every later feed
 * returns -1.
 */
int json_scan_feed(struct json_scan *s, const struct json_scan_hooks *h, const char *p, size_t n);
/* Fails the scan at byte at of the text for the reason why (static text): returns -1. */
int json_scan_fail(struct json_scan *s, size_t at, const char *why);
/* Stops the scan (a user's callback said so) without a reason of the grammar's. */
void json_scan_stop(struct json_scan *s);
/* Whether the scan failed or was stopped. */
int json_scan_failed(const struct json_scan *s);
/* Whether the scan waits for a value at the top level (nothing fed yet, or a stream between values). */
int json_scan_idle(const struct json_scan *s);
/* After the last byte: whether the text was one whole value (a number ending the text ends there). */
int json_scan_end(struct json_scan *s);
/* From a value hook: the string value beginning is captured as written into to[0..cap). */
void json_scan_capture(struct json_scan *s, char *to, size_t cap);

/*
 * Whether s[0..len) is exactly one valid JSON value (whitespace around it allowed), by the
 * scanner's grammar. Returns 0, or -1 with the byte where it went wrong in *at (len when the
 * text ended early) and the reason in why[0..whylen), e.g. "expected ':' after a key".
 */
int json_check(const char *s, size_t len, size_t *at, char *why, size_t whylen);

/* ---- Strings the scanner checked ---- */

/* The byte the escape \c stands for (c one of " \\ / b f n r t), or -1: \u is not one of them. */
int json_escape_value(int c);
/* Whether the string body s[0..n) decodes to exactly lit[0..ln). */
int json_str_eq(const char *s, size_t n, const char *lit, size_t ln);
/*
 * Decodes the body s[0..n) of a string json_check accepted (the text between its quotes, escapes
 * as written) into out[0..cap), NUL-terminated. Returns its length, or -1 when it holds a NUL
 * (\u0000) or does not fit. The one JSON string decoder: kubeconfig's JSON (yaml.c) uses it too.
 */
int json_unescape(const char *s, size_t n, char *out, size_t cap);
/* The string body s[0..n) decoded into out[0..cap) as sent, cut at a character to fit (or at a
 * \u0000): text from the server for a log line, which its caller cleans (kube_clean). */
void json_str_log(const char *s, size_t n, char *out, size_t cap);

#endif
