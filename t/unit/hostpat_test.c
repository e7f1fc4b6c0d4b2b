/* hostpat_test: host patterns, what they allow, and a request's within the configuration's. */
#include "hostpat.h"
#include "tap.h"

int main(void)
{
	char err[400];
	const char *good[] = { "pypi.org", "*.pythonhosted.org", "example.org:80", "*.a.example:8443", "198.18.0.5", "x:65535" };
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		OK(hostpat_ok(good[i], err, sizeof err), "a pattern: %s", good[i]);
	const char *bad[] = { "", "*.", "*", "a..b", ".a", "a.", "-a", "a b", "a/b", "a:0", "a:65536", "a:", "a:8x", "a:-1",
			      "*.*.a", "a*.b", "[::1]:443", "user@host", "a: 443", "a:+443", "a:\n443", "a:443 " };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		OK(!hostpat_ok(bad[i], err, sizeof err) && (strstr(err, "pattern") || strstr(err, "port")),
		   "not a pattern: \"%s\" (%s)", bad[i], err);

	char *list[] = { "pypi.org", "*.pythonhosted.org", "example.org:80", "198.18.0.5:8443", NULL };
	OK(hostpat_allows(list, "pypi.org", 443) && hostpat_allows(list, "PyPI.ORG", 443), "a name at 443, any case");
	OK(!hostpat_allows(list, "pypi.org", 80), "no port: 443 only, not plain HTTP");
	OK(hostpat_allows(list, "example.org", 80) && !hostpat_allows(list, "example.org", 443), ":80 is that port only");
	OK(hostpat_allows(list, "files.pythonhosted.org", 443) && hostpat_allows(list, "a.b.pythonhosted.org", 443),
	   "*.domain: its subdomains");
	OK(!hostpat_allows(list, "pythonhosted.org", 443) && !hostpat_allows(list, "evilpythonhosted.org", 443),
	   "*.domain: not the domain, not a name that merely ends like it");
	OK(!hostpat_allows(list, "pypi.org.evil.example", 443) && !hostpat_allows(list, "evil-pypi.org", 443), "no prefix tricks");
	OK(hostpat_allows(list, "198.18.0.5", 8443) && !hostpat_allows(list, "198.18.0.5", 443), "an address and its port");
	OK(!hostpat_allows(NULL, "pypi.org", 443), "no list allows nothing");

	char *wide[] = { "*.example.org", "pypi.org", "git.example.net:22", NULL };
	OK(hostpat_covers(wide, "pypi.org") && hostpat_covers(wide, "a.example.org") && hostpat_covers(wide, "*.b.example.org"),
	   "narrower patterns are covered");
	OK(hostpat_covers(wide, "*.example.org") && hostpat_covers(wide, "git.example.net:22"), "the same pattern is covered");
	OK(!hostpat_covers(wide, "example.org") && !hostpat_covers(wide, "*.org") && !hostpat_covers(wide, "pypi.org:80") &&
	       !hostpat_covers(wide, "git.example.net") && !hostpat_covers(wide, "*.pypi.org"),
	   "wider, elsewhere or another port is not");
	OK(!hostpat_covers(wide, "a..example.org") && !hostpat_covers(NULL, "pypi.org"), "a bad pattern, or no list, is not");
	DONE();
}
