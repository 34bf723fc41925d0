/*
 * proc.c - facts about processes from /proc, for telling a live process
 * from a dead one whose pid was reused.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* Field 22 of /proc/PID/stat: start time in clock ticks since boot. */
int
proc_starttime(pid_t pid, int64_t *out)
{
	char path[64], buf[1024], *p, *end;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* After "pid (comm) " comes field 3, the state: a zombie is gone. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == 'Z')
		return -1;
	for (p++, field = 3; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL)
		return -1;
	errno = 0;
	*out = strtoll(p + 1, &end, 10);
	return errno != 0 || end == p + 1 ? -1 : 0;
}

int
proc_boot_id(char *buf, size_t size)
{
	ssize_t n;
	int fd;

	if (size < 2 || (fd = open("/proc/sys/kernel/random/boot_id",
	    O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] != '\0' ? 0 : -1;
}

int
proc_kill_pending(pid_t pid)
{
	char path[64], line[128];
	unsigned long long mask;
	FILE *fp;
	int pending = 0, seen = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((fp = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		    sscanf(line, "ShdPnd: %llx", &mask) == 1) && ++seen)
			pending |= (mask & (1ULL << (SIGKILL - 1))) != 0;
	fclose(fp);
	return seen ? pending : -1;
}

int64_t
proc_rss_bytes(pid_t pid)
{
	char path[64], line[128];
	long long kb = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((fp = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
			break;
	fclose(fp);
	return (int64_t)kb * 1024;
}
