/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the Prometheus rendering (control/io/metrics.c): a small fixed
 * stats document, hot_list document and request counts against the text
 * written out by hand from the exposition format (version 0.0.4); label
 * escaping; the size bound; the argument checks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/io/metrics.h"

/* One worker (lcore 1), one VIP with one backend; numbers chosen so every
 * value is exact in text. */
static const char stats_doc[] =
        "{\"totals\": {\"rx_packets\": 999},"
        " \"cores\": [{\"lcore\": 1, \"rx_packets\": 10, \"rx_bytes\": 640, \"forwarded\": 7,"
        "  \"forwarded_bytes\": 700, \"icmp_sent\": 1, \"exception\": 0, \"flow_hits\": 4,"
        "  \"flow_misses\": 3, \"flow_evictions\": 0, \"flow_rechosen\": 0, \"fragments\": 0,"
        "  \"icmp_errors\": 0, \"hot_spread\": 2, \"hot_sprayed\": 21, \"flow_unpinned\": 5, "
        "\"flow_rate_limited\": 6,"
        "  \"frag_tracked\": 11, \"frag_followed\": 12, \"frag_unmatched\": 13,"
        "  \"frag_evictions\": 14, \"fragmented_out\": 15, \"fragments_out\": 31,"
        "  \"pmtu_learned\": 16, \"pmtu_ignored\": 17,"
        "  \"snapshot_gen\": 3, \"stalled\": false,"
        "  \"drops\": {\"no_vip\": 2, \"tx_full\": 0}}],"
        " \"vips\": [{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\","
        "  \"packets\": 7, \"bytes\": 420, \"new_flows\": 3,"
        "  \"backends\": [{\"address\": \"10.1.0.1\", \"name\": \"\", \"weight\": 2,"
        "   \"state\": \"draining\", \"packets\": 7, \"bytes\": 420, \"new_flows\": 3,"
        "   \"path_mtu\": 1400}]}],"
        " \"generation\": 3, \"drained\": false,"
        " \"publish\": {\"samples\": 3, \"timeouts\": 1, \"refused\": 0, \"state_unsynced\": 0,"
        "  \"retired\": 1, \"build_us\": 250.0, \"p50_us\": 1.0,"
        "  \"latency_histogram\": {\"le_s\": [1e-06, 0.0025], \"buckets\": [1, 2, 3],"
        "   \"sum_s\": 0.5, \"count\": 3}},"
        " \"mempool\": {\"size\": 100, \"available\": 90, \"in_use\": 10},"
        " \"hot\": {\"promotions\": 1, \"demotions\": 0, \"replans\": 0, \"dropped\": 0,"
        "  \"table_full\": 0, \"active\": 1, \"pinned\": 0, \"window\": 42}}";

static const char hot_doc[] =
        "{\"counters\": {\"missed_core_windows\": 5},"
        " \"overrides\": [{\"vip\": {\"address\": \"2001:db8::1\", \"port\": 53,"
        "  \"protocol\": \"udp\"}, \"key_hash\": \"0x00000000000000ff\", \"share\": 0.25,"
        "  \"replicas\": [\"10.1.0.1\", \"10.1.0.2\"]}]}";

static const char expected[] =
        "# HELP spillway_build_info Always 1; the version as a label.\n"
        "# TYPE spillway_build_info gauge\n"
        "spillway_build_info{version=\"9.8.7\"} 1\n"
        "# HELP spillway_rx_packets_total Packets received.\n"
        "# TYPE spillway_rx_packets_total counter\n"
        "spillway_rx_packets_total{core=\"1\"} 10\n"
        "# HELP spillway_rx_bytes_total Bytes received (frames).\n"
        "# TYPE spillway_rx_bytes_total counter\n"
        "spillway_rx_bytes_total{core=\"1\"} 640\n"
        "# HELP spillway_forwarded_packets_total Packets encapsulated to a backend and taken "
        "by TX.\n"
        "# TYPE spillway_forwarded_packets_total counter\n"
        "spillway_forwarded_packets_total{core=\"1\"} 7\n"
        "# HELP spillway_forwarded_bytes_total Bytes of the forwarded packets, outer headers "
        "included.\n"
        "# TYPE spillway_forwarded_bytes_total counter\n"
        "spillway_forwarded_bytes_total{core=\"1\"} 700\n"
        "# HELP spillway_icmp_sent_packets_total Too-big packets answered with an ICMP error "
        "to the client.\n"
        "# TYPE spillway_icmp_sent_packets_total counter\n"
        "spillway_icmp_sent_packets_total{core=\"1\"} 1\n"
        "# HELP spillway_exception_packets_total Packets for no VIP sent to the exception "
        "port.\n"
        "# TYPE spillway_exception_packets_total counter\n"
        "spillway_exception_packets_total{core=\"1\"} 0\n"
        "# HELP spillway_flow_hits_total Flow-table lookups that hit.\n"
        "# TYPE spillway_flow_hits_total counter\n"
        "spillway_flow_hits_total{core=\"1\"} 4\n"
        "# HELP spillway_flow_misses_total Flow-table lookups that missed (a backend was "
        "chosen).\n"
        "# TYPE spillway_flow_misses_total counter\n"
        "spillway_flow_misses_total{core=\"1\"} 3\n"
        "# HELP spillway_flow_evictions_total Live flow-table entries evicted to make room.\n"
        "# TYPE spillway_flow_evictions_total counter\n"
        "spillway_flow_evictions_total{core=\"1\"} 0\n"
        "# HELP spillway_flow_rechosen_total Flow-table entries whose backend was gone or "
        "down, chosen again.\n"
        "# TYPE spillway_flow_rechosen_total counter\n"
        "spillway_flow_rechosen_total{core=\"1\"} 0\n"
        "# HELP spillway_fragment_packets_total IP fragments received.\n"
        "# TYPE spillway_fragment_packets_total counter\n"
        "spillway_fragment_packets_total{core=\"1\"} 0\n"
        "# HELP spillway_icmp_error_packets_total ICMP errors steered by the flow they "
        "quote.\n"
        "# TYPE spillway_icmp_error_packets_total counter\n"
        "spillway_icmp_error_packets_total{core=\"1\"} 0\n"
        "# HELP spillway_hot_spread_flows_total New flows sent to a hot key's replica by its "
        "override.\n"
        "# TYPE spillway_hot_spread_flows_total counter\n"
        "spillway_hot_spread_flows_total{core=\"1\"} 2\n"
        "# HELP spillway_hot_sprayed_packets_total Packets of a per_packet VIP's hot key sent to "
        "a replica drawn per packet.\n"
        "# TYPE spillway_hot_sprayed_packets_total counter\n"
        "spillway_hot_sprayed_packets_total{core=\"1\"} 21\n"
        "# HELP spillway_flow_unpinned_packets_total Packets of new flows sent without a "
        "flow-table entry (bucket full of established flows).\n"
        "# TYPE spillway_flow_unpinned_packets_total counter\n"
        "spillway_flow_unpinned_packets_total{core=\"1\"} 5\n"
        "# HELP spillway_flow_rate_limited_packets_total Packets of new flows over the new-flow "
        "rate, sent without a flow-table entry.\n"
        "# TYPE spillway_flow_rate_limited_packets_total counter\n"
        "spillway_flow_rate_limited_packets_total{core=\"1\"} 6\n"
        "# HELP spillway_fragment_datagrams_tracked_total First fragments whose ports were "
        "recorded for the datagram's later fragments.\n"
        "# TYPE spillway_fragment_datagrams_tracked_total counter\n"
        "spillway_fragment_datagrams_tracked_total{core=\"1\"} 11\n"
        "# HELP spillway_fragments_followed_total Later fragments steered by their first "
        "fragment's ports.\n"
        "# TYPE spillway_fragments_followed_total counter\n"
        "spillway_fragments_followed_total{core=\"1\"} 12\n"
        "# HELP spillway_fragments_unmatched_total Later fragments with no first fragment "
        "recorded (address-only choice).\n"
        "# TYPE spillway_fragments_unmatched_total counter\n"
        "spillway_fragments_unmatched_total{core=\"1\"} 13\n"
        "# HELP spillway_fragment_table_evictions_total Live fragment-table entries replaced in "
        "a full bucket.\n"
        "# TYPE spillway_fragment_table_evictions_total counter\n"
        "spillway_fragment_table_evictions_total{core=\"1\"} 14\n"
        "# HELP spillway_fragmented_out_packets_total Packets over encap.mtu encapsulated and "
        "sent as outer fragments.\n"
        "# TYPE spillway_fragmented_out_packets_total counter\n"
        "spillway_fragmented_out_packets_total{core=\"1\"} 15\n"
        "# HELP spillway_fragments_out_total Outer fragment frames made of those packets.\n"
        "# TYPE spillway_fragments_out_total counter\n"
        "spillway_fragments_out_total{core=\"1\"} 31\n"
        "# HELP spillway_pmtu_learned_total ICMP too-big errors quoting our own tunnel packet "
        "that lowered a backend's path MTU.\n"
        "# TYPE spillway_pmtu_learned_total counter\n"
        "spillway_pmtu_learned_total{core=\"1\"} 16\n"
        "# HELP spillway_pmtu_ignored_total ICMP too-big errors to our tunnel source that were "
        "not believed (no matching quote, or an MTU out of range).\n"
        "# TYPE spillway_pmtu_ignored_total counter\n"
        "spillway_pmtu_ignored_total{core=\"1\"} 17\n"
        "# HELP spillway_core_snapshot_generation Generation of the snapshot the core last "
        "used.\n"
        "# TYPE spillway_core_snapshot_generation gauge\n"
        "spillway_core_snapshot_generation{core=\"1\"} 3\n"
        "# HELP spillway_core_stalled 1 if the core has not passed a quiescent state in "
        "time.\n"
        "# TYPE spillway_core_stalled gauge\n"
        "spillway_core_stalled{core=\"1\"} 0\n"
        "# HELP spillway_dropped_packets_total Packets dropped, by reason (docs/operations.md "
        "lists the reasons).\n"
        "# TYPE spillway_dropped_packets_total counter\n"
        "spillway_dropped_packets_total{core=\"1\",reason=\"no_vip\"} 2\n"
        "spillway_dropped_packets_total{core=\"1\",reason=\"tx_full\"} 0\n"
        "# HELP spillway_vip_packets_total Packets forwarded to the VIP.\n"
        "# TYPE spillway_vip_packets_total counter\n"
        "spillway_vip_packets_total{vip=\"192.0.2.10:80/tcp\"} 7\n"
        "# HELP spillway_vip_bytes_total Inner IP bytes forwarded to the VIP.\n"
        "# TYPE spillway_vip_bytes_total counter\n"
        "spillway_vip_bytes_total{vip=\"192.0.2.10:80/tcp\"} 420\n"
        "# HELP spillway_vip_new_flows_total Flows created for the VIP.\n"
        "# TYPE spillway_vip_new_flows_total counter\n"
        "spillway_vip_new_flows_total{vip=\"192.0.2.10:80/tcp\"} 3\n"
        "# HELP spillway_backend_packets_total Packets forwarded to the backend (a membership "
        "in one VIP).\n"
        "# TYPE spillway_backend_packets_total counter\n"
        "spillway_backend_packets_total{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\"} 7\n"
        "# HELP spillway_backend_bytes_total Inner IP bytes forwarded to the backend (a "
        "membership in one VIP).\n"
        "# TYPE spillway_backend_bytes_total counter\n"
        "spillway_backend_bytes_total{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\"} 420\n"
        "# HELP spillway_backend_new_flows_total Flows created for the backend (a membership "
        "in one VIP).\n"
        "# TYPE spillway_backend_new_flows_total counter\n"
        "spillway_backend_new_flows_total{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\"} 3\n"
        "# HELP spillway_backend_weight The backend's Maglev weight in the VIP.\n"
        "# TYPE spillway_backend_weight gauge\n"
        "spillway_backend_weight{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\"} 2\n"
        "# HELP spillway_backend_state 1 for the backend's operator state (active, draining, "
        "down), 0 for the others.\n"
        "# TYPE spillway_backend_state gauge\n"
        "spillway_backend_state{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\",state=\"active\"}"
        " 0\n"
        "spillway_backend_state{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\",state="
        "\"draining\"} 1\n"
        "spillway_backend_state{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\",state=\"down\"}"
        " 0\n"
        "# HELP spillway_backend_path_mtu_bytes Path MTU learned toward the backend's address, "
        "below encap.mtu (only backends with a live learned value).\n"
        "# TYPE spillway_backend_path_mtu_bytes gauge\n"
        "spillway_backend_path_mtu_bytes{vip=\"192.0.2.10:80/tcp\",backend=\"10.1.0.1\"} 1400\n"
        "# HELP spillway_snapshot_generation Generation of the published snapshot (one per "
        "configuration change).\n"
        "# TYPE spillway_snapshot_generation gauge\n"
        "spillway_snapshot_generation 3\n"
        "# HELP spillway_drained 1 while the routes are withdrawn (drain, or a stop under "
        "way).\n"
        "# TYPE spillway_drained gauge\n"
        "spillway_drained 0\n"
        "# HELP spillway_publish_timeouts_total Publications whose wait for every worker to "
        "switch ran out.\n"
        "# TYPE spillway_publish_timeouts_total counter\n"
        "spillway_publish_timeouts_total 1\n"
        "# HELP spillway_publish_refused_total Changes refused while a core was stalled.\n"
        "# TYPE spillway_publish_refused_total counter\n"
        "spillway_publish_refused_total 0\n"
        "# HELP spillway_state_unsynced_total State file writes whose directory fsync "
        "failed.\n"
        "# TYPE spillway_state_unsynced_total counter\n"
        "spillway_state_unsynced_total 0\n"
        "# HELP spillway_retired_snapshots Replaced snapshots still waiting for their "
        "readers.\n"
        "# TYPE spillway_retired_snapshots gauge\n"
        "spillway_retired_snapshots 1\n"
        "# HELP spillway_snapshot_build_seconds Time the last snapshot build took.\n"
        "# TYPE spillway_snapshot_build_seconds gauge\n"
        "spillway_snapshot_build_seconds 0.00025\n"
        "# HELP spillway_publish_latency_seconds From the snapshot pointer store to every "
        "worker running it.\n"
        "# TYPE spillway_publish_latency_seconds histogram\n"
        "spillway_publish_latency_seconds_bucket{le=\"1e-06\"} 1\n"
        "spillway_publish_latency_seconds_bucket{le=\"0.0025\"} 2\n"
        "spillway_publish_latency_seconds_bucket{le=\"+Inf\"} 3\n"
        "spillway_publish_latency_seconds_sum 0.5\n"
        "spillway_publish_latency_seconds_count 3\n"
        "# HELP spillway_mempool_size Mbufs in the packet pool.\n"
        "# TYPE spillway_mempool_size gauge\n"
        "spillway_mempool_size 100\n"
        "# HELP spillway_mempool_available Mbufs free in the pool (per-core caches counted as "
        "free).\n"
        "# TYPE spillway_mempool_available gauge\n"
        "spillway_mempool_available 90\n"
        "# HELP spillway_mempool_in_use Mbufs taken from the pool.\n"
        "# TYPE spillway_mempool_in_use gauge\n"
        "spillway_mempool_in_use 10\n"
        "# HELP spillway_hot_promotions_total Hot keys promoted (given an override).\n"
        "# TYPE spillway_hot_promotions_total counter\n"
        "spillway_hot_promotions_total 1\n"
        "# HELP spillway_hot_demotions_total Hot keys demoted.\n"
        "# TYPE spillway_hot_demotions_total counter\n"
        "spillway_hot_demotions_total 0\n"
        "# HELP spillway_hot_replans_total Overrides planned again (a replica failed or loads "
        "shifted).\n"
        "# TYPE spillway_hot_replans_total counter\n"
        "spillway_hot_replans_total 0\n"
        "# HELP spillway_hot_dropped_total Overrides dropped (their VIP or backends went "
        "away).\n"
        "# TYPE spillway_hot_dropped_total counter\n"
        "spillway_hot_dropped_total 0\n"
        "# HELP spillway_hot_table_full_total Promotions refused because the override table "
        "was full.\n"
        "# TYPE spillway_hot_table_full_total counter\n"
        "spillway_hot_table_full_total 0\n"
        "# HELP spillway_hot_windows_total Hot-key windows closed (the controller's logical "
        "clock).\n"
        "# TYPE spillway_hot_windows_total counter\n"
        "spillway_hot_windows_total 42\n"
        "# HELP spillway_hot_overrides Active hot-key overrides.\n"
        "# TYPE spillway_hot_overrides gauge\n"
        "spillway_hot_overrides 1\n"
        "# HELP spillway_hot_pinned_overrides Active overrides pinned by an operator.\n"
        "# TYPE spillway_hot_pinned_overrides gauge\n"
        "spillway_hot_pinned_overrides 0\n"
        "# HELP spillway_hot_missed_core_windows_total Core windows the controller could not "
        "read in time.\n"
        "# TYPE spillway_hot_missed_core_windows_total counter\n"
        "spillway_hot_missed_core_windows_total 5\n"
        "# HELP spillway_hot_key_share Latest measured share of its VIP's traffic of each hot "
        "key.\n"
        "# TYPE spillway_hot_key_share gauge\n"
        "spillway_hot_key_share{vip=\"[2001:db8::1]:53/udp\",key=\"0x00000000000000ff\"} "
        "0.25\n"
        "# HELP spillway_hot_key_replicas Backends each hot key's new flows are spread over.\n"
        "# TYPE spillway_hot_key_replicas gauge\n"
        "spillway_hot_key_replicas{vip=\"[2001:db8::1]:53/udp\",key=\"0x00000000000000ff\"} "
        "2\n"
        "# HELP spillway_metrics_requests_total Requests to the metrics endpoint, by the HTTP "
        "status answered.\n"
        "# TYPE spillway_metrics_requests_total counter\n"
        "spillway_metrics_requests_total{code=\"200\"} 5\n"
        "spillway_metrics_requests_total{code=\"400\"} 1\n"
        "spillway_metrics_requests_total{code=\"404\"} 0\n"
        "spillway_metrics_requests_total{code=\"405\"} 2\n"
        "spillway_metrics_requests_total{code=\"408\"} 0\n"
        "spillway_metrics_requests_total{code=\"431\"} 0\n"
        "spillway_metrics_requests_total{code=\"500\"} 0\n"
        "spillway_metrics_requests_total{code=\"503\"} 0\n";

static json_t *
parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (j == NULL)
		fail_msg("fixture JSON: line %d: %s", e.line, e.text);
	return j;
}

/* Print the first differing line, so a failure says where. */
static void
assert_text(const char *got, const char *want)
{
	size_t i = 0, line = 1, start = 0;

	while (got[i] != '\0' && got[i] == want[i]) {
		if (got[i] == '\n') {
			line++;
			start = i + 1;
		}
		i++;
	}
	if (got[i] == want[i])
		return;
	fail_msg("line %zu differs:\n got: %.120s\nwant: %.120s", line, got + start, want + start);
}

static void
test_metrics_render_fixed(void **state)
{
	json_t *stats = parse(stats_doc), *hot = parse(hot_doc);
	uint64_t http[LB_METRICS_CODES] = {5, 1, 0, 2, 0, 0, 0, 0};
	struct lb_metrics_input in = {.stats = stats, .hot = hot, .version = "9.8.7", .http = http};
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(lb_metrics_render(&in, 1 << 20, &text, &len), 0);
	assert_text(text, expected);
	assert_int_equal(len, strlen(expected));
	free(text);
	json_decref(stats);
	json_decref(hot);
}

/* The link hook's change count is an event counter; its per-port array is not. */
static void
test_metrics_render_link_changes(void **state)
{
	json_t *stats = parse("{\"hooks\": {\"link\": {\"failures\": 0, \"link_changes\": 3,"
	                      " \"ports\": [{\"port\": 0, \"up\": true, \"changes\": 3}]}}}");
	struct lb_metrics_input in = {.stats = stats, .version = "1"};
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(lb_metrics_render(&in, 1 << 20, &text, &len), 0);
	assert_non_null(strstr(
	        text, "spillway_hook_events_total{hook=\"link\",event=\"link_changes\"} 3\n"));
	assert_null(strstr(text, "event=\"ports\""));
	free(text);
	json_decref(stats);
}

/* Hook names are the document's keys: quotes, backslashes and line feeds escaped. */
static void
test_metrics_render_escapes_labels(void **state)
{
	json_t *stats = parse("{\"hooks\": {\"a\\\"b\\\\c\\nd\": {\"failures\": 4, \"writes\": 2,"
	                      " \"announced\": 9}}}");
	struct lb_metrics_input in = {.stats = stats, .version = "v\"1"};
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(lb_metrics_render(&in, 1 << 20, &text, &len), 0);
	assert_non_null(strstr(text, "spillway_build_info{version=\"v\\\"1\"} 1\n"));
	assert_non_null(strstr(text, "spillway_hook_failures_total{hook=\"a\\\"b\\\\c\\nd\"} 4\n"));
	assert_non_null(strstr(
	        text, "spillway_hook_events_total{hook=\"a\\\"b\\\\c\\nd\",event=\"writes\"} 2\n"));
	/* A state (announced) is not an event counter. */
	assert_null(strstr(text, "event=\"announced\""));
	/* Without a hot_list document or request counts, their families are absent. */
	assert_null(strstr(text, "spillway_hot_key_share"));
	assert_null(strstr(text, "spillway_metrics_requests_total"));
	free(text);
	json_decref(stats);
}

static void
test_metrics_render_bounded(void **state)
{
	json_t *stats = parse(stats_doc);
	struct lb_metrics_input in = {.stats = stats, .version = "1"};
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(lb_metrics_render(&in, 200, &text, &len), -E2BIG);
	assert_null(text);
	assert_int_equal(lb_metrics_render(&in, 1 << 20, &text, &len), 0);
	free(text);
	/* Exactly the text and its NUL fit. */
	assert_int_equal(lb_metrics_render(&in, len + 1, &text, &len), 0);
	free(text);
	assert_int_equal(lb_metrics_render(&in, len, &text, &len), -E2BIG);
	json_decref(stats);
}

static void
test_metrics_render_rejects(void **state)
{
	json_t *arr = json_array();
	struct lb_metrics_input in = {.stats = arr};
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(lb_metrics_render(NULL, 100, &text, &len), -EINVAL);
	assert_int_equal(lb_metrics_render(&in, 100, &text, &len), -EINVAL);
	in.stats = NULL;
	assert_int_equal(lb_metrics_render(&in, 100, &text, &len), -EINVAL);
	json_decref(arr);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_metrics_render_fixed),
	        cmocka_unit_test(test_metrics_render_escapes_labels),
	        cmocka_unit_test(test_metrics_render_link_changes),
	        cmocka_unit_test(test_metrics_render_bounded),
	        cmocka_unit_test(test_metrics_render_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
