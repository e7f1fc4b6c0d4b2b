/* sess: sbx-mcp's sessions — a workspace directory per session, and the
 * file tools confined to it.
 *
 * A session is STATE_DIR/sessions/ID, ID 32 hex digits from getrandom (128
 * bits: not guessable), owned by the sandbox user, with a filesystem of its
 * own of workspace_size mounted there (wsfs.h), so that its quota is the
 * kernel's: ext4 on a loop device as root, a tmpfs in the server's own
 * namespaces as an ordinary user; wsfs says where neither can be.  The server
 * holds an flock on STATE_DIR/sessions/.ID.lock while the session lives, so
 * several servers can share a state directory and, at start, each removes
 * the workspaces no live server holds.  Sessions idle longer than their
 * time-to-live are removed by a timer on the caller's loop.
 *
 * Every path from a client is relative, without "..", and resolved with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV) from the workspace: a symlink planted by sandboxed code
 * is never followed, and only regular files are read.
 */
#ifndef SBX_SESS_H
#define SBX_SESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "conf.h"
#include "loop.h"
#include "wsfs.h"

struct sessions;

struct sessions *sess_new(struct loop *l, const struct conf *c);
/* Remove every session of this server (workspaces included). */
void sess_free(struct sessions *s);
/* What this server's workspaces are made of (wsfs.h). */
const struct wsfs *sess_wsfs(const struct sessions *s);
/* A run (or a process) in session id starts (the session does not expire
 * while any runs), and ends (its idle time starts again from then). */
void sess_hold(struct sessions *s, const char *id, bool process);
void sess_release(struct sessions *s, const char *id, bool process);

/* MCP resources: every regular file of the owner's sessions' workspaces
 * (not .deps, not sbx's own names) as {uri, name, mimeType, size}, its URI
 * SESS_URI "ID/PATH"; at most max of them from the first'th on, and
 * *more set if there are others after. */
#define SESS_URI "sbx://session/"
jv sess_resources(struct sessions *s, unsigned owner, size_t first, size_t max, bool *more);
/* The live sessions of owner (of every owner with all), for the
 * dashboard: [{session_id, language, expires_in_s, kernels: [language…],
 * files: [{path, size}] (200 at most)}]. */
jv sess_live(struct sessions *s, unsigned owner, bool all);
/* resources/read of such a URI, by the file tools' rules (no link
 * followed, regular files only, at most max_files_size):
 * {uri, mimeType, text} or {uri, mimeType, blob}; false with err (an
 * unknown session, another owner's, a missing file: "not found"). */
bool sess_resource_read(struct sessions *s, unsigned owner, const char *uri, jv *out, char *err, size_t errlen);
/* What a subscription compares: the file's identity, size and mtime as a
 * string, "" when the URI names no regular file of the owner's (absent,
 * another's, a link): a change of it is a change of the resource. */
void sess_resource_stamp(struct sessions *s, unsigned owner, const char *uri, char *stamp, size_t len);
/* completion/complete of the session template's arguments: the owner's
 * session ids (arg "session_id"), or the files of its session session_id
 * (arg "path", as resources/list names them), that start with value. */
jv sess_complete(struct sessions *s, unsigned owner, const char *arg, const char *value, const char *session_id);

/* Whether packages can be installed for language (a name or alias): it
 * is configured, has a package manager, and installs may reach their
 * registries; else false with err, said before any session is made. */
bool sess_can_install(const struct conf *c, const char *language, char *err, size_t errlen);

/* A new session of `owner` (the tools find it only for the same owner: an
 * HTTP client's token); ttl_ms 0: the configuration's.  Returns its id
 * (the caller frees) or NULL with err. */
char *sess_create(struct sessions *s, unsigned owner, const char *language, uint64_t ttl_ms, char *err, size_t errlen);
void sess_remove(struct sessions *s, const char *id);
/* fn is told of each session that ends (stopped, expired, or with the
 * server), before its workspace goes: its kernels are to be stopped;
 * restore, of each whose workspace a checkpoint replaces, before it is:
 * its kernels and processes are to be stopped, and it lives on. */
void sess_on_end(struct sessions *s, void (*fn)(const char *id, void *arg), void (*restore)(const char *id, void *arg),
		 void *arg);
/* A cell's result: the session's kernel of lang lives on (or not).  With
 * its last cell's time this counts a token's kernels for
 * max_kernels_per_token (sbx-run stops the idle ones at the same age). */
void sess_kernel_seen(struct sessions *s, const char *id, const char *lang, bool alive);
/* Widen owner's session id's network default by pattern pat (its user
 * approved it, mcp_ask.c): its list, or, where it has none, the list of
 * the run that was refused (ran, a request's "network", borrowed), with
 * pat.  False if there is no such session of owner's. */
bool sess_network_allow(struct sessions *s, unsigned owner, const char *id, jv ran, const char *pat);
/* The session tools, one function each (mcptools kinds MCP_T_INIT …
 * MCP_T_CELL; the server's table of tools names which is whose).  args is
 * borrowed.  Either *out is the tool's result, or *req is a pipeline
 * request to run (and *out, if valid, what to return with its result under
 * "install").  False with err for an error the agent can act on. */
typedef bool sess_tool_fn(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen);
sess_tool_fn sess_tool_init;    /* sandbox_initialize */
sess_tool_fn sess_tool_exec;    /* sandbox_exec */
sess_tool_fn sess_tool_cell;    /* run_cell */
sess_tool_fn sess_tool_stop;    /* sandbox_stop */
sess_tool_fn sess_tool_write;   /* write_file */
sess_tool_fn sess_tool_read;    /* read_file */
sess_tool_fn sess_tool_list;    /* list_files */
sess_tool_fn sess_tool_install; /* install_packages */
sess_tool_fn sess_tool_process; /* process_start: *req a background job's (mcp_proc.c runs it) */
sess_tool_fn sess_tool_checkpoint; /* checkpoint_create (sess_ckpt.c) */
sess_tool_fn sess_tool_restore;    /* checkpoint_restore */
sess_tool_fn sess_tool_fork;       /* checkpoint_fork */
sess_tool_fn sess_tool_cklist;     /* checkpoint_list */
sess_tool_fn sess_tool_ckdelete;   /* checkpoint_delete */
/* Whether args' session_id names a session of owner's (and it is used
 * now); false with err. */
bool sess_check(struct sessions *s, unsigned owner, jv args, char *err, size_t errlen);

#endif
