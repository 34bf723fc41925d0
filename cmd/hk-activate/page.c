/*
 * page.c - the waiting page: what a browser gets, instead of waiting on,
 * once its request has been parked waiting_page_after_ms for a cold start
 * (hk.toml(5)).  The page refreshes itself; the wake goes on, and a later
 * load finds the service awake.  Every other request waits as before.
 *
 * The file (waiting_page, hakopod.toml(5)) is read whole at start and on
 * SIGHUP, never per request, and copied into each answer: a SIGHUP takes
 * effect on the next page sent.  A file that cannot be used is not a
 * reason to stop the gateway (the page is a courtesy): at start the
 * built-in page stands in, on SIGHUP the page in use stays; either way
 * with a warning, but for the default path, which need not exist.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "activate.h"
#include "log.h"

#define PAGE_RETRY_S	1	/* Retry-After; the page reloads as soon */

/* The head takes far less than the rest of the client's buffer. */
_Static_assert(PAGE_MAX + 1024 <= XBUF_SIZE, "PAGE_MAX too large");

static const char builtin[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"refresh\" content=\"1\">\n"
    "<title>Starting up</title>\n"
    "</head>\n"
    "<body id=\"hk-waiting-page\">\n"
    "<h1>Starting up</h1>\n"
    "<p>This service is waking. The page reloads by itself.</p>\n"
    "<script>setTimeout(function () { location.reload(); }, 3000);"
    "</script>\n"
    "</body>\n"
    "</html>\n";

static const char *page_read(const char *, char *, size_t *);
static void	builtin_page(void);

static void
builtin_page(void)
{
	memcpy(gw->page, builtin, sizeof(builtin) - 1);
	gw->page_len = sizeof(builtin) - 1;
}

/* NULL with the file in buf, or why it cannot be the page. */
static const char *
page_read(const char *path, char *buf, size_t *len)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	const char *why = NULL;
	int fd;

	/* O_NONBLOCK: a FIFO put there must not hang the gateway */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return strerror(errno);
	if (fstat(fd, &st) == -1)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	/* one byte more than the bound, to see a file that grew */
	while (why == NULL && (n = read(fd, buf + got,
	    PAGE_MAX + 1 - got)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			why = strerror(errno);
		else if ((got += (size_t)n) > PAGE_MAX)
			why = "larger than " PAGE_MAX_TEXT " bytes";
	}
	close(fd);
	if (why == NULL && got == 0)
		why = "empty";
	*len = got;
	return why;
}

/*
 * At start (reload 0) and on SIGHUP: the page from waiting_page, "" the
 * built-in one.  Quiet is "-n": the default path need not exist.
 */
void
page_load(int reload, int quiet)
{
	static char buf[PAGE_MAX + 1];
	const char *path = gw->cfg.waiting_page, *why, *what;
	size_t len = 0;
	int missing;

	if (path[0] == '\0') {
		builtin_page();
		return;
	}
	if ((why = page_read(path, buf, &len)) == NULL) {
		memcpy(gw->page, buf, len);
		gw->page_len = len;
		log_debug("waiting_page %s: %zu bytes", path, len);
		return;
	}
	missing = access(path, F_OK) == -1 && errno == ENOENT;
	what = reload ? "the page in use is kept" : "the built-in page is used";
	if (!missing || strcmp(path, CONFIG_WAITING_PAGE) != 0)
		log_warnx("waiting_page %s: %s: %s", path, why, what);
	else if (!quiet)
		log_info("waiting_page %s: %s: %s", path, why, what);
	if (!reload)
		builtin_page();
}

/*
 * Whether a request parked now may get the page: its service has one and
 * it is a browser's GET or HEAD without a body (http_wants_html).
 */
int
page_wanted(const struct conn *c)
{
	return c->svc->policy.waiting_page_after_ms > 0 && !c->upgrade &&
	    !c->chunked_in && c->body_len == 0 &&
	    http_wants_html(&c->head, &c->req);
}

/* Its time has come: the page, 503, instead of waiting on. */
void
page_answer(struct conn *c)
{
	c->svc->waiting_pages++;
	gw->waiting_pages++;
	c->outcome = "waiting_page";
	conn_answer_html(c, 503, gw->page, gw->page_len, PAGE_RETRY_S);
}
