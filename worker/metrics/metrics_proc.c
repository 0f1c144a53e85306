/* The /proc reader (metrics_proc.h). */
#include "metrics_proc.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The boot time from /proc/stat, which process start times count from. */
static bool read_btime(unsigned long long *btime) {
  FILE *s = fopen("/proc/stat", "r");
  if (!s) return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, s)) found = sscanf(line, "btime %llu", btime) == 1;
  fclose(s);
  return found;
}

/* CPU time and start time, both from /proc/self/stat, in clock ticks. */
static void read_stat(metrics_proc_t *p) {
  long ticks = sysconf(_SC_CLK_TCK);
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* comm (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
  char *after = strrchr(buf, ')');
  unsigned long long utime = 0, stime = 0, start = 0;
  if (!after || ticks <= 0 ||
      sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &utime,
             &stime, &start) != 3)
    return;
  p->have_cpu = true;
  p->cpu_seconds = (double)(utime + stime) / (double)ticks;
  unsigned long long btime = 0;
  if (read_btime(&btime)) {
    p->have_start = true;
    p->start_time_seconds = (double)btime + (double)start / (double)ticks;
  }
}

static void read_statm(metrics_proc_t *p) {
  long page = sysconf(_SC_PAGESIZE);
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return;
  unsigned long long size = 0, resident = 0;
  if (fscanf(f, "%llu %llu", &size, &resident) == 2 && page > 0) {
    p->have_memory = true;
    p->virtual_bytes = size * (unsigned long long)page;
    p->resident_bytes = resident * (unsigned long long)page;
  }
  fclose(f);
}

static void read_fds(metrics_proc_t *p) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int64_t n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  p->have_fds = true;
  p->open_fds = n - 1; /* minus the one opendir holds */
}

void metrics_proc_read(metrics_proc_t *p) {
  *p = (metrics_proc_t){0};
  read_stat(p);
  read_statm(p);
  read_fds(p);
}
