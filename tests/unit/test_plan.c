/*
 * plan's output: durations as a person reads them, the table's columns, the JSON document's
 * shape (valid JSON by json.c's own checker), names with odd bytes made safe, and a list that
 * starts again forgetting the rows it had.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "../../json.h"
#include "../../plan.h"

#define NOW 1800000000

static void t_duration(void)
{
	char b[32];

	check(strcmp(plan_duration(0, b, sizeof b), "0s") == 0);
	check(strcmp(plan_duration(45, b, sizeof b), "45s") == 0);
	check(strcmp(plan_duration(60, b, sizeof b), "1m0s") == 0);
	check(strcmp(plan_duration(130, b, sizeof b), "2m10s") == 0);
	check(strcmp(plan_duration(3780, b, sizeof b), "1h3m") == 0);
	check(strcmp(plan_duration(3 * 86400 + 4 * 3600 + 59, b, sizeof b), "3d4h") == 0);
	check(strcmp(plan_duration(-5, b, sizeof b), "0s") == 0);
}

static struct settings settings(enum settings_output o)
{
	struct settings s = { 0 };

	s.taint_after = 300;
	s.prune_after = 3600;
	s.max_unknown_percent = 50;
	s.output = o;
	strcpy(s.exclude_label, "example.com/no-recovery");
	strcpy(s.self_node, "self");
	return s;
}

static void add(struct plan *pl, const char *name, enum node_ready r, int64_t since, enum policy_action a, int64_t due)
{
	struct node_facts f = { 0 };
	struct policy_verdict v = { 0 };

	snprintf(f.name, sizeof f.name, "%s", name);
	f.ready = r;
	f.ready_since = since;
	f.oos_taint = -1;
	v.action = a;
	v.unknown_for = r == NODE_READY_UNKNOWN ? NOW - since : -1;
	v.due_in = due;
	plan_row(pl, &(struct pass_row){ &f, &v, NULL, 0 });
}

/* Prints pl into a string the caller frees. */
static char *print(struct plan *pl, const struct settings *s)
{
	struct pass_plan_result r = { 0 };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	r.sum = (struct policy_summary){ 4, 2, 3 };
	r.limit = 2;
	r.now = NOW;
	r.server_clock = 1;
	check(plan_print(f, pl, &r, s) == 0);
	fclose(f);
	return out;
}

static void rows(struct plan *pl)
{
	struct node_facts odd = { 0 };

	add(pl, "zz-ready", NODE_READY_TRUE, NOW - 7200, POLICY_NONE, -1);
	add(pl, "agent-1", NODE_READY_UNKNOWN, NOW - 170, POLICY_NONE, 130);
	add(pl, "agent-2", NODE_READY_UNKNOWN, NOW - 400, POLICY_TAINT, 3200);
	snprintf(odd.name, sizeof odd.name, "odd\x1b[31m\"\\\xc3\xa9");
	plan_row(pl, &(struct pass_row){ &odd, NULL, "metadata.uid is missing\n(byte 9)", 0 });
}

static void t_table(void)
{
	struct settings s = settings(OUTPUT_TABLE);
	struct plan pl = { 0 };
	char *out;

	rows(&pl);
	out = print(&pl, &s);
	check(strstr(out, "NAME          READY    FOR    ROLES  ACTION\n") == out);
	check(strstr(out, "\nagent-1       Unknown  2m50s  -      taint in 2m10s\n") != NULL);
	check(strstr(out, "\nagent-2       Unknown  6m40s  -      taint now: not reporting for 6m40s, taint threshold 5m0s; then delete in 53m20s\n") != NULL);
	check(strstr(out, "\nzz-ready      True     2h0m   -      none: Ready\n") != NULL);
	/* the terminal never sees an escape or a raw byte from the API */
	check(strchr(out, '\x1b') == NULL && strstr(out, "\xc3") == NULL);
	check(strstr(out, "\nodd?[31m\"\\??  -        ?      -      none: unreadable") != NULL);
	check(strstr(out, "none: unreadable (metadata.uid is missing?(byte 9)); nothing is done to it") != NULL);
	check(strstr(out, "4 nodes, 2 Unknown, 0 unreadable; storm guard not engaged: 2 Unknown, limit 2 (--max-unknown 50%); 3 Ready etcd members, floor 3; times by the API server's clock") != NULL);
	/* sorted by name */
	check(strstr(out, "agent-1") < strstr(out, "agent-2") && strstr(out, "agent-2") < strstr(out, "odd") &&
	    strstr(out, "odd") < strstr(out, "zz-ready"));
	free(out);
	plan_free(&pl);
}

static void t_json(void)
{
	struct settings s = settings(OUTPUT_JSON);
	struct plan pl = { 0 };
	char why[64];
	size_t at;
	char *out;

	rows(&pl);
	out = print(&pl, &s);
	check(json_check(out, strlen(out), &at, why, sizeof why) == 0);
	check(strncmp(out, "{\"nodes\":[\n{\"name\":\"agent-1\",\"ready\":\"Unknown\",\"ready_for_seconds\":170,\"roles\":[],\"action\":\"none\",", 95) == 0);
	check(strstr(out, "\"due\":\"taint\",\"due_in_seconds\":130,") != NULL);
	check(strstr(out, "{\"name\":\"odd?[31m\\\"\\\\??\",\"ready\":null,\"ready_for_seconds\":null,\"roles\":[],\"action\":\"none\",") != NULL);
	check(strstr(out, "\"unreadable\":\"metadata.uid is missing?(byte 9)\"") != NULL);
	check(strstr(out, "\"summary\":{\"nodes\":4,\"unknown\":2,\"unreadable\":0,\"storm_guard\":{\"engaged\":false,\"limit\":2,\"max_unknown\":\"50%\",\"cooldown_known\":false},\"etcd_ready\":3,\"etcd_floor\":3,\"clock\":\"server\",\"now\":\"2027-01-15T08:00:00Z\"}}\n") != NULL);
	free(out);
	plan_free(&pl);
}

static void t_restart_forgets(void)
{
	struct settings s = settings(OUTPUT_TABLE);
	struct plan pl = { 0 };
	char *out;

	rows(&pl);
	plan_row(&pl, &(struct pass_row){ 0 });   /* the list starts again after a 410 */
	add(&pl, "agent-9", NODE_READY_TRUE, NOW - 10, POLICY_NONE, -1);
	out = print(&pl, &s);
	check(pl.n == 1);
	check(strstr(out, "agent-1") == NULL && strstr(out, "agent-9") != NULL);
	free(out);
	plan_free(&pl);
}

/* With the fence on, a FENCE column (and field) with plan_fence's words; a taint waits for it. */
static void t_fence_column(void)
{
	struct settings s = settings(OUTPUT_TABLE);
	struct plan pl = { 0 };
	char *out;

	s.fence = FENCE_REQUIRE;
	rows(&pl);
	add(&pl, "agent-3", NODE_READY_UNKNOWN, NOW - 400, POLICY_TAINT, -1);
	for (size_t i = 0; i < pl.n; i++)
		pl.rows[i].fence = strcmp(pl.rows[i].f.name, "agent-2") == 0 ? "armed" : "no agent";
	out = print(&pl, &s);
	check(strstr(out, "NAME          READY    FOR    ROLES  FENCE       ACTION\n") == out);
	check(strstr(out, "\nagent-2       Unknown  6m40s  -      armed       taint now: not reporting for 6m40s, taint threshold 5m0s; once its fence is safe; then delete in 53m20s\n") != NULL);
	check(strstr(out, "\nagent-3       Unknown  6m40s  -      no agent    taint now: not reporting for 6m40s, taint threshold 5m0s; never: no fence agent (--fence=require)\n") != NULL);
	free(out);
	s.output = OUTPUT_JSON;
	out = print(&pl, &s);
	check(strstr(out, "\"fence\":\"armed\"") != NULL);
	free(out);
	plan_free(&pl);
}

static const struct test tests[] = {
	{ "duration", t_duration },
	{ "table", t_table },
	{ "json", t_json },
	{ "restart_forgets", t_restart_forgets },
	{ "fence_column", t_fence_column },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("plan", tests, argc, argv);
}
