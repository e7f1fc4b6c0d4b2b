/* sess_ckpt: the checkpoint tools (sess.h): take one of a session's files,
 * list and delete them, restore a session to one, fork new sessions from
 * one.
 *
 * A checkpoint belongs to its session tree (sess_int.h), so to the one
 * owner all its sessions have: a call from another owner finds no such
 * session.  A restore swaps the workspace under the session's path while
 * nothing of the session's runs: no call is running in it (it is
 * refused), and its kernels and processes are stopped first (on_restore:
 * sbx-run kills them, and their next cells start kernels afresh in new
 * sandboxes and say why).  Kernels' memory is not saved: a checkpoint
 * says so, and which kernels were live.
 */
#define _GNU_SOURCE
#include "sess_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ckpt.h"
#include "rec.h"
#include "util.h"
#include "utf8.h"

#define FORK_MAX 16
#define NAME_MAX_LEN 64

static const char kernels_note[] =
	"kernels' memory is not saved: after a restore, and in a fork, each kernel starts afresh at its next cell";

static struct tree *tree_of(struct session *x, char *err, size_t errlen)
{
	if (!x->tree->dir) {
		snprintf(err, errlen, "checkpoints need a workspace filesystem the server mounts, and this server's are plain "
			 "directories (%s)", x->tree->fs_note);
		return NULL;
	}
	return x->tree;
}

/* args' "checkpoint": an id or a name of the tree's. */
static struct checkpoint *ck_find(struct tree *t, jv args, char *err, size_t errlen)
{
	const char *want = rec_str(args, "checkpoint", NULL);
	for (struct checkpoint *ck = t->ck; want && ck; ck = ck->next)
		if (!strcmp(ck->id, want) || (ck->name && !strcmp(ck->name, want)))
			return ck;
	snprintf(err, errlen, "no checkpoint \"%.64s\" in this session's tree (checkpoint_list lists them)", want ? want : "");
	return NULL;
}

static double ms_since(double t0)
{
	return (double)(long long)((util_now_ms() - t0) * 1000) / 1000;
}

static jv ck_json(struct tree *t, struct checkpoint *ck)
{
	if (ck->bytes < 0) {
		char c[CKPT_PATH];
		ckpt_path(c, CKPT_SAVED, ck->id);
		ck->bytes = (int64_t)ckpt_bytes(t->fd, c);
	}
	char when[40];
	util_iso8601(ck->created, when, sizeof when);
	jv o = jv_object_set(jv_object(), jv_string("checkpoint_id"), jv_string(ck->id));
	o = jv_object_set(o, jv_string("name"), ck->name ? jv_string(ck->name) : jv_null());
	o = jv_object_set(o, jv_string("parent"), ck->parent[0] ? jv_string(ck->parent) : jv_null());
	o = jv_object_set(o, jv_string("session_id"), jv_string(ck->session));
	o = jv_object_set(o, jv_string("created_at"), jv_string(when));
	return jv_object_set(o, jv_string("bytes"), jv_number((double)ck->bytes));
}

/* The kernels the session has live now, by language. */
static jv live_kernels(const struct sessions *s, const struct session *x)
{
	jv a = jv_array();
	for (unsigned i = 0; i < x->nkern; i++)
		if (util_now_ms() - x->kern[i].last < (double)s->conf->kernel_idle_ms)
			a = jv_array_append(a, jv_string(x->kern[i].lang));
	return a;
}

static const char *method(const struct tree *t)
{
	return t->fs == WSFS_BTRFS ? "snapshot" : "copy";
}

bool sess_tool_checkpoint(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	struct tree *t = x ? tree_of(x, err, errlen) : NULL;
	if (!t)
		return false;
	if (!s->conf->max_checkpoints) {
		snprintf(err, errlen, "checkpoints are off on this server ([sessions] max_checkpoints = 0)");
		return false;
	}
	if (t->nck >= s->conf->max_checkpoints) {
		snprintf(err, errlen, "this session tree has %u checkpoints, max_checkpoints: delete one with checkpoint_delete first",
			 t->nck);
		return false;
	}
	size_t nlen = 0;
	const char *name = rec_str(args, "name", &nlen);
	if (name) {
		/* a name is shown in lists and pages: no controls, nothing
		 * that reads other than it is */
		bool ok = nlen >= 1 && nlen <= NAME_MAX_LEN && utf8_valid(name, nlen, NULL) && strlen(name) == nlen;
		unsigned cp;
		for (size_t i = 0; ok && i < nlen; i++)
			ok = (unsigned char)name[i] >= 0x20 && name[i] != 0x7f &&
			     !utf8_deceptive((const unsigned char *)name + i, nlen - i, &cp);
		if (!ok) {
			snprintf(err, errlen, "\"name\" must be 1 to %d printable characters", NAME_MAX_LEN);
			return false;
		}
		jv probe = jv_object_set(jv_object(), jv_string("checkpoint"), jv_string(name));
		char e2[8];
		bool taken = ck_find(t, probe, e2, sizeof e2) != NULL;
		jv_free(probe);
		if (taken) {
			snprintf(err, errlen, "a checkpoint of this tree is already named or numbered \"%s\"", name);
			return false;
		}
	}
	struct checkpoint *ck = util_xalloc(sizeof *ck);
	util_random_hex(ck->id, SESS_CK_LEN / 2);
	char w[CKPT_PATH], c[CKPT_PATH];
	ckpt_path(w, CKPT_LIVE, x->id);
	ckpt_path(c, CKPT_SAVED, ck->id);
	double t0 = util_now_ms();
	uint64_t copied = 0;
	if (ckpt_clone(t->fd, w, c, t->fs == WSFS_BTRFS, true, &copied, err, errlen) < 0) {
		if (errno == ENOSPC || strstr(err, "No space"))
			snprintf(err + strlen(err), errlen - strlen(err),
				 " (a session, its forks and their checkpoints share workspace_size: delete a checkpoint)");
		free(ck);
		return false;
	}
	ck->ms = ms_since(t0);
	ck->created = util_epoch_ms();
	ck->bytes = t->fs == WSFS_BTRFS ? -1 : (int64_t)copied;
	ck->name = name ? util_strdup(name) : NULL;
	memcpy(ck->parent, x->base, sizeof ck->parent);
	memcpy(ck->session, x->id, sizeof ck->session);
	ck->next = t->ck;
	t->ck = ck;
	t->nck++;
	memcpy(x->base, ck->id, sizeof x->base);
	jv o = jv_object_set(jv_object(), jv_string("checkpoint_id"), jv_string(ck->id));
	o = jv_object_set(o, jv_string("name"), ck->name ? jv_string(ck->name) : jv_null());
	o = jv_object_set(o, jv_string("parent"), ck->parent[0] ? jv_string(ck->parent) : jv_null());
	o = jv_object_set(o, jv_string("session_id"), jv_string(x->id));
	o = jv_object_set(o, jv_string("method"), jv_string(method(t)));
	if (t->fs != WSFS_BTRFS)
		o = jv_object_set(o, jv_string("copied_bytes"), jv_number((double)copied));
	o = jv_object_set(o, jv_string("duration_ms"), jv_number(ck->ms));
	jv k = live_kernels(s, x);
	o = jv_object_set(o, jv_string("kernels_saved"), jv_false());
	if (jv_array_length(jv_copy(k)))
		o = jv_object_set(o, jv_string("kernel_note"), jv_string(kernels_note));
	*out = jv_object_set(o, jv_string("kernels_live"), k);
	return true;
}

bool sess_tool_restore(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	struct tree *t = x ? tree_of(x, err, errlen) : NULL;
	struct checkpoint *ck = t ? ck_find(t, args, err, errlen) : NULL;
	if (!ck)
		return false;
	if (x->busy > x->procs) {
		snprintf(err, errlen, "a call is running in this session: restore it when the call has ended (or cancel it)");
		return false;
	}
	bool btrfs = t->fs == WSFS_BTRFS;
	char w[CKPT_PATH], next[CKPT_PATH], c[CKPT_PATH], old[CKPT_PATH], n[16];
	ckpt_path(w, CKPT_LIVE, x->id);
	snprintf(n, sizeof n, "%u", t->trash++);
	ckpt_path(old, CKPT_TRASH, n);
	ckpt_path(next, CKPT_TRASH, "next"); /* (a leftover of a failed one: dropped) */
	ckpt_path(c, CKPT_SAVED, ck->id);
	double t0 = util_now_ms();
	/* The new workspace is whole before anything of the old one goes: a
	 * clone that fails (no room for a copy) changes nothing. */
	ckpt_drop(t->fd, next, btrfs);
	uint64_t copied = 0;
	if (ckpt_clone(t->fd, c, next, btrfs, false, &copied, err, errlen) < 0)
		return false;
	jv k = live_kernels(s, x);
	unsigned procs = x->procs;
	/* Its kernels and processes stop (sbx-run); they had the old files. */
	if (s->on_restore)
		s->on_restore(x->id, s->end_arg);
	x->nkern = 0;
	/* Swap: the old workspace leaves the session's path and the tree's w/,
	 * the new one takes both.  Runs reach the workspace by the path, each
	 * afresh, and none runs now. */
	if (umount2(x->dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 || renameat(t->fd, w, t->fd, old) < 0 ||
	    renameat(t->fd, next, t->fd, w) < 0 || sess_bind_workspace(x) < 0) {
		snprintf(err, errlen, "cannot replace the workspace: %s; the session is ended", strerror(errno));
		sess_remove(s, x->id);
		jv_free(k);
		return false;
	}
	memcpy(x->base, ck->id, sizeof x->base);
	double ms = ms_since(t0);
	/* A subvolume still held (by a kernel on its way out) goes with the tree. */
	ckpt_drop(t->fd, old, btrfs);
	jv o = jv_object_set(jv_object(), jv_string("session_id"), jv_string(x->id));
	o = jv_object_set(o, jv_string("checkpoint_id"), jv_string(ck->id));
	o = jv_object_set(o, jv_string("restored"), jv_true());
	o = jv_object_set(o, jv_string("method"), jv_string(method(t)));
	if (!btrfs)
		o = jv_object_set(o, jv_string("copied_bytes"), jv_number((double)copied));
	o = jv_object_set(o, jv_string("duration_ms"), jv_number(ms));
	o = jv_object_set(o, jv_string("kernels_stopped"), k);
	*out = jv_object_set(o, jv_string("processes_stopped"), jv_number(procs));
	return true;
}

bool sess_tool_fork(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	struct tree *t = x ? tree_of(x, err, errlen) : NULL;
	struct checkpoint *ck = t ? ck_find(t, args, err, errlen) : NULL;
	if (!ck)
		return false;
	double n = 1;
	if (rec_num(args, "count", &n) && (n < 1 || n > FORK_MAX || n != (double)(int)n)) {
		snprintf(err, errlen, "\"count\" must be an integer from 1 to %d", FORK_MAX);
		return false;
	}
	double t0 = util_now_ms();
	jv ids = jv_array();
	for (int i = 0; i < (int)n; i++) {
		struct session *f = sess_new_in(s, owner, t, ck, err, errlen);
		if (!f) {
			/* all or none: the forks made so far go */
			jv_array_foreach(ids, j, id) {
				sess_remove(s, jv_string_value(id));
				jv_free(id);
			}
			jv_free(ids);
			return false;
		}
		f->language = x->language ? util_strdup(x->language) : NULL;
		f->network = jv_copy(x->network);
		f->approved = jv_copy(x->approved);
		f->ttl_ms = x->ttl_ms;
		ids = jv_array_append(ids, jv_string(f->id));
	}
	jv o = jv_object_set(jv_object(), jv_string("session_ids"), ids);
	o = jv_object_set(o, jv_string("checkpoint_id"), jv_string(ck->id));
	o = jv_object_set(o, jv_string("method"), jv_string(method(t)));
	o = jv_object_set(o, jv_string("duration_ms"), jv_number(ms_since(t0)));
	*out = jv_object_set(o, jv_string("kernel_note"), jv_string(kernels_note));
	return true;
}

bool sess_tool_cklist(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	struct tree *t = x ? tree_of(x, err, errlen) : NULL;
	if (!t)
		return false;
	jv a = jv_array();
	for (struct checkpoint *ck = t->ck; ck; ck = ck->next)
		a = jv_array_append(a, ck_json(t, ck));
	jv ss = jv_array();
	for (struct session *y = s->list; y; y = y->next)
		if (y->tree == t) {
			jv e = jv_object_set(jv_object(), jv_string("session_id"), jv_string(y->id));
			ss = jv_array_append(ss, jv_object_set(e, jv_string("checkpoint_id"),
								y->base[0] ? jv_string(y->base) : jv_null()));
		}
	jv o = jv_object_set(jv_object(), jv_string("checkpoints"), a);
	o = jv_object_set(o, jv_string("sessions"), ss);
	o = jv_object_set(o, jv_string("method"), jv_string(method(t)));
	*out = jv_object_set(o, jv_string("max_checkpoints"), jv_number((double)s->conf->max_checkpoints));
	return true;
}

bool sess_tool_ckdelete(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	struct tree *t = x ? tree_of(x, err, errlen) : NULL;
	struct checkpoint *ck = t ? ck_find(t, args, err, errlen) : NULL;
	if (!ck)
		return false;
	char c[CKPT_PATH];
	ckpt_path(c, CKPT_SAVED, ck->id);
	if (ckpt_drop(t->fd, c, t->fs == WSFS_BTRFS) < 0) {
		snprintf(err, errlen, "cannot delete the checkpoint: %s", strerror(errno));
		return false;
	}
	/* Its children and the sessions that came from it now come from its
	 * parent: the tree stays a tree. */
	for (struct checkpoint *y = t->ck; y; y = y->next)
		if (!strcmp(y->parent, ck->id))
			memcpy(y->parent, ck->parent, sizeof y->parent);
	for (struct session *y = s->list; y; y = y->next)
		if (y->tree == t && !strcmp(y->base, ck->id))
			memcpy(y->base, ck->parent, sizeof y->base);
	for (struct checkpoint **p = &t->ck; *p; p = &(*p)->next)
		if (*p == ck) {
			*p = ck->next;
			break;
		}
	t->nck--;
	jv o = jv_object_set(jv_object(), jv_string("checkpoint_id"), jv_string(ck->id));
	*out = jv_object_set(o, jv_string("deleted"), jv_true());
	free(ck->name);
	free(ck);
	return true;
}
