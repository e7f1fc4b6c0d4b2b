/* Unit tests for the install proxy's two decisions (lib/sandbox/egress.h): which
 * host names an install may ask for, and which addresses it may then be
 * connected to, whatever a name resolves to. */
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

int main(void)
{
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
