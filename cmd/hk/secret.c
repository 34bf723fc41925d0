/*
 * secret.c - "hk secret set|list|rm", and the secrets a service names,
 * looked up by hk apply and hk validate.
 *
 * A value goes from standard input (or --file) to the store sealed
 * (lib/secret.h) and is never printed: hk shows a secret's name, dates
 * and the first digits of its keyed digest.  The specs of the services
 * that name a secret carry that digest, so a new value is a new
 * revision of each: hk secret set rewrites them in its transaction, and
 * hk apply writes the digests it finds.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "hk.h"
#include "log.h"
#include "secret.h"
#include "secret_check.h"
#include "spec.h"
#include "store.h"

#define SECRET_USAGE							\
	"usage: hk [-v] [-f config] secret set [--file path] app name\n" \
	"       hk [-v] [-f config] secret list app\n"			\
	"       hk [-v] [-f config] secret rm app name\n"

static int	secret_set(struct hk *, int, char **);
static int	secret_list(struct hk *, int, char **);
static int	secret_rm(struct hk *, int, char **);
static int	check_names(const char *, const char *, const char *);
static int	read_value(const char *, unsigned char **, size_t *);
static int	bump_users(struct hk *, const char *, const char *,
		    const char *);
static int	named_by(const char *, const char *);

int
cmd_secret(struct hk *hk, int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "set") == 0)
		return secret_set(hk, argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "list") == 0)
		return secret_list(hk, argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "rm") == 0)
		return secret_rm(hk, argc - 1, argv + 1);
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0)) {
		fputs(SECRET_USAGE, stdout);
		return EX_OK;
	}
	fputs(SECRET_USAGE, stderr);
	return EX_USAGE;
}

/* An app's name and, unless NULL, a secret's: 65 and why if bad. */
static int
check_names(const char *verb, const char *app, const char *name)
{
	if (!config_valid_name(app)) {
		log_errorx("secret %s: \"%s\": not an app name", verb, app);
		return EX_DATAERR;
	}
	if (name != NULL && !secret_valid_name(name)) {
		log_errorx("secret %s: \"%s\": not a secret name (letters, "
		    "digits and _, not starting with a digit, at most %d "
		    "bytes)", verb, name, SECRET_NAME_MAX);
		return EX_DATAERR;
	}
	return EX_OK;
}

/*
 * The value: the bytes of path, or standard input less one newline at
 * its end (what echo adds).  At most SECRET_VALUE_MAX bytes, not empty.
 */
static int
read_value(const char *path, unsigned char **out, size_t *outlen)
{
	unsigned char *v;
	size_t len = 0;
	ssize_t n;
	int fd = STDIN_FILENO;

	if (path != NULL && (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		log_error("secret set: %s", path);
		return EX_NOINPUT;
	}
	if ((v = malloc(SECRET_VALUE_MAX + 1)) == NULL)
		fatal(EX_OSERR, "malloc");
	while (len <= SECRET_VALUE_MAX && (n = read(fd, v + len,
	    SECRET_VALUE_MAX + 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			log_error("secret set: %s", path != NULL ? path :
			    "standard input");
			secret_free(v, SECRET_VALUE_MAX + 1);
			if (path != NULL)
				close(fd);
			return EX_NOINPUT;
		}
		len += (size_t)n;
	}
	if (path != NULL)
		close(fd);
	if (path == NULL && len > 0 && v[len - 1] == '\n')
		len--;
	if (len == 0 || len > SECRET_VALUE_MAX) {
		log_errorx("secret set: the value is %s (1 to %d bytes)",
		    len == 0 ? "empty" : "too long", SECRET_VALUE_MAX);
		secret_free(v, SECRET_VALUE_MAX + 1);
		return EX_DATAERR;
	}
	*out = v;
	*outlen = len;
	return EX_OK;
}

static int
secret_set(struct hk *hk, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct secret_key key;
	char err[SECRET_ERR_LEN], digest[SECRET_DIGEST_LEN + 1];
	const char *file = NULL, *app, *name;
	unsigned char *v = NULL, *sealed = NULL;
	size_t vlen = 0, slen = 0;
	int ch, code;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (ch == 'F') {
			file = optarg;
			continue;
		}
		fputs(SECRET_USAGE, ch == 'h' ? stdout : stderr);
		return ch == 'h' ? EX_OK : EX_USAGE;
	}
	if (optind != argc - 2) {
		fputs(SECRET_USAGE, stderr);
		return EX_USAGE;
	}
	app = argv[optind];
	name = argv[optind + 1];
	if ((code = check_names("set", app, name)) != EX_OK ||
	    (code = read_value(file, &v, &vlen)) != EX_OK)
		return code;
	if ((code = hk_store(hk)) != EX_OK) {
		secret_free(v, SECRET_VALUE_MAX + 1);
		return code;
	}
	/* Sealed with the key the store's other secrets were sealed with. */
	switch (secret_key_check(hk->store, hk->cfg.secret_key_file, 1, &key,
	    err, sizeof(err))) {
	case 0:
		break;
	case 1:
		log_errorx("secret set: secret_key_file: %s", err);
		secret_free(v, SECRET_VALUE_MAX + 1);
		return EX_CONFIG;
	default:
		log_errorx("secret set: %s", err);
		secret_free(v, SECRET_VALUE_MAX + 1);
		return EX_UNAVAILABLE;
	}
	if (secret_seal(&key, app, name, v, vlen, &sealed, &slen) == -1 ||
	    secret_digest(&key, app, name, v, vlen, digest) == -1)
		fatal(EX_OSERR, "secret set: seal");
	secret_free(v, SECRET_VALUE_MAX + 1);
	secret_key_clear(&key);
	if (store_begin(hk->store) == -1 ||
	    store_secret_put(hk->store, app, name, sealed, slen,
	    digest) == -1 || bump_users(hk, app, name, digest) == -1 ||
	    store_commit(hk->store) == -1) {
		code = hk_store_failed(hk, "write secret");
		store_rollback(hk->store);
	}
	free(sealed);
	if (code != EX_OK)
		return code;
	printf("%s/%s\tset\tdigest %.*s\n", app, name, SECRET_SHORT_LEN,
	    digest);
	daemons_tell(hk, "reload", NULL);
	return EX_OK;
}

/*
 * The services of app whose specs name the secret get its new digest:
 * a changed spec, so a new revision that hk-scale rolls out.
 */
static int
bump_users(struct hk *hk, const char *app, const char *name,
    const char *digest)
{
	struct store_service *all;
	json_t *spec, *m;
	char *out;
	size_t n, i;
	int64_t rev;
	int changed, r = 0;

	if (store_service_list(hk->store, &all, &n) == -1)
		return -1;
	for (i = 0; r == 0 && i < n; i++) {
		if (strcmp(all[i].app, app) != 0 ||
		    (spec = json_loads(all[i].spec_json, 0, NULL)) == NULL)
			continue;
		m = json_object_get(spec, "secrets");
		out = NULL;
		if (json_object_get(m, name) != NULL &&
		    json_object_set_new(m, name, json_string(digest)) == 0)
			out = json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT);
		json_decref(spec);
		if (out == NULL)
			continue;
		if (store_service_put(hk->store, app, all[i].name, out,
		    all[i].serverless, &rev, &changed) == -1 ||
		    (changed && hk_revision_applied(hk, app, all[i].name,
		    rev, out) == -1))
			r = -1;
		else if (changed)
			printf("%s/%s\trevision %lld\tupdated\n", app,
			    all[i].name, (long long)rev);
		free(out);
	}
	store_service_free(all, n);
	return r;
}

static int
secret_list(struct hk *hk, int argc, char **argv)
{
	static const char *const head[] = {
		"NAME", "DIGEST", "CREATED", "UPDATED",
	};
	struct store_secret *v;
	struct table *t;
	char short_[SECRET_SHORT_LEN + 1], c[32], u[32];
	const char *row[4];
	size_t n, i;
	int code;

	if (argc != 2 || argv[1][0] == '-') {
		fputs(SECRET_USAGE, stderr);
		return EX_USAGE;
	}
	if ((code = check_names("list", argv[1], NULL)) != EX_OK ||
	    (code = hk_store(hk)) != EX_OK)
		return code;
	if (store_secret_list(hk->store, argv[1], &v, &n) == -1)
		return hk_store_failed(hk, "list secrets");
	t = table_new(4, head);
	for (i = 0; i < n; i++) {
		strlcpy(short_, v[i].digest, sizeof(short_));
		fmt_time(c, sizeof(c), v[i].created_at);
		fmt_time(u, sizeof(u), v[i].updated_at);
		row[0] = v[i].name;
		row[1] = short_;
		row[2] = c;
		row[3] = u;
		table_add(t, row);
	}
	free(v);
	code = table_print(t, isatty(STDOUT_FILENO)) == -1 ? EX_OSERR : EX_OK;
	table_free(t);
	return code;
}

/* Whether a stored spec names the secret. */
static int
named_by(const char *spec_json, const char *name)
{
	json_t *spec;
	int r;

	if ((spec = json_loads(spec_json, 0, NULL)) == NULL)
		return 0;
	r = json_object_get(json_object_get(spec, "secrets"), name) != NULL;
	json_decref(spec);
	return r;
}

/* A secret a service still names stays: its next start would fail. */
static int
secret_rm(struct hk *hk, int argc, char **argv)
{
	struct store_service *all;
	size_t n, i;
	int code, r;

	if (argc != 3 || argv[1][0] == '-') {
		fputs(SECRET_USAGE, stderr);
		return EX_USAGE;
	}
	if ((code = check_names("rm", argv[1], argv[2])) != EX_OK ||
	    (code = hk_store(hk)) != EX_OK)
		return code;
	if (store_begin(hk->store) == -1 ||
	    store_service_list(hk->store, &all, &n) == -1) {
		code = hk_store_failed(hk, "list services");
		store_rollback(hk->store);
		return code;
	}
	for (i = 0; i < n; i++)
		if (strcmp(all[i].app, argv[1]) == 0 &&
		    named_by(all[i].spec_json, argv[2]))
			break;
	if (i < n) {
		log_errorx("secret rm: %s/%s: used by service %s/%s (remove "
		    "it from its secrets and apply first)", argv[1], argv[2],
		    all[i].app, all[i].name);
		store_service_free(all, n);
		store_rollback(hk->store);
		return EX_DATAERR;
	}
	store_service_free(all, n);
	if ((r = store_secret_delete(hk->store, argv[1], argv[2])) == -1 ||
	    store_commit(hk->store) == -1) {
		code = hk_store_failed(hk, "remove secret");
		store_rollback(hk->store);
		return code;
	}
	if (r == 1) {
		log_errorx("secret rm: %s/%s: no such secret", argv[1],
		    argv[2]);
		return EX_DATAERR;
	}
	printf("%s/%s\tremoved\n", argv[1], argv[2]);
	return EX_OK;
}

/*
 * The digest of every secret app's services name, into their specs; a
 * missing one is "file:line: services.X.secrets: reason".  EX_OK, 65,
 * or the store's failure.
 */
int
secrets_resolve(struct hk *hk, struct app_config *app)
{
	struct service_spec *sp;
	struct store_secret *v = NULL;
	char **d;
	size_t n = 0, s, i, k;
	int code = EX_OK, loaded = 0;

	for (s = 0; s < app->nservices; s++) {
		sp = &app->services[s];
		if (sp->nsecrets == 0)
			continue;
		if (!loaded && store_secret_list(hk->store, app->name, &v,
		    &n) == -1)
			return hk_store_failed(hk, "list secrets");
		loaded = 1;
		if ((d = calloc(sp->nsecrets, sizeof(*d))) == NULL)
			fatal(EX_OSERR, "calloc");
		for (i = 0; i < sp->nsecrets; i++) {
			for (k = 0; k < n; k++)
				if (strcmp(v[k].name, sp->secrets[i]) == 0)
					d[i] = v[k].digest;
			if (d[i] != NULL)
				continue;
			fprintf(stderr, "%s:%d: services.%s.secrets: no secret "
			    "\"%s\" in app %s (hk secret set %s %s)\n",
			    app->path, sp->secrets_line, sp->name,
			    sp->secrets[i], app->name, app->name,
			    sp->secrets[i]);
			code = EX_DATAERR;
		}
		if (code == EX_OK && spec_set_secrets(sp, d) == -1)
			fatal(EX_OSERR, "spec_set_secrets");
		free(d);
	}
	free(v);
	return code;
}
