/* kafka_tool: the Kafka chores of tests, the demo and benchmarks.
 *
 *   kafka_tool create-topic BROKERS TOPIC PARTITIONS [NAME=VALUE ...]
 *                                                       with topic configs (message.timestamp.type=...)
 *   kafka_tool delete-topic BROKERS TOPIC
 *   kafka_tool produce BROKERS TOPIC [FILE|-] [RATE]   one message per line; key "<tenant>/<assignment>"
 *                                                       of a valid command, none otherwise; RATE msgs/s
 *   kafka_tool dump BROKERS TOPIC                       every message up to the high watermarks, as JSON lines
 *                                                       {partition, offset, key, headers, value_hex} (key null
 *                                                       when none)
 *   kafka_tool produce-hex BROKERS TOPIC [FILE|-]       as produce, each line the hex of one value: values
 *                                                       that hold a newline byte
 *   kafka_tool committed BROKERS GROUP TOPIC            committed offsets of GROUP, "partition offset" lines
 *   kafka_tool group BROKERS GROUP                      GROUP as the coordinator describes it: "state S",
 *                                                       "coordinator BROKER_ID", then "member CONSUMER_ID
 *                                                       CLIENT_ID" lines, sorted
 *   kafka_tool leaders BROKERS TOPIC                    each partition's leader, "partition broker_id" lines
 *   kafka_tool delete-records BROKERS TOPIC PARTITION OFFSET
 *                                                       moves the partition's log start to OFFSET
 *   kafka_tool end-offsets BROKERS TOPIC                high watermarks, "partition offset" lines
 *
 * AGG_KAFKA_TOOL_PROPERTIES names a file of NAME=VALUE lines (# comments)
 * of librdkafka settings every client of the tool gets first: the secured
 * stack's admin-rdkafka.properties (scripts/stack start-secured). */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "command.h"

static void die(const char *what, const char *why) {
  fprintf(stderr, "kafka_tool: %s: %s\n", what, why);
  exit(1);
}

/* Applies the NAME=VALUE lines of the file AGG_KAFKA_TOOL_PROPERTIES names,
 * if it names one; a line that is not a setting librdkafka takes is fatal. */
static void apply_properties(rd_kafka_conf_t *conf) {
  const char *path = getenv("AGG_KAFKA_TOOL_PROPERTIES");
  if (!path || !*path) return;
  FILE *f = fopen(path, "r");
  if (!f) die(path, "cannot open");
  char line[4096], err[512];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || line[0] == '#') continue;
    char *eq = strchr(line, '=');
    if (!eq) die(path, "a line without NAME=VALUE");
    *eq = '\0';
    if (rd_kafka_conf_set(conf, line, eq + 1, err, sizeof err) != RD_KAFKA_CONF_OK) die(path, err);
  }
  fclose(f);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *brokers, const char *group) {
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  apply_properties(conf);
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err) ||
      (group && rd_kafka_conf_set(conf, "group.id", group, err, sizeof err)) ||
      (type == RD_KAFKA_PRODUCER && (rd_kafka_conf_set(conf, "acks", "all", err, sizeof err) ||
                                     rd_kafka_conf_set(conf, "linger.ms", "20", err, sizeof err) ||
                                     rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err))))
    die("config", err);
  rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) die("client", err);
  return rk;
}

static double elapsed_s(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static void sleep_until(const struct timespec *start, double seconds) {
  double el = elapsed_s(start);
  if (seconds > el) {
    double d = seconds - el;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

static int create_topic(const char *brokers, const char *topic, int partitions, char **configs, int nconfigs) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
  char err[512];
  /* -1: the cluster's default.replication.factor (1 on the plain stack, 3
   * on the 3-broker profile). */
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, -1, err, sizeof err);
  if (!nt) die("topic", err);
  for (int i = 0; i < nconfigs; i++) {
    char *eq = strchr(configs[i], '=');
    if (!eq) die(configs[i], "a topic config is NAME=VALUE");
    *eq = '\0';
    if (rd_kafka_NewTopic_set_config(nt, configs[i], eq + 1)) die(configs[i], "cannot set this topic config");
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  if (!ev) die("create", "timeout");
  size_t n;
  const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
  int rc = 0;
  if (rd_kafka_event_error(ev)) die("create", rd_kafka_event_error_string(ev));
  for (size_t i = 0; i < n; i++) {
    rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
    if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
      fprintf(stderr, "kafka_tool: create %s: %s\n", topic, rd_kafka_topic_result_error_string(res[i]));
      rc = 1;
    }
  }
  rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  /* The controller has the topic; a broker's metadata may not yet, and a
   * worker started now would find it missing (it checks at start): return
   * once the metadata shows every partition. */
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!rc) {
    const rd_kafka_metadata_t *md;
    bool seen = false;
    if (!rd_kafka_metadata(rk, 0, t, &md, 5000)) {
      seen = md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt >= partitions;
      rd_kafka_metadata_destroy(md);
    }
    if (seen) break;
    double el = elapsed_s(&start); /* the metadata calls' own time counts too */
    if (el >= 30) die("create", "the topic is not in the brokers' metadata after 30 s");
    sleep_until(&start, el + 0.05);
  }
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  return rc;
}

static int delete_topic(const char *brokers, const char *topic) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
  rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_DeleteTopic_destroy(dt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return 0;
}

/* line[0..n) as hex digits into line itself (halving n); dies on a bad digit. */
static ssize_t unhex(char *line, ssize_t n) {
  if (n % 2) die("produce-hex", "a line of odd length");
  for (ssize_t i = 0; i < n / 2; i++) {
    unsigned v;
    if (sscanf(line + 2 * i, "%2x", &v) != 1) die("produce-hex", "not a hex digit");
    line[i] = (char)v;
  }
  return n / 2;
}

static int produce(const char *brokers, const char *topic, const char *path, double rate, bool hex) {
  FILE *in = (!path || !strcmp(path, "-")) ? stdin : fopen(path, "rb");
  if (!in) die(path, "cannot open");
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
  static model_command_t cmd;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  uint64_t count = 0;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while ((n = getline(&line, &cap, in)) >= 0) {
    if (n > 0 && line[n - 1] == '\n') n--;
    if (hex) n = unhex(line, n);
    char key[160];
    size_t klen = 0;
    if (model_command_decode(line, (size_t)n, SIZE_MAX, &cmd, NULL))
      klen = (size_t)snprintf(key, sizeof key, "%s/%s", cmd.tenant, cmd.assignment);
    for (;;) {
      rd_kafka_resp_err_t e =
          rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_VALUE(line, (size_t)n), RD_KAFKA_V_KEY(klen ? key : NULL, klen), RD_KAFKA_V_END);
      if (!e) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce", rd_kafka_err2str(e));
      rd_kafka_poll(rk, 50);
    }
    rd_kafka_poll(rk, 0);
    count++;
    if (rate > 0 && count % 100 == 0) sleep_until(&start, (double)count / rate);
  }
  free(line);
  if (in != stdin) fclose(in);
  if (rd_kafka_flush(rk, 120000)) die("flush", "messages left undelivered");
  rd_kafka_destroy(rk);
  fprintf(stderr, "kafka_tool: produced %" PRIu64 " messages to %s\n", count, topic);
  return 0;
}

static rd_kafka_topic_partition_list_t *partitions(rd_kafka_t *rk, const char *topic) {
  const rd_kafka_metadata_t *md;
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 10000);
  if (e) die("metadata", rd_kafka_err2str(e));
  if (md->topic_cnt != 1 || md->topics[0].err) die(topic, "no such topic");
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
  for (int i = 0; i < md->topics[0].partition_cnt; i++)
    rd_kafka_topic_partition_list_add(l, topic, md->topics[0].partitions[i].id);
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  return l;
}

static int end_offsets(const char *brokers, const char *topic) {
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, brokers, "kafka-tool");
  rd_kafka_topic_partition_list_t *l = partitions(rk, topic);
  for (int i = 0; i < l->cnt; i++) {
    int64_t lo, hi;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic, l->elems[i].partition, &lo, &hi, 10000);
    if (e) die("watermarks", rd_kafka_err2str(e));
    printf("%" PRId32 " %" PRId64 "\n", l->elems[i].partition, hi);
  }
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(rk);
  return 0;
}

static int dump(const char *brokers, const char *topic) {
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, brokers, "kafka-tool");
  rd_kafka_topic_partition_list_t *l = partitions(rk, topic);
  int remaining = 0;
  int64_t *ends = calloc((size_t)l->cnt + 1, sizeof *ends);
  for (int i = 0; i < l->cnt; i++) {
    int64_t lo, hi;
    rd_kafka_query_watermark_offsets(rk, topic, l->elems[i].partition, &lo, &hi, 10000);
    ends[i] = hi;
    l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    if (hi > lo) remaining++;
  }
  rd_kafka_assign(rk, l);
  model_buf_t b = MODEL_BUF_INIT;
  while (remaining > 0) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 10000);
    if (!m) die("dump", "timeout before the end offsets");
    if (m->err) {
      if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) die("consume", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    int idx = 0;
    while (l->elems[idx].partition != m->partition) idx++;
    model_buf_clear(&b);
    model_buf_printf(&b, "{\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"key\":", m->partition, m->offset);
    if (m->key)
      model_buf_json_string(&b, m->key, m->key_len);
    else
      model_buf_puts(&b, "null");
    model_buf_puts(&b, ",\"headers\":{");
    rd_kafka_headers_t *h = NULL;
    if (!rd_kafka_message_headers(m, &h) && h) {
      const char *name;
      const void *val;
      size_t sz;
      for (size_t i = 0; !rd_kafka_header_get_all(h, i, &name, &val, &sz); i++) {
        if (i) model_buf_putc(&b, ',');
        model_buf_json_string(&b, name, strlen(name));
        model_buf_putc(&b, ':');
        model_buf_json_string(&b, val, sz);
      }
    }
    /* Hex keeps the value byte for byte, invalid UTF-8 included. */
    model_buf_puts(&b, "},\"value_hex\":\"");
    for (size_t i = 0; i < m->len; i++) model_buf_printf(&b, "%02x", ((const unsigned char *)m->payload)[i]);
    model_buf_puts(&b, "\"}\n");
    fwrite(b.data, 1, b.len, stdout);
    if (m->offset + 1 >= ends[idx]) remaining--;
    rd_kafka_message_destroy(m);
  }
  model_buf_destroy(&b);
  free(ends);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return 0;
}

static int committed(const char *brokers, const char *group, const char *topic) {
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, brokers, group);
  rd_kafka_topic_partition_list_t *l = partitions(rk, topic);
  rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 10000);
  if (e) die("committed", rd_kafka_err2str(e));
  for (int i = 0; i < l->cnt; i++) printf("%" PRId32 " %" PRId64 "\n", l->elems[i].partition, l->elems[i].offset);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(rk);
  return 0;
}

static int delete_records(const char *brokers, const char *topic, int32_t partition, int64_t offset) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic, partition)->offset = offset;
  rd_kafka_DeleteRecords_t *dr = rd_kafka_DeleteRecords_new(l);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteRecords(rk, &dr, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  if (!ev) die("delete-records", "timeout");
  if (rd_kafka_event_error(ev)) die("delete-records", rd_kafka_event_error_string(ev));
  const rd_kafka_topic_partition_list_t *res =
      rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
  if (!res || res->cnt != 1 || res->elems[0].err) die("delete-records", res ? rd_kafka_err2str(res->elems[0].err) : "");
  rd_kafka_event_destroy(ev);
  rd_kafka_DeleteRecords_destroy(dr);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int group(const char *brokers, const char *name) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DescribeConsumerGroups(rk, &name, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  if (!ev) die("group", "timeout");
  if (rd_kafka_event_error(ev)) die("group", rd_kafka_event_error_string(ev));
  size_t n;
  const rd_kafka_ConsumerGroupDescription_t **g =
      rd_kafka_DescribeConsumerGroups_result_groups(rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
  if (n != 1) die("group", "no description");
  if (rd_kafka_ConsumerGroupDescription_error(g[0]))
    die("group", rd_kafka_error_string(rd_kafka_ConsumerGroupDescription_error(g[0])));
  printf("state %s\n", rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupDescription_state(g[0])));
  const rd_kafka_Node_t *coordinator = rd_kafka_ConsumerGroupDescription_coordinator(g[0]);
  printf("coordinator %d\n", coordinator ? rd_kafka_Node_id(coordinator) : -1);
  size_t m = rd_kafka_ConsumerGroupDescription_member_count(g[0]);
  char **lines = calloc(m + 1, sizeof *lines);
  for (size_t i = 0; i < m; i++) {
    const rd_kafka_MemberDescription_t *d = rd_kafka_ConsumerGroupDescription_member(g[0], i);
    const char *id = rd_kafka_MemberDescription_consumer_id(d), *client = rd_kafka_MemberDescription_client_id(d);
    size_t len = strlen(id) + strlen(client) + 2;
    lines[i] = malloc(len);
    snprintf(lines[i], len, "%s %s", id, client);
  }
  qsort(lines, m, sizeof *lines, cmp_str);
  for (size_t i = 0; i < m; i++) {
    printf("member %s\n", lines[i]);
    free(lines[i]);
  }
  free(lines);
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return 0;
}

static int leaders(const char *brokers, const char *topic) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
  const rd_kafka_metadata_t *md = NULL;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 10000);
  if (e) die("leaders", rd_kafka_err2str(e));
  if (md->topic_cnt != 1 || md->topics[0].err) die("leaders", md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "");
  for (int i = 0; i < md->topics[0].partition_cnt; i++)
    printf("%" PRId32 " %" PRId32 "\n", md->topics[0].partitions[i].id, md->topics[0].partitions[i].leader);
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && !strcmp(argv[1], "create-topic")) return create_topic(argv[2], argv[3], atoi(argv[4]), argv + 5, argc - 5);
  if (argc >= 4 && !strcmp(argv[1], "delete-topic")) return delete_topic(argv[2], argv[3]);
  if (argc >= 4 && !strcmp(argv[1], "produce"))
    return produce(argv[2], argv[3], argc > 4 ? argv[4] : NULL, argc > 5 ? atof(argv[5]) : 0, false);
  if (argc >= 4 && !strcmp(argv[1], "produce-hex"))
    return produce(argv[2], argv[3], argc > 4 ? argv[4] : NULL, 0, true);
  if (argc >= 4 && !strcmp(argv[1], "group")) return group(argv[2], argv[3]);
  if (argc >= 6 && !strcmp(argv[1], "delete-records"))
    return delete_records(argv[2], argv[3], (int32_t)atoi(argv[4]), strtoll(argv[5], NULL, 10));
  if (argc >= 4 && !strcmp(argv[1], "dump")) return dump(argv[2], argv[3]);
  if (argc >= 5 && !strcmp(argv[1], "committed")) return committed(argv[2], argv[3], argv[4]);
  if (argc >= 4 && !strcmp(argv[1], "end-offsets")) return end_offsets(argv[2], argv[3]);
  if (argc >= 4 && !strcmp(argv[1], "leaders")) return leaders(argv[2], argv[3]);
  fputs("usage: kafka_tool create-topic|delete-topic|produce|produce-hex|dump|committed|group|delete-records|end-offsets|"
        "leaders ... "
        "(see source)\n",
        stderr);
  return 2;
}
