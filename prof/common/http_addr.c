// SPDX-License-Identifier: MIT
/*
 * prof/common/http_addr.c - parse PROFRING_PROF_HTTP or `record --http`
 * (http_addr.h).  Apart from the server so that an address is checked
 * before anything starts.
 */
#include "prof/common/http_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t len, const char *name, const char *s,
		const char *why)
{
	snprintf(err, len,
		 "%s%.64s: %s (want ADDR:PORT, [IPV6]:PORT "
		 "or PORT)",
		 name, s, why);
	return -1;
}

/* PORT: digits only, 0 to 65535. */
static int parse_port(const char *p, unsigned int *port)
{
	unsigned long v = 0;

	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65535)
			return -1;
	}
	*port = (unsigned int)v;
	return 0;
}

static int set_v4(struct prof_http_addr *a, const char *host, unsigned int port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&a->ss;

	memset(&a->ss, 0, sizeof(a->ss));
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
		return -1;
	a->len = sizeof(*in);
	a->loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	snprintf(a->text, sizeof(a->text), "%s:%u", host, port);
	return 0;
}

static int set_v6(struct prof_http_addr *a, const char *host, unsigned int port)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->ss;

	memset(&a->ss, 0, sizeof(a->ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
		return -1;
	a->len = sizeof(*in6);
	a->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	snprintf(a->text, sizeof(a->text), "[%s]:%u", host, port);
	return 0;
}

int prof_http_addr_parse(const char *s, const char *name,
			 struct prof_http_addr *a, char *err, size_t errlen)
{
	char host[48];
	const char *colon, *port_s;
	unsigned int port;
	size_t hlen;

	if (!s || !*s)
		return fail(err, errlen, name, "", "empty");
	if (s[0] == '[') { /* [IPV6]:PORT */
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return fail(err, errlen, name, s, "bad [IPV6]:PORT");
		hlen = (size_t)(end - s - 1);
		port_s = end + 2;
		if (hlen >= sizeof(host))
			return fail(err, errlen, name, s, "bad address");
		memcpy(host, s + 1, hlen);
		host[hlen] = 0;
		if (parse_port(port_s, &port))
			return fail(err, errlen, name, s, "bad port");
		return set_v6(a, host, port)
			       ? fail(err, errlen, name, s, "bad IPv6 address")
			       : 0;
	}
	colon = strrchr(s, ':');
	if (!colon) {
		port_s = s;
		strcpy(host, "127.0.0.1");
	} else {
		hlen = (size_t)(colon - s);
		port_s = colon + 1;
		if (hlen >= sizeof(host) || memchr(s, ':', hlen))
			return fail(err, errlen, name, s, "bad address");
		memcpy(host, s, hlen);
		host[hlen] = 0;
		if (!hlen || !strcmp(host, "localhost"))
			strcpy(host, "127.0.0.1");
	}
	if (parse_port(port_s, &port))
		return fail(err, errlen, name, s, "bad port (0 to 65535)");
	if (set_v4(a, host, port))
		return fail(err, errlen, name, s,
			    "not a numeric IPv4 address or localhost");
	return 0;
}
