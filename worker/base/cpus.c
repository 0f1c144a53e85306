/* The CPUs this process may use (cpus.h). */
#include "cpus.h"

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first line of root/name into buf; false when it cannot be read. */
static bool read_line(const char *root, const char *name, char *buf, size_t size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, name);
  FILE *f = fopen(path, "re");
  if (!f) return false;
  bool ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  return ok;
}

/* ceil(quota / period) for a positive quota and period, else 0 (no bound). */
static size_t quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return (size_t)((quota + period - 1) / period);
}

size_t cpus_quota_at(const char *cgroup_root) {
  char line[128];
  if (read_line(cgroup_root, "cpu.max", line, sizeof line)) {
    /* "max 100000" or "150000 100000" */
    if (!strncmp(line, "max", 3)) return 0;
    long long quota, period;
    return sscanf(line, "%lld %lld", &quota, &period) == 2 ? quota_cpus(quota, period) : 0;
  }
  char q[64], p[64];
  if (read_line(cgroup_root, "cpu/cpu.cfs_quota_us", q, sizeof q) &&
      read_line(cgroup_root, "cpu/cpu.cfs_period_us", p, sizeof p))
    return quota_cpus(strtoll(q, NULL, 10), strtoll(p, NULL, 10)); /* quota -1: no bound */
  return 0;
}

size_t cpus_available_at(const char *cgroup_root) {
  cpu_set_t set;
  size_t n = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int c = CPU_COUNT(&set);
    n = c > 0 ? (size_t)c : 1;
  }
  size_t quota = cpus_quota_at(cgroup_root);
  return quota && quota < n ? quota : n;
}

size_t cpus_available(void) { return cpus_available_at("/sys/fs/cgroup"); }
