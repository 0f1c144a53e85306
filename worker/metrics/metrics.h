/* Metrics, health and readiness: what the rest of the worker calls.
 *
 * One process-wide registry: the pipeline threads record, the HTTP thread
 * (started by metrics_start) renders and decides. The metrics themselves,
 * their names, labels and meaning, are lines of the metrics table
 * (metrics_table.h; docs/METRICS.md lists them for operators). Recording
 * never blocks on a scrape: counters and gauges are atomics; a histogram
 * or the per-partition table takes a short lock, once per flush or once a
 * second per partition, not per message.
 *
 * Every recording function works whether or not the server runs: with
 * metrics.listen = "" the counters still feed the replay summary and tests.
 * The readiness and liveness decisions are readiness.h's policy, fed by the
 * inputs below. */
#ifndef METRICS_H
#define METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "metrics_table.h"
#include "base/clock.h"

/* Starts the HTTP server on listen ("host:port"; host an IPv4/IPv6 literal,
 * IPv6 in brackets, or a name that resolves; port 0..65535, 0 = any free
 * port, see metrics_port). "" starts no server and succeeds. Returns false
 * with a one-line message in err (may be NULL) on a bad address, a bind
 * failure or a second start. Also counts as a first heartbeat, so /healthz
 * answers 200 during start-up for one heartbeat window. */
bool metrics_start(const char *listen, char *err, size_t errsz);
/* Stops the server, joining its thread, and releases the lag table.
 * Counters keep their values. Safe without a start and when called twice. */
void metrics_stop(void);
/* The port the server is bound to; 0 when no server runs. */
int metrics_port(void);

/* The generic recorders: any family by its row (metrics_table.h), series
 * being the index of its fixed label values' combination, the first label
 * outermost (for one label, the value's index in its enum). A series past
 * the family's, or a family of another type or source, is ignored.
 * metrics_add: adds n to a counter; metrics_set: sets a gauge to v;
 * metrics_observe: counts n observations of v in a histogram (NaN is not
 * observed). The named recorders below say what the pipeline's events
 * mean and record through these. */
void metrics_add(metrics_row_t row, size_t series, uint64_t n);
void metrics_set(metrics_row_t row, size_t series, uint64_t v);
void metrics_observe(metrics_row_t row, double v, uint64_t n);

/* type="invalid": a rejected command whose type is unknown. */
#define METRICS_TYPE_INVALID (-1)
/* Adds n to aggregator_commands_total{type,result}. type is a
 * model_cmd_type_t (command.h) or METRICS_TYPE_INVALID; any other value is
 * counted as "invalid". An index, not a name: this runs once per message. */
void metrics_command(int type, metrics_cmd_result_t r, uint64_t n);
/* Adds 1 to aggregator_rejects_total{code}; code is a model_reject_code_t;
 * MODEL_OK or a value out of range is counted as code="other". */
void metrics_reject(int code);

/* Adds n to aggregator_store_writes_total{result} (n = documents). */
void metrics_store_write(metrics_write_result_t r, uint64_t n);
/* Adds n to aggregator_store_write_bytes_total: the BSON bytes of the
 * documents the store acknowledged (what a flush ships, without the command
 * envelope; writes that conflicted or failed are not counted). */
void metrics_store_write_bytes(uint64_t n);
/* Adds n to aggregator_store_too_large_total: aggregate writes refused
 * because the document would pass the store's 16 MiB limit (batch.h says
 * what becomes of their changes). Each is also counted as a write error. */
void metrics_store_too_large(uint64_t n);

/* Adds n to aggregator_dead_letter_deliveries_total{result}: ok = a rejected
 * message acknowledged by the dead-letter topic; error = a delivery attempt
 * that failed (refused by the producer or reported failed), after which the
 * message is produced again. */
void metrics_dead_letter(metrics_dead_letter_result_t r, uint64_t n);

/* Adds n to aggregator_change_events_total{result}: ok = a change event
 * acknowledged by the change topic; error = a delivery attempt that failed
 * (refused by the producer or reported failed), after which the event is
 * produced again. */
void metrics_change_event(metrics_change_event_result_t r, uint64_t n);
/* aggregator_change_events_pending = n, events produced and not
 * acknowledged; the oldest of them was produced at oldest_mono_ms on
 * clock's monotonic clock. aggregator_change_events_oldest_pending_seconds
 * reads its age against that clock when /metrics is scraped, so it keeps
 * growing while nothing is acknowledged (0 when n is 0). clock must outlive
 * its use here: the producer records n = 0 when it goes. */
void metrics_set_change_events_pending(uint64_t n, const clock_source_t *clock, int64_t oldest_mono_ms);
/* For the renderer: the age in seconds of the oldest pending change event. */
double metrics_change_events_oldest_seconds(void);

/* The oldest change merged in memory and not yet durable in the store was
 * applied at oldest_mono_ms on clock's monotonic clock (INT64_MAX: none);
 * aggregator_oldest_unwritten_age_seconds reads its age when /metrics is
 * scraped, so it keeps growing while nothing is written. clock must
 * outlive its use here: the consumer records INT64_MAX when it goes. */
void metrics_set_oldest_unwritten(const clock_source_t *clock, int64_t oldest_mono_ms);
/* For the renderer: the age in seconds of the oldest unwritten change, 0 when none. */
double metrics_oldest_unwritten_seconds(void);
/* The writer's stall watchdog decided (stall.h): stalled with `unwritten`
 * aggregates unwritten and nothing landed since since_mono_ms (the
 * readiness clock's, metrics_set_clock), or not. Feeds readiness and
 * aggregator_writer_stalled. */
void metrics_set_writer_stalled(bool stalled, uint64_t unwritten, int64_t since_mono_ms);

/* One flush took `seconds` and wrote `aggregates` documents. */
void metrics_flush(double seconds, uint64_t aggregates);
/* `commands` commands became durable `seconds` after their Kafka message
 * timestamp (when they were produced): queueing, fetching, batching and the
 * write of their own aggregate. */
void metrics_latency(double seconds, uint64_t commands);
/* `commands` commands became committable `seconds` after their Kafka message
 * timestamp: they and every command applied before them are durable. Later
 * than durable by the older changes still being written (with flushes of a
 * few aggregates, up to a pass over the dirty list; see batch.h). */
void metrics_committable_latency(double seconds, uint64_t commands);

/* Adds 1 to aggregator_store_retries_total: a flush the store failed, to be
 * attempted again after a backoff. */
void metrics_store_retry(void);

/* Adds 1 to aggregator_rebalances_total{event}: partitions given to this
 * worker, taken back in an orderly way, or lost (the group moved on without
 * it, as after a missed session timeout). */
void metrics_rebalance(metrics_rebalance_t e);

void metrics_set_dirty(uint64_t n);
void metrics_set_cached(uint64_t n, uint64_t bytes);
void metrics_set_pending_bytes(uint64_t n);
/* The configured bounds: batch.max_pending_bytes, cache.max_aggregates and
 * cache.max_bytes, as they apply now (set at start and after a reload). */
void metrics_set_bounds(uint64_t max_pending_bytes, uint64_t cache_max_aggregates, uint64_t cache_max_bytes);
/* Whether fetching is paused at the pending-bytes bound. */
void metrics_set_fetch_paused(bool paused);
/* The number of partitions this worker holds. */
void metrics_set_assigned_partitions(uint64_t n);

/* Per assigned partition, from the consumer: the lag from the position
 * (high watermark - next offset to fetch), the lag from the committed
 * offset (high watermark - committed offset, what an autoscaler reading the
 * group's offsets sees), and the timestamp (wall ms) of the oldest command
 * consumed and not yet committed, 0 when there is none: its age is read
 * against the clock when /metrics is scraped, so it keeps growing even if
 * the consumer stops reporting. metrics_clear_lag forgets all three when
 * the partition is revoked. */
void metrics_set_lag(const char *topic, int32_t partition, int64_t lag);
void metrics_set_committed_lag(const char *topic, int32_t partition, int64_t lag);
void metrics_set_oldest_uncommitted(const char *topic, int32_t partition, int64_t wall_ms);
void metrics_clear_lag(const char *topic, int32_t partition);
/* For the renderer: calls emit for every assigned partition that reported
 * the value which, under the partition table's lock (topic and partition
 * its label values). */
void metrics_part_each(metrics_part_t which, metrics_emit_fn emit, void *ctx);
/* For the server's stop: frees the partition table. */
void metrics_lag_release(void);

/* Readiness inputs: ready = has an assignment AND neither dead-letter nor
 * change-event delivery is failing AND the store answered within the store
 * window AND it has not failed since that answer (readiness.h). */
void metrics_set_assigned(bool has_assignment);
void metrics_set_dead_letter_failing(bool failing); /* deadletter.h decides */
void metrics_set_changes_failing(bool failing);     /* changes_producer.h decides */
void metrics_store_answered(void); /* any successful reply from the store */
void metrics_store_failed(void);   /* the store could not be reached */
/* The same, naming a cause that waiting does not heal (readiness.h). */
void metrics_store_failed_cause(const char *cause);
/* The Kafka consumer cannot do its work, for the reason why; NULL or "":
 * it can again (readiness.h). */
void metrics_set_source_failing(const char *why);
/* Liveness input: call from the main loop at least every few seconds. */
void metrics_heartbeat(void);

/* The decisions behind /readyz and /healthz. When false, reason (may be
 * NULL) gets a short human-readable cause such as "no partition assignment". */
bool metrics_ready(char *reason, size_t reasonsz);
bool metrics_healthy(char *reason, size_t reasonsz);
/* Overrides the two windows (seconds, > 0, rounded up to whole
 * milliseconds); a value <= 0 leaves that window as it is. */
void metrics_set_windows(double ready_store_s, double health_heartbeat_s);
/* The clock the windows and the oldest-uncommitted age read (NULL: the
 * process's clocks), for tests that move time by hand. Set it before
 * anything records: times already recorded were read from the previous
 * clock. The clock must outlive its use here. */
void metrics_set_clock(const clock_source_t *clock);

/* Appends the Prometheus text exposition of every metric to out. */
void metrics_render(model_buf_t *out);

#endif
