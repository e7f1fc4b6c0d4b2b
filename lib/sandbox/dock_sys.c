/* dock_sys: the docker backend's process-wide part: where the daemon is
 * and what it is, the removal of what dead sbx processes left behind
 * (containers, scratch directories, accounting groups), the scratch
 * directories, images (their IDs, --pull).  See dock.c for the whole.
 */
#define _GNU_SOURCE
#include "dock_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rec.h"
#include "state.h"
#include "util.h"

/* The synchronous questions to the daemon: its version and configuration,
 * the leftovers to remove, whether it has an image. */
#define ASK_TIMEOUT_MS 10000

/* ---- the process's identity, for leftovers ---------------------------- */

static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	/* after "pid (comm)": state is field 3, starttime field 22 */
	for (int f = 2; p && f < 22; f++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Is the process named by an owner string ("<pid>.<start>") alive? */
static bool owner_alive(const char *owner)
{
	char *e;
	errno = 0;
	long pid = strtol(owner, &e, 10);
	if (errno || *e != '.' || pid <= 0 || pid > 4194304)
		return false;
	unsigned long long st = strtoull(e + 1, &e, 10);
	return st && start_time((pid_t)pid) == st;
}

/* ---- scratch directories ---------------------------------------------- */

char *dock_scratch(struct dock_sys *d, uint64_t size, char *err, size_t errlen)
{
	mkdir(d->conf->state_dir, 0755);
	if (mkdir(d->state, 0711) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", d->state, strerror(errno));
		return NULL;
	}
	char *dir = util_fmt("%s/%s-%lu", d->state, d->owner, ++d->seq);
	char *mnt = util_fmt("%s/scratch", dir);
	char opt[96];
	snprintf(opt, sizeof opt, "size=%llu,mode=0755,uid=%d,gid=%d", (unsigned long long)size, d->uid, d->uid);
	int rc = -1;
	if (mkdir(dir, 0711) < 0 || mkdir(mnt, 0755) < 0)
		snprintf(err, errlen, "cannot create %s: %s", mnt, strerror(errno));
	else if (mount("sbx-scratch", mnt, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opt) < 0)
		snprintf(err, errlen, "cannot mount the scratch tmpfs on %s: %s%s", mnt, strerror(errno),
			 errno == EPERM ? " (the docker backend needs root)" : "");
	else
		rc = 0;
	free(mnt);
	if (rc < 0) {
		dock_scratch_remove(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

void dock_scratch_remove(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/scratch", dir);
	umount2(p, MNT_DETACH);
	rmdir(p);
	/* a stage's: an install's proxy socket (egress_open), the bind of a
	 * session's .deps (deps_stage) */
	snprintf(p, sizeof p, "%s/egress/sock", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/egress", dir);
	rmdir(p);
	snprintf(p, sizeof p, "%s/deps", dir);
	umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW);
	rmdir(p);
	snprintf(p, sizeof p, "%s/bin", dir);
	DIR *dd = opendir(p);
	if (dd) {
		struct dirent *e;
		while ((e = readdir(dd)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(dd), e->d_name, 0);
		closedir(dd);
		rmdir(p);
	}
	rmdir(dir);
}

/* ---- the daemon -------------------------------------------------------- */

static bool hello(struct dock_sys *d)
{
	struct call *c = dock_call_sync(d, "GET", "/version", jv_invalid(), ASK_TIMEOUT_MS);
	bool ok = false;
	if (!c->status)
		snprintf(d->why, sizeof d->why, "%s", c->err);
	else if (c->status != 200)
		snprintf(d->why, sizeof d->why, "the Docker daemon at %s answered /version with HTTP %d", d->host, c->status);
	else {
		jv v = jv_parse_sized(c->body, (int)c->bodylen);
		if (jv_get_kind(v) == JV_KIND_OBJECT) {
			snprintf(d->version, sizeof d->version, "%s", dock_str_or(v, "Version", "?"));
			/* Speak the daemon's own API version, 1.40 (Docker 19.03,
			 * LogConfig "none", Init, PidsLimit) at least. */
			const char *api = dock_str_or(v, "ApiVersion", "1.40");
			snprintf(d->api, sizeof d->api, "v%s", api);
			ok = true;
			d->why[0] = 0;
		} else
			snprintf(d->why, sizeof d->why, "the Docker daemon at %s answered /version with something else", d->host);
		jv_free(v);
	}
	dock_call_free(c);
	if (ok) {
		c = dock_call_sync(d, "GET", "/info", jv_invalid(), ASK_TIMEOUT_MS);
		jv v = c->status == 200 ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
		if (jv_get_kind(v) == JV_KIND_OBJECT)
			snprintf(d->cgroup_driver, sizeof d->cgroup_driver, "%s", dock_str_or(v, "CgroupDriver", ""));
		jv_free(v);
		dock_call_free(c);
	}
	d->ok = ok;
	return ok;
}

/* Remove containers and scratch directories whose owner died. */
static void sweep(struct dock_sys *d)
{
	struct call *c = dock_call_sync(d, "GET", "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22sbx.owner%22%5D%7D",
				   jv_invalid(), ASK_TIMEOUT_MS);
	jv list = c->status == 200 ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
	dock_call_free(c);
	if (jv_get_kind(list) == JV_KIND_ARRAY) {
		jv_array_foreach(list, i, ct) {
			jv labels = jv_get_kind(ct) == JV_KIND_OBJECT ? rec_get(ct, "Labels") : jv_invalid();
			const char *owner = jv_get_kind(labels) == JV_KIND_OBJECT ? rec_str(labels, "sbx.owner", NULL) : NULL;
			const char *id = jv_get_kind(ct) == JV_KIND_OBJECT ? rec_str(ct, "Id", NULL) : NULL;
			if (owner && id && strspn(id, "0123456789abcdef") == strlen(id) && !owner_alive(owner)) {
				char path[160];
				snprintf(path, sizeof path, "/containers/%.64s?force=1&v=1", id);
				dock_call_free(dock_call_sync(d, "DELETE", path, jv_invalid(), CALL_TIMEOUT_MS));
			}
			jv_free(labels);
			jv_free(ct);
		}
	}
	jv_free(list);
	DIR *dd = opendir(d->state);
	if (dd) {
		struct dirent *e;
		while ((e = readdir(dd))) {
			if (e->d_name[0] == '.')
				continue;
			char owner[64];
			snprintf(owner, sizeof owner, "%.63s", e->d_name);
			char *dash = strrchr(owner, '-');
			if (dash)
				*dash = 0;
			if (!owner_alive(owner)) {
				char p[4096];
				snprintf(p, sizeof p, "%s/%s", d->state, e->d_name);
				dock_scratch_remove(p);
			}
		}
		closedir(dd);
	}
}

/* Groups "r<pid>-<n>" under the parent whose supervisor is gone, in
 * every hierarchy (their containers went in the sweep). */
static void sweep_groups(const char *parent_rel)
{
	DIR *h = opendir("/sys/fs/cgroup");
	if (!h)
		return;
	struct dirent *he;
	while ((he = readdir(h))) {
		char dir[4096];
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%.200s%.3000s", he->d_name, parent_rel);
		if (he->d_name[0] == '.' && he->d_name[1])
			continue;
		DIR *dd = opendir(dir);
		if (!dd)
			continue;
		struct dirent *e;
		while ((e = readdir(dd))) {
			char *end;
			long pid = e->d_name[0] == 'r' ? strtol(e->d_name + 1, &end, 10) : 0;
			if (pid <= 0 || *end != '-' || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
				continue;
			char p[4400];
			snprintf(p, sizeof p, "%s/%.200s", dir, e->d_name);
			rmdir(p);
		}
		closedir(dd);
	}
	closedir(h);
}

int dock_sys_init(struct dock_sys *d, const struct conf *c)
{
	memset(d, 0, sizeof *d);
	d->conf = c;
	d->uid = (int)state_uid(c, STATE_UID_PROGRAM);
	snprintf(d->owner, sizeof d->owner, "%d.%llu", (int)getpid(), start_time(getpid()));
	d->state = state_docker_dir(c);
	const char *h = getenv("DOCKER_HOST");
	if (!h || !*h)
		h = "unix:///var/run/docker.sock";
	snprintf(d->host, sizeof d->host, "%s", h);
	if (!strncmp(h, "unix://", 7) && strlen(h + 7) < sizeof d->path) {
		snprintf(d->path, sizeof d->path, "%s", h + 7);
	} else if (!strncmp(h, "tcp://", 6)) {
		d->tcp = true;
		const char *hp = h + 6, *colon = strrchr(hp, ':');
		size_t n = colon ? (size_t)(colon - hp) : strcspn(hp, "/");
		if (*hp == '[' && colon && colon > hp && colon[-1] == ']')
			snprintf(d->node, sizeof d->node, "%.*s", (int)(n - 2), hp + 1);
		else
			snprintf(d->node, sizeof d->node, "%.*s", (int)n, hp);
		snprintf(d->service, sizeof d->service, "%.*s", (int)strcspn(colon ? colon + 1 : "2375", "/"),
			 colon ? colon + 1 : "2375");
		const char *tls = getenv("DOCKER_TLS_VERIFY");
		if (tls && *tls && strcmp(tls, "0")) {
			d->addr_ok = false;
			snprintf(d->why, sizeof d->why,
				 "DOCKER_TLS_VERIFY is set, and sbx speaks plain HTTP only: use the daemon's unix socket, or "
				 "tunnel it (ssh -L /tmp/docker.sock:/var/run/docker.sock HOST, DOCKER_HOST=unix:///tmp/docker.sock)");
			return 0;
		}
	} else {
		snprintf(d->why, sizeof d->why, "DOCKER_HOST=%s is not a unix:// or tcp:// address", h);
		return 0;
	}
	d->addr_ok = true;
	return 0;
}

void dock_sys_free(struct dock_sys *d)
{
	dock_retry_pending(d, 1000);
	for (size_t i = 0; i < d->npending; i++)
		free(d->pending[i]);
	free(d->pending);
	d->pending = NULL;
	d->npending = 0;
	if (d->cg_ok)
		cg_sys_free(&d->cg);
	free(d->state);
	d->state = NULL;
}

bool dock_ready(struct dock_sys *d)
{
	if (d->ok || !d->addr_ok)
		return d->ok;
	if (!hello(d))
		return false;
	sweep(d);
	/* Accounting groups, where the daemon's cgroups are ours to see
	 * (after the sweep: a dead owner's containers held its groups). */
	if (!d->cg_tried) {
		char parent[256], err[256];
		snprintf(parent, sizeof parent, "%s-docker", d->conf->cgroup_parent);
		d->cg_tried = true;
		d->cg_ok = !d->tcp && !strcmp(d->cgroup_driver, "cgroupfs") && geteuid() == 0 &&
			   cg_sys_init(&d->cg, parent, err, sizeof err) == 0 && (d->cg.have & CG_MEM) &&
			   dock_cg_relative(d->cg.dir[0]);
		if (d->cg_ok)
			sweep_groups(dock_cg_relative(d->cg.dir[0]));
	}
	return true;
}

/* ---- --check and --pull ---------------------------------------------- */

static char *url_escape(const char *s)
{
	char *out = util_xalloc(strlen(s) * 3 + 1), *o = out;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("-._~", ch))
			*o++ = (char)ch;
		else
			o += sprintf(o, "%%%02X", ch);
	}
	*o = 0;
	return out;
}

/* GET /images/NAME/json, synchronously: the HTTP status (200: present, 404:
 * absent, 0: no answer) and, if id is given, the image's ID into it ("" if
 * the answer has no well-formed one: only such an ID goes into a cache key). */
static int image_inspect(struct dock_sys *d, const char *image, int timeout_ms, char *id, size_t len)
{
	char *e = url_escape(image);
	char *path = util_fmt("/images/%s/json", e);
	struct call *c = dock_call_sync(d, "GET", path, jv_invalid(), timeout_ms);
	int st = c->status;
	if (id) {
		id[0] = 0;
		jv v = st == 200 && c->bodylen ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
		const char *s = jv_get_kind(v) == JV_KIND_OBJECT ? rec_str(v, "Id", NULL) : NULL;
		if (s && !strncmp(s, "sha256:", 7) && strlen(s) == 71 && strspn(s + 7, "0123456789abcdef") == 64)
			snprintf(id, len, "%s", s);
		jv_free(v);
	}
	dock_call_free(c);
	free(path);
	free(e);
	return st;
}

int dock_image_status(struct dock_sys *d, const char *image)
{
	return image_inspect(d, image, ASK_TIMEOUT_MS, NULL, 0);
}

bool dock_image_id(struct dock_sys *d, const char *image, char *id, size_t len)
{
	if (len)
		id[0] = 0;
	if (!image || !*image || len < 72 || !dock_ready(d))
		return false;
	/* Short: the caller's loop waits; a slow engine costs the job its
	 * cache lookup, not the batch its progress. */
	image_inspect(d, image, 2000, id, len);
	return id[0] != 0;
}

/* Pull one image, printing the daemon's progress messages as they come. */
static int pull_one(struct dock_sys *d, const char *image, FILE *progress)
{
	int e = 0, fd = dock_dial(d, &e);
	char msg[700];
	if (fd < 0) {
		dock_fmt_connect_error(d, e, msg, sizeof msg);
		fprintf(progress, "sbx-run: pull %s: %s\n", image, msg);
		return -1;
	}
	char *q = url_escape(image);
	char *req = util_fmt("POST /%s/images/create?fromImage=%s HTTP/1.0\r\nHost: docker\r\nContent-Length: 0\r\n\r\n", d->api, q);
	free(q);
	struct pollfd pf = { .fd = fd, .events = POLLOUT };
	poll(&pf, 1, 10000);
	int rc = send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req) ? 0 : -1;
	free(req);
	char buf[65536];
	size_t len = 0;
	bool body = false;
	int status = 0;
	char last[200] = "";
	while (rc == 0) {
		pf.events = POLLIN;
		if (poll(&pf, 1, 600000) <= 0) {
			rc = -1;
			fprintf(progress, "sbx-run: pull %s: no progress from the daemon for 10 minutes\n", image);
			break;
		}
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
		if (!body) {
			char *end = strstr(buf, "\r\n\r\n");
			if (!end)
				continue;
			status = len > 12 ? atoi(buf + 9) : 0;
			end += 4;
			len -= (size_t)(end - buf);
			memmove(buf, end, len + 1);
			body = true;
		}
		/* one JSON message per line */
		char *nl;
		while ((nl = memchr(buf, '\n', len))) {
			*nl = 0;
			jv v = jv_parse(buf);
			if (jv_get_kind(v) == JV_KIND_OBJECT) {
				const char *err = rec_str(v, "error", NULL), *st = rec_str(v, "status", NULL);
				const char *id = rec_str(v, "id", NULL), *pr = rec_str(v, "progress", NULL);
				if (err) {
					fprintf(progress, "sbx-run: pull %s: %s\n", image, err);
					rc = -1;
				} else if (st) {
					char line[200];
					snprintf(line, sizeof line, "%s%s%s", id ? id : "", id ? ": " : "", st);
					/* one line per step, not per progress tick */
					if (strcmp(line, last)) {
						fprintf(progress, "sbx-run: pull %s: %s%s%s\n", image, line, pr ? " " : "", pr ? pr : "");
						snprintf(last, sizeof last, "%s", line);
					}
				}
			} else if (status != 200 && buf[0]) {
				fprintf(progress, "sbx-run: pull %s: HTTP %d: %.300s\n", image, status, buf);
				rc = -1;
			}
			jv_free(v);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len >= sizeof buf - 1)
			len = 0;
	}
	close(fd);
	if (status != 200 && rc == 0) {
		if (len)
			fprintf(progress, "sbx-run: pull %s: HTTP %d: %.300s\n", image, status, buf);
		rc = -1;
	}
	return rc;
}

int dock_pull(struct dock_sys *d, FILE *progress)
{
	if (!dock_ready(d)) {
		fprintf(progress, "sbx-run: %s\n", d->why);
		return -1;
	}
	const struct conf *c = d->conf;
	int rc = 0;
	for (size_t i = 0; i < c->nlangs; i++) {
		const char *img = c->langs[i].image;
		bool seen = !img;
		for (size_t j = 0; j < i && !seen; j++)
			seen = c->langs[j].image && !strcmp(c->langs[j].image, img);
		if (seen)
			continue;
		fprintf(progress, "sbx-run: pull %s (%s)\n", img, c->langs[i].name);
		if (pull_one(d, img, progress) < 0)
			rc = -1;
		else
			fprintf(progress, "sbx-run: pull %s: done\n", img);
	}
	return rc;
}

