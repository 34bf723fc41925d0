/*
 * proc.h - facts about processes from /proc.
 */
#ifndef HK_PROC_H
#define HK_PROC_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

/*
 * Field 22 of /proc/PID/stat, the start time in clock ticks since boot:
 * 0, or -1 if the process is gone or a zombie.  With the pid it names a
 * process across pid reuse.
 */
int	proc_starttime(pid_t, int64_t *);
/*
 * Whether SIGKILL waits to be acted on (SigPnd or ShdPnd of
 * /proc/PID/status): a process frozen by cgroup v1 that was killed, or
 * whose fatal signal the kernel turned into one.  1, 0, or -1 if gone.
 */
int	proc_kill_pending(pid_t);
/* This boot's id (/proc/sys/kernel/random/boot_id): 0, or -1. */
int	proc_boot_id(char *, size_t);
/* Resident memory (VmRSS of /proc/PID/status), in bytes: 0 if unknown. */
int64_t	proc_rss_bytes(pid_t);

#endif
