/* docker: the docker backend (dock.c's containers) behind backend.h.
 *
 * Theory of operation.  A job's scratch is a host directory the daemon can
 * bind: a fresh noexec tmpfs mounted under STATE_DIR/docker (dock_scratch),
 * or a session's workspace itself.  Every stage binds the same directory,
 * so a stage needs nothing made for it.  A session's compiled code has a
 * directory of the run's own (backend.h): a second such tmpfs, bound over
 * that name in the workspace in each of the run's containers, and never
 * in another's.  The supervisor writes and reads
 * the job's files through a directory fd opened once, without following
 * links (a workspace holds whatever its programs planted).  A compiled
 * program's identity for the cache is the ID its image's name means now.
 */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dock.h"
#include "util.h"

struct docker {
	struct backend be;
	struct dock_sys d;
};

struct docker_scratch {
	struct bk_scratch base;
	char *host;                /* dock_scratch's directory (removed at close), or NULL */
	const char *bind;          /* what stages bind: host, or the workspace */
	char *workspace;
	char *own;                 /* the run's own directory or file in the workspace, or NULL */
	bool own_dir;
	char *own_host;            /* its dock_scratch directory */
	int own_fd;                /* its tmpfs, the supervisor's view (-1: none) */
};

static struct dock_sys *sys_of(struct backend *be)
{
	return &((struct docker *)be)->d;
}

static void d_scratch_close(struct bk_scratch *sc);

static struct bk_scratch *d_scratch_open(struct backend *be, const char *workspace, const char *own, bool own_dir,
					 bool exec, uint64_t size, char *err, size_t errlen)
{
	(void)exec; /* the engine binds a workspace with its own mount's flags (dock_start) */
	char *host = workspace ? NULL : dock_scratch(sys_of(be), size, err, errlen);
	if (!workspace && !host)
		return NULL;
	char *sub = workspace ? util_strdup(workspace) : util_fmt("%s/scratch", host);
	int fd = open(sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", sub, strerror(errno));
		free(sub);
		if (host) {
			dock_scratch_remove(host);
			free(host);
		}
		return NULL;
	}
	free(sub);
	struct docker_scratch *s = util_xalloc(sizeof *s);
	*s = (struct docker_scratch){ .base = { .be = be, .dir = fd }, .host = host, .own_fd = -1 };
	s->workspace = workspace ? util_strdup(workspace) : NULL;
	s->bind = host ? host : s->workspace;
	if (workspace && own) {
		s->own = util_strdup(own);
		s->own_dir = own_dir;
		if (!(s->own_host = dock_scratch(sys_of(be), size, err, errlen))) {
			d_scratch_close(&s->base);
			return NULL;
		}
		char *p = util_fmt("%s/scratch", s->own_host);
		s->own_fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s->own_fd < 0) {
			snprintf(err, errlen, "cannot open %s: %s", p, strerror(errno));
			free(p);
			d_scratch_close(&s->base);
			return NULL;
		}
		free(p);
	}
	return &s->base;
}

/* The run's own directory or file needs its mount point in the workspace
 * (bk_own_placeholder; the engine would make it otherwise, resolving the
 * name, a link perhaps, inside the container). */
static int d_scratch_stage(struct bk_scratch *sc, bool compile, char *err, size_t errlen)
{
	struct docker_scratch *s = (struct docker_scratch *)sc;
	(void)compile;
	return s->own ? bk_own_placeholder(sc->dir, s->own, s->own_dir, err, errlen) : 0;
}

static int d_scratch_write(struct bk_scratch *sc, const char *path, const char *data, size_t len, mode_t mode)
{
	struct docker_scratch *s = (struct docker_scratch *)sc;
	uid_t uid = (uid_t)sys_of(sc->be)->uid;
	const char *mine = bk_own_path(s->own, s->own_dir, path);
	return util_write_beneath(mine ? s->own_fd : sc->dir, mine ? mine : path, data, len, mode, uid);
}

static void d_scratch_close(struct bk_scratch *sc)
{
	struct docker_scratch *s = (struct docker_scratch *)sc;
	close(s->base.dir);
	if (s->own_fd >= 0)
		close(s->own_fd);
	if (s->host)
		dock_scratch_remove(s->host);
	if (s->own_host)
		dock_scratch_remove(s->own_host);
	free(s->host);
	free(s->own_host);
	free(s->own);
	free(s->workspace);
	free(s);
}

static struct bk_stage *d_start(struct backend *be, struct loop *l, const struct stage_spec *sp, stage_done_fn done,
				void *arg)
{
	struct docker_scratch *s = (struct docker_scratch *)sp->scratch;
	struct dock_spec ds = { .st = sp, .image = sp->image, .scratch = s ? s->bind : NULL, .workspace = s && !s->host,
				.own = s ? s->own : NULL, .own_dir = s && s->own_dir, .own_host = s ? s->own_host : NULL,
				.run_id = sp->label };
	return (struct bk_stage *)dock_start(sys_of(be), l, &ds, done, arg);
}

static void d_cancel(struct bk_stage *st)
{
	dock_cancel((struct dock *)st);
}

static const struct stage_result *d_result(const struct bk_stage *st)
{
	return dock_result((const struct dock *)st);
}

static void d_stage_free(struct bk_stage *st)
{
	dock_free((struct dock *)st);
}

/* Never asked: docker runs no kernels (backend.kernels is false; a
 * container's stdin is its attach stream, not a socket we hold). */
static void d_flush(struct bk_stage *st)
{
	(void)st;
}

/* Every container has a network namespace of its own: a session's runs
 * share their workspace on this backend, not a loopback. */
static int d_netns_new(struct backend *be, char *err, size_t errlen)
{
	(void)be;
	snprintf(err, errlen, "the docker backend gives each run a network namespace of its own");
	return -1;
}

static int d_netns_socket(struct backend *be, int netns, char *err, size_t errlen)
{
	(void)netns;
	return d_netns_new(be, err, errlen);
}

/* Nor background jobs, whose signals this would send. */
static bool d_signal(struct bk_stage *st, int sig)
{
	(void)st;
	(void)sig;
	return false;
}

static bool d_compiler_id(struct backend *be, const struct job *j, char *id, size_t len)
{
	return dock_image_id(sys_of(be), j->image, id, len);
}

static bool d_lang_ready(struct backend *be, const struct conf_lang *l, jv *info, char *err, size_t errlen, bool *fix)
{
	struct dock_sys *d = sys_of(be);
	*info = jv_object_set(*info, jv_string("image"), l->image ? jv_string(l->image) : jv_null());
	*fix = false;
	int img = d->ok && l->image ? dock_image_status(d, l->image) : 0;
	if (!d->ok)
		snprintf(err, errlen, "the Docker daemon is not usable: %s", d->why);
	else if (!l->image)
		snprintf(err, errlen, "no image in the configuration");
	else if (img == 404) {
		snprintf(err, errlen, "the image %s is not on this Docker host: docker pull %s, or sbx-run --pull", l->image, l->image);
		*fix = true;
	} else if (img != 200)
		snprintf(err, errlen, "the Docker daemon did not say whether it has the image %s", l->image);
	return img == 200;
}

static void d_pool(struct backend *be, struct loop *l, size_t n, bool one_now)
{
	/* A container is made per stage by the daemon: nothing to keep warm. */
	(void)be;
	(void)l;
	(void)n;
	(void)one_now;
}

static void d_drain(struct backend *be)
{
	(void)be;
}

static jv d_check(struct backend *be, bool *degraded)
{
	struct dock_sys *d = sys_of(be);
	jv o = jv_object_set(jv_object(), jv_string("backend"), jv_string("docker"));
	o = jv_object_set(o, jv_string("docker_host"), jv_string(d->host));
	dock_ready(d);
	jv fixes = jv_array();
	if (d->ok) {
		jv e = jv_object_set(jv_object(), jv_string("version"), jv_string(d->version));
		e = jv_object_set(e, jv_string("api_version"), jv_string(d->api + 1));
		e = jv_object_set(e, jv_string("cgroup_driver"), jv_string(d->cgroup_driver));
		o = jv_object_set(o, jv_string("engine"), e);
		o = jv_object_set(o, jv_string("accounting"), jv_bool(d->cg_ok));
	} else {
		o = jv_object_set(o, jv_string("engine"), jv_null());
		o = jv_object_set(o, jv_string("error"), jv_string(d->why));
		fixes = jv_array_append(fixes, jv_string(d->why));
	}
	o = jv_object_set(o, jv_string("usable"), jv_bool(d->ok));
	*degraded = false;
	return jv_object_set(o, jv_string("fixes"), fixes);
}

static int d_pull(struct backend *be, FILE *progress)
{
	struct dock_sys *d = sys_of(be);
	return dock_pull(d, progress) == 0 ? 0 : d->ok ? 1 : 2;
}

static void d_free(struct backend *be)
{
	dock_sys_free(sys_of(be));
	free(be);
}

static const struct backend_ops docker_ops = {
	.scratch_open = d_scratch_open,
	.scratch_stage = d_scratch_stage,
	.scratch_write = d_scratch_write,
	.scratch_close = d_scratch_close,
	.start = d_start,
	.cancel = d_cancel,
	.signal = d_signal,
	.result = d_result,
	.stage_free = d_stage_free,
	.flush = d_flush,
	.compiler_id = d_compiler_id,
	.lang_ready = d_lang_ready,
	.netns_new = d_netns_new,
	.netns_socket = d_netns_socket,
	.pool = d_pool,
	.drain = d_drain,
	.check = d_check,
	.pull = d_pull,
	.free = d_free,
};

struct backend *backend_docker(const struct conf *c, bool connect)
{
	struct docker *k = util_xalloc(sizeof *k);
	k->be = (struct backend){ .name = "docker", .where = "its container", .ops = &docker_ops, .conf = c };
	dock_sys_init(&k->d, c);
	if (connect && !dock_ready(&k->d))
		snprintf(k->be.warn, sizeof k->be.warn, "%s", k->d.why);
	return &k->be;
}
