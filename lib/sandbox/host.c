#define _GNU_SOURCE
#include "host.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Every file the probe reads. */
#define F_OSRELEASE   "/proc/sys/kernel/osrelease"
#define F_USERNS_ON   "/proc/sys/kernel/unprivileged_userns_clone"
#define F_USERNS_MAX  "/proc/sys/user/max_user_namespaces"
#define F_APPARMOR_NS "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
#define F_CONTAINER   "/run/systemd/container" /* systemd's word for the container it runs in */
#define F_DOCKERENV   "/.dockerenv"
#define F_PODMANENV   "/run/.containerenv"
#define F_INIT_ENV    "/proc/1/environ" /* container=..., readable by root */
#define D_CGROUP      "/sys/fs/cgroup"
#define D_CGROUP_MEM  "/sys/fs/cgroup/memory" /* v1 */

/* A small file's first len - 1 bytes, NUL-terminated ("" if unreadable);
 * the count read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	ssize_t n = util_read_full(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

/* The first line of a small file, without its newline; "" if unreadable. */
static const char *first_line(const char *path, char *buf, size_t len)
{
	read_small(path, buf, len);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

static bool is(const char *path, const char *value)
{
	char b[64];
	return !strcmp(first_line(path, b, sizeof b), value);
}

/* The value of container= in PID 1's environment, as container managers
 * set it (systemd-nspawn, LXC, Podman). */
static const char *init_container(char *buf, size_t len)
{
	char env[8192];
	ssize_t n = read_small(F_INIT_ENV, env, sizeof env);
	for (char *e = env; n > 0 && e < env + n; e += strlen(e) + 1)
		if (!strncmp(e, "container=", 10) && e[10]) {
			snprintf(buf, len, "%s", e + 10);
			return buf;
		}
	return NULL;
}

void host_probe(struct host *h, uid_t uid)
{
	static char container[64];
	char b[256];
	*h = (struct host){ .root = uid == 0 };

	if (first_line(F_CONTAINER, container, sizeof container)[0])
		h->container = container;
	else if (access(F_DOCKERENV, F_OK) == 0)
		h->container = "docker";
	else if (access(F_PODMANENV, F_OK) == 0)
		h->container = "podman";
	else
		h->container = init_container(container, sizeof container);

	first_line(F_OSRELEASE, b, sizeof b);
	for (char *p = b; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	h->wsl = strstr(b, "microsoft") != NULL;

	struct statfs fs;
	h->cgroup2 = statfs(D_CGROUP, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
	struct statvfs vfs;
	h->cgroup_ro = statvfs(h->cgroup2 ? D_CGROUP : D_CGROUP_MEM, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);

	h->userns_clone_off = is(F_USERNS_ON, "0");
	h->userns_max_zero = is(F_USERNS_MAX, "0");
	h->apparmor_userns = is(F_APPARMOR_NS, "1");

	char path[64];
	snprintf(path, sizeof path, "/run/user/%u/systemd/private", (unsigned)uid);
	h->systemd_user = access(path, F_OK) == 0;
}

/* Containers whose engine takes Docker's options. */
static bool docker_like(const struct host *h)
{
	return h->container && (!strcmp(h->container, "docker") || !strcmp(h->container, "podman"));
}

void host_cgroup_fix(const struct host *h, char *out, size_t len)
{
	const char *c = h->container;
	if (!h->root) {
		if (!h->cgroup2)
			snprintf(out, len, "cgroup v1 delegates nothing to an ordinary user: run sbx as root, or on a host "
					   "with cgroup v2 in a delegated scope (systemd-run --user --scope -p Delegate=yes)");
		else if (h->systemd_user)
			snprintf(out, len, "run it in a cgroup systemd delegates to you: systemd-run --user --scope -p Delegate=yes "
					   "sbx-run ... (the same for sbx-mcp), or run it as root");
		else
			snprintf(out, len, "no systemd user manager runs for this user, so none delegates a cgroup: log in with a "
					   "session (or loginctl enable-linger USER), then systemd-run --user --scope -p Delegate=yes "
					   "sbx-run ...; or run it as root");
	} else if (h->wsl)
		snprintf(out, len, "WSL2: turn on systemd and cgroup v2, in /etc/wsl.conf ([boot] systemd=true) and in "
				   "%%UserProfile%%\\.wslconfig ([wsl2] kernelCommandLine = cgroup_no_v1=all), then wsl --shutdown");
	else if (docker_like(h) && !h->cgroup2)
		snprintf(out, len, "a %s container on a cgroup v1 host cannot have cgroups of its own: run sbx on the host, "
				   "or use a host with cgroup v2", c);
	else if (docker_like(h))
		snprintf(out, len, "the %s container's cgroup tree is read-only: start it with --cgroupns private and "
				   "--cap-add SYS_ADMIN and remount it (mount -o remount,rw /sys/fs/cgroup; the sbx image's "
				   "entry point does), or run sbx on the host", c);
	else if (c && !strcmp(c, "systemd-nspawn"))
		snprintf(out, len, "%s", h->cgroup2 ? "systemd-nspawn: let the container own its cgroup subtree "
						      "(--property=Delegate=yes), or run sbx on the host"
						    : "systemd-nspawn on a cgroup v1 host mounts the controllers read-only: boot "
						      "the host with cgroup v2 (systemd.unified_cgroup_hierarchy=1), or run sbx on "
						      "the host");
	else if (c && !strcmp(c, "lxc"))
		snprintf(out, len, "LXC: let the container write its cgroups (lxc.mount.auto = cgroup:rw; LXD and Incus: "
				   "security.nesting=true), or run sbx on the host");
	else if (c)
		snprintf(out, len, "this %s container has no cgroup tree of its own to write: give it a private, writable "
				   "cgroup namespace, or run sbx on the host", c);
	else if (h->cgroup_ro)
		snprintf(out, len, "/sys/fs/cgroup is mounted read-only: mount -o remount,rw /sys/fs/cgroup");
	else
		snprintf(out, len, "mount the cgroup hierarchy (mount -t cgroup2 none /sys/fs/cgroup), or boot with "
				   "cgroup v2 (systemd.unified_cgroup_hierarchy=1)");
}

void host_userns_fix(const struct host *h, char *out, size_t len)
{
	const char *keep = "(and a file in /etc/sysctl.d to keep it)";
	if (!h->root && h->apparmor_userns)
		snprintf(out, len, "Ubuntu's AppArmor refuses user namespaces to programs without a profile "
				   "(kernel.apparmor_restrict_unprivileged_userns = 1): the sbx package installs one, "
				   "/etc/apparmor.d/sbx; from a checkout, copy share/apparmor/sbx there and load it "
				   "(apparmor_parser -r /etc/apparmor.d/sbx); or run as root");
	else if (!h->root && h->userns_clone_off)
		snprintf(out, len, "user namespaces are switched off for ordinary users: sysctl -w "
				   "kernel.unprivileged_userns_clone=1 %s, or run as root", keep);
	else if (h->userns_max_zero)
		snprintf(out, len, "user namespaces are switched off: sysctl -w user.max_user_namespaces=15000 %s%s", keep,
			 h->root ? "" : ", or run as root");
	else if (docker_like(h))
		snprintf(out, len, "%s's default seccomp profile refuses user namespaces to a container without "
				   "CAP_SYS_ADMIN: start it as root with the options doc/install.md gives (--cap-add SYS_ADMIN ...)",
			 h->container);
	else
		snprintf(out, len, "check that the kernel has user namespaces (CONFIG_USER_NS) and that no sysctl or "
				   "security module refuses them%s", h->root ? "" : "; or run as root");
}

jv host_json(const struct host *h)
{
	jv o = jv_object_set(jv_object(), jv_string("container"), h->container ? jv_string(h->container) : jv_null());
	o = jv_object_set(o, jv_string("wsl2"), jv_bool(h->wsl));
	o = jv_object_set(o, jv_string("cgroup_v2"), jv_bool(h->cgroup2));
	o = jv_object_set(o, jv_string("cgroup_read_only"), jv_bool(h->cgroup_ro));
	jv u = jv_object();
	u = jv_object_set(u, jv_string("unprivileged_userns_clone_off"), jv_bool(h->userns_clone_off));
	u = jv_object_set(u, jv_string("max_user_namespaces_zero"), jv_bool(h->userns_max_zero));
	u = jv_object_set(u, jv_string("apparmor_restricted"), jv_bool(h->apparmor_userns));
	o = jv_object_set(o, jv_string("user_namespaces"), u);
	if (!h->root)
		o = jv_object_set(o, jv_string("systemd_user_manager"), jv_bool(h->systemd_user));
	return o;
}
