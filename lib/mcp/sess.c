/* sess: the sessions (sess.h): their workspaces, locks and lifetimes, the
 * resources and completion over their files, their kernels, and the
 * session tools that make, stop or run in one.  The file tools are
 * sess_files.c's; sess_int.h is between them.
 */
#define _GNU_SOURCE
#include "sess_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ckpt.h"
#include "mcptools.h"
#include "job.h"
#include "layout.h"
#include "probe.h"
#include "rec.h"
#include "req.h"
#include "state.h"
#include "utf8.h"
#include "util.h"

struct owner sess_sandbox_owner(const struct sessions *s)
{
	if (geteuid() != 0)
		return (struct owner){ (uid_t)-1, (gid_t)-1 };
	return (struct owner){ state_uid(s->conf, STATE_UID_PROGRAM), (gid_t)state_uid(s->conf, STATE_UID_PROGRAM) };
}

static void remove_dir(const char *base, const char *id)
{
	char *dir = util_fmt("%s/%s", base, id);
	/* its filesystem (EINVAL where it is a plain directory) */
	umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW);
	/* A workspace is sandboxed code's playground: it may hold links to
	 * anything, and none is followed. */
	util_remove_at(AT_FDCWD, dir);
	free(dir);
	char *lock = state_session_lock(base, id);
	unlink(lock);
	free(lock);
	/* (an image file outlives its making only if the server died then) */
	char *image = state_session_image(base, id);
	unlink(image);
	free(image);
}

static bool is_id(const char *s)
{
	return state_session_id_ok(s, strnlen(s, STATE_SESSION_ID_LEN + 1));
}

/* Workspaces (and trees) whose lock no live server holds are leftovers of
 * one that died: remove them.  Sessions first: their binds hold their
 * trees' filesystems. */
static void remove_orphans_in(const char *base, const char *what)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!is_id(e->d_name))
			continue;
		char *lock = state_session_lock(base, e->d_name);
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		free(lock);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			util_warn("removing the %s no server holds: %s", what, e->d_name);
			remove_dir(base, e->d_name);
		}
		close(fd);
	}
	closedir(d);
}

static void remove_orphans(struct sessions *s)
{
	remove_orphans_in(s->base, "workspace of a session");
	remove_orphans_in(s->trees, "session tree");
}

static struct session *find(struct sessions *s, const char *id)
{
	for (struct session *x = s->list; x; x = x->next)
		if (!strcmp(x->id, id))
			return x;
	return NULL;
}

static void rearm(struct sessions *s);

/* A tree with no session left goes, its filesystem with it. */
static void tree_unref(struct sessions *s, struct tree *t)
{
	if (!t || --t->refs)
		return;
	while (t->ck) {
		struct checkpoint *ck = t->ck;
		t->ck = ck->next;
		free(ck->name);
		free(ck);
	}
	if (t->fd >= 0)
		close(t->fd);
	if (t->dir)
		remove_dir(s->trees, t->id);
	if (t->lockfd >= 0)
		close(t->lockfd);
	free(t->dir);
	free(t->fs_note);
	free(t);
}

static void session_free(struct sessions *s, struct session *x)
{
	remove_dir(s->base, x->id);
	if (x->tree && x->tree->dir) {
		char w[CKPT_PATH];
		ckpt_path(w, CKPT_LIVE, x->id);
		ckpt_drop(x->tree->fd, w, x->tree->fs == WSFS_BTRFS);
	}
	tree_unref(s, x->tree);
	if (x->lockfd >= 0)
		close(x->lockfd);
	free(x->dir);
	free(x->language);
	jv_free(x->network);
	jv_free(x->approved);
	free(x);
}

void sess_remove(struct sessions *s, const char *id)
{
	for (struct session **p = &s->list; *p; p = &(*p)->next) {
		struct session *x = *p;
		if (strcmp(x->id, id))
			continue;
		*p = x->next;
		if (s->on_end)
			s->on_end(x->id, s->end_arg);
		session_free(s, x);
		s->n--;
		rearm(s);
		return;
	}
}

/* The timer goes off at the first idle session's expiry (one-shot, set
 * again whenever a session is made, used, released or removed), so a
 * session lives its time-to-live, not up to a polling interval more. */
static void rearm(struct sessions *s)
{
	if (s->timer < 0)
		return;
	double first = -1;
	for (struct session *x = s->list; x; x = x->next)
		if (!x->busy && (first < 0 || x->last_used + (double)x->ttl_ms < first))
			first = x->last_used + (double)x->ttl_ms;
	struct itimerspec it = { { 0, 0 }, { 0, 0 } };
	if (first >= 0) {
		first += 1; /* past it, not at it */
		it.it_value.tv_sec = (time_t)(first / 1000);
		it.it_value.tv_nsec = (long)((first - (double)it.it_value.tv_sec * 1000) * 1e6);
		if (it.it_value.tv_sec == 0 && it.it_value.tv_nsec == 0)
			it.it_value.tv_nsec = 1;
	}
	timerfd_settime(s->timer, TFD_TIMER_ABSTIME, &it, NULL);
}

static void on_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct sessions *s = arg;
	uint64_t ticks;
	if (read(fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
		return;
	double now = util_now_ms();
	for (struct session *x = s->list, *next; x; x = next) {
		next = x->next;
		if (!x->busy && now - x->last_used >= (double)x->ttl_ms) {
			util_warn("session %s expired after %.0f s idle", x->id, (double)x->ttl_ms / 1000);
			sess_remove(s, x->id);
		}
	}
	rearm(s);
	(void)l;
	(void)rev;
}

void sess_hold(struct sessions *s, const char *id, bool process)
{
	struct session *x = find(s, id);
	if (x) {
		x->busy++;
		x->procs += process;
	}
	rearm(s);
}

void sess_release(struct sessions *s, const char *id, bool process)
{
	struct session *x = find(s, id);
	if (x && x->busy) {
		x->busy--;
		if (process && x->procs)
			x->procs--;
		x->last_used = util_now_ms();
	}
	rearm(s);
}

struct sessions *sess_new(struct loop *l, const struct conf *c)
{
	struct sessions *s = util_xalloc(sizeof *s);
	s->loop = l;
	s->conf = c;
	s->base = state_sessions_dir(c);
	s->trees = util_fmt("%s/.trees", s->base);
	s->timer = -1;
	if (util_mkdir_p(s->base, 0711) == 0 && util_mkdir_p(s->trees, 0700) == 0)
		remove_orphans(s);
	s->fs = wsfs_new(s->base, !strcmp(probe_backend(c), "docker"));
	if (*wsfs_note(s->fs))
		util_warn("sessions: %s", wsfs_note(s->fs));
	s->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timer >= 0) {
		loop_watch(l, s->timer, POLLIN, on_timer, s);
	}
	return s;
}

void sess_free(struct sessions *s)
{
	if (!s)
		return;
	while (s->list)
		sess_remove(s, s->list->id);
	if (s->timer >= 0) {
		loop_unwatch(s->loop, s->timer);
		close(s->timer);
	}
	wsfs_free(s->fs);
	free(s->base);
	free(s->trees);
	free(s);
}

const struct wsfs *sess_wsfs(const struct sessions *s)
{
	return s->fs;
}

/* A new tree: its lock, its filesystem of workspace_size (wsfs.h) and its
 * layout (ckpt.h).  Where workspaces are plain directories (WSFS_DIR) it
 * has neither: its one session's workspace is its directory itself. */
static struct tree *tree_new(struct sessions *s, char *err, size_t errlen)
{
	const struct conf *c = s->conf;
	struct tree *t = util_xalloc(sizeof *t);
	t->fd = t->lockfd = -1;
	t->refs = 1;
	t->fs = wsfs_kind(s->fs);
	t->fs_note = util_strdup(wsfs_note(s->fs));
	if (t->fs == WSFS_DIR)
		return t;
	state_session_id_new(t->id);
	t->dir = util_fmt("%s/%s", s->trees, t->id);
	char *lock = state_session_lock(s->trees, t->id);
	t->lockfd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(lock);
	if (t->lockfd < 0 || flock(t->lockfd, LOCK_EX) < 0 || util_mkdir_p(s->trees, 0700) < 0 || mkdir(t->dir, 0700) < 0) {
		snprintf(err, errlen, "cannot create the workspace %s: %s", t->dir, strerror(errno));
		goto fail;
	}
	/* noexec on the host: nothing a sandbox wrote runs there.  The native
	 * backend's clone of it is made executable where the configuration
	 * lets programs run what they build (workspace_exec, box_workspace);
	 * the docker backend's bind keeps the host's flags, so for it the
	 * mount follows the key. */
	bool host_exec = c->workspace_exec && !strcmp(probe_backend(c), "docker");
	char *image = state_session_image(s->trees, t->id), note[320];
	int fs = wsfs_mount(s->fs, t->dir, image, c->workspace_size, ns_tmpfs_inodes(c->workspace_size), geteuid(),
			    getegid(), host_exec, note, sizeof note, err, errlen);
	free(image);
	if (fs < 0)
		goto fail;
	t->fs = (enum wsfs_kind)fs;
	free(t->fs_note);
	t->fs_note = util_strdup(note);
	t->fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t->fd < 0 || fchmod(t->fd, 0700) < 0) {
		snprintf(err, errlen, "cannot set up the workspace %s: %s", t->dir, strerror(errno));
		goto fail;
	}
	unlinkat(t->fd, "lost+found", AT_REMOVEDIR);
	if (ckpt_layout(t->fd, err, errlen) < 0)
		goto fail;
	return t;
fail:
	tree_unref(s, t);
	return NULL;
}

/* Only the sandbox's uid (and the server) may enter a workspace: another
 * local account must neither read nor change a session's files, whatever
 * their modes.  The bind keeps the tree mount's flags (nosuid, nodev,
 * noexec). */
int sess_bind_workspace(struct session *x)
{
	char w[CKPT_PATH];
	ckpt_path(w, CKPT_LIVE, x->id);
	char *src = util_fmt("%s/%s", x->tree->dir, w);
	int rc = mount(src, x->dir, NULL, MS_BIND, NULL);
	free(src);
	return rc;
}

/* A session's workspace at x->dir: the directory itself (no tree), or a
 * bind of the tree's w/ID, made empty or from checkpoint ck. */
static int workspace_make(struct sessions *s, struct session *x, const struct checkpoint *ck, char *err, size_t errlen)
{
	struct owner own = sess_sandbox_owner(s);
	uid_t uid = own.uid == (uid_t)-1 ? geteuid() : own.uid;
	gid_t gid = own.gid == (gid_t)-1 ? getegid() : own.gid;
	struct tree *t = x->tree;
	if (mkdir(x->dir, 0700) < 0) {
		snprintf(err, errlen, "cannot create the workspace %s: %s", x->dir, strerror(errno));
		return -1;
	}
	if (!t->dir) {
		/* Not with the docker backend as an ordinary user: its
		 * containers run as uid + 1, not as the server, and need the
		 * way in others have. */
		if (chmod(x->dir, geteuid() != 0 ? 0755 : 0700) < 0 || chown(x->dir, own.uid, own.gid) < 0) {
			snprintf(err, errlen, "cannot set up the workspace %s: %s", x->dir, strerror(errno));
			return -1;
		}
	} else {
		char w[CKPT_PATH];
		ckpt_path(w, CKPT_LIVE, x->id);
		bool btrfs = t->fs == WSFS_BTRFS;
		int rc;
		if (ck) {
			char c[CKPT_PATH];
			ckpt_path(c, CKPT_SAVED, ck->id);
			rc = ckpt_clone(t->fd, c, w, btrfs, false, NULL, err, errlen);
		} else {
			rc = ckpt_workspace_new(t->fd, w, btrfs, uid, gid, err, errlen);
		}
		if (rc < 0)
			return -1;
		if (sess_bind_workspace(x) < 0) {
			snprintf(err, errlen, "cannot bind the workspace %s: %s", x->dir, strerror(errno));
			return -1;
		}
		if (ck)
			return 0;
	}
	/* Installed packages go here: made now, so that no program can be
	 * first to create it (runs see it read-only, see ns_attach_work). */
	char *deps = util_fmt("%s/" NS_DEPS, x->dir);
	int made = mkdir(deps, 0755) == 0 && lchown(deps, own.uid, own.gid) == 0 ? 0 : -1;
	free(deps);
	if (made < 0)
		snprintf(err, errlen, "cannot set up the workspace %s: %s", x->dir, strerror(errno));
	return made;
}

/* What a new session may not exceed: max_sessions, and what one HTTP token
 * may hold (owner 0 is the stdio client, alone), max_sessions_per_token
 * workspaces, each of workspace_size bytes and as many inodes. */
static bool room_for(const struct sessions *s, unsigned owner, unsigned more, char *err, size_t errlen)
{
	const struct conf *c = s->conf;
	if (s->n + more > c->max_sessions) {
		snprintf(err, errlen, "too many sessions (max_sessions %llu): stop one with sandbox_stop first",
			 (unsigned long long)c->max_sessions);
		return false;
	}
	unsigned mine = 0;
	for (struct session *x = s->list; x; x = x->next)
		mine += x->owner == owner;
	if (owner && mine + more > c->max_sessions_per_token) {
		snprintf(err, errlen, "too many sessions for this token (max_sessions_per_token %llu): stop one with sandbox_stop first",
			 (unsigned long long)c->max_sessions_per_token);
		return false;
	}
	return true;
}

struct session *sess_new_in(struct sessions *s, unsigned owner, struct tree *t, const struct checkpoint *ck, char *err,
			    size_t errlen)
{
	if (!room_for(s, owner, 1, err, errlen))
		return NULL;
	struct session *x = util_xalloc(sizeof *x);
	x->network = x->approved = jv_invalid();
	state_session_id_new(x->id);
	x->dir = util_fmt("%s/%s", s->base, x->id);
	x->tree = t;
	t->refs++;
	char *lock = state_session_lock(s->base, x->id);
	x->lockfd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(lock);
	if (x->lockfd < 0 || flock(x->lockfd, LOCK_EX) < 0) {
		snprintf(err, errlen, "cannot create the workspace %s: %s", x->dir, strerror(errno));
		session_free(s, x);
		return NULL;
	}
	if (workspace_make(s, x, ck, err, errlen) < 0) {
		session_free(s, x);
		return NULL;
	}
	if (ck)
		memcpy(x->base, ck->id, sizeof x->base);
	x->ttl_ms = s->conf->session_ttl_ms;
	x->owner = owner;
	x->last_used = x->born = util_now_ms();
	x->next = s->list;
	s->list = x;
	s->n++;
	rearm(s);
	return x;
}

char *sess_create(struct sessions *s, unsigned owner, const char *language, uint64_t ttl_ms, char *err, size_t errlen)
{
	const struct conf *c = s->conf;
	if (!room_for(s, owner, 1, err, errlen))
		return NULL;
	if (language && !conf_lang(c, language)) {
		snprintf(err, errlen, "unsupported language \"%.60s\" (list_supported_languages lists them)", language);
		return NULL;
	}
	if (util_mkdir_p(s->base, 0711) < 0) {
		snprintf(err, errlen, "cannot create %s: %s%s%s", s->base, strerror(errno), c->state_note ? "; " : "",
			 c->state_note ? c->state_note : "");
		return NULL;
	}
	struct tree *t = tree_new(s, err, errlen);
	if (!t)
		return NULL;
	struct session *x = sess_new_in(s, owner, t, NULL, err, errlen);
	tree_unref(s, t); /* the session holds it now, or nothing does */
	if (!x)
		return NULL;
	x->language = language ? util_strdup(conf_lang(c, language)->name) : NULL;
	if (ttl_ms)
		x->ttl_ms = ttl_ms;
	rearm(s);
	return util_strdup(x->id);
}

/* ---- the tools ------------------------------------------------------------ */

static struct session *get(struct sessions *s, unsigned owner, jv args, char *err, size_t errlen)
{
	const char *id = rec_str(args, "session_id", NULL);
	struct session *x = id && is_id(id) ? find(s, id) : NULL;
	if (!x || x->owner != owner) {
		snprintf(err, errlen, "unknown session \"%.40s\": it expired, was stopped, or was never made by this server "
			 "(sandbox_initialize makes one)", id ? id : "");
		return NULL;
	}
	x->last_used = util_now_ms();
	rearm(s);
	return x;
}

/* cwd, if given, is a directory of the workspace (no link on the way):
 * said now, in words, rather than as a sandbox that could not start. */
static bool cwd_ok(const struct session *x, jv args, char *err, size_t errlen)
{
	if (!rec_has(args, REQ_KEY(cwd)))
		return true;
	const char *cwd = sess_client_path(args, REQ_KEY(cwd), false, err, errlen);
	if (!cwd)
		return false;
	int ws = open(x->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = ws >= 0 ? util_open_beneath(ws, cwd, O_PATH | O_DIRECTORY, 0) : -1;
	int e = errno;
	if (ws >= 0)
		close(ws);
	if (fd < 0) {
		snprintf(err, errlen, "%s \"%.100s\" is not a directory of the workspace (%s)", REQ_KEY(cwd), cwd,
			 e == ENOTDIR ? "not a directory" : e == ELOOP || e == EXDEV ? "a link on the way" : strerror(e));
		return false;
	}
	close(fd);
	return true;
}

/* sandbox_exec -> a request: inline code, a file of the workspace
 * (entry) or a command; job_from_request does the rest, the same for
 * every client.  The language: given; else for a file the one its
 * extension names; else the session's (whose environment, such as where
 * its installed packages are, a command gets too); else bash's. */
static jv exec_request(const struct sessions *s, struct session *x, jv args, unsigned tool, char *err, size_t errlen)
{
	bool has_code = rec_has(args, REQ_KEY(code)), has_file = rec_has(args, "file"), has_cmd = rec_has(args, REQ_KEY(command));
	if (has_code + has_file + has_cmd != 1) {
		snprintf(err, errlen, "give exactly one of \"code\", \"file\" or \"command\"");
		return jv_invalid();
	}
	const char *file = has_file ? sess_client_path(args, "file", false, err, errlen) : NULL;
	if (has_file && !file)
		return jv_invalid();
	const char *language = rec_str(args, REQ_KEY(language), NULL);
	if (!language && (!file || !conf_lang_by_file(s->conf, file)))
		language = x->language;
	if (has_code && !language && !x->language) {
		snprintf(err, errlen, "\"%s\" is needed (the session has no default language)", REQ_KEY(language));
		return jv_invalid();
	}
	jv req = jv_object_set(jv_object(), jv_string(REQ_KEY(session)), jv_string(x->id));
	if (language)
		req = jv_object_set(req, jv_string(REQ_KEY(language)), jv_string(language));
	req = req_from_args(req, args, tool);
	if (!rec_has(req, REQ_KEY(network)) && jv_is_valid(x->network)) {
		req = jv_object_set(req, jv_string(REQ_KEY(network)), jv_copy(x->network));
		/* what of it the session's user approved goes with each run */
		if (jv_is_valid(x->approved))
			req = jv_object_set(req, jv_string(REQ_KEY(user_approved)), jv_copy(x->approved));
	}
	if (has_file)
		req = jv_object_set(req, jv_string(REQ_KEY(entry)), rec_get(args, "file"));
	return jv_object_set(req, jv_string(REQ_KEY(artifacts)), jv_true());
}

static jv install_request(struct session *x, const char *language, jv packages)
{
	jv req = jv_object_set(jv_object(), jv_string(REQ_KEY(session)), jv_string(x->id));
	req = jv_object_set(req, jv_string(REQ_KEY(language)), jv_string(language));
	return jv_object_set(req, jv_string(REQ_KEY(install)), packages);
}

/* ---- resources ------------------------------------------------------------ */

/* A MIME type from the name, for the text and image files agents make;
 * else by content: text/plain or application/octet-stream. */
static const char *mime_of(const char *path, bool text)
{
	static const char *const map[][2] = {
		{ ".py", "text/x-python" }, { ".js", "text/javascript" }, { ".ts", "text/x-typescript" },
		{ ".json", "application/json" }, { ".md", "text/markdown" }, { ".csv", "text/csv" },
		{ ".html", "text/html" }, { ".c", "text/x-c" }, { ".h", "text/x-c" }, { ".cpp", "text/x-c++" },
		{ ".go", "text/x-go" }, { ".rs", "text/x-rust" }, { ".java", "text/x-java" }, { ".rb", "text/x-ruby" },
		{ ".php", "text/x-php" }, { ".sh", "text/x-shellscript" }, { ".svg", "image/svg+xml" },
		{ ".png", "image/png" }, { ".jpg", "image/jpeg" }, { ".jpeg", "image/jpeg" }, { ".gif", "image/gif" },
		{ ".webp", "image/webp" }, { ".pdf", "application/pdf" },
	};
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	for (size_t i = 0; dot && (!slash || dot > slash) && i < sizeof map / sizeof map[0]; i++)
		if (!strcasecmp(dot, map[i][0]))
			return map[i][1];
	return text ? "text/plain" : "application/octet-stream";
}

/* Everything in a session's workspace, as list_files lists it. */
static jv workspace_files(const struct session *x)
{
	jv files = jv_array();
	int count = 0;
	int dir = open(x->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0) {
		sess_list_dir(dir, "", &files, &count, 0);
		close(dir);
	}
	return files;
}

/* A listed file's path if it is a resource (a regular file, not in
 * .deps), else NULL; borrowed from f. */
static const char *resource_path(jv f)
{
	const char *path = rec_str(f, "path", NULL), *type = rec_str(f, "type", NULL);
	size_t dl = strlen(NS_DEPS);
	bool deps = path && !strncmp(path, NS_DEPS, dl) && (path[dl] == '/' || !path[dl]);
	return path && type && !strcmp(type, "file") && !deps ? path : NULL;
}

jv sess_resources(struct sessions *s, unsigned owner, size_t first, size_t max, bool *more)
{
	jv out = jv_array();
	size_t seen = 0;
	*more = false;
	for (struct session *x = s->list; x && !*more; x = x->next) {
		if (x->owner != owner)
			continue;
		jv files = workspace_files(x);
		jv_array_foreach(files, i, f) {
			const char *path = resource_path(f);
			if (path) {
				if (seen >= first && jv_array_length(jv_copy(out)) < (int)max) {
					char *uri = util_fmt(SESS_URI "%s/%s", x->id, path);
					jv r = jv_object_set(jv_object(), jv_string("uri"), jv_string(uri));
					r = jv_object_set(r, jv_string("name"), jv_string(path));
					r = jv_object_set(r, jv_string("mimeType"), jv_string(mime_of(path, true)));
					r = jv_object_set(r, jv_string("size"), rec_get(f, "size"));
					out = jv_array_append(out, r);
					free(uri);
				} else if (seen >= first)
					*more = true;
				seen++;
			}
			jv_free(f);
		}
		jv_free(files);
	}
	return out;
}

static bool kern_young(const struct sessions *s, const struct session *x, unsigned i);

jv sess_live(struct sessions *s, unsigned owner, bool all)
{
	jv out = jv_array();
	double now = util_now_ms();
	for (struct session *x = s->list; x; x = x->next) {
		if (!all && x->owner != owner)
			continue;
		jv o = jv_object_set(jv_object(), jv_string("session_id"), jv_string(x->id));
		o = jv_object_set(o, jv_string(REQ_KEY(language)), x->language ? jv_string(x->language) : jv_null());
		double left = (double)x->ttl_ms - (now - x->last_used);
		o = jv_object_set(o, jv_string("expires_in_s"), jv_number(left > 0 ? floor(left / 1000) : 0));
		jv kern = jv_array();
		for (unsigned i = 0; i < x->nkern; i++)
			if (kern_young(s, x, i))
				kern = jv_array_append(kern, jv_string(x->kern[i].lang));
		o = jv_object_set(o, jv_string("kernels"), kern);
		jv files = jv_array();
		jv all_files = workspace_files(x);
		jv_array_foreach(all_files, i, f) {
			const char *path = resource_path(f);
			if (path && jv_array_length(jv_copy(files)) < 200) {
				jv e = jv_object_set(jv_object(), jv_string("path"), jv_string(path));
				files = jv_array_append(files, jv_object_set(e, jv_string("size"), rec_get(f, "size")));
			}
			jv_free(f);
		}
		jv_free(all_files);
		/* check-names: a session's list of files */
		out = jv_array_append(out, jv_object_set(o, jv_string("files"), files));
	}
	return out;
}

/* The owner's session a URI names, and the path in it; NULL with err. */
static struct session *uri_session(struct sessions *s, unsigned owner, const char *uri, const char **path, char *err,
				   size_t errlen)
{
	size_t pl = strlen(SESS_URI);
	char id[STATE_SESSION_ID_LEN + 1];
	if (strncmp(uri, SESS_URI, pl) || strlen(uri) < pl + STATE_SESSION_ID_LEN + 2 || uri[pl + STATE_SESSION_ID_LEN] != '/') {
		snprintf(err, errlen, "not found: resources are " SESS_URI "SESSION_ID/PATH");
		return NULL;
	}
	memcpy(id, uri + pl, STATE_SESSION_ID_LEN);
	id[STATE_SESSION_ID_LEN] = 0;
	struct session *x = is_id(id) ? find(s, id) : NULL;
	if (!x || x->owner != owner) {
		snprintf(err, errlen, "not found: no session %s of yours", id);
		return NULL;
	}
	*path = uri + pl + STATE_SESSION_ID_LEN + 1;
	return x;
}

bool sess_resource_read(struct sessions *s, unsigned owner, const char *uri, jv *out, char *err, size_t errlen)
{
	const char *path;
	struct session *x = uri_session(s, owner, uri, &path, err, errlen);
	if (!x)
		return false;
	jv args = jv_object_set(jv_object(), jv_string("path"), jv_string(path));
	jv file;
	bool ok = sess_read_file(s, x, args, &file, err, errlen);
	jv_free(args);
	if (!ok)
		return false;
	const char *enc = rec_str(file, "encoding", NULL);
	bool text = enc && !strcmp(enc, "utf-8");
	jv c = jv_object_set(jv_object(), jv_string("uri"), jv_string(uri));
	c = jv_object_set(c, jv_string("mimeType"), jv_string(mime_of(path, text)));
	c = jv_object_set(c, jv_string(text ? "text" : "blob"), rec_get(file, "content"));
	jv_free(file);
	*out = c;
	x->last_used = util_now_ms();
	rearm(s);
	return true;
}

void sess_resource_stamp(struct sessions *s, unsigned owner, const char *uri, char *stamp, size_t len)
{
	char err[256];
	const char *path;
	struct session *x = uri_session(s, owner, uri, &path, err, sizeof err);
	stamp[0] = 0;
	int dir = x ? open(x->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	int fd = dir >= 0 && *path ? util_open_beneath(dir, path, O_PATH, 0) : -1;
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		snprintf(stamp, len, "%llu %llu %lld.%09ld", (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
			 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
}

jv sess_complete(struct sessions *s, unsigned owner, const char *arg, const char *value, const char *session_id)
{
	jv out = jv_array();
	size_t vl = strlen(value);
	if (!strcmp(arg, "session_id")) {
		for (struct session *x = s->list; x; x = x->next)
			if (x->owner == owner && !strncmp(x->id, value, vl))
				out = jv_array_append(out, jv_string(x->id));
		return out;
	}
	struct session *x = session_id && is_id(session_id) ? find(s, session_id) : NULL;
	if (strcmp(arg, "path") || !x || x->owner != owner)
		return out;
	jv files = workspace_files(x);
	jv_array_foreach(files, i, f) {
		const char *path = resource_path(f);
		if (path && !strncmp(path, value, vl))
			out = jv_array_append(out, jv_string(path));
		jv_free(f);
	}
	jv_free(files);
	return jv_sort(out, jv_copy(out));
}

bool sess_can_install(const struct conf *c, const char *language, char *err, size_t errlen)
{
	const struct conf_lang *l = language ? conf_lang(c, language) : NULL;
	if (!l) {
		snprintf(err, errlen, "language \"%.40s\" is not a configured language (%s)", language ? language : "", conf_lang_list(c));
		return false;
	}
	if (!l->install || !c->install_network) {
		char with[512] = "";
		for (size_t i = 0; i < c->nlangs && c->install_network; i++)
			if (c->langs[i].install)
				snprintf(with + strlen(with), sizeof with - strlen(with), "%s%s", with[0] ? ", " : "", c->langs[i].name);
		if (!c->install_network)
			snprintf(err, errlen, "packages cannot be installed: the configuration keeps installs off the network "
				 "(install_network = false in %s)", c->path);
		else
			snprintf(err, errlen, "language \"%s\" has no package manager configured, so its dependencies cannot be "
				 "installed (languages with one: %s)", l->name, with[0] ? with : "none");
		return false;
	}
	return true;
}

void sess_on_end(struct sessions *s, void (*fn)(const char *id, void *arg), void (*restore)(const char *id, void *arg),
		 void *arg)
{
	s->on_restore = restore;
	s->on_end = fn;
	s->end_arg = arg;
}

/* A kernel is alive, as far as we know, until kernel_idle after its last cell. */
static bool kern_young(const struct sessions *s, const struct session *x, unsigned i)
{
	return util_now_ms() - x->kern[i].last < (double)s->conf->kernel_idle_ms;
}

/* Whether the session's kernel of lang is alive, as far as we know. */
static bool kernel_live(const struct sessions *s, const struct session *x, const char *lang)
{
	for (unsigned i = 0; i < x->nkern; i++)
		if (!strcmp(x->kern[i].lang, lang))
			return kern_young(s, x, i);
	return false;
}

static unsigned kernels_of(const struct sessions *s, unsigned owner)
{
	unsigned n = 0;
	for (const struct session *x = s->list; x; x = x->next)
		for (unsigned i = 0; x->owner == owner && i < x->nkern; i++)
			n += kern_young(s, x, i);
	return n;
}

void sess_kernel_seen(struct sessions *s, const char *id, const char *lang, bool alive)
{
	struct session *x = find(s, id);
	if (!x || !lang)
		return;
	unsigned i = 0;
	while (i < x->nkern && strcmp(x->kern[i].lang, lang))
		i++;
	if (!alive) {
		if (i < x->nkern)
			x->kern[i] = x->kern[--x->nkern];
		return;
	}
	if (i == x->nkern) {
		if (x->nkern == sizeof x->kern / sizeof x->kern[0])
			return;
		snprintf(x->kern[x->nkern++].lang, sizeof x->kern[0].lang, "%s", lang);
	}
	x->kern[i].last = util_now_ms();
}

/* run_cell: a cell for the session's kernel of its language. */
static jv cell_request(struct sessions *s, struct session *x, jv args, char *err, size_t errlen)
{
	const char *language = rec_str(args, REQ_KEY(language), NULL);
	if (!language)
		language = x->language;
	const struct conf_lang *l = language ? conf_lang(s->conf, language) : NULL;
	if (!l) {
		snprintf(err, errlen, language ? "language \"%.40s\" is not a configured language (%s)"
					       : "\"language\" is needed (the session has no default language)",
			 language ? language : "", conf_lang_list(s->conf));
		return jv_invalid();
	}
	if (!l->kernel) {
		snprintf(err, errlen, "language \"%s\" has no kernel (languages with one: %s); use sandbox_exec", l->name,
			 conf_kernel_list(s->conf));
		return jv_invalid();
	}
	/* A new kernel counts against the token's; a reset one replaces its own. */
	if (x->owner && !kernel_live(s, x, l->name) && s->conf->max_kernels_per_token &&
	    kernels_of(s, x->owner) >= s->conf->max_kernels_per_token) {
		snprintf(err, errlen, "too many live kernels for this token (max_kernels_per_token %llu): sandbox_stop a session "
				      "first, or wait for an idle kernel to stop (kernel_idle %.0f s)",
			 (unsigned long long)s->conf->max_kernels_per_token, (double)s->conf->kernel_idle_ms / 1000);
		return jv_invalid();
	}
	sess_kernel_seen(s, x->id, l->name, true);
	jv req = jv_object_set(jv_object(), jv_string(REQ_KEY(session)), jv_string(x->id));
	req = jv_object_set(req, jv_string(REQ_KEY(language)), jv_string(l->name));
	req = jv_object_set(req, jv_string(REQ_KEY(cell)), jv_true());
	req = req_from_args(req, args, RT_CELL);
	return jv_object_set(req, jv_string(REQ_KEY(artifacts)), jv_true());
}

bool sess_tool_init(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	*out = jv_invalid();
	*req = jv_invalid();
	double ttl = 0;
	if (rec_num(args, "ttl", &ttl) && (ttl < 1 || ttl > 86400 * 30 || ttl != ttl)) {
		snprintf(err, errlen, "ttl must be from 1 to 2592000 seconds");
		return false;
	}
	const char *lang = rec_str(args, REQ_KEY(language), NULL);
	jv deps = rec_get(args, "dependencies");
	bool install = jv_get_kind(deps) == JV_KIND_ARRAY && jv_array_length(jv_copy(deps)) > 0;
	if (install && !lang) {
		jv_free(deps);
		snprintf(err, errlen, "\"dependencies\" needs \"%s\" (whose package manager installs them)", REQ_KEY(language));
		return false;
	}
	if (install && !sess_can_install(s->conf, lang, err, errlen)) {
		jv_free(deps);
		return false;
	}
	/* the network its runs have unless a call says otherwise */
	jv net = rec_get(args, REQ_KEY(network));
	if (jv_is_valid(net) && jv_get_kind(net) != JV_KIND_NULL && !job_network_ok(s->conf, net, err, errlen)) {
		jv_free(net);
		jv_free(deps);
		return false;
	}
	char *id = sess_create(s, owner, lang, (uint64_t)(ttl * 1000), err, errlen);
	if (!id) {
		jv_free(net);
		jv_free(deps);
		return false;
	}
	struct session *x = find(s, id);
	x->network = jv_get_kind(net) == JV_KIND_NULL ? jv_invalid() : net;
	char when[40];
	util_iso8601(util_epoch_ms() + (double)x->ttl_ms, when, sizeof when);
	jv o = jv_object_set(jv_object(), jv_string("session_id"), jv_string(id));
	o = jv_object_set(o, jv_string(REQ_KEY(language)), x->language ? jv_string(x->language) : jv_null());
	o = jv_object_set(o, jv_string("expires_at"), jv_string(when));
	o = jv_object_set(o, jv_string("ttl_seconds"), jv_number((double)x->ttl_ms / 1000));
	if (jv_is_valid(x->network))
		o = jv_object_set(o, jv_string(REQ_KEY(network)), jv_copy(x->network));
	/* what its quota is, and what the files count against where it
	 * is not a disk's (wsfs.h) */
	o = jv_object_set(o, jv_string("workspace_bytes"),
			  x->tree->fs == WSFS_DIR ? jv_null() : jv_number((double)s->conf->workspace_size));
	o = jv_object_set(o, jv_string("workspace_filesystem"), jv_string(wsfs_kind_name(x->tree->fs)));
	if (*x->tree->fs_note)
		o = jv_object_set(o, jv_string("workspace_note"), jv_string(x->tree->fs_note));
	*out = o;
	if (install)
		*req = install_request(x, x->language, deps);
	else
		jv_free(deps);
	free(id);
	return true;
}

bool sess_network_allow(struct sessions *s, unsigned owner, const char *id, jv ran, const char *pat)
{
	struct session *x = find(s, id);
	if (!x || x->owner != owner)
		return false;
	if (jv_get_kind(x->network) == JV_KIND_TRUE)
		return true; /* all its bounds allow already */
	if (jv_get_kind(x->network) != JV_KIND_ARRAY) {
		jv_free(x->network);
		x->network = jv_get_kind(ran) == JV_KIND_ARRAY ? jv_copy(ran) : jv_array();
	}
	jv_array_foreach(x->network, i, p) {
		bool same = jv_get_kind(p) == JV_KIND_STRING && !strcmp(jv_string_value(p), pat);
		jv_free(p);
		if (same)
			return true;
	}
	x->network = jv_array_append(x->network, jv_string(pat));
	x->approved = jv_array_append(jv_is_valid(x->approved) ? x->approved : jv_array(), jv_string(pat));
	return true;
}

/* The other session tools start alike (sess_int.h). */
struct session *sess_tool_session(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	*out = jv_invalid();
	*req = jv_invalid();
	return get(s, owner, args, err, errlen);
}

bool sess_tool_stop(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	if (!x)
		return false;
	jv o = jv_object_set(jv_object(), jv_string("session_id"), jv_string(x->id));
	sess_remove(s, x->id);
	*out = jv_object_set(o, jv_string("stopped"), jv_true());
	return true;
}

bool sess_tool_exec(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	if (!x)
		return false;
	if (!cwd_ok(x, args, err, errlen))
		return false;
	*req = exec_request(s, x, args, RT_EXEC, err, errlen);
	return jv_is_valid(*req);
}

bool sess_check(struct sessions *s, unsigned owner, jv args, char *err, size_t errlen)
{
	return get(s, owner, args, err, errlen) != NULL;
}

/* process_start: sandbox_exec's request as a background job (job.h),
 * which ends by the session's max_life at the latest. */
bool sess_tool_process(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	if (!x)
		return false;
	if (rec_has(args, "file")) {
		snprintf(err, errlen, "a process runs \"code\" or a \"command\" (such as [\"python3\", \"app.py\"])");
		return false;
	}
	double left = (double)s->conf->session_max_life_ms - (util_now_ms() - x->born);
	if (left < 1000) {
		snprintf(err, errlen, "the session has lived its max_life (%.0f s): its processes may run no longer; start a new "
			 "session", (double)s->conf->session_max_life_ms / 1000);
		return false;
	}
	if (!cwd_ok(x, args, err, errlen))
		return false;
	*req = exec_request(s, x, args, RT_PROC, err, errlen);
	if (!jv_is_valid(*req))
		return false;
	*req = jv_object_delete(*req, jv_string(REQ_KEY(artifacts)));
	*req = jv_object_set(*req, jv_string(REQ_KEY(background)), jv_true());
	const char *timeout = limit_defs[LIM_timeout_ms].req;
	double t = 0;
	if (!rec_num(*req, timeout, &t) || t * 1000 > left)
		*req = jv_object_set(*req, jv_string(timeout), jv_number(floor(left / 1000)));
	return true;
}

bool sess_tool_cell(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	if (!x)
		return false;
	*req = cell_request(s, x, args, err, errlen);
	return jv_is_valid(*req);
}

bool sess_tool_install(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	if (!x)
		return false;
	const char *lang = rec_str(args, REQ_KEY(language), NULL);
	if (!lang)
		lang = x->language;
	if (!lang) {
		snprintf(err, errlen, "\"%s\" is needed (the session has no default language)", REQ_KEY(language));
		return false;
	}
	if (!sess_can_install(s->conf, lang, err, errlen))
		return false;
	*req = install_request(x, lang, rec_get(args, "packages"));
	return true;
}
