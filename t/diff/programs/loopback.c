/* Sockets on loopback: a TCP server on 127.0.0.1 and on ::1, a client
 * that finds it by resolving "localhost", UDP datagrams, and a Unix
 * socket in $TMPDIR. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int echo_once(int srv)
{
	int c = accept(srv, NULL, NULL);
	if (c < 0)
		return -1;
	char buf[256];
	ssize_t n = read(c, buf, sizeof buf);
	if (n > 0)
		write(c, buf, (size_t)n);
	close(c);
	return 0;
}

static int tcp(int family, const char *host)
{
	int s = socket(family, SOCK_STREAM, 0);
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *in;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		len = sizeof *in6;
	}
	if (s < 0 || bind(s, (struct sockaddr *)&ss, len) < 0 || listen(s, 8) < 0 ||
	    getsockname(s, (struct sockaddr *)&ss, &len) < 0)
		return printf("tcp %s: server failed\n", host), 1;
	int port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
	pid_t pid = fork();
	if (pid == 0)
		_exit(echo_once(s) ? 1 : 0);
	close(s);

	char portstr[16];
	snprintf(portstr, sizeof portstr, "%d", port);
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM }, *ai;
	int rc = getaddrinfo(host, portstr, &hints, &ai);
	if (rc != 0)
		return printf("tcp %s: resolve: %s\n", host, gai_strerror(rc)), 1;
	int c = socket(ai->ai_family, SOCK_STREAM, 0);
	if (connect(c, ai->ai_addr, ai->ai_addrlen) < 0)
		return printf("tcp %s: connect failed\n", host), 1;
	freeaddrinfo(ai);
	write(c, "hello", 5);
	char buf[16] = { 0 };
	ssize_t n = read(c, buf, sizeof buf - 1);
	close(c);
	int st;
	waitpid(pid, &st, 0);
	printf("tcp %s: echoed \"%.*s\"\n", host, (int)(n > 0 ? n : 0), buf);
	return 0;
}

static int udp(void)
{
	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof in;
	if (bind(a, (struct sockaddr *)&in, len) < 0 || getsockname(a, (struct sockaddr *)&in, &len) < 0)
		return printf("udp: bind failed\n"), 1;
	sendto(b, "ping", 4, 0, (struct sockaddr *)&in, len);
	char buf[8] = { 0 };
	ssize_t n = recv(a, buf, sizeof buf - 1, 0);
	printf("udp: received \"%.*s\"\n", (int)(n > 0 ? n : 0), buf);
	return 0;
}

static int unix_socket(void)
{
	const char *tmp = getenv("TMPDIR");
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	snprintf(un.sun_path, sizeof un.sun_path, "%s/loopback-%d.sock", tmp ? tmp : "/tmp", (int)getpid());
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(s, (struct sockaddr *)&un, sizeof un) < 0 || listen(s, 1) < 0)
		return printf("unix: bind failed\n"), 1;
	pid_t pid = fork();
	if (pid == 0)
		_exit(echo_once(s) ? 1 : 0);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&un, sizeof un) < 0)
		return printf("unix: connect failed\n"), 1;
	write(c, "over unix", 9);
	char buf[16] = { 0 };
	ssize_t n = read(c, buf, sizeof buf - 1);
	waitpid(pid, NULL, 0);
	unlink(un.sun_path);
	printf("unix: echoed \"%.*s\"\n", (int)(n > 0 ? n : 0), buf);
	return 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	return tcp(AF_INET, "localhost") | tcp(AF_INET, "127.0.0.1") | tcp(AF_INET6, "::1") | udp() | unix_socket();
}
