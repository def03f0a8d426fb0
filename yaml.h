/*
 * The text of a kubeconfig as a small tree: the YAML subset kubectl and k3s write (block
 * mappings and sequences, plain and quoted scalars, empty {} and []), or JSON through jsmn,
 * read the same way so the kubeconfig rules above it see one kind of input. Knows nothing of
 * kubeconfigs, clusters or credentials; does no I/O. Refuses what it does not read (anchors,
 * tags, block scalars, flow collections with content, a second document) rather than guess.
 */
#ifndef YAML_H
#define YAML_H

#include <stddef.h>

enum yaml_type { YAML_NULL, YAML_STR, YAML_MAP, YAML_SEQ };

/* One node. Children of a mapping or sequence are a linked list: child, then each one's next. */
struct yaml_node {
	enum yaml_type type;
	int line;           /* where it starts; a mapping's value is reported at its key's line */
	int plain;          /* a scalar without quotes (YAML plain, JSON number/true/false) */
	const char *key;    /* set on the children of a mapping: text in the pool */
	const char *str;    /* YAML_STR: decoded text in the pool, NUL-terminated */
	size_t len;
	int child, last, next;  /* indexes into nodes; -1 for none */
};

/* A parsed document: the caller's after yaml_parse succeeds, until yaml_free. */
struct yaml_doc {
	struct yaml_node *nodes;
	int nnodes;
	int root;           /* nodes[root] is the top level */
	char *pool;         /* every decoded string the nodes point into */
	size_t poolcap;
};

/*
 * Parses text[0..len) (no NUL needed after it; a byte-order mark is skipped; JSON when the first
 * byte that is not white space is '{') into *d. Allocates the nodes and a pool of about twice
 * len. Returns 0, or -1 with *d empty, one line in err saying why (never a value's text) and
 * *errline the line it is about (0: the text as a whole).
 */
int yaml_parse(struct yaml_doc *d, const char *text, size_t len, char *err, size_t errlen, int *errline);

/* Wipes the pool (it may hold a key or a token) and frees what d holds. Safe on an empty d. */
void yaml_free(struct yaml_doc *d);

#endif
