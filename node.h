/*
 * The facts about one Node that the decisions need, and nothing else.
 * json.c fills a struct node_facts from a Node object, looking for the keys in struct
 * node_keys; policy.c reads it.
 * Fixed size, so a pass keeps a known amount of memory per node it acts on.
 */
#ifndef NODE_H
#define NODE_H

#include <stdint.h>

#define NODE_NAME_MAX 253 /* a DNS subdomain, which Node names are */
#define NODE_UID_MAX 63
#define NODE_RV_MAX 63

#define NODE_TAINT_KEY "node.kubernetes.io/out-of-service"
#define NODE_TAINT_VALUE "nodeshutdown"
#define NODE_TAINT_EFFECT "NoExecute"
#define NODE_LABEL_CONTROL_PLANE "node-role.kubernetes.io/control-plane"
#define NODE_LABEL_ETCD "node-role.kubernetes.io/etcd"

enum node_ready {
	NODE_READY_NONE,    /* no Ready condition (or one we could not read) */
	NODE_READY_TRUE,
	NODE_READY_FALSE,
	NODE_READY_UNKNOWN
};

/* The configurable keys a Node is read for. Both must stay valid while used; NULL: not looked for. */
struct node_keys {
	const char *prune_label;  /* label whose value "true" marks a node removable */
	const char *annotation;   /* annotation that marks the out-of-service taint as ours */
	const char *exclude_label; /* label whose value "true" opts a node out of taint and delete */
};

struct node_facts {
	char name[NODE_NAME_MAX + 1];
	char uid[NODE_UID_MAX + 1];
	char rv[NODE_RV_MAX + 1];       /* metadata.resourceVersion */
	enum node_ready ready;
	int64_t ready_since;            /* Ready's lastTransitionTime, Unix seconds; -1 if absent */
	int has_taints;                 /* spec.taints exists */
	int oos_taint;                  /* index of the first taint keyed NODE_TAINT_KEY, -1 if none */
	int has_annotations;            /* metadata.annotations exists */
	int our_annotation;             /* it holds our annotation key */
	int64_t tainted_at;             /* our annotation's time (when we tainted), Unix seconds; -1 if absent or not a time */
	int control_plane;              /* NODE_LABEL_CONTROL_PLANE present, any value */
	int etcd;                       /* NODE_LABEL_ETCD present, any value */
	int etcd_voter;                 /* NODE_LABEL_ETCD has the value "true" */
	int removable;                  /* the prune label has the value "true" */
	int excluded;                   /* the exclude label has the value "true" */
};

#endif
