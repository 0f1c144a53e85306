/* bench_decode: decodes/s of model_command_decode() on one core.
 *
 * Usage: bench_decode [N commands, default 100000] [rounds, default 20]
 *                     [kernel: auto (default), scalar, sse2 or avx2]
 *
 * The kernel is the JSON scanner's string kernel (json_scan.h); naming one
 * measures it alone, and the line printed names the one used.
 *
 * Generates N realistic commands in memory (all six types, mixed like a live
 * topic: mostly submissions, grades and roster changes), checks that every
 * one decodes, then times `rounds` passes over all of them. No I/O in the
 * timed part. Prints one line: commands, mean size, decodes/s, MB/s. Its
 * results are in docs/BENCHMARKS.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "command.h"
#include "json/json_scan.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint32_t next(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (uint32_t)((rng * 2685821657736338717ULL) >> 32);
}

static const char *const titles[] = {"Essay: The causes of the First World War",
                                     "Lab report 3 - titration",
                                     "Reading log, week 12",
                                     "Fractions worksheet",
                                     "Dissertation d\\u00e9finitive: la R\\u00e9volution",
                                     "Project \xe2\x80\x9cRenewable energy\xe2\x80\x9d"};
static const char *const sub_status[] = {"working", "submitted", "returned", "reassigned"};
static const char *const asg_status[] = {"draft", "published", "closed"};

static size_t gen(char *o, size_t cap, uint64_t seq) {
  unsigned r = next() % 100;
  unsigned tenant = next() % 50, asg = next() % 100000, stu = next() % 1000000;
  char env[256];
  /* the command id looks like a UUID */
  int n = snprintf(env, sizeof env,
                   "{\"id\":\"%08x-%04x-4%03x-a%03x-%012llx\",\"type\":\"%%s\",\"tenant\":\"tenant-%u\","
                   "\"assignment\":\"asg-%06u\",",
                   next(), next() & 0xffff, next() & 0xfff, next() & 0xfff, (unsigned long long)seq, tenant, asg);
  (void)n;
  char ts[40];
  snprintf(ts, sizeof ts, "2026-%02u-%02uT%02u:%02u:%02u.%03uZ", 1 + next() % 12, 1 + next() % 28,
           next() % 24, next() % 60, next() % 60, next() % 1000);
  unsigned long long version = 1 + next() % 100000;
  char head[300];
  if (r < 8) { /* assignment.upserted */
    snprintf(head, sizeof head, env, "assignment.upserted");
    return (size_t)snprintf(o, cap,
                            "%s\"version\":%llu,\"ts\":\"%s\",\"data\":{\"class\":\"class-%u\",\"title\":\"%s\","
                            "\"status\":\"%s\",\"dueAt\":\"2026-10-01T23:59:00Z\",\"points\":%u}}",
                            head, version, ts, next() % 5000, titles[next() % 6], asg_status[next() % 3],
                            10 * (1 + next() % 10));
  }
  if (r < 10) {
    snprintf(head, sizeof head, env, "assignment.deleted");
    return (size_t)snprintf(o, cap, "%s\"version\":%llu,\"ts\":\"%s\"}", head, version, ts);
  }
  if (r < 55) {
    snprintf(head, sizeof head, env, "submission.updated");
    return (size_t)snprintf(o, cap,
                            "%s\"student\":\"stu-%07u\",\"version\":%llu,\"ts\":\"%s\",\"data\":{\"status\":\"%s\","
                            "\"submittedAt\":\"%s\",\"returnedAt\":null}}",
                            head, stu, version, ts, sub_status[next() % 4], ts);
  }
  if (r < 80) {
    snprintf(head, sizeof head, env, "grade.updated");
    return (size_t)snprintf(o, cap,
                            "%s\"student\":\"stu-%07u\",\"version\":%llu,\"ts\":\"%s\",\"data\":{\"points\":%u.%u,"
                            "\"feedback\":\"Well argued; cite your sources.\"}}",
                            head, stu, version, ts, next() % 100, next() % 10);
  }
  snprintf(head, sizeof head, env, r < 95 ? "roster.assigned" : "roster.unassigned");
  return (size_t)snprintf(o, cap, "%s\"student\":\"stu-%07u\",\"version\":%llu,\"ts\":\"%s\"}", head, stu,
                          version, ts);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
  int rounds = argc > 2 ? atoi(argv[2]) : 20;
  if (n == 0 || rounds <= 0) {
    fprintf(stderr, "usage: bench_decode [N>0] [rounds>0] [auto|scalar|sse2|avx2]\n");
    return 2;
  }
  if (argc > 3) {
    model_json_kernel_t k = MODEL_JSON_KERNEL_AUTO;
    while (k <= MODEL_JSON_KERNEL_AVX2 && strcmp(argv[3], model_json_kernel_name(k)) != 0) k++;
    if (k > MODEL_JSON_KERNEL_AVX2 || !model_json_force_kernel(k)) {
      fprintf(stderr, "bench_decode: kernel %s is not available here\n", argv[3]);
      return 2;
    }
  }
  const size_t slot = 512;
  char *buf = malloc(n * slot);
  size_t *len = malloc(n * sizeof *len);
  if (!buf || !len) return 1;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    len[i] = gen(buf + i * slot, slot, i);
    total += len[i];
  }
  static model_command_t cmd;
  model_reject_t rej;
  for (size_t i = 0; i < n; i++)
    if (!model_command_decode(buf + i * slot, len[i], 65536, &cmd, &rej)) {
      fprintf(stderr, "generated command %zu rejected: %s: %s\n%.*s\n", i, model_reject_code_name(rej.code),
              rej.detail, (int)len[i], buf + i * slot);
      return 1;
    }
  double best = 0;
  unsigned long long sink = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
      model_command_decode(buf + i * slot, len[i], 65536, &cmd, &rej);
      sink += cmd.version;
    }
    double rate = (double)n / (now() - t0);
    if (rate > best) best = rate;
  }
  /* Total over all rounds as the headline, best round for reference. */
  double t0 = now();
  for (int r = 0; r < rounds; r++)
    for (size_t i = 0; i < n; i++) {
      model_command_decode(buf + i * slot, len[i], 65536, &cmd, &rej);
      sink += cmd.version;
    }
  double secs = now() - t0;
  double rate = (double)n * rounds / secs;
  printf("kernel=%s commands=%zu mean_bytes=%.1f rounds=%d decodes_per_s=%.0f best_round_per_s=%.0f MB_per_s=%.1f "
         "(sink %llu)\n",
         model_json_kernel_name(model_json_kernel()), n, (double)total / (double)n, rounds, rate, best,
         rate * (double)total / (double)n / 1e6, sink % 10);
  free(buf);
  free(len);
  return 0;
}
