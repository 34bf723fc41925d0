/*
 * user.c - "USER" or "USER:GROUP" resolved through getpwnam(3),
 * getgrnam(3) and getgrouplist(3), and what we may do about it
 * (capget(2)); see user.h.
 */
#include <sys/syscall.h>
#include <sys/types.h>

#include <linux/capability.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "user.h"

static int	spec_split(const char *, char *, char *, char *, size_t);
static int	not_found(int);
static int	fill(struct user_ids *, const struct passwd *, char *, size_t);
static int	has_cap(int);

/* USER or USER:GROUP, each 1.. bytes of printable ASCII but ':' and ' '. */
static int
spec_split(const char *spec, char *user, char *group, char *err,
    size_t errlen)
{
	const char *p, *colon = NULL;

	if (strlen(spec) > USER_SPEC_MAX) {
		snprintf(err, errlen, "too long (at most %d bytes)",
		    USER_SPEC_MAX);
		return -1;
	}
	for (p = spec; *p != '\0'; p++) {
		if (*p == ':' && colon == NULL)
			colon = p;
		else if (*p <= ' ' || *p >= 0x7f || *p == ':')
			goto bad;
	}
	if (colon == spec || (colon != NULL && colon[1] == '\0') ||
	    *spec == '\0')
		goto bad;
	if (colon == NULL) {
		strlcpy(user, spec, USER_SPEC_MAX + 1);
		group[0] = '\0';
	} else {
		memcpy(user, spec, colon - spec);
		user[colon - spec] = '\0';
		strlcpy(group, colon + 1, USER_SPEC_MAX + 1);
	}
	return 0;
bad:
	snprintf(err, errlen, "must be USER or USER:GROUP");
	return -1;
}

/* getpwnam(3): these errno values, or none, mean "no such entry". */
static int
not_found(int e)
{
	return e == 0 || e == ENOENT || e == ESRCH || e == EBADF || e == EPERM;
}

static int
fill(struct user_ids *u, const struct passwd *pw, char *err, size_t errlen)
{
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	if (strlcpy(u->name, pw->pw_name, sizeof(u->name)) >=
	    sizeof(u->name) || strlcpy(u->home, pw->pw_dir,
	    sizeof(u->home)) >= sizeof(u->home)) {
		snprintf(err, errlen, "user \"%s\": name or home too long",
		    pw->pw_name);
		return -1;
	}
	return 0;
}

int
user_resolve(const char *spec, struct user_ids *u, char *err, size_t errlen)
{
	char user[USER_SPEC_MAX + 1], group[USER_SPEC_MAX + 1];
	struct passwd *pw;
	struct group *gr;
	int n = USER_GROUPS_MAX;

	memset(u, 0, sizeof(*u));
	if (spec_split(spec, user, group, err, errlen) == -1)
		return -1;
	errno = 0;
	if ((pw = getpwnam(user)) == NULL) {
		if (not_found(errno))
			snprintf(err, errlen, "no such user \"%s\"", user);
		else
			snprintf(err, errlen, "unable to look up user \"%s\": "
			    "%s", user, strerror(errno));
		return -1;
	}
	if (fill(u, pw, err, errlen) == -1)
		return -1;
	if (group[0] == '\0') {
		if (getgrouplist(u->name, u->gid, u->groups, &n) == -1) {
			snprintf(err, errlen, "user \"%s\" is in more than %d "
			    "groups", user, USER_GROUPS_MAX);
			return -1;
		}
		u->ngroups = (size_t)n;
		return 0;
	}
	errno = 0;
	if ((gr = getgrnam(group)) == NULL) {
		if (not_found(errno))
			snprintf(err, errlen, "no such group \"%s\"", group);
		else
			snprintf(err, errlen, "unable to look up group "
			    "\"%s\": %s", group, strerror(errno));
		return -1;
	}
	u->gid = gr->gr_gid;
	u->groups[0] = gr->gr_gid;
	u->ngroups = 1;
	return 0;
}

int
user_self(struct user_ids *u, char *err, size_t errlen)
{
	struct passwd *pw;
	uid_t uid = geteuid();

	memset(u, 0, sizeof(*u));
	errno = 0;
	if ((pw = getpwuid(uid)) == NULL) {
		snprintf(err, errlen, "uid %lu: %s", (unsigned long)uid,
		    not_found(errno) ? "not in the user database" :
		    strerror(errno));
		return -1;
	}
	if (fill(u, pw, err, errlen) == -1)
		return -1;
	u->uid = uid;
	u->gid = getegid();
	return 0;
}

/* Whether cap is in our effective set. */
static int
has_cap(int cap)
{
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(&h, 0, sizeof(h));
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	if (syscall(SYS_capget, &h, d) == -1)
		return 0;
	return (d[cap / 32].effective & (1U << (cap % 32))) != 0;
}

int
user_can_switch(void)
{
	return has_cap(CAP_SETUID) && has_cap(CAP_SETGID);
}

int
user_can_kill(void)
{
	return has_cap(CAP_KILL);
}

/* Ambient capabilities go with the permitted ones they must be part of. */
int
user_caps_clear(void)
{
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(&h, 0, sizeof(h));
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	return (int)syscall(SYS_capset, &h, d);
}

/* One decimal id of at most 2^31 - 1 in [s, end); -1 if it is not. */
static int64_t
numeric_id(const char *s, const char *end)
{
	int64_t v = 0;

	if (s == end || end - s > 10)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= INT32_MAX ? v : -1;
}

int
user_numeric(const char *spec, int64_t *uid, int64_t *gid)
{
	const char *colon = strchr(spec, ':');
	const char *end = spec + strlen(spec);

	*uid = numeric_id(spec, colon != NULL ? colon : end);
	*gid = colon != NULL ? numeric_id(colon + 1, end) : -1;
	if (*uid == -1 || (colon != NULL && *gid == -1))
		return -1;
	return 0;
}

int
user_ids_same(const struct user_ids *a, const struct user_ids *b)
{
	return a->uid == b->uid && a->gid == b->gid &&
	    a->ngroups == b->ngroups && memcmp(a->groups, b->groups,
	    a->ngroups * sizeof(a->groups[0])) == 0;
}
