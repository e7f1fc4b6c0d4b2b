/* Unit tests for the install proxy's decisions (lib/sandbox/egress.h): which
 * host names an install may ask for, which addresses it may then be
 * connected to, whatever a name resolves to, and which server a TLS
 * ClientHello names, whatever its lengths claim. */
#include <arpa/inet.h>
#include <netinet/in.h>
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
	char *hosts[] = { "pypi.org", "*.pythonhosted.org", NULL };
	OK(egress_host_allowed(hosts, "pypi.org"), "a listed name");
	OK(egress_host_allowed(hosts, "PyPI.org"), "names are case-insensitive");
	OK(!egress_host_allowed(hosts, "evil-pypi.org") && !egress_host_allowed(hosts, "pypi.org.evil.example"),
	   "no prefix or suffix games");
	OK(egress_host_allowed(hosts, "files.pythonhosted.org"), "*.domain: a subdomain");
	OK(!egress_host_allowed(hosts, "pythonhosted.org"), "*.domain: not the domain itself");
	OK(!egress_host_allowed(hosts, "evilpythonhosted.org"), "*.domain: not a name that merely ends like it");
	OK(!egress_host_allowed(hosts, "127.0.0.1") && !egress_host_allowed(NULL, "pypi.org"), "nothing else, nothing without a list");

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
