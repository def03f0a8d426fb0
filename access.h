/*
 * The permission check at start: whether the credentials may do what the settings need, asked
 * of the API server once, before the first pass, so a missing RBAC rule is one clear line and
 * exit status 2, not a pass that fails on every node for ever.
 */
#ifndef ACCESS_H
#define ACCESS_H

#include <stddef.h>
#include "kube.h"
#include "settings.h"

#define ACCESS_ANSWER_MAX 8192 /* bytes of a review's answer read; a longer one is no answer */

enum access_result {
	ACCESS_OK = 0,   /* every permission the settings need is allowed */
	ACCESS_DENIED,   /* one is not: exit 2 */
	ACCESS_UNKNOWN   /* a review could not be made or read (403, 404, a garbled answer, the
	                    network): the rest were not asked; go on, a missing permission will
	                    show as a refused request */
};

/*
 * One SelfSubjectAccessReview per permission the settings need (list nodes; patch nodes unless
 * a client dry run; delete nodes when pruning, unless a client dry run; a table in access.c),
 * in that order, stopping at the first denied or unanswered. On ACCESS_DENIED, one
 * SelfSubjectReview more for the user's name. Leaves one line in msg[0..cap) for ACCESS_DENIED
 * (who may not do what, and the file in deploy/ that grants it) and ACCESS_UNKNOWN (why it
 * could not tell), "" for ACCESS_OK; server-sent text in it is cleaned by kube_clean. Sends
 * nothing else, keeps nothing.
 */
enum access_result access_check(struct kube *k, const struct settings *s, char *msg, size_t cap);

#endif
