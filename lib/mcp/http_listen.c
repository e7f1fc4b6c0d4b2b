#define _GNU_SOURCE
#include "http_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

/* systemd's socket activation (sd_listen_fds(3)): one listening TCP socket
 * passed as fd 3, for this process (LISTEN_PID), which it keeps when it
 * runs a tool (CLOEXEC) or when the variables would be inherited: they are
 * removed, so no child takes fd 3 for a socket of its own. */
static int listen_inherited(char *err, size_t errlen)
{
	int64_t pid = -1, n = -1;
	util_parse_i64(getenv("LISTEN_PID"), 1, INT32_MAX, &pid);
	util_parse_i64(getenv("LISTEN_FDS"), 0, INT32_MAX, &n);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (pid != getpid() || n != 1) {
		snprintf(err, errlen, "--listen systemd: %s", pid != getpid()
			 ? "no socket was passed to this process (LISTEN_PID; start it from a .socket unit)"
			 : "expected exactly one socket (LISTEN_FDS): one ListenStream= in the .socket unit");
		return -1;
	}
	int fd = 3, type = 0, acc = 0;
	struct sockaddr_storage ss;
	socklen_t tl = sizeof type, al = sizeof acc, sl = sizeof ss;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) < 0 || !acc ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
		snprintf(err, errlen, "--listen systemd: fd 3 is not a listening TCP socket (ListenStream=[ADDR:]PORT)");
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		snprintf(err, errlen, "--listen systemd: fd 3: %s", strerror(errno));
		return -1;
	}
	return fd;
}

int http_listen(const char *spec, char *err, size_t errlen)
{
	if (!strcmp(spec, "systemd"))
		return listen_inherited(err, errlen);
	char host[128] = "127.0.0.1";
	const char *port = spec;
	if (spec[0] == '[') {
		const char *e = strchr(spec, ']');
		if (!e || e[1] != ':' || (size_t)(e - spec - 1) >= sizeof host) {
			snprintf(err, errlen, "--listen \"%s\": expected [IPV6]:PORT", spec);
			return -1;
		}
		memcpy(host, spec + 1, (size_t)(e - spec - 1));
		host[e - spec - 1] = 0;
		port = e + 2;
	} else if (strchr(spec, ':')) {
		const char *c = strrchr(spec, ':');
		if ((size_t)(c - spec) >= sizeof host) {
			snprintf(err, errlen, "--listen \"%s\": host too long", spec);
			return -1;
		}
		if (c > spec) {
			memcpy(host, spec, (size_t)(c - spec));
			host[c - spec] = 0;
		}
		port = c + 1;
	}
	char *end;
	errno = 0;
	long p = strtol(port, &end, 10);
	if (!*port || *end || errno || p < 0 || p > 65535) {
		snprintf(err, errlen, "--listen \"%s\": the port must be a number from 0 to 65535", spec);
		return -1;
	}
	if (!strcasecmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t len;
	struct sockaddr_in *s4 = (void *)&ss;
	struct sockaddr_in6 *s6 = (void *)&ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)p);
		len = sizeof *s4;
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)p);
		len = sizeof *s6;
	} else {
		snprintf(err, errlen, "--listen \"%s\": \"%s\" is not an IP address (or localhost)", spec, host);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 512) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
