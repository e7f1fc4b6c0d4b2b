/* conf_host: the configuration on this host: where the file is, where
 * the state goes when state_dir cannot be written, whether the
 * sandboxes' host ids are free, and conf_open, which does it all (conf.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "state.h"
#include "util.h"

#ifndef SBX_SYSCONFDIR
#define SBX_SYSCONFDIR "/usr/local/etc"
#endif
#ifndef SBX_STATEDIR
#define SBX_STATEDIR "/var/lib/sbx"
#endif
#ifndef SBX_RUNDIR
#define SBX_RUNDIR "/run/sbx"
#endif

char *conf_find(const char *explicit, char *err, size_t errlen)
{
	if (explicit)
		return util_strdup(explicit);
	const char *env = getenv("SBX_CONF");
	if (env && *env)
		return util_strdup(env);
	/* Beside the binary, so a checkout and a tree installed under any
	 * prefix work from wherever they are (bin/../etc in a checkout,
	 * PREFIX/bin/../etc/sbx installed); then the compiled-in place. */
	char *dir = util_exe_dir();
	char *cand[] = {
		dir ? util_fmt("%s/../etc/sandbox.conf", dir) : NULL,
		dir ? util_fmt("%s/../etc/sbx/sandbox.conf", dir) : NULL,
		util_strdup(SBX_SYSCONFDIR "/sbx/sandbox.conf"),
		util_strdup("/etc/sbx/sandbox.conf"),
	};
	free(dir);
	char *found = NULL;
	for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
		char real[PATH_MAX];
		if (!found && cand[i] && access(cand[i], R_OK) == 0 && realpath(cand[i], real))
			found = util_strdup(real);
		free(cand[i]);
	}
	if (!found)
		snprintf(err, errlen, "no configuration: none given with -c or SBX_CONF, and none at ../etc/sandbox.conf or "
				      "../etc/sbx/sandbox.conf beside the binary, " SBX_SYSCONFDIR "/sbx/sandbox.conf or /etc/sbx/sandbox.conf");
	return found;
}

/* Can we make files in dir, or make dir itself (the nearest existing
 * ancestor is writable)? */
static bool can_write(const char *dir)
{
	char *p = util_strdup(dir);
	bool ok = false;
	for (;;) {
		struct stat st;
		if (stat(p, &st) == 0) {
			ok = S_ISDIR(st.st_mode) && access(p, W_OK | X_OK) == 0;
			break;
		}
		char *slash = strrchr(p, '/');
		if (errno != ENOENT || !slash || slash == p)
			break;
		*slash = 0;
	}
	free(p);
	return ok;
}

static int mkdir_p(char *p, mode_t mode)
{
	for (char *s = p + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		int rc = mkdir(p, mode);
		*s = '/';
		if (rc < 0 && errno != EEXIST)
			return -1;
	}
	return mkdir(p, mode) < 0 && errno != EEXIST ? -1 : 0;
}

void conf_user_state(struct conf *c)
{
	if (geteuid() == 0 || can_write(c->state_dir))
		return;
	/* An MCP host may start its servers without HOME: the account's own
	 * home is the user's all the same. */
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	struct passwd *pw = home && *home ? NULL : getpwuid(geteuid());
	if (pw && pw->pw_dir)
		home = pw->pw_dir;
	char *mine = xdg && xdg[0] == '/' ? util_fmt("%s/sbx", xdg)
		   : home && home[0] == '/' && strcmp(home, "/") ? util_fmt("%s/.local/state/sbx", home) : NULL;
	if (!mine || mkdir_p(mine, 0700) < 0 || !can_write(mine)) {
		c->state_note = util_fmt("%s is not writable by uid %u, and there is no per-user state directory (%s%s): "
					 "set XDG_STATE_HOME or HOME, or state_dir in %s", c->state_dir, (unsigned)geteuid(),
					 mine ? mine : "neither XDG_STATE_HOME nor HOME is set", mine ? " cannot be made" : "", c->path);
		free(mine);
		return;
	}
	/* A history kept in the state directory moves with it; one elsewhere
	 * stays where it was put, if it can be written. */
	size_t n = strlen(c->state_dir);
	if (!strncmp(c->history, c->state_dir, n) && c->history[n] == '/') {
		char *h = util_fmt("%s%s", mine, c->history + n);
		free(c->history);
		c->history = h;
	} else {
		char *hdir = util_strdup(c->history);
		char *slash = strrchr(hdir, '/');
		if (slash)
			*slash = 0;
		if (!can_write(hdir)) {
			free(c->history);
			c->history = util_fmt("%s/sandbox_history.db", mine);
		}
		free(hdir);
	}
	c->state_note = util_fmt("%s is not writable by uid %u: this user's state is in %s", c->state_dir,
				 (unsigned)geteuid(), mine);
	free(c->state_dir);
	c->state_dir = mine;
	c->state_per_user = true;
}

char *conf_server_history(const struct conf *c)
{
	size_t n = strlen(c->state_dir);
	if (!strncmp(c->history, c->state_dir, n) && c->history[n] == '/')
		return util_fmt("%s/sbx%s", SBX_STATEDIR "-mcp", c->history + n);
	return util_strdup(c->history);
}

const char *conf_uid_problem(const struct conf *c)
{
	static char why[320];
	if (c->allow_host_uids)
		return NULL;
	for (unsigned k = 0; k < STATE_NUIDS; k++) {
		uid_t id = state_uid(c, k);
		char whose[96] = "in the system's range, below 1000";
		struct passwd *pw;
		struct group *gr;
		if (id >= 1000) {
			if ((pw = getpwuid(id)))
				snprintf(whose, sizeof whose, "the account %s's", pw->pw_name);
			else if ((gr = getgrgid(id)))
				snprintf(whose, sizeof whose, "the group %s's", gr->gr_name);
			else
				continue;
		}
		snprintf(why, sizeof why, "uid = %llu: host id %u (%s) is %s; sandboxes need four ids no one has "
			 "(the default uid = 60000 gives 60000-60003), or allow_host_uids = true",
			 (unsigned long long)c->uid, (unsigned)id, state_uid_roles[k].what, whose);
		return why;
	}
	return NULL;
}

/* The account check asks the name services for eight ids (getpwuid and
 * getgrgid through nsswitch: files, systemd's userdb), which costs ~0.9 ms,
 * a fifth of a one-job sbx-run.  As root, a check that passed is
 * remembered in SBX_RUNDIR/uids.ok under a key of what it depends on: the
 * ids, the identity and times of the account files, nsswitch.conf and
 * the directories systemd's userdb and homed keep their records in, and
 * the hour.  Only where every source of accounts is one of those: with
 * another service in nsswitch.conf (LDAP, SSSD, NIS, winbind), or ids in
 * the range systemd gives DynamicUser= services (or containers) without a
 * file changing, every start asks.  Only a pass is kept; the file is
 * root's, in a directory only root may write, and anything else found
 * there is ignored. */
#define UIDS_OK "uids.ok"

/* Do nsswitch.conf's passwd and group lines name only files and systemd? */
static bool local_accounts(void)
{
	FILE *f = fopen("/etc/nsswitch.conf", "re");
	if (!f)
		return false;
	char line[512];
	int seen = 0;
	bool ok = true;
	while (ok && fgets(line, sizeof line, f)) {
		char *p = line + strspn(line, " \t");
		size_t n = !strncmp(p, "passwd:", 7) ? 7 : !strncmp(p, "group:", 6) ? 6 : 0;
		if (!n)
			continue;
		seen++;
		char *save, *w;
		for (w = strtok_r(p + n, " \t\n", &save); w && ok; w = strtok_r(NULL, " \t\n", &save))
			ok = *w == '[' || !strcmp(w, "files") || !strcmp(w, "systemd");
	}
	fclose(f);
	return ok && seen == 2;
}

static bool uid_key(const struct conf *c, char *key, size_t len)
{
	static const char *const dbs[] = { "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/userdb",
					   "/run/userdb", "/run/host/userdb", "/usr/lib/userdb", "/usr/local/lib/userdb",
					   "/var/lib/systemd/home" };
	for (unsigned k = 0; k < STATE_NUIDS; k++) {
		uid_t id = state_uid(c, k);
		if ((id >= 61184 && id <= 65519) || id >= 524288) /* systemd's dynamic users and containers */
			return false;
	}
	if (!local_accounts())
		return false;
	int n = snprintf(key, len, "sbx-uids-2 %u %llu %lld", (unsigned)STATE_NUIDS, (unsigned long long)c->uid,
			 (long long)(time(NULL) / 3600));
	for (size_t i = 0; i < sizeof dbs / sizeof *dbs && n > 0 && (size_t)n < len; i++) {
		struct stat st;
		if (stat(dbs[i], &st) < 0)
			memset(&st, 0, sizeof st);
		n += snprintf(key + n, len - (size_t)n, " %llu:%llu:%lld.%ld:%lld.%ld:%lld", (unsigned long long)st.st_dev,
			      (unsigned long long)st.st_ino, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			      (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, (long long)st.st_size);
	}
	return n > 0 && (size_t)n < len;
}

static int run_dir(void)
{
	int fd = open(SBX_RUNDIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool uid_pass_known(int dir, const char *key)
{
	char buf[1024];
	int fd = openat(dir, UIDS_OK, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022)
			    ? util_read_full(fd, buf, sizeof buf - 1)
			    : -1;
	close(fd);
	if (n < 0)
		return false;
	buf[n] = 0;
	return !strcmp(buf, key);
}

static void uid_pass_keep(int dir, const char *key)
{
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%s.%ld", UIDS_OK, (long)getpid());
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	bool ok = util_write_all(fd, key, strlen(key)) == 0;
	close(fd);
	if (!ok || renameat(dir, tmp, dir, UIDS_OK) < 0)
		unlinkat(dir, tmp, 0);
}

static const char *uid_problem_cached(const struct conf *c)
{
	if (c->allow_host_uids)
		return NULL;
	char key[1024];
	if (!uid_key(c, key, sizeof key))
		return conf_uid_problem(c);
	int dir = run_dir();
	if (dir >= 0 && uid_pass_known(dir, key)) {
		close(dir);
		return NULL;
	}
	const char *why = conf_uid_problem(c);
	if (!why && dir >= 0)
		uid_pass_keep(dir, key);
	if (dir >= 0)
		close(dir);
	return why;
}

struct conf *conf_open(const char *explicit)
{
	char err[1024];
	char *path = conf_find(explicit, err, sizeof err);
	if (!path)
		util_die(EXIT_USAGE, "%s", err);
	struct conf *c = conf_load(path, err, sizeof err);
	if (!c) {
		free(path);
		util_die(EXIT_USAGE, "%s", err);
	}
	const char *why = geteuid() == 0 ? uid_problem_cached(c) : NULL;
	if (why) {
		snprintf(err, sizeof err, "%s:%d: %s", path, c->uid_line ? c->uid_line : 1, why);
		free(path);
		conf_free(c);
		util_die(EXIT_USAGE, "%s", err);
	}
	free(path);
	conf_user_state(c);
	return c;
}
