/* Unit tests for the egress proxy's decisions (lib/sandbox/egress.h): which
 * addresses a sandbox may be connected to, whatever a name resolves to,
 * which server a TLS ClientHello names, whatever its lengths claim, and
 * what a plain HTTP request's head asks for and is forwarded as.  (Which
 * host and port are allowed is hostpat's: t/unit/hostpat_test.c.) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "tap.h"

static bool v4(const char *a)
{
	struct sockaddr_in s = { .sin_family = AF_INET };
	inet_pton(AF_INET, a, &s.sin_addr);
	return egress_addr_public(&s);
}

static bool v6(const char *a)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET6, a, &s.sin6_addr);
	return egress_addr_public(&s);
}

/* A ClientHello record naming sni (or none), with extra bytes of another
 * extension before it; its length in *n. */
static size_t hello(unsigned char *b, const char *sni, size_t extra, unsigned extra_type)
{
	unsigned char body[600];
	size_t o = 0, sl = sni ? strlen(sni) : 0;
	body[o++] = 3, body[o++] = 3;
	memset(body + o, 7, 32), o += 32;
	body[o++] = 0;                                      /* session id */
	body[o++] = 0, body[o++] = 2, body[o++] = 0x13, body[o++] = 1; /* one suite */
	body[o++] = 1, body[o++] = 0;                      /* compression */
	size_t el = (extra ? 4 + extra : 0) + (sni ? 9 + sl : 0);
	body[o++] = (unsigned char)(el >> 8), body[o++] = (unsigned char)el;
	if (extra) {
		body[o++] = (unsigned char)(extra_type >> 8), body[o++] = (unsigned char)extra_type;
		body[o++] = (unsigned char)(extra >> 8), body[o++] = (unsigned char)extra;
		memset(body + o, 0, extra);
		if (extra_type == 0 && extra == 17) /* a server name of its own: evil.example */
			memcpy(body + o, "\x00\x0f\x00\x00\x0c" "evil.example", 17);
		o += extra;
	}
	if (sni) {
		body[o++] = 0, body[o++] = 0, body[o++] = 0, body[o++] = (unsigned char)(5 + sl);
		body[o++] = 0, body[o++] = (unsigned char)(3 + sl), body[o++] = 0, body[o++] = 0, body[o++] = (unsigned char)sl;
		memcpy(body + o, sni, sl), o += sl;
	}
	size_t hl = 4 + o;
	unsigned char *p = b;
	*p++ = 22, *p++ = 3, *p++ = 1, *p++ = (unsigned char)(hl >> 8), *p++ = (unsigned char)hl;
	*p++ = 1, *p++ = 0, *p++ = (unsigned char)(o >> 8), *p++ = (unsigned char)o;
	memcpy(p, body, o);
	return 5 + hl;
}

/* egress_http_head of a C string head; why into why. */
static bool head(const char *h, struct egress_http *p, char *why)
{
	return egress_http_head(h, strlen(h), p, why, 200);
}

/* Refused, with a why that contains want. */
static bool refused(const char *h, const char *want)
{
	struct egress_http p;
	char why[200] = "";
	bool ok = head(h, &p, why);
	if (ok || !strstr(why, want))
		fprintf(stderr, "# %s: %s\n", ok ? "passed" : "why", ok ? h : why);
	return !ok && strstr(why, want);
}

/* The head forwarded for h (up_auth as egress_http_forward's), or "". */
static const char *fwd(const char *h, const char *up_auth)
{
	static char out[2048];
	struct egress_http p;
	char why[200];
	size_t n = head(h, &p, why) ? egress_http_forward(h, strlen(h), &p, up_auth, out, sizeof out - 1) : 0;
	out[n] = 0;
	return out;
}

static void http_cases(void)
{
	struct egress_http p;
	char why[200];
	OK(head("GET http://Example.org/a/b?c=d HTTP/1.1\r\nHost: example.org\r\nContent-Length: 12\r\nAccept: */*\r\n\r\n", &p, why) &&
		   !strcmp(p.method, "GET") && !strcmp(p.host, "Example.org") && p.port == 80 && !p.port_given &&
		   p.path_len == 8 && p.content_length == 12 && p.flags == EGRESS_HTTP_HOST && !strcmp(p.host_header, "example.org") &&
		   egress_http_host_ok(&p),
	   "a request in absolute form: method, host, default port 80, path, Host, Content-Length");
	OK(head("POST http://198.18.0.5:8080 HTTP/1.0\r\n\r\n", &p, why) && p.port == 8080 && p.port_given && p.path_len == 0 &&
		   p.content_length == -1 && !p.flags,
	   "an address and a port, no path, no headers, HTTP/1.0");
	OK(head("GET http://a.example:81/ HTTP/1.1\r\nhost:  A.EXAMPLE:81 \r\n\r\n", &p, why) && egress_http_host_ok(&p),
	   "a Host header naming the host and port, in any case, spaces around it");
	OK(head("GET http://a.example/ HTTP/1.1\r\nHost: a.example:80\r\n\r\n", &p, why) && egress_http_host_ok(&p),
	   "Host with the default port given");
	bool other = true;
	const char *hosts[] = { "b.example", "a.example:8080", "a.example.evil", "a.exampl", "a.example:", "a.example:80x", "", NULL };
	for (int i = 0; hosts[i]; i++) {
		char h[200];
		snprintf(h, sizeof h, "GET http://a.example/ HTTP/1.1\r\nHost: %s\r\n\r\n", hosts[i]);
		other &= head(h, &p, why) && !egress_http_host_ok(&p);
	}
	OK(other, "a Host header naming another host or port does not match");
	OK(head("PUT http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nUpgrade: websocket\r\n\r\n", &p, why) &&
		   p.flags == (EGRESS_HTTP_CHUNKED | EGRESS_HTTP_UPGRADE),
	   "Transfer-Encoding and Upgrade are flagged (the server refuses them)");
	OK(refused("GET http://a.example:0/ HTTP/1.1\r\n\r\n", "port") && refused("GET http://a.example:65536/ HTTP/1.1\r\n\r\n", "port") &&
		   refused("GET http://a.example:/ HTTP/1.1\r\n\r\n", "port") && refused("GET http://a.example:+80/ HTTP/1.1\r\n\r\n", "port") &&
		   refused("GET http://a.example:-1/ HTTP/1.1\r\n\r\n", "port") &&
		   refused("GET http://a.example:99999999999999999999/ HTTP/1.1\r\n\r\n", "port") &&
		   refused("GET http://a.example:8o/ HTTP/1.1\r\n\r\n", "port"),
	   "bad ports: 0, past 65535, empty, signed, huge, not digits");
	OK(refused("GET http://a@b.example/ HTTP/1.1\r\n\r\n", "user information") &&
		   refused("GET http://u:p@b.example:80/ HTTP/1.1\r\n\r\n", "user information"),
	   "user information is refused");
	OK(refused("GET http://[::1]:80/ HTTP/1.1\r\n\r\n", "IPv6") && refused("GET http://[2001:db8::1]/ HTTP/1.1\r\n\r\n", "IPv6"),
	   "an IPv6 literal is refused");
	OK(refused("GET https://a.example/ HTTP/1.1\r\n\r\n", "CONNECT") && refused("GET ftp://a.example/ HTTP/1.1\r\n\r\n", "only http://") &&
		   refused("GET file:///etc/passwd HTTP/1.1\r\n\r\n", "only http://") && refused("GET / HTTP/1.1\r\n\r\n", "in full") &&
		   refused("GET http:/a.example/ HTTP/1.1\r\n\r\n", "only http://"),
	   "other schemes and the origin form are refused");
	OK(refused("GET http://a.example/ HTTP/1.1\r\nX: a\rHost: b.example\r\n\r\n", "bare CR") &&
		   refused("GET http://a.example/ HTTP/1.1\r\nX: a\nHost: b.example\r\n\r\n", "bare LF") &&
		   refused("GET http://a.example/ HTTP/1.1\nHost: b.example\r\n\r\n", "bare LF") &&
		   refused("GET http://a.example/\r HTTP/1.1\r\n\r\n", "bare CR") &&
		   refused("GET http://a.example/ HTTP/1.1\r\nX: a\x01\r\n\r\n", "control") &&
		   refused("GET http://a.example/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", "folded"),
	   "header injection: a bare CR or LF, a control byte, a folded line");
	static const char nul[] = "GET http://a.example/ HTTP/1.1\r\nX: \0\r\n\r\n";
	OK(!egress_http_head(nul, sizeof nul - 1, &p, why, sizeof why) && strstr(why, "control"), "a NUL in a header");
	OK(refused("GET http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", "two Content-Length") &&
		   refused("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nhost: a.example\r\n\r\n", "two Host"),
	   "two Content-Length or Host headers, even alike, are refused");
	OK(refused("POST http://a.example/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length") &&
		   refused("POST http://a.example/ HTTP/1.1\r\nContent-Length: 1125899906842625\r\n\r\n", "Content-Length") &&
		   refused("POST http://a.example/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "Content-Length") &&
		   refused("POST http://a.example/ HTTP/1.1\r\nContent-Length: 1,1\r\n\r\n", "Content-Length") &&
		   refused("POST http://a.example/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", "Content-Length") &&
		   refused("POST http://a.example/ HTTP/1.1\r\nContent-Length: \r\n\r\n", "Content-Length") &&
		   head("POST http://a.example/ HTTP/1.1\r\nContent-Length: 1125899906842624\r\n\r\n", &p, why),
	   "lengths: huge, past the bound, signed, lists, hex, empty are refused; the bound itself passes");
	OK(refused("GET http://a.example/ HTTP/2.0\r\n\r\n", "HTTP/1.0") && refused("GET http://a.example/\r\n\r\n", "request line") &&
		   refused("G(T http://a.example/ HTTP/1.1\r\n\r\n", "request line") &&
		   refused("CONNECT http://a.example/ HTTP/1.1\r\n\r\n", "CONNECT") &&
		   refused("GET http://a.example/ HTTP/1.1\r\n", "blank line") &&
		   refused("GET http://a.example/ HTTP/1.1\r\n\r\nX: y\r\n\r\n", "after") &&
		   refused("GET http://a.example/ HTTP/1.1\r\nX y\r\n\r\n", "colon") &&
		   refused("GET http://a.example/ HTTP/1.1\r\nX : y\r\n\r\n", "colon") &&
		   refused("GET http://a_b.example/ HTTP/1.1\r\n\r\n", "no host") && refused("GET http:/// HTTP/1.1\r\n\r\n", "no host") &&
		   refused("GET http://a.example/#x HTTP/1.1\r\n\r\n", "fragment") &&
		   refused("GET http://a.example/\xc3\xa9 HTTP/1.1\r\n\r\n", "ASCII"),
	   "other versions, a malformed request line, bytes after the head, a nameless header, bad hosts, fragments");
	OK(!strcmp(fwd("GET http://a.example/x?y HTTP/1.0\r\nAccept: */*\r\nConnection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
		       "Keep-Alive: 5\r\nTE: trailers\r\nproxy-connection: x\r\nX-B: 1\r\n\r\n", NULL),
		   "GET /x?y HTTP/1.1\r\nAccept: */*\r\nX-B: 1\r\nHost: a.example\r\nConnection: close\r\n\r\n"),
	   "forwarded in origin form, without hop-by-hop headers, with Host and Connection: close");
	OK(!strcmp(fwd("GET http://a.example:8080?q HTTP/1.1\r\nHost: a.example:8080\r\n\r\n", NULL),
		   "GET /?q HTTP/1.1\r\nHost: a.example:8080\r\nConnection: close\r\n\r\n") &&
		   !strcmp(fwd("GET http://a.example:8080 HTTP/1.1\r\n\r\n", NULL),
			   "GET / HTTP/1.1\r\nHost: a.example:8080\r\nConnection: close\r\n\r\n"),
	   "an empty path is /; the Host added names the port given");
	OK(!strcmp(fwd("GET http://a.example/ HTTP/1.1\r\n\r\n", "dTpw"),
		   "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nProxy-Authorization: Basic dTpw\r\nConnection: close\r\n\r\n") &&
		   !strcmp(fwd("GET http://a.example:81/ HTTP/1.1\r\n\r\n", ""),
			   "GET http://a.example:81/ HTTP/1.1\r\nHost: a.example:81\r\nConnection: close\r\n\r\n"),
	   "to an upstream proxy: the absolute form, its credentials if any");
	const char *big = "GET http://a.example/ HTTP/1.1\r\nX: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n\r\n";
	char out[40];
	OK(head(big, &p, why) && egress_http_forward(big, strlen(big), &p, NULL, out, sizeof out) == 0,
	   "a head that does not fit is not cut: 0");
}

static void sni_cases(void)
{
	unsigned char b[700];
	char name[256];
	size_t need, n = hello(b, "pypi.org", 20, 10);
	OK(egress_hello_sni(b, n, name, sizeof name, &need) == 1 && !strcmp(name, "pypi.org") && need == n,
	   "a ClientHello's server name, after another extension");
	n = hello(b, NULL, 0, 0);
	OK(egress_hello_sni(b, n, name, sizeof name, NULL) == 0, "a ClientHello that names no server");
	n = hello(b, "pypi.org", 0, 0);
	bool short_all = true;
	for (size_t k = 0; k < n; k++)
		short_all &= egress_hello_sni(b, k, name, sizeof name, &need) == -1 && (k < 5 || need == n);
	OK(short_all, "every cut of it is incomplete, and says how long the record is once its header is in");
	/* each length field claiming one byte more or less than it holds */
	size_t lens[] = { 3, 7, 42, 44, 47, 50, 54, 56, 59 }; /* record, handshake, session id, suites, compression, extensions, ext, list, name */
	bool refused = true;
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
		for (int d = -1; d <= 1; d += 2) {
			unsigned char c[700];
			memcpy(c, b, n);
			c[lens[i] + 1] = (unsigned char)(c[lens[i] + 1] + d);
			int s = egress_hello_sni(c, n, name, sizeof name, NULL);
			refused &= s == -1 || (s == 1 && !strcmp(name, "pypi.org"));
		}
	OK(refused, "a length off by one is refused, never read past");
	unsigned char t[5] = { 23, 3, 3, 0, 10 };
	OK(egress_hello_sni(t, 5, name, sizeof name, &need) == -1 && need == 0, "not a handshake: not a ClientHello");
	n = hello(b, "a\0b", 0, 0); /* a NUL inside the name */
	b[n - 2] = 0;
	OK(egress_hello_sni(b, n, name, sizeof name, NULL) == -1, "a name holding a NUL is refused");
	n = hello(b, "pypi.org", 0, 0);
	OK(egress_hello_sni(b, n, name, 8, NULL) == -1, "a name longer than the caller's room is refused");
	n = hello(b, "pypi.org", 40, 0xfe0d);
	OK(egress_hello_sni(b, n, name, sizeof name, NULL) == -1, "Encrypted Client Hello: its visible name is not the one served");
	n = hello(b, "pypi.org", 40, 0xffce);
	OK(egress_hello_sni(b, n, name, sizeof name, NULL) == -1, "the draft ESNI likewise");
	n = hello(b, "pypi.org", 17, 0); /* another server_name extension (evil.example) before it */
	OK(egress_hello_sni(b, n, name, sizeof name, NULL) == -1, "an extension twice (two server names) is refused");
	n = hello(b, "pypi.org", 0, 0);
	b[4] = (unsigned char)(b[4] + 4), b[n] = 1, b[n + 1] = 0, b[n + 2] = 0, b[n + 3] = 0; /* an empty message after it */
	OK(egress_hello_sni(b, n + 4, name, sizeof name, NULL) == -1, "another handshake message in its record is refused");
}

int main(void)
{
	sni_cases();
	http_cases();

	OK(v4("151.101.0.223") && v4("203.0.113.80") && v4("8.8.8.8"), "public IPv4");
	const char *deny4[] = { "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
				"169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "255.255.255.255",
				"192.0.0.1", "192.88.99.1", NULL };
	bool all = true;
	for (int i = 0; deny4[i]; i++)
		all &= !v4(deny4[i]);
	OK(all, "loopback, private, link-local (metadata), shared, unspecified, multicast and broadcast IPv4 are refused");
	OK(v4("172.32.0.1") && v4("100.128.0.1") && v4("11.0.0.1"), "the ranges end where they end");
	OK(v6("2a04:4e42::223"), "public IPv6");
	const char *deny6[] = { "::1", "::", "fe80::1", "fd00::1", "fc00::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
				"64:ff9b::a9fe:a9fe", "::7f00:1", "::a00:1", "2002:7f00:1::", "2002:a00:1::1", "2001::1",
				"fec0::1", "64:ff9b:1::1", "100::1", NULL };
	all = true;
	for (int i = 0; deny6[i]; i++)
		all &= !v6(deny6[i]);
	OK(all, "loopback, unspecified, link-local, site-local, unique local, multicast, discard and Teredo IPv6, and "
		"the mapped, compatible, NAT64 and 6to4 forms of denied IPv4");
	OK(v6("::ffff:8.8.8.8") && v6("2002:808:808::1") && v6("64:ff9b::808:808"),
	   "a public IPv4 embedded (mapped, 6to4, NAT64) is public");
	struct sockaddr sa = { .sa_family = AF_UNIX };
	OK(!egress_addr_public(&sa), "not an internet address: refused");
	DONE();
}
