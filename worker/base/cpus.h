/* How many CPUs this process may use: the CPUs its affinity mask allows
 * (sched_getaffinity: taskset, a container's cpuset), bounded by its CPU
 * quota (cgroup v2 cpu.max "QUOTA PERIOD" gives ceil(QUOTA / PERIOD);
 * "max" is no bound; cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us
 * likewise, -1 no bound). Not the machine's count: a container limited to
 * two CPUs on a 64-core host that started 64 threads would spend its quota
 * switching between them. Stateless and thread-safe. */
#ifndef CPUS_H
#define CPUS_H

#include <stddef.h>

/* The CPUs this process may use, at least 1, under the cgroup filesystem
 * mounted at /sys/fs/cgroup. */
size_t cpus_available(void);

/* The same with the cgroup filesystem at cgroup_root (tests give a
 * directory of fake files): cgroup_root/cpu.max (v2), else
 * cgroup_root/cpu/cpu.cfs_quota_us and cpu.cfs_period_us (v1). A file that
 * is missing or unreadable sets no bound. */
size_t cpus_available_at(const char *cgroup_root);

/* The bound the quota files under cgroup_root set, or 0 for none. */
size_t cpus_quota_at(const char *cgroup_root);

#endif
