// SPDX-License-Identifier: MIT
/*
 * prof/common/http.c - Go's net/http/pprof endpoints in any program under
 * libprofring-prof.so (http.h; what is served: <profring/prof.h>, the
 * @http option).
 *
 * The HTTP is GNU libmicrohttpd's (a well-kept parser: request lines,
 * headers, chunked bodies, limits, timeouts), loaded with dlopen() when a
 * server starts (mhd_load() says why), in its thread-per-connection mode: one listening thread polls, each connection gets a thread of its
 * own, so a CPU profile that sleeps for its window ties up only its own
 * connection.  We open the listening socket ourselves (so that a bind
 * error is reported exactly, and port 0 can be told) and hand it over.
 * Bounds: CONN_LIMIT connections at once (more wait in the listen
 * backlog), CONN_MEMORY bytes for a request's line and headers (a longer
 * one gets 414 or 431 from the library), CONN_TIMEOUT seconds of silence
 * close a connection, and so do REQUEST_SECONDS to receive a whole
 * request and SEND_SECONDS to send an answer, however the client trickles
 * (the watchdog, below); a new client takes the place of the one that has
 * kept us waiting longest when it would take the last free slot (so that
 * slow clients cannot hold every slot: slowloris); POST bodies at most
 * BODY_MAX bytes (413), one CPU or wall-clock profile at a time (the ops'
 * claim: 409) and one heap delta per kind.
 * Nothing here runs in a signal handler; the program's threads never
 * wait on it.
 *
 * What is served comes from struct prof_http_ops (serve.h): an
 * in-process session's (serve.c; prof.c starts the server with the heap
 * profiler ignoring its thread, so the library's threads and the
 * connection threads they start ignore their allocations too: the
 * server's memory is not the program's; a CPU profile samples them like
 * any thread, so what a request costs shows, as in Go), or the launcher's
 * (record_http.c: the program runs in another process).
 */
#include "prof/common/http.h"
#include "prof/common/http_addr.h"
#include "prof/agent/serve.h"

#include <profring/prof.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "/debug/pprof"
#define CONN_LIMIT 16u
#define CONN_TIMEOUT 10u
#define REQUEST_SECONDS 10u /* to receive a request: line, headers, body */
#define SEND_SECONDS 60u /* to send an answer once it is ready */
#define CONN_MEMORY ((size_t)16 << 10)
#define BODY_MAX ((size_t)64 << 10)
#define MAX_SECONDS 3600u
#define DEFAULT_SECONDS 30u
#define SYMBOLS_MAX 4096 /* addresses in one /symbol POST */

/*
 * libmicrohttpd is loaded when a server starts, not linked: it brings
 * GnuTLS and p11-kit, whose constructors would otherwise run in every
 * program the library is preloaded into (and under ASan leave glibc's
 * locale lock broken: bash hung at its first setlocale()).
 */
#define MHD_LIB "libmicrohttpd.so.12"

static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc,
					   void *apc_cls,
					   MHD_AccessHandlerCallback dh,
					   void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	struct MHD_Response *(*create_response_from_buffer)(
		size_t size, void *buffer, enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r,
					       const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c,
					  unsigned int status,
					  struct MHD_Response *r);
	void (*destroy_response)(struct MHD_Response *r);
	const char *(*lookup_connection_value)(struct MHD_Connection *c,
					       enum MHD_ValueKind kind,
					       const char *key);
	const union MHD_ConnectionInfo *(*get_connection_info)(
		struct MHD_Connection *c, enum MHD_ConnectionInfoType type,
		...);
} mhd;

/* Resolve the functions above once; 0 or -ENOENT (said on stderr). */
static int mhd_load(void)
{
	static const char *const names[] = {
		"MHD_start_daemon",
		"MHD_stop_daemon",
		"MHD_create_response_from_buffer",
		"MHD_add_response_header",
		"MHD_queue_response",
		"MHD_destroy_response",
		"MHD_lookup_connection_value",
		"MHD_get_connection_info",
	};
	void **slots[] = {
		(void **)&mhd.start_daemon,
		(void **)&mhd.stop_daemon,
		(void **)&mhd.create_response_from_buffer,
		(void **)&mhd.add_response_header,
		(void **)&mhd.queue_response,
		(void **)&mhd.destroy_response,
		(void **)&mhd.lookup_connection_value,
		(void **)&mhd.get_connection_info,
	};
	void *h;

	if (mhd.start_daemon)
		return 0;
	h = dlopen(MHD_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr,
			"profring-prof: cannot serve: %s (install "
			"libmicrohttpd12)\n",
			dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		*slots[i] = dlsym(h, names[i]);
		if (!*slots[i]) {
			fprintf(stderr,
				"profring-prof: cannot serve: %s "
				"has no %s\n",
				MHD_LIB, names[i]);
			mhd.start_daemon = NULL;
			return -ENOENT;
		}
	}
	return 0;
}

static struct {
	struct MHD_Daemon *d;
	_Atomic bool quit;
	_Atomic bool heap_delta_busy, allocs_delta_busy;
	const struct prof_http_ops *ops;
} http;

/*
 * Where a connection stands, as the deadlines see it.  Waiting on its
 * client: for a request (its line, headers and body within
 * REQUEST_SECONDS of the connection's start or of the previous request's
 * end), or to take our answer (within SEND_SECONDS of its being queued).
 * Handling: a profile's window, bounded by MAX_SECONDS and the stop.
 */
enum conn_phase { CONN_FREE, CONN_REQUEST, CONN_HANDLING, CONN_SENDING };

/* One connection: its socket, ours to shut down while it is listed. */
struct conn {
	enum conn_phase phase;
	bool cut; /* shut down by us: the library closes it */
	int fd;
	uint64_t since_ns, deadline_ns; /* CLOCK_MONOTONIC, the phase's */
};

/*
 * The connections and the watchdog that shuts down those past their
 * deadline.  The library tells us of each connection in its listening
 * thread (on_connection()): when it starts, and when it has been closed
 * but before its socket is, so that a listed socket is always the
 * connection's and shutdown() under the lock is safe.  At most
 * CONN_LIMIT are listed: the library counts a connection before it tells
 * us of it and after it told us it is gone.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool running, quit;
	/*
	 * When the watchdog wakes by itself: UINT64_MAX never, 0 not asleep
	 * yet (its first look sees every entry).
	 */
	uint64_t wake_ns;
	struct conn conns[CONN_LIMIT];
} watch = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* One request's state: a POST body, bounded; its connection's entry. */
struct req {
	char *body;
	size_t len;
	bool too_big;
	struct conn *conn;
};

/* ---- deadlines ------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool conn_waits(const struct conn *c)
{
	return !c->cut &&
	       (c->phase == CONN_REQUEST || c->phase == CONN_SENDING);
}

/* Close @c: its thread sees the end of its socket and closes it. */
static void conn_cut(struct conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
}

/*
 * @c enters @phase now (watch.lock held); the watchdog is woken for an
 * earlier deadline than it sleeps to.
 */
static void enter_locked(struct conn *c, enum conn_phase phase)
{
	unsigned int s = phase == CONN_SENDING ? SEND_SECONDS : REQUEST_SECONDS;

	c->phase = phase;
	c->since_ns = now_ns();
	c->deadline_ns = c->since_ns + (uint64_t)s * 1000000000u;
	if (conn_waits(c) && c->deadline_ns < watch.wake_ns)
		pthread_cond_signal(&watch.wake);
}

/* A request's thread: its connection (@c: NULL if not listed) moves on. */
static void conn_enter(struct conn *c, enum conn_phase phase)
{
	if (!c)
		return;
	pthread_mutex_lock(&watch.lock);
	enter_locked(c, phase);
	pthread_mutex_unlock(&watch.lock);
}

/*
 * The listening thread: a connection starts, listed with its socket, or
 * is gone (its socket not yet closed).
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **ctx,
			  enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *info;
	struct conn *c = NULL;

	(void)cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		c = *ctx;
		if (c) {
			pthread_mutex_lock(&watch.lock);
			c->phase = CONN_FREE;
			pthread_mutex_unlock(&watch.lock);
		}
		*ctx = NULL;
		return;
	}
	info = mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return;
	pthread_mutex_lock(&watch.lock);
	for (unsigned int i = 0; i < CONN_LIMIT && !c; i++)
		if (watch.conns[i].phase == CONN_FREE)
			c = &watch.conns[i];
	if (c) {
		c->fd = info->connect_fd;
		c->cut = false;
		enter_locked(c, CONN_REQUEST);
	}
	pthread_mutex_unlock(&watch.lock);
	*ctx = c;
}

/*
 * The listening thread, a client accepted: if it takes the last free
 * slot, the connection that has kept us waiting longest makes room for
 * the next one.  Handlers are never cut.  Always accepted.
 */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
				 socklen_t len)
{
	struct conn *oldest = NULL;
	unsigned int live = 0;

	(void)cls;
	(void)addr;
	(void)len;
	pthread_mutex_lock(&watch.lock);
	for (unsigned int i = 0; i < CONN_LIMIT; i++) {
		struct conn *c = &watch.conns[i];

		if (c->phase == CONN_FREE || c->cut)
			continue;
		live++;
		if (conn_waits(c) &&
		    (!oldest || c->since_ns < oldest->since_ns))
			oldest = c;
	}
	if (live + 1 >= CONN_LIMIT && oldest)
		conn_cut(oldest);
	pthread_mutex_unlock(&watch.lock);
	return MHD_YES;
}

/* Cuts the connections past their deadline, and sleeps to the next. */
static void *watch_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&watch.lock);
	while (!watch.quit) {
		uint64_t now = now_ns(), next = UINT64_MAX;
		struct timespec ts;

		for (unsigned int i = 0; i < CONN_LIMIT; i++) {
			struct conn *c = &watch.conns[i];

			if (!conn_waits(c))
				continue;
			if (c->deadline_ns <= now)
				conn_cut(c);
			else if (c->deadline_ns < next)
				next = c->deadline_ns;
		}
		watch.wake_ns = next;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&watch.wake, &watch.lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000u);
		ts.tv_nsec = (long)(next % 1000000000u);
		pthread_cond_timedwait(&watch.wake, &watch.lock, &ts);
	}
	pthread_mutex_unlock(&watch.lock);
	return NULL;
}

static int watch_start(void)
{
	pthread_condattr_t a;
	int err;

	memset(watch.conns, 0, sizeof(watch.conns));
	watch.quit = false;
	watch.wake_ns = 0;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	err = -pthread_cond_init(&watch.wake, &a);
	pthread_condattr_destroy(&a);
	if (err)
		return err;
	err = -pthread_create(&watch.thread, NULL, watch_main, NULL);
	if (err) {
		pthread_cond_destroy(&watch.wake);
		return err;
	}
	watch.running = true;
	return 0;
}

static void watch_stop(void)
{
	if (!watch.running)
		return;
	pthread_mutex_lock(&watch.lock);
	watch.quit = true;
	pthread_cond_signal(&watch.wake);
	pthread_mutex_unlock(&watch.lock);
	pthread_join(watch.thread, NULL);
	pthread_cond_destroy(&watch.wake);
	watch.running = false;
}

/* ---- responses --------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, void *data, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r =
		mhd.create_response_from_buffer(len, data, mode);
	enum MHD_Result rc;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(data);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW,
					"GET, HEAD, POST");
	rc = mhd.queue_response(conn, status, r);
	mhd.destroy_response(r);
	return rc;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned int status,
			    const char *msg)
{
	return reply(conn, status, "text/plain; charset=utf-8", (void *)msg,
		     strlen(msg), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result blob(struct MHD_Connection *conn, struct prof_blob *b)
{
	struct MHD_Response *r = mhd.create_response_from_buffer(
		b->len, b->data, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	if (!r) {
		free(b->data);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/octet-stream");
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
				"attachment; filename=\"profile\"");
	mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
	rc = mhd.queue_response(conn, MHD_HTTP_OK, r);
	mhd.destroy_response(r);
	return rc;
}

/* What a profile call's error becomes. */
static enum MHD_Result failed(struct MHD_Connection *conn, int err)
{
	switch (err) {
	case -EBUSY:
		return text(conn, MHD_HTTP_CONFLICT,
			    "a profile of this kind is being taken already "
			    "(one at a time, and none while the session "
			    "writes a CPU profile of its own)\n");
	case -ENOENT: /* the callers' own texts */
		return text(conn, MHD_HTTP_NOT_FOUND, "not profiled here\n");
	case -ECANCELED:
		return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "the profiler is stopping\n");
	}
	return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "the profile could not be made\n");
}

/* ---- parameters ---------------------------------------------------------- */

/*
 * ?seconds=N: digits only, 1 to MAX_SECONDS; absent: @dflt.  -1 if bad.
 */
static long seconds_arg(struct MHD_Connection *conn, long dflt)
{
	const char *v = mhd.lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
						    "seconds");
	long n = 0;

	if (!v)
		return dflt;
	if (!*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return -1;
		n = n * 10 + (*v - '0');
		if (n > (long)MAX_SECONDS)
			return -1;
	}
	return n ? n : -1;
}

/* ?debug=N other than 0 asks for Go's text formats: not ours. */
static bool debug_asked(struct MHD_Connection *conn)
{
	const char *v = mhd.lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
						    "debug");

	return v && strcmp(v, "0");
}

/* 400 for a bad ?seconds (@s < 0), else for ?debug. */
static enum MHD_Result bad_params(struct MHD_Connection *conn, long s)
{
	if (s < 0)
		return text(conn, MHD_HTTP_BAD_REQUEST,
			    "seconds: want a whole number from 1 to 3600\n");
	return text(conn, MHD_HTTP_BAD_REQUEST,
		    "debug: only the binary profile (debug=0)\n");
}

/* ---- endpoints ------------------------------------------------------------ */

static enum MHD_Result index_page(struct MHD_Connection *conn)
{
	static const char page[] =
		"<html><head><title>/debug/pprof/</title></head><body>\n"
		"/debug/pprof/ (profring-prof)<br>\n<br>\n"
		"<a href=\"allocs\">allocs</a>: sampled allocations "
		"(?seconds=N: those of the next N seconds)<br>\n"
		"<a href=\"cmdline\">cmdline</a>: the command line<br>\n"
		"<a href=\"block\">block</a>: lock waits, condition "
		"variables included (?seconds=N: those of the next N "
		"seconds)<br>\n"
		"<a href=\"heap\">heap</a>: sampled live objects<br>\n"
		"<a href=\"mutex\">mutex</a>: lock contention "
		"(?seconds=N: that of the next N seconds)<br>\n"
		"<a href=\"profile?seconds=30\">profile</a>: CPU profile "
		"(?seconds=N, default 30)<br>\n"
		"<a href=\"wall?seconds=30\">wall</a>: wall-clock profile, "
		"every thread running or sleeping (?seconds=N, default 30)"
		"<br>\n"
		"<a href=\"symbol\">symbol</a>: address to function name "
		"(POST addresses joined by +)<br>\n"
		"</body></html>\n";

	return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
		     (void *)page, sizeof(page) - 1, MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result cpu_profile(struct MHD_Connection *conn)
{
	struct prof_blob b = { 0 };
	long s = seconds_arg(conn, DEFAULT_SECONDS);
	int err;

	if (s < 0 || debug_asked(conn))
		return bad_params(conn, s);
	err = http.ops->cpu((unsigned int)s, &http.quit, &b);
	if (err == -ENOENT)
		return text(conn, MHD_HTTP_NOT_FOUND, http.ops->cpu_off);
	return err ? failed(conn, err) : blob(conn, &b);
}

/* /wall: where no wall-clock profile is served, 404. */
static enum MHD_Result wall_profile(struct MHD_Connection *conn)
{
	struct prof_blob b = { 0 };
	long s = seconds_arg(conn, DEFAULT_SECONDS);
	int err;

	if (!http.ops->wall)
		return text(conn, MHD_HTTP_NOT_FOUND, http.ops->wall_off);
	if (s < 0 || debug_asked(conn))
		return bad_params(conn, s);
	err = http.ops->wall((unsigned int)s, &http.quit, &b);
	if (err == -ENOENT)
		return text(conn, MHD_HTTP_NOT_FOUND, http.ops->wall_off);
	return err ? failed(conn, err) : blob(conn, &b);
}

static enum MHD_Result heap_profile(struct MHD_Connection *conn, bool allocs)
{
	_Atomic bool *busy =
		allocs ? &http.allocs_delta_busy : &http.heap_delta_busy;
	struct prof_blob b = { 0 };
	long s = seconds_arg(conn, 0);
	int err;

	if (s < 0 || debug_asked(conn))
		return bad_params(conn, s);
	/*
	 * Acquire: pairs with the release store below by the request that
	 * held the flag before (the flag is all the two share).
	 */
	if (s && atomic_exchange_explicit(busy, true, memory_order_acquire))
		return failed(conn, -EBUSY);
	err = http.ops->heap(allocs, (unsigned int)s, &http.quit, &b);
	if (s) /* Release: pairs with the acquire exchange above. */
		atomic_store_explicit(busy, false, memory_order_release);
	if (err == -ENOENT)
		return text(conn, MHD_HTTP_NOT_FOUND, http.ops->heap_off);
	return err ? failed(conn, err) : blob(conn, &b);
}

/*
 * /mutex and /block (Go's): since the start, or ?seconds=N a delta.  Not
 * served in-process (no lock session there yet): 404.
 */
static enum MHD_Result lock_profile(struct MHD_Connection *conn, bool block)
{
	struct prof_blob b = { 0 };
	long s = seconds_arg(conn, 0);
	int err;

	if (s < 0 || debug_asked(conn))
		return bad_params(conn, s);
	if (!http.ops->lock)
		return text(conn, MHD_HTTP_NOT_FOUND,
			    "lock profiles are served by profring-prof "
			    "record --http only\n");
	err = http.ops->lock(block, (unsigned int)s, &http.quit, &b);
	if (err == -ENOENT)
		return text(conn, MHD_HTTP_NOT_FOUND, http.ops->lock_off);
	return err ? failed(conn, err) : blob(conn, &b);
}

/* Go's: the arguments joined by NUL bytes. */
static enum MHD_Result cmdline(struct MHD_Connection *conn)
{
	char *buf = malloc(BODY_MAX), path[48];
	ssize_t n = -1;
	int fd;

	if (!buf)
		return failed(conn, -ENOMEM);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)http.ops->pid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, BODY_MAX);
		close(fd);
	}
	if (n < 0) {
		free(buf);
		return failed(conn, -EIO);
	}
	if (n && !buf[n - 1])
		n--; /* the last argument's NUL */
	return reply(conn, MHD_HTTP_OK, "text/plain; charset=utf-8", buf,
		     (size_t)n, MHD_RESPMEM_MUST_FREE);
}

/*
 * gperftools' remote symbolization: GET says there are symbols; POST
 * "0xA+0xB+..." gets "0xA name" lines for the addresses it knows.
 */
static enum MHD_Result symbol(struct MHD_Connection *conn, struct req *r,
			      bool post)
{
	char *out = NULL, *p, *end;
	uint64_t *pcs;
	size_t len = 0, n = 0;
	FILE *f;
	int err;

	if (!post)
		return text(conn, MHD_HTTP_OK, "num_symbols: 1\n");
	if (r->too_big)
		return text(conn, MHD_HTTP_CONTENT_TOO_LARGE,
			    "at most 64 KiB of addresses\n");
	pcs = calloc(SYMBOLS_MAX, sizeof(*pcs));
	if (!pcs)
		return failed(conn, -ENOMEM);
	for (p = r->body; p && *p && n < SYMBOLS_MAX; n++) {
		pcs[n] = strtoull(p, &end, 16);
		if (end == p)
			break;
		p = *end == '+' ? end + 1 : end;
	}
	f = open_memstream(&out, &len);
	err = f ? http.ops->symbols(pcs, n, f) : -ENOMEM;
	free(pcs);
	if ((f && fclose(f)) || err) {
		free(out);
		return failed(conn, -ENOMEM);
	}
	return reply(conn, MHD_HTTP_OK, "text/plain; charset=utf-8", out, len,
		     MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result route(struct MHD_Connection *conn, const char *url,
			     const char *method, struct req *r)
{
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) ||
		   !strcmp(method, MHD_HTTP_METHOD_HEAD);
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
	const char *name;

	if (strncmp(url, PREFIX, sizeof(PREFIX) - 1) ||
	    (url[sizeof(PREFIX) - 1] && url[sizeof(PREFIX) - 1] != '/'))
		return text(conn, MHD_HTTP_NOT_FOUND,
			    "not found: see /debug/pprof/\n");
	name = url + sizeof(PREFIX) - 1;
	name += *name == '/';
	if (!strcmp(name, "symbol") && (get || post))
		return symbol(conn, r, post);
	if (!get)
		return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "method not allowed\n");
	if (!*name)
		return index_page(conn);
	if (!strcmp(name, "profile"))
		return cpu_profile(conn);
	if (!strcmp(name, "wall"))
		return wall_profile(conn);
	if (!strcmp(name, "heap"))
		return heap_profile(conn, false);
	if (!strcmp(name, "allocs"))
		return heap_profile(conn, true);
	if (!strcmp(name, "mutex") || !strcmp(name, "block"))
		return lock_profile(conn, name[0] == 'b');
	if (!strcmp(name, "cmdline"))
		return cmdline(conn);
	return text(conn, MHD_HTTP_NOT_FOUND,
		    "no such profile here: see /debug/pprof/\n");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct req *r = *state;
	const union MHD_ConnectionInfo *info;
	enum MHD_Result rc;

	(void)cls;
	(void)version;
	if (!r) { /* the headers: the body (if any) comes next */
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		info = mhd.get_connection_info(
			conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		r->conn = info ? info->socket_context : NULL;
		*state = r;
		return MHD_YES;
	}
	if (*upload_len) {
		size_t n = *upload_len;

		if (!r->too_big && r->len + n < BODY_MAX) {
			char *b = realloc(r->body, r->len + n + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + r->len, upload, n);
			r->body = b;
			r->len += n;
			r->body[r->len] = 0;
		} else {
			r->too_big = true;
		}
		*upload_len = 0;
		return MHD_YES;
	}
	conn_enter(r->conn, CONN_HANDLING);
	rc = route(conn, url, method, r);
	conn_enter(r->conn, CONN_SENDING);
	return rc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
			 enum MHD_RequestTerminationCode why)
{
	struct req *r = *state;

	(void)cls;
	(void)conn;
	(void)why;
	if (r) {
		conn_enter(r->conn, CONN_REQUEST); /* the next one's, if any */
		free(r->body);
		free(r);
		*state = NULL;
	}
}

/* ---- life cycle -------------------------------------------------------------- */

/* The listening socket, or -errno. */
static int listen_on(const struct prof_http_addr *a)
{
	int one = 1;
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) ||
	    listen(fd, 64)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* The port the kernel gave (port 0 asks for any). */
static unsigned int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void announce(const struct prof_http_addr *a, unsigned int port)
{
	char host[64];
	char *colon;

	snprintf(host, sizeof(host), "%s", a->text);
	colon = strrchr(host, ':');
	if (colon)
		*colon = 0;
	fprintf(stderr, "profring-prof: serving http://%s:%u/debug/pprof/\n",
		host, port);
}

int prof_http_start(const char *spec, const struct prof_http_ops *ops)
{
	struct prof_http_addr a;
	char msg[256];
	int fd;

	if (http.d)
		return -EALREADY;
	if (mhd_load())
		return -ENOENT;
	if (prof_http_addr_parse(spec, "", &a, msg, sizeof(msg))) {
		fprintf(stderr, "profring-prof: %s; not serving\n", msg);
		return -EINVAL;
	}
	if (!a.loopback)
		fprintf(stderr,
			"profring-prof: warning: %s is not a loopback address: "
			"anyone who can reach it can read this program's "
			"profiles (its code and data addresses)\n",
			a.text);
	fd = listen_on(&a);
	if (fd < 0) {
		fprintf(stderr, "profring-prof: cannot listen on %s: %s\n",
			a.text, strerrordesc_np(-fd));
		return fd;
	}
	atomic_store_explicit(&http.quit, false, memory_order_relaxed);
	http.ops = ops;
	if (watch_start()) {
		close(fd);
		fprintf(stderr,
			"profring-prof: cannot start the HTTP server\n");
		return -ENOMEM;
	}
	http.d = mhd.start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
		0, on_accept, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET,
		fd, MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
		MHD_OPTION_END);
	if (!http.d) {
		watch_stop();
		close(fd);
		fprintf(stderr,
			"profring-prof: cannot start the HTTP server\n");
		return -ENOMEM;
	}
	announce(&a, bound_port(fd));
	return 0;
}

void prof_http_stop(void)
{
	if (!http.d)
		return;
	/* Relaxed: polled by the requests; the stop below waits for them. */
	atomic_store_explicit(&http.quit, true, memory_order_relaxed);
	mhd.stop_daemon(http.d); /* closes the listening socket too */
	http.d = NULL;
	watch_stop(); /* after the connections, which it may cut */
}
