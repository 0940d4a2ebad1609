/* SPDX-License-Identifier: MIT */
/*
 * prof/common/http_addr.h - the address PROFRING_PROF_HTTP names (http.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HTTP_ADDR_H
#define PROFRING_PROF_HTTP_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/*
 * struct prof_http_addr - where to listen.
 * @ss, @len:	the socket address.
 * @loopback:	it is a loopback address (127.0.0.0/8, ::1).
 * @text:	"ADDR:PORT" as given back to the user ([ADDR]:PORT for IPv6).
 */
struct prof_http_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
	char text[64];
};

/*
 * prof_http_addr_parse() - "ADDR:PORT", "[IPV6]:PORT", ":PORT" or "PORT"
 * (no address: 127.0.0.1); ADDR numeric or "localhost"; PORT 0 to 65535
 * (0: any free port).  @name prefixes @s in the message
 * ("PROFRING_PROF_HTTP=", "--http ").
 * Return: 0, or -1 with a one-line message in @err.
 */
int prof_http_addr_parse(const char *s, const char *name,
			 struct prof_http_addr *a, char *err, size_t errlen);

#endif /* PROFRING_PROF_HTTP_ADDR_H */
