/*
 * http_lex.c - strict framing of request bytes (RFC 9112), the one place
 * that decides whether a request is well-formed (see http.h).
 *
 * http_parser, which reads the same bytes after this lexer, is lenient
 * where the RFC forbids: it takes whitespace between a field name and its
 * colon as part of the name, folded lines (obs-fold), control characters
 * in values, any HTTP version, a bare CR as the end of a chunk line, and
 * any two bytes after a chunk's data.  The lexer follows a connection's
 * request bytes in step with it (head, body, next head) and refuses all
 * of that before the parser sees it.  It looks at every byte of a head
 * and of a chunk line; the data of a body it counts and skips.
 *
 * Line ends: CRLF, or LF alone in a head (RFC 9112 2.2 allows it, and the
 * gateway writes every head anew); CRLF only in a chunked body, where
 * http_parser takes no other.  A CR not followed by LF is refused
 * everywhere.
 */
#include <string.h>

#include "http.h"

enum {
	L_START,	/* before a request line: empty lines are skipped */
	L_START_CR,
	L_METHOD,
	L_TARGET0,
	L_TARGET,
	L_VERSION,	/* "HTTP/d.d", lex->n bytes matched */
	L_LINE_LF,	/* CR seen at the end of the request line */
	L_FIELD0,	/* start of a field line, or the empty line */
	L_NAME,
	L_VALUE,
	L_VALUE_LF,
	L_END_LF,	/* CR of the empty line that ends a section */
	L_HEAD_DONE,	/* waits for http_lex_body() */
	L_LENGTH,	/* Content-Length body: lex->left bytes */
	L_SIZE0,	/* chunk-size */
	L_SIZE,
	L_SIZE_BWS,
	L_EXT_NAME0,
	L_EXT_NAME,
	L_EXT_NAME_BWS,
	L_EXT_VAL0,
	L_EXT_TOKEN,
	L_EXT_QUOTED,
	L_EXT_QESC,
	L_EXT_QEND,
	L_EXT_BWS,	/* after a value */
	L_SIZE_LF,
	L_DATA,		/* chunk-data: lex->left bytes */
	L_DATA_CR,
	L_DATA_LF,
	L_STOP,		/* after an upgrade: no more HTTP */
	L_MSG_END,	/* waits for http_lex_next() */
};

/* Classes of a byte: tchar (RFC 9110 5.6.2), VCHAR, a byte of a field
 * value (HTAB, SP, VCHAR, obs-text), a hexadecimal digit. */
#define C_TCHAR		1
#define C_VCHAR		2
#define C_VALUE		4
#define C_HEX		8

static const unsigned char cls[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,	/* 00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 10 */
	4, 7, 6, 7, 7, 7, 7, 7, 6, 6, 7, 7, 6, 7, 7, 6,	/* 20 */
	15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 6, 6, 6, 6, 6, 6, /* 30 */
	6, 15, 15, 15, 15, 15, 15, 7, 7, 7, 7, 7, 7, 7, 7, 7,	/* 40 */
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 7, 7,	/* 50 */
	7, 15, 15, 15, 15, 15, 15, 7, 7, 7, 7, 7, 7, 7, 7, 7,	/* 60 */
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 7, 6, 7, 0,	/* 70 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* 80 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* 90 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* a0 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* b0 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* c0 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* d0 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* e0 */
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,	/* f0 */
};

#define IS_DIGIT(c)	((c) >= '0' && (c) <= '9')
#define IS_WS(c)	((c) == ' ' || (c) == '\t')
#define IS_VCHAR(c)	(cls[(unsigned char)(c)] & C_VCHAR)
#define IS_VALUE(c)	(cls[(unsigned char)(c)] & C_VALUE)

static int	lex_head(struct http_lex *, unsigned char);
static int	lex_field(struct http_lex *, unsigned char);
static int	lex_chunk(struct http_lex *, unsigned char);
static int	lex_ext(struct http_lex *, unsigned char);
static int	size_line_end(struct http_lex *);
static void	section_end(struct http_lex *);
static int	hexval(unsigned char);
static size_t	run(const struct http_lex *, const unsigned char *, size_t);
static void	msg_done(struct http_lex *, uint64_t);

static int
is_tchar(unsigned char c)
{
	return cls[c] & C_TCHAR;
}

static int
hexval(unsigned char c)
{
	if (IS_DIGIT(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void
http_lex_init(struct http_lex *lx)
{
	memset(lx, 0, sizeof(*lx));
	lx->state = L_START;
}

int
http_lex_head_done(const struct http_lex *lx)
{
	return lx->state == L_HEAD_DONE;
}

int
http_lex_idle(const struct http_lex *lx)
{
	return lx->state == L_START || lx->state == L_START_CR ||
	    lx->state == L_MSG_END;
}

void
http_lex_next(struct http_lex *lx)
{
	if (lx->state == L_MSG_END)
		lx->state = L_START;
}

/* A message ended at pos: nothing more until http_lex_next(). */
static void
msg_done(struct http_lex *lx, uint64_t pos)
{
	lx->state = L_MSG_END;
	lx->msg_end = pos;
}

void
http_lex_skip(struct http_lex *lx, size_t n)
{
	if (lx->state == L_START || lx->state == L_START_CR) {
		lx->state = L_START;
		lx->pos += n;
	}
}

void
http_lex_body(struct http_lex *lx, int framing, uint64_t length,
    uint64_t limit)
{
	lx->left = 0;
	lx->size = 0;
	lx->declared = 0;
	lx->limit = limit;
	lx->trailer = 0;
	switch (framing) {
	case HTTP_LEX_CHUNKED:
		lx->state = L_SIZE0;
		break;
	case HTTP_LEX_LENGTH:
		lx->left = length;
		if (length > 0)
			lx->state = L_LENGTH;
		else
			msg_done(lx, lx->pos);
		break;
	case HTTP_LEX_STOP:
		lx->state = L_STOP;
		lx->msg_end = lx->pos;
		break;
	default:
		msg_done(lx, lx->pos);
		break;
	}
}

/* The empty line after the fields of a head, or of a trailer section. */
static void
section_end(struct http_lex *lx)
{
	if (lx->trailer) {
		lx->trailer = 0;
		msg_done(lx, lx->pos + 1);
	} else
		lx->state = L_HEAD_DONE;
}

/* The request line. */
static int
lex_head(struct http_lex *lx, unsigned char c)
{
	static const char http[] = "HTTP/";

	switch (lx->state) {
	case L_START:
		if (c == '\r')
			lx->state = L_START_CR;
		else if (c != '\n') {
			if (!is_tchar(c))
				return 400;
			lx->state = L_METHOD;
		}
		return 0;
	case L_START_CR:
		if (c != '\n')
			return 400;
		lx->state = L_START;
		return 0;
	case L_METHOD:
		if (c == ' ')
			lx->state = L_TARGET0;
		else if (!is_tchar(c))
			return 400;
		return 0;
	case L_TARGET0:
	case L_TARGET:
		if (c == ' ' && lx->state == L_TARGET) {
			lx->state = L_VERSION;
			lx->n = 0;
		} else if (!IS_VCHAR(c))
			return 400;
		else
			lx->state = L_TARGET;
		return 0;
	case L_VERSION:
		if (lx->n < 5) {
			if (c != (unsigned char)http[lx->n])
				return 400;
		} else if (lx->n == 5 || lx->n == 7) {
			if (!IS_DIGIT(c))
				return 400;
			if (lx->n == 5)
				lx->major = (uint8_t)(c - '0');
		} else if (lx->n == 6) {
			if (c != '.')
				return 400;
		} else if (c == '\r')
			lx->state = L_LINE_LF;
		else if (c != '\n')
			return 400;
		else if (lx->major != 1)	/* a whole line: its version */
			return 505;
		else
			lx->state = L_FIELD0;
		lx->n++;
		return 0;
	case L_LINE_LF:
		if (c != '\n')
			return 400;
		if (lx->major != 1)
			return 505;
		lx->state = L_FIELD0;
		return 0;
	default:
		return lex_field(lx, c);
	}
}

/* A field line of a head or a trailer section, or the empty line. */
static int
lex_field(struct http_lex *lx, unsigned char c)
{
	switch (lx->state) {
	case L_FIELD0:
		if (c == '\r')
			lx->state = L_END_LF;
		else if (c == '\n') {
			if (lx->trailer)
				return 400;	/* CRLF only in a body */
			section_end(lx);
		} else if (!is_tchar(c))
			return 400;	/* obs-fold, or a space first */
		else
			lx->state = L_NAME;
		return 0;
	case L_NAME:
		if (c == ':')
			lx->state = L_VALUE;
		else if (!is_tchar(c))
			return 400;	/* whitespace before the colon */
		return 0;
	case L_VALUE:
		if (c == '\r')
			lx->state = L_VALUE_LF;
		else if (c == '\n' && !lx->trailer)
			lx->state = L_FIELD0;
		else if (!IS_VALUE(c))
			return 400;
		return 0;
	case L_VALUE_LF:
		if (c != '\n')
			return 400;
		lx->state = L_FIELD0;
		return 0;
	case L_END_LF:
		if (c != '\n')
			return 400;
		section_end(lx);
		return 0;
	default:
		return lex_chunk(lx, c);
	}
}

/*
 * The end of a chunk-size line: the last chunk starts the trailer
 * section, any other its data.
 */
static int
size_line_end(struct http_lex *lx)
{
	if (lx->size == 0) {
		lx->trailer = 1;
		lx->state = L_FIELD0;
	} else {
		lx->left = lx->size;
		lx->state = L_DATA;
	}
	lx->size = 0;
	return 0;
}

/* A chunk-size line, up to its extensions, and the CRLF after data. */
static int
lex_chunk(struct http_lex *lx, unsigned char c)
{
	int h;

	switch (lx->state) {
	case L_SIZE0:
	case L_SIZE:
		if ((h = hexval(c)) >= 0) {
			if (lx->size > (lx->limit - lx->declared) / 16 ||
			    lx->size * 16 + (uint64_t)h >
			    lx->limit - lx->declared)
				return 413;	/* the declared size alone */
			lx->size = lx->size * 16 + (uint64_t)h;
			lx->state = L_SIZE;
			return 0;
		}
		if (lx->state == L_SIZE0)
			return 400;
		lx->declared += lx->size;
		if (c == '\r')
			lx->state = L_SIZE_LF;
		else if (c == ';')
			lx->state = L_EXT_NAME0;
		else if (IS_WS(c))
			lx->state = L_SIZE_BWS;
		else
			return 400;
		return 0;
	case L_SIZE_BWS:
		if (c == ';')
			lx->state = L_EXT_NAME0;
		else if (!IS_WS(c))
			return 400;
		return 0;
	case L_SIZE_LF:
		if (c != '\n')
			return 400;
		return size_line_end(lx);
	case L_DATA_CR:
		if (c != '\r')
			return 400;
		lx->state = L_DATA_LF;
		return 0;
	case L_DATA_LF:
		if (c != '\n')
			return 400;
		lx->state = L_SIZE0;
		return 0;
	default:
		return lex_ext(lx, c);
	}
}

/*
 * chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
 * with token or quoted-string values (RFC 9112 7.1.1).
 */
static int
lex_ext(struct http_lex *lx, unsigned char c)
{
	switch (lx->state) {
	case L_EXT_NAME0:
		if (is_tchar(c))
			lx->state = L_EXT_NAME;
		else if (!IS_WS(c))
			return 400;
		return 0;
	case L_EXT_NAME:
	case L_EXT_NAME_BWS:
		if (c == '=')
			lx->state = L_EXT_VAL0;
		else if (c == ';')
			lx->state = L_EXT_NAME0;
		else if (IS_WS(c))
			lx->state = L_EXT_NAME_BWS;
		else if (c == '\r' && lx->state == L_EXT_NAME)
			lx->state = L_SIZE_LF;
		else if (!is_tchar(c) || lx->state != L_EXT_NAME)
			return 400;
		return 0;
	case L_EXT_VAL0:
		if (c == '"')
			lx->state = L_EXT_QUOTED;
		else if (is_tchar(c))
			lx->state = L_EXT_TOKEN;
		else if (!IS_WS(c))
			return 400;
		return 0;
	case L_EXT_TOKEN:
	case L_EXT_QEND:
	case L_EXT_BWS:
		if (c == ';')
			lx->state = L_EXT_NAME0;
		else if (IS_WS(c))
			lx->state = L_EXT_BWS;
		else if (c == '\r' && lx->state != L_EXT_BWS)
			lx->state = L_SIZE_LF;
		else if (!is_tchar(c) || lx->state != L_EXT_TOKEN)
			return 400;
		return 0;
	case L_EXT_QUOTED:
		if (c == '"')
			lx->state = L_EXT_QEND;
		else if (c == '\\')
			lx->state = L_EXT_QESC;
		else if (!IS_VALUE(c))
			return 400;
		return 0;
	case L_EXT_QESC:
		if (!IS_VALUE(c))
			return 400;
		lx->state = L_EXT_QUOTED;
		return 0;
	default:
		return 400;	/* not reached: every state is handled */
	}
}

/*
 * The bytes that leave the state as it is, in the states most bytes are
 * in (a value, a name, the target): taken as a run, without a call each.
 */
static size_t
run(const struct http_lex *lx, const unsigned char *p, size_t len)
{
	unsigned char want;
	size_t i = 0;

	switch (lx->state) {
	case L_VALUE:
		want = C_VALUE;
		break;
	case L_NAME:
		want = C_TCHAR;
		break;
	case L_TARGET:
		want = C_VCHAR;
		break;
	default:
		return 0;
	}
	while (i < len && (cls[p[i]] & want))
		i++;
	return i;
}

/*
 * Checks buf[0..len) and takes what it may: it stops at the end of a head
 * (until http_lex_body() says how the body is framed) and after an
 * upgrade.  0 with *used bytes taken, or the status of the refusal:
 * 400 (malformed), 413 (declared chunk sizes over the limit) or 505.
 */
int
http_lex(struct http_lex *lx, const char *buf, size_t len, size_t *used)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0, n;
	int r;

	while (i < len) {
		if (lx->state == L_HEAD_DONE || lx->state == L_STOP ||
		    lx->state == L_MSG_END)
			break;
		if (lx->state == L_LENGTH || lx->state == L_DATA) {
			n = len - i < lx->left ? len - i : (size_t)lx->left;
			lx->left -= n;
			lx->pos += n;
			i += n;
			if (lx->left == 0 && lx->state == L_LENGTH)
				msg_done(lx, lx->pos);
			else if (lx->left == 0)
				lx->state = L_DATA_CR;
			continue;
		}
		if ((n = run(lx, p + i, len - i)) > 0) {
			lx->pos += n;
			i += n;
			continue;
		}
		if ((r = lex_head(lx, p[i])) != 0) {
			*used = i;
			return r;
		}
		lx->pos++;
		i++;
	}
	*used = i;
	return 0;
}
