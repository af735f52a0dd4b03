/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's plain-HTTP `/files` (e2b-dev/infra packages/envd/spec/envd.yaml) over libpaddock's
 * file API, as paddockd's own files API does (src/daemon/api-files.c):
 *
 *  - GET ?path=&username=: the file. Identity goes out by sendfile (evbuffer_add_file); with
 *    `Accept-Encoding: gzip` (Node's fetch always asks for it) the file is read in chunks,
 *    deflated and sent chunked, the next chunk read only once the last one left: the file is
 *    never in memory whole.
 *  - POST ?path=&username=: `application/octet-stream` (the body is the file, `path`
 *    required) or `multipart/form-data` (each `file` part a file, named by `path` or, without
 *    it, by the part's filename), optionally `Content-Encoding: gzip`. Each file is written
 *    through paddock_sandbox_open_write() and committed (atomic), mode 0644, parents made.
 *
 * Trust: the body, its parts, names and compression come from the client and are hostile:
 * every size is bounded (paddockd's max upload, also for what a gzip body inflates to; part
 * counts, part headers, names), nothing is parsed past its buffer. Without X-Access-Token
 * (e2b.c checked it when present) a request must carry envd's URL signature; a wrong or
 * expired one is 401.
 */
#include "e2b.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h> /* TAILQ_FOREACH: event2/keyvalq_struct.h leaves it out */
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "multipart.h"
#include "paddock/files.h"

#define FILES_CHUNK	 (256u << 10) /* bytes read per gzip chunk of a download */
#define FILES_GZIP_LEVEL 1	      /* speed over ratio: the loop waits for it */

/* ---- answers -------------------------------------------------------------------------- */

/* The status a file error answers with (envd's where it has one). */
static int errno_status(int code)
{
	switch (code) {
	case ENOENT:
		return 404;
	case EINVAL:
	case EISDIR:
	case ENOTDIR:
	case ENAMETOOLONG:
	case ELOOP:
	case EEXIST:
		return 400;
	case EACCES:
	case EPERM:
	case EROFS:
		return 403;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return 507; /* the SDK's NotEnoughSpaceError */
	case ESRCH:
		return 502; /* the sandbox stopped */
	default:
		return 500;
	}
}

static void reply_paddock_error(struct e2b_req *r, const paddock_error *err)
{
	char buf[512];

	e2b_reply_error(r, errno_status(err->code), "%s",
			paddock_error_format(err, buf, sizeof(buf)));
}

/* ---- query, user, signature ----------------------------------------------------------- */

struct files_query {
	struct evkeyvalq q;
	const char *path;     /* as sent (NULL: absent) */
	const char *username; /* as sent */
	const char *signature;
	const char *expiration;
};

/* The query's fields (fq->q is the caller's to clear); false when it is malformed. */
static bool query_parse_str(const char *qs, struct files_query *fq)
{
	TAILQ_INIT(&fq->q);
	if (qs && evhttp_parse_query_str(qs, &fq->q) < 0)
		return false;
	fq->path = evhttp_find_header(&fq->q, "path");
	fq->username = evhttp_find_header(&fq->q, "username");
	fq->signature = evhttp_find_header(&fq->q, "signature");
	fq->expiration = evhttp_find_header(&fq->q, "signature_expiration");
	return true;
}

static bool query_parse_quiet(struct e2b_req *r, struct files_query *fq)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);

	return query_parse_str(uri ? evhttp_uri_get_query(uri) : NULL, fq);
}

static bool query_parse(struct e2b_req *r, struct files_query *fq)
{
	if (query_parse_quiet(r, fq))
		return true;
	e2b_reply_error(r, 400, "malformed query string");
	return false;
}

/*
 * envd's URL signature (e2b js-sdk src/sandbox/signature.ts, envd internal/api/auth.go):
 * "v1_" + unpadded base64(sha256("path:operation:username:accessToken[:expiration]")), with
 * path and username as the query has them ("" when absent). 0, or -ENOMEM.
 */
static int signature_for(struct e2b *e, const char *box_id, const struct files_query *fq,
			 const char *op, const char *exp_s, char want[64])
{
	char token[E2B_TOKEN_LEN + 1], *raw = NULL, *b64;
	unsigned char md[SHA256_DIGEST_LENGTH];
	int n;

	e2b_access_token(e, box_id, token);
	n = asprintf(&raw, "%s:%s:%s:%s%s", fq->path ? fq->path : "", op,
		     fq->username ? fq->username : "", token, exp_s);
	explicit_bzero(token, sizeof(token));
	if (n < 0)
		return -ENOMEM;
	SHA256((const unsigned char *)raw, (size_t)n, md);
	explicit_bzero(raw, (size_t)n);
	free(raw);
	b64 = paddock_base64_encode(md, sizeof(md));
	if (!b64)
		return -ENOMEM;
	b64[strcspn(b64, "=")] = '\0';
	snprintf(want, 64, "v1_%s", b64);
	free(b64);
	return 0;
}

/* SECURITY: in constant time; the length is no secret (always 46) */
static bool same_signature(const char *got, const char *want)
{
	return strlen(got) == strlen(want) && CRYPTO_memcmp(got, want, strlen(want)) == 0;
}

/* ":EXPIRATION" for the signature, or "" without; false when it is malformed. */
static bool expiration_part(const struct files_query *fq, long long *ret_exp, char exp_s[24])
{
	char *end;

	exp_s[0] = '\0';
	*ret_exp = 0;
	if (!fq->expiration)
		return true;
	errno = 0;
	*ret_exp = strtoll(fq->expiration, &end, 10);
	if (!*fq->expiration || *end || errno)
		return false;
	snprintf(exp_s, 24, ":%lld", *ret_exp);
	return true;
}

static const char *files_op(struct e2b_req *r)
{
	return evhttp_request_get_command(r->req) == EVHTTP_REQ_GET ? "read" : "write";
}

const char *e2b_files_signed_box(struct e2b_req *r, bool *ret_signed)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);

	return e2b_files_signed_query(r->e, uri ? evhttp_uri_get_query(uri) : NULL, files_op(r),
				      ret_signed);
}

const char *e2b_files_signed_query(struct e2b *e, const char *query, const char *op,
				   bool *ret_signed)
{
	struct files_query fq;
	const char *found = NULL;
	char exp_s[24], want[64];
	long long exp;

	*ret_signed = false;
	if (!query_parse_str(query, &fq))
		return NULL;
	*ret_signed = fq.signature != NULL;
	/*
	 * E2B's signed URLs name no sandbox (its cloud knows it from the host name): the one
	 * whose access token makes this signature is the sandbox. Every live one is tried, in
	 * full (no early exit: the time says nothing of which matched).
	 */
	if (fq.signature && expiration_part(&fq, &exp, exp_s))
		for (struct box *b = e->d->boxes; b; b = b->next) {
			if (signature_for(e, b->id, &fq, op, exp_s, want) < 0)
				break;
			if (same_signature(fq.signature, want) && !found)
				found = b->id;
		}
	explicit_bzero(want, sizeof(want));
	evhttp_clear_headers(&fq.q);
	return found;
}

static bool signature_ok(struct e2b_req *r, const struct files_query *fq, const char *op)
{
	char exp_s[24], want[64];
	long long exp = 0;
	bool ok;

	if (!fq->signature) {
		e2b_reply_error(r, 401,
				"unauthorized access, please provide a valid access token or "
				"method signing if supported");
		return false;
	}
	if (!expiration_part(fq, &exp, exp_s)) {
		e2b_reply_error(r, 400, "signature_expiration: expected a unix time in seconds");
		return false;
	}
	if (signature_for(r->e, r->box->id, fq, op, exp_s, want) < 0) {
		e2b_reply_error(r, 500, "out of memory");
		return false;
	}
	ok = same_signature(fq->signature, want);
	explicit_bzero(want, sizeof(want));
	if (!ok) {
		e2b_reply_error(r, 401, "invalid signature");
		return false;
	}
	if (fq->expiration && exp < (long long)time(NULL)) {
		e2b_reply_error(r, 401, "signature is already expired");
		return false;
	}
	return true;
}

/* Authorizes the request and checks `username`: false when it was answered. */
static bool files_access(struct e2b_req *r, const struct files_query *fq, const char *op)
{
	const char *token =
		evhttp_find_header(evhttp_request_get_input_headers(r->req), "X-Access-Token");

	/* SECURITY: with the header, e2b.c checked it; without, the URL must be signed */
	if (!token && !r->debug && !signature_ok(r, fq, op))
		return false;
	/* paddock runs everything as the sandbox user; root is refused saying so (docs/e2b.md) */
	if (fq->username && strcmp(fq->username, "root") == 0) {
		e2b_reply_error(
			r, 401,
			"user 'root': this sandbox runs commands and files as 'user' (uid 1000) "
			"only; leave user unset");
		return false;
	}
	if (fq->username && *fq->username && strcmp(fq->username, "user") != 0) {
		e2b_reply_error(r, 401,
				"error looking up user '%.64s': unknown user (expected 'user')",
				fq->username);
		return false;
	}
	return true;
}

/* The request's path as the sandbox sees it (malloc'ed), or NULL answered. */
static char *files_path(struct e2b_req *r, const char *path)
{
	char *p = e2b_path(r, path ? path : "");

	if (!p)
		e2b_reply_error(r, 400, "path: expected at most %d bytes", PADDOCK_FILES_MAX_PATH);
	return p;
}

/* ---- GET ------------------------------------------------------------------------------ */

/*
 * envd's choice (internal/api/encoding.go): the acceptable coding of highest q, the first
 * listed on a tie; identity unless refused ("identity;q=0", or "*;q=0" without identity).
 * 1 gzip, 0 identity, -1 nothing acceptable.
 */
static int accept_gzip(const char *h)
{
	double best_q = 0, q;
	int best = -2, n = 0;
	bool identity_refused = false, identity_ok = false, star_refused = false;
	char item[64];

	if (!h || !*h)
		return 0;
	for (const char *p = h; *p && n < 64; n++) {
		size_t len = strcspn(p, ",");
		char *semi, *name = item, *end;

		snprintf(item, sizeof(item), "%.*s",
			 (int)(len < sizeof(item) ? len : sizeof(item) - 1), p);
		p += len + (p[len] == ',');
		q = 1;
		semi = strchr(item, ';');
		if (semi) {
			*semi = '\0';
			for (char *s = semi + 1; *s; s++)
				if ((s[0] == 'q' || s[0] == 'Q') && s[1] == '=') {
					char *qend;
					double v = strtod(s + 2, &qend);

					/* as envd: an unparsable q is left at 1 */
					if (qend != s + 2)
						q = v > 1 ? 1 : v >= 0 ? v : 0;
					break;
				}
		}
		while (*name == ' ' || *name == '\t')
			name++;
		end = name + strlen(name);
		while (end > name && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		int kind = strcasecmp(name, "gzip") == 0       ? 1
			   : strcasecmp(name, "identity") == 0 ? 0
			   : strcmp(name, "*") == 0	       ? 2
							       : -1;
		if (kind == 0) {
			identity_refused |= q == 0;
			identity_ok |= q > 0;
		}
		if (kind == 2 && q == 0)
			star_refused = true;
		if (kind >= 0 && q > best_q) {
			best_q = q;
			best = kind;
		}
	}
	if (star_refused && !identity_ok)
		identity_refused = true;
	if (best == 2)
		return identity_refused ? 1 : 0;
	if (best >= 0)
		return best;
	return identity_refused ? -1 : 0;
}

/* Content-Disposition: inline; filename="..." (RFC 6266), filename* for names not ASCII. */
static void add_disposition(struct evkeyvalq *out, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	char buf[NAME_MAX * 3 + 64], *o = buf;
	bool ascii = true;
	size_t n = strnlen(name, NAME_MAX);

	for (size_t i = 0; i < n; i++)
		ascii &= (unsigned char)name[i] >= 0x20 && (unsigned char)name[i] < 0x7f;
	o += sprintf(o, ascii ? "inline; filename=\"" : "inline; filename*=utf-8''");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (ascii) {
			if (c == '"' || c == '\\')
				*o++ = '\\';
			*o++ = (char)c;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || strchr("!#$&+-.^_`|~", c)) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	if (ascii)
		*o++ = '"';
	*o = '\0';
	evhttp_add_header(out, "Content-Disposition", buf);
}

/* A gzip download in progress: the file read a chunk at a time, as the client takes them. */
struct download {
	int fd;
	z_stream zs;
	bool z_ready;
	struct watcher *w, *wlist;
	unsigned char *in;
	bool pumping, again; /* download_pump() is running; it was called again meanwhile */
};

static void download_free(struct download *dl)
{
	if (dl->w)
		pdd_watcher_free(dl->w, &dl->wlist);
	if (dl->z_ready)
		deflateEnd(&dl->zs);
	if (dl->fd >= 0)
		close(dl->fd);
	free(dl->in);
	free(dl);
}

static void download_gone(struct watcher *w)
{
	struct download *dl = w->owner;

	/* the client left: watcher_closed() (http.c) disposed of the request */
	download_free(dl);
}

/* Deflates what zs holds as input (flush: Z_NO_FLUSH or Z_FINISH) into out. */
static int deflate_into(z_stream *zs, int flush, struct evbuffer *out)
{
	int z;

	do {
		struct evbuffer_iovec v;

		if (evbuffer_reserve_space(out, 64u << 10, &v, 1) < 1)
			return Z_MEM_ERROR;
		zs->next_out = v.iov_base;
		zs->avail_out = (uInt)v.iov_len;
		z = deflate(zs, flush);
		v.iov_len -= zs->avail_out;
		evbuffer_commit_space(out, &v, 1);
		if (z == Z_STREAM_ERROR)
			return z;
	} while (zs->avail_out == 0 || (flush == Z_FINISH && z != Z_STREAM_END));
	return Z_OK;
}

static void download_pump(struct evhttp_connection *evcon, void *arg);
static bool download_chunk(struct download *dl);

/* Ends a download: the last chunk (or, on failure, the connection: the body stays short). */
static void download_end(struct download *dl, bool ok)
{
	struct evhttp_request *req = dl->w->req;

	pdd_watcher_detach(dl->w);
	dl->w->req = NULL;
	if (!ok) {
		/*
		 * The client must see the body was cut short: no last chunk, the connection shut.
		 * Not freed here (this may run inside evhttp's own callbacks): the reply's end
		 * then fails to go out and evhttp frees the connection and the request itself.
		 */
		struct evhttp_connection *c = evhttp_request_get_connection(req);
		struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
		evutil_socket_t sfd = bev ? bufferevent_getfd(bev) : -1;

		if (sfd >= 0)
			(void)shutdown(sfd, SHUT_RDWR);
	}
	evhttp_send_reply_end(req);
	download_free(dl);
}

/* Sends the next chunk; called again (evhttp_send_reply_chunk_with_cb) once it went out. */
static void download_pump(struct evhttp_connection *evcon, void *arg)
{
	struct download *dl = arg;

	(void)evcon;
	/*
	 * COMPAT(libevent 2.1.12): behind the HTTP gate a chunk is written to the socket from
	 * inside evhttp_send_reply_chunk_with_cb(), and evhttp calls the connection's write
	 * callback (this, set by the chunk before) from there, before the call returns: a
	 * nested pump would end and free the download under the outer one. A call while
	 * pumping only asks the running pump for one more round.
	 */
	if (dl->pumping) {
		dl->again = true;
		return;
	}
	dl->pumping = true;
	do {
		dl->again = false;
		if (download_chunk(dl))
			return; /* ended, dl freed */
	} while (dl->again);
	dl->pumping = false;
}

/* One chunk of the download; true when it ended (and dl is freed). */
static bool download_chunk(struct download *dl)
{
	struct evbuffer *out = evbuffer_new();
	bool eof = false;

	if (!out)
		return download_end(dl, false), true;
	/* until some compressed bytes come out (the first chunks may all stay in zlib) */
	while (evbuffer_get_length(out) == 0 && !eof) {
		ssize_t n = read(dl->fd, dl->in, FILES_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			evbuffer_free(out);
			return download_end(dl, false), true;
		}
		eof = n == 0;
		dl->zs.next_in = dl->in;
		dl->zs.avail_in = (uInt)n;
		if (deflate_into(&dl->zs, eof ? Z_FINISH : Z_NO_FLUSH, out) != Z_OK) {
			evbuffer_free(out);
			return download_end(dl, false), true;
		}
	}
	if (evbuffer_get_length(out) > 0)
		evhttp_send_reply_chunk_with_cb(dl->w->req, out, eof ? NULL : download_pump, dl);
	evbuffer_free(out);
	if (eof)
		download_end(dl, true);
	return eof;
}

static void download_gzip(struct e2b_req *r, int fd)
{
	struct download *dl = calloc(1, sizeof(*dl));

	if (!dl) {
		close(fd);
		return e2b_reply_error(r, 500, "out of memory");
	}
	dl->fd = fd;
	dl->in = malloc(FILES_CHUNK);
	if (!dl->in || deflateInit2(&dl->zs, FILES_GZIP_LEVEL, Z_DEFLATED, 16 + MAX_WBITS, 8,
				    Z_DEFAULT_STRATEGY) != Z_OK) {
		download_free(dl);
		return e2b_reply_error(r, 500, "out of memory");
	}
	dl->z_ready = true;
	/* a client that leaves mid-download frees it (W_RESULT: evhttp's timeouts stay) */
	dl->w = pdd_watcher_open(r->d, r->req, W_RESULT, dl, &dl->wlist);
	if (!dl->w) {
		download_free(dl);
		return e2b_reply_error(r, 500, "out of memory");
	}
	dl->w->on_gone = download_gone;
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Encoding", "gzip");
	evhttp_send_reply_start(r->req, 200, "OK");
	download_pump(NULL, dl);
}

static void files_get(struct e2b_req *r, const struct files_query *fq)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
	struct paddock_file_info fi = { 0 };
	paddock_error err = { 0 };
	uint64_t size = 0;
	char *path;
	int fd, gz;

	path = files_path(r, fq->path);
	if (!path)
		return;
	if (paddock_sandbox_open_read(r->box->sb, path, 0, &fd, &size, &err) < 0) {
		paddock_error serr = { 0 };

		if (err.code == ENOENT || err.code == ENOTDIR)
			e2b_reply_error(r, 404, "path '%s' does not exist", path);
		else if (err.code == EINVAL &&
			 paddock_sandbox_stat(r->box->sb, path, &fi, &serr) == 0)
			e2b_reply_error(r, 400,
					fi.type == PADDOCK_FILE_DIR
						? "path '%s' is a directory"
						: "path '%s' is not a regular file",
					fi.path);
		else
			reply_paddock_error(r, &err);
		paddock_file_info_release(&fi);
		return free(path);
	}
	gz = accept_gzip(
		evhttp_find_header(evhttp_request_get_input_headers(r->req), "Accept-Encoding"));
	if (gz < 0) {
		close(fd);
		free(path);
		return e2b_reply_error(r, 406,
				       "no acceptable encoding found, supported: [identity, gzip]");
	}
	/* an empty file: Content-Length 0, which the SDK looks for */
	if (size == 0)
		gz = 0;
	evhttp_add_header(out, "Content-Type", "application/octet-stream");
	evhttp_add_header(out, "Vary", "Accept-Encoding");
	add_disposition(out, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	free(path);
	if (gz)
		return download_gzip(r, fd);

	struct evbuffer *b = evbuffer_new();

	/* the file's pages go out by sendfile, not through our memory (as api-files.c) */
	if (!b || (size > 0 && evbuffer_add_file(b, fd, 0, (ev_off_t)size) < 0)) {
		if (b)
			evbuffer_free(b);
		close(fd);
		return e2b_reply_error(r, 500, "read failed");
	}
	if (size == 0)
		close(fd);
	evhttp_send_reply(r->req, 200, "OK", b);
	evbuffer_free(b);
}

/* ---- POST ----------------------------------------------------------------------------- */

/* Where inflated bytes go: a file's fd, or memory. */
struct sink {
	int fd;	   /* >= 0: write here */
	char *buf; /* else grow this */
	size_t len, cap;
	uint64_t total, max;
	int error; /* errno of a failed write */
};

static int sink_add(struct sink *s, const void *p, size_t n)
{
	if (s->total + n > s->max)
		return -EFBIG;
	s->total += n;
	if (s->fd >= 0) {
		for (const char *c = p; n > 0;) {
			ssize_t w = write(s->fd, c, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -(s->error = w < 0 ? errno : EIO);
			c += w;
			n -= (size_t)w;
		}
		return 0;
	}
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 64u << 10;
		char *nb;

		while (cap < s->len + n)
			cap *= 2;
		nb = realloc(s->buf, cap);
		if (!nb)
			return -ENOMEM;
		s->buf = nb;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	return 0;
}

/*
 * Inflates the gzip body `in` (drained) into s: 0, -EFBIG past s->max, -EBADMSG when it is
 * not gzip or is cut short, or the sink's error. Concatenated members are one stream, as for
 * Go's gzip reader.
 */
static int gunzip(struct evbuffer *in, struct sink *s)
{
	unsigned char ib[64u << 10], ob[64u << 10];
	bool need_input = true, in_member = false, any = false;
	z_stream zs = { 0 };
	int z = Z_OK, k = 0;

	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	for (;;) {
		/* more input only once zlib has given out all it can of what it has */
		if (zs.avail_in == 0 && need_input) {
			int n = evbuffer_remove(in, ib, sizeof(ib));

			if (n <= 0)
				break;
			zs.next_in = ib;
			zs.avail_in = (uInt)n;
		}
		if (!in_member && any)
			inflateReset(&zs); /* another member follows */
		in_member = any = true;
		zs.next_out = ob;
		zs.avail_out = sizeof(ob);
		z = inflate(&zs, Z_NO_FLUSH);
		if (z == Z_MEM_ERROR) {
			k = -ENOMEM;
			break;
		}
		if (z != Z_OK && z != Z_STREAM_END && z != Z_BUF_ERROR) {
			k = -EBADMSG;
			break;
		}
		k = sink_add(s, ob, sizeof(ob) - zs.avail_out);
		if (k < 0)
			break;
		need_input = zs.avail_out != 0;
		if (z == Z_STREAM_END) {
			in_member = false;
			need_input = true;
		}
	}
	inflateEnd(&zs);
	if (k == 0 && (in_member || !any))
		k = -EBADMSG; /* cut short, or empty */
	return k;
}

/* Writes a whole evbuffer to fd (identity body). */
static int write_body(struct evbuffer *in, int fd)
{
	while (evbuffer_get_length(in) > 0) {
		int n = evbuffer_write(in, fd);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* One file to write: its data in memory, or the request's body itself (octet-stream). */
struct upload {
	char *path; /* as the sandbox sees it */
	const char *data;
	size_t len;
};

/*
 * Writes one file atomically and adds its WriteInfo to `out`. `body`: stream the request's
 * body (inflated when gzip) instead of u->data. false when the error was answered.
 */
static bool write_one(struct e2b_req *r, const struct upload *u, struct evbuffer *body, bool gzip,
		      json_t *out)
{
	struct paddock_file_info fi = { 0 };
	paddock_file_writer *w = NULL;
	paddock_error err = { 0 };
	const char *slash;
	int k, fd;

	/* envd's answer for a directory there (the commit's rename would say EISDIR, later) */
	if (paddock_sandbox_stat(r->box->sb, u->path, &fi, &err) == 0 &&
	    fi.type == PADDOCK_FILE_DIR) {
		e2b_reply_error(r, 400, "path is a directory: '%s'", fi.path);
		paddock_file_info_release(&fi);
		return false;
	}
	paddock_file_info_release(&fi);
	err = (paddock_error){ 0 };
	if (paddock_sandbox_open_write(r->box->sb, u->path, 0644, true, &w, &err) < 0) {
		reply_paddock_error(r, &err);
		return false;
	}
	fd = paddock_file_writer_fd(w);
	if (body && gzip) {
		struct sink s = { .fd = fd, .max = r->d->http->max_upload };

		k = gunzip(body, &s);
	} else if (body) {
		k = write_body(body, fd);
	} else {
		struct sink s = { .fd = fd, .max = UINT64_MAX };

		k = sink_add(&s, u->data, u->len);
	}
	if (k < 0) {
		paddock_file_writer_free(w); /* the target is as it was */
		if (k == -EFBIG && body)
			e2b_reply_error(r, 413,
					"the body inflates to more than %" PRIu64
					" bytes (paddockd's max upload)",
					r->d->http->max_upload);
		else if (k == -EBADMSG)
			e2b_reply_error(r, 400,
					"error decompressing request body: not gzip, or cut short");
		else if (k == -ENOSPC || k == -EDQUOT || k == -EFBIG)
			e2b_reply_error(r, 507, "not enough disk space available: writing '%s': %s",
					u->path, strerror(-k));
		else
			e2b_reply_error(r, 500, "error writing file '%s': %s", u->path,
					strerror(-k));
		return false;
	}
	if (paddock_file_writer_commit(w, &err) < 0) {
		paddock_file_writer_free(w);
		if (err.code == EISDIR)
			e2b_reply_error(r, 400, "path is a directory: '%s'", u->path);
		else
			reply_paddock_error(r, &err);
		return false;
	}
	paddock_file_writer_free(w);
	/* the cleaned path libpaddock wrote, as envd answers with its resolved one */
	if (paddock_sandbox_stat(r->box->sb, u->path, &fi, &err) == 0) {
		json_array_append_new(out,
				      json_pack("{s:o,s:s,s:o}", "name", svc_json_text(fi.name),
						"type", "file", "path", svc_json_text(fi.path)));
		paddock_file_info_release(&fi);
		return true;
	}
	slash = strrchr(u->path, '/');
	json_array_append_new(out, json_pack("{s:o,s:s,s:o}", "name",
					     svc_json_text(slash ? slash + 1 : u->path), "type",
					     "file", "path", svc_json_text(u->path)));
	return true;
}

static void files_post_multipart(struct e2b_req *r, const struct files_query *fq, const char *ct,
				 bool gzip)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
	struct sink s = { .fd = -1, .max = r->d->http->max_upload };
	struct upload *ups = NULL;
	struct e2b_part *parts = NULL;
	size_t n_parts = 0, n_ups = 0;
	char *boundary = e2b_multipart_boundary(ct), why[160];
	const char *body;
	size_t len;
	json_t *out = NULL;
	int k;

	if (!boundary)
		return e2b_reply_error(r, 400,
				       "Content-Type: expected multipart/form-data with a "
				       "boundary of 1 to %d characters",
				       FILES_MAX_BOUNDARY);
	if (gzip) {
		k = gunzip(in, &s);
		if (k == -EFBIG) {
			e2b_reply_error(r, 413,
					"the body inflates to more than %" PRIu64
					" bytes (paddockd's max upload)",
					r->d->http->max_upload);
			goto out;
		}
		if (k < 0) {
			e2b_reply_error(r, k == -ENOMEM ? 500 : 400,
					"error decompressing request body: not gzip, or cut short");
			goto out;
		}
		body = s.buf ? s.buf : "";
		len = s.len;
	} else {
		len = evbuffer_get_length(in);
		body = len ? (const char *)evbuffer_pullup(in, -1) : "";
		if (!body) {
			e2b_reply_error(r, 500, "out of memory");
			goto out;
		}
	}
	if (!e2b_multipart_parse(body, len, boundary, &parts, &n_parts, why, sizeof(why))) {
		e2b_reply_error(r, 400, "%s", why);
		goto out;
	}
	ups = calloc(n_parts ? n_parts : 1, sizeof(*ups));
	out = json_array();
	if (!ups || !out) {
		e2b_reply_error(r, 500, "out of memory");
		goto out;
	}
	/* every name checked before anything is written */
	for (size_t i = 0; i < n_parts; i++) {
		const char *name = fq->path ? fq->path : parts[i].filename;

		if (!parts[i].name || strcmp(parts[i].name, "file") != 0)
			continue; /* envd ignores other fields */
		if (!name) {
			e2b_reply_error(r, 400,
					"error getting multipart custom part file name: "
					"filename not found in Content-Disposition header");
			goto out;
		}
		ups[n_ups].path = files_path(r, name);
		if (!ups[n_ups].path)
			goto out;
		ups[n_ups].data = parts[i].data;
		ups[n_ups].len = parts[i].len;
		for (size_t j = 0; j < n_ups; j++)
			if (strcmp(ups[j].path, ups[n_ups].path) == 0) {
				e2b_reply_error(r, 400,
						"you cannot upload multiple files to the same "
						"path '%s' in one upload request",
						ups[n_ups].path);
				n_ups++;
				goto out;
			}
		n_ups++;
	}
	for (size_t i = 0; i < n_ups; i++)
		if (!write_one(r, &ups[i], NULL, false, out))
			goto out;
	{
		char *js = json_dumps(out, JSON_COMPACT);
		struct evbuffer *b = evbuffer_new();

		if (!js || !b) {
			free(js);
			if (b)
				evbuffer_free(b);
			e2b_reply_error(r, 500, "out of memory");
			goto out;
		}
		evbuffer_add(b, js, strlen(js));
		free(js);
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type",
				  "application/json");
		evhttp_send_reply(r->req, 200, "OK", b);
		evbuffer_free(b);
	}
out:
	for (size_t i = 0; i < n_ups; i++)
		free(ups[i].path);
	free(ups);
	e2b_parts_free(parts, n_parts);
	json_decref(out);
	free(s.buf);
	free(boundary);
}

static void files_post_raw(struct e2b_req *r, const struct files_query *fq, bool gzip)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
	struct upload u = { 0 };
	json_t *out;

	if (!fq->path)
		return e2b_reply_error(r, 400,
				       "path query parameter is required for raw body upload");
	u.path = files_path(r, fq->path);
	if (!u.path)
		return;
	out = json_array();
	if (out && write_one(r, &u, in, gzip, out)) {
		char *js = json_dumps(out, JSON_COMPACT);
		struct evbuffer *b = evbuffer_new();

		if (js && b) {
			evbuffer_add(b, js, strlen(js));
			evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type",
					  "application/json");
			evhttp_send_reply(r->req, 200, "OK", b);
		} else {
			e2b_reply_error(r, 500, "out of memory");
		}
		free(js);
		if (b)
			evbuffer_free(b);
	} else if (!out) {
		e2b_reply_error(r, 500, "out of memory");
	}
	json_decref(out);
	free(u.path);
}

/* A header value's media type ("multipart/form-data" of "multipart/form-data; b=x"). */
static void media_type(const char *v, char *out, size_t size)
{
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strcspn(v, "; \t");
	snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), v);
}

static void files_post(struct e2b_req *r, const struct files_query *fq)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(r->req);
	const char *ct = evhttp_find_header(in, "Content-Type");
	const char *ce = evhttp_find_header(in, "Content-Encoding");
	char type[64], enc[32];
	struct evkeyval *h;
	bool gzip = false;

	/*
	 * envd keeps X-Metadata-* as user.e2b.* extended attributes; libpaddock has no xattr
	 * call, so they are refused rather than dropped unseen (docs/e2b.md).
	 */
	TAILQ_FOREACH(h, in, next)
	if (strncasecmp(h->key, "X-Metadata-", 11) == 0)
		return e2b_reply_error(r, 400,
				       "%.80s: file metadata (extended attributes) is "
				       "not supported by paddock",
				       h->key);
	if (evbuffer_get_length(evhttp_request_get_input_buffer(r->req)) > r->d->http->max_upload)
		return e2b_reply_error(
			r, 413, "uploads are limited to %" PRIu64 " bytes (paddockd's max upload)",
			r->d->http->max_upload);
	media_type(ce ? ce : "", enc, sizeof(enc));
	if (strcasecmp(enc, "gzip") == 0 || strcasecmp(enc, "x-gzip") == 0)
		gzip = true;
	else if (enc[0] && strcasecmp(enc, "identity") != 0)
		return e2b_reply_error(r, 400,
				       "error decompressing request body: unsupported "
				       "Content-Encoding: %.32s, supported: [gzip]",
				       enc);
	media_type(ct ? ct : "", type, sizeof(type));
	if (strcasecmp(type, "application/octet-stream") == 0)
		return files_post_raw(r, fq, gzip);
	if (strncasecmp(type, "multipart/", 10) == 0)
		return files_post_multipart(r, fq, ct, gzip);
	e2b_reply_error(r, 400,
			"unsupported content type: %.64s, expected multipart/form-data or "
			"application/octet-stream",
			ct ? ct : "");
}

/* ---- entry ---------------------------------------------------------------------------- */

void e2b_files(struct e2b_req *r)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(r->req);
	struct files_query fq;

	if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_POST) {
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", "GET, POST");
		return e2b_reply_error(r, 405, "expected GET or POST");
	}
	if (!query_parse(r, &fq))
		return;
	if (files_access(r, &fq, m == EVHTTP_REQ_GET ? "read" : "write")) {
		if (m == EVHTTP_REQ_GET)
			files_get(r, &fq);
		else
			files_post(r, &fq);
	}
	evhttp_clear_headers(&fq.q);
}
