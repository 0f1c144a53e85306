/* consume_loop: the ceiling of reading a topic with librdkafka.
 *
 *   consume_loop BROKERS TOPIC     reads every partition of TOPIC from its low to its high watermark (as
 *                                  they are at start), touches every payload byte, and prints
 *                                  "consume_loop: messages=N bytes=B seconds=S per_s=R" on stdout
 *
 * Nothing but fetching: no decode, no merge, no commit. `scripts/bench --peer` runs it next to
 * `aggregator replay --output /dev/null` on the same topic, so the replay's rate as a percentage of this
 * loop's is what decoding and merging cost over reading alone. For that comparison to isolate decode and
 * merge, the consumer uses the prefetch the replay consumer uses by default (worker/source/kafka.c,
 * KAFKA_REPLAY_CONSUMER), the same assign-from-watermarks plan (no group join, nothing committed) and the
 * same batched queue reads; those settings are written out here rather than shared, because this tool is
 * the plain baseline and must not move when the worker's defaults are tuned (the bench prints both). */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, const char *why) {
  fprintf(stderr, "consume_loop: %s: %s\n", what, why);
  exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fputs("usage: consume_loop BROKERS TOPIC\n", stderr);
    return 2;
  }
  const char *brokers = argv[1], *topic = argv[2];
  double t0 = now_s();
  char err[512], group[64];
  snprintf(group, sizeof group, "consume-loop-%ld", (long)time(NULL));
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  const char *kv[] = {"bootstrap.servers", brokers, "group.id", group, "enable.auto.commit", "false",
                      "enable.auto.offset.store", "false", "queued.min.messages", "500000",
                      "queued.max.messages.kbytes", "262144", "fetch.max.bytes", "104857600", NULL};
  for (int i = 0; kv[i]; i += 2)
    if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], err, sizeof err) != RD_KAFKA_CONF_OK) die(kv[i], err);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) die("consumer", err);

  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 30000);
  if (e) die("metadata", rd_kafka_err2str(e));
  if (md->topic_cnt != 1 || md->topics[0].err) die(topic, "no such topic");
  int np = md->topics[0].partition_cnt;
  rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(np);
  int64_t *end = calloc((size_t)np, sizeof *end);
  if (!end) abort();
  uint64_t total = 0;
  int remaining = 0;
  for (int i = 0; i < np; i++) {
    int32_t p = md->topics[0].partitions[i].id;
    int64_t lo, hi;
    e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 30000);
    if (e) die("watermarks", rd_kafka_err2str(e));
    if (p < 0 || p >= np) die(topic, "partition ids are not 0..n-1");
    end[p] = hi;
    if (hi > lo) {
      rd_kafka_topic_partition_list_add(assign, topic, p)->offset = lo;
      total += (uint64_t)(hi - lo);
      remaining++;
    }
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  if (remaining) rd_kafka_assign(rk, assign);
  rd_kafka_topic_partition_list_destroy(assign);

  enum { BATCH = 4096 };
  rd_kafka_message_t **msgs = malloc(BATCH * sizeof *msgs);
  if (!msgs) abort();
  rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
  uint64_t n = 0, bytes = 0, sum = 0;
  /* The end of a partition is seen as its last offset below the high
   * watermark; a partition whose last offset is a control record (a
   * transactional topic) would never show it, so a loop without messages
   * for 30 s gives up instead of spinning (the bench's topics are not
   * transactional). */
  double last = now_s();
  while (remaining) {
    ssize_t got = rd_kafka_consume_batch_queue(q, 200, msgs, BATCH);
    if (got > 0) last = now_s();
    else if (now_s() - last > 30) die(topic, "no message for 30 s before the high watermarks");
    for (ssize_t k = 0; k < got; k++) {
      rd_kafka_message_t *m = msgs[k];
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      } else if (m->err) {
        die("consume", rd_kafka_message_errstr(m));
      } else if (m->offset < end[m->partition]) {
        /* Touch every byte, as any consumer that does something with the
         * payload must (the sum is printed so it cannot be optimised out). */
        const unsigned char *v = m->payload;
        for (size_t i = 0; i < m->len; i++) sum += v[i];
        bytes += m->len;
        n++;
        if (m->offset + 1 == end[m->partition]) remaining--;
      }
      rd_kafka_message_destroy(m);
    }
  }
  double el = now_s() - t0;
  rd_kafka_queue_destroy(q);
  free(msgs);
  free(end);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  printf("consume_loop: messages=%" PRIu64 " of=%" PRIu64 " bytes=%" PRIu64 " seconds=%.3f per_s=%.1f checksum=%" PRIu64
         "\n",
         n, total, bytes, el, el > 0 ? (double)n / el : 0.0, sum);
  return n == total ? 0 : 1;
}
