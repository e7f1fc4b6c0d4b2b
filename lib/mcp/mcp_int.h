/* mcp_int: what the parts of the MCP server share, and nobody else: mcp.c
 * (messages, methods, the server and its clients), mcp_call.c (a
 * tools/call from arrival to answer: the queue, runs, helper processes),
 * mcp_tool.c (what each tool does), mcp_res.c (resources, subscriptions,
 * completion), mcp_task.c (tasks).  The structures are mcp.c's; the other
 * parts borrow them.
 */
#ifndef SBX_MCP_INT_H
#define SBX_MCP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jv.h>

#include "chain.h"
#include "mcp.h"
#include "mcptools.h"
#include "sess.h"
#include "task.h"

/* JSON-RPC and MCP error codes. */
enum {
	E_PARSE = -32700,
	E_INVALID_REQUEST = -32600,
	E_METHOD = -32601,
	E_PARAMS = -32602,
	E_INTERNAL = -32603,
	E_UNSUPPORTED_VERSION = -32022,
};

/* A request being worked on. */
struct call {
	struct mcp *m;
	struct mcp_client *cl; /* NULL once its client is gone */
	uint64_t tag;          /* the transport's, for every message of the call */
	jv id;                 /* JSON-RPC id */
	jv token;              /* progressToken, or invalid */
	bool modern;
	const struct mcp_tool *tool;
	jv args;
	char run_id[48];       /* the pipeline record's id, for runs */
	char principal[24];    /* its client's, kept for the call's life */
	unsigned owner;        /* its client's, kept for the call's life */
	int progress;
	double max_output;     /* the call's max_output, or -1 */
	unsigned outputs;      /* live output notifications since the stage's */
	/* C_NEW while its tool's handler has it: never taken for a queued
	 * one, should a call the handler ends dispatch the queue meanwhile */
	enum { C_NEW, C_QUEUED, C_RUNNING, C_HELPER, C_ASKING, C_WAITING, C_DONE } state;
	bool cancelled;
	bool internal;         /* the server's own (the start's probe): no client waits for it */
	/* C_HELPER: a tool process whose stdout we collect */
	pid_t pid;
	int fd, efd;           /* its stdout, and its stderr (or -1) */
	char err[512];         /* the end of what it said on stderr, for a failing helper's error */
	char *buf;
	size_t len, cap;
	void (*helper_done)(struct call *c, int status, char *out, size_t len);
	/* multi-step calls (dependencies, sessions) */
	void (*next)(struct call *c, jv result);
	char *temp_session;    /* run_code with dependencies: removed at the end */
	char *held_session;    /* a session tool's run: held from its start to the call's end */
	jv after;              /* the run that follows an install, or invalid */
	jv with;               /* a session tool's result, completed by its run */
	struct task *task;     /* a task-augmented call's task: its answer is kept there */
	int beat;              /* a running call with a progressToken: progress every [mcp]
				* progress_interval (timerfd), or -1 */
	int task_timer;        /* 2026-07-28 with the tasks extension: a call not answered by
				* TASK_AFTER_MS becomes a task (timerfd), or -1 */
	/* C_ASKING: its user is asked to approve hosts (mcp_ask.c) */
	char ask_id[32];       /* the elicitation request's id */
	int ask_timer;         /* its deadline (timerfd), or -1 */
	jv asked;              /* the run's result, held */
	jv ask_pats;           /* the patterns asked about */
	/* C_WAITING: on a session's process (mcp_proc.c): its start, or
	 * output for a read; until its timer (timerfd, or -1) */
	struct sproc *proc;
	int wait_timer;
	struct call *link;
};

/* A tasks/result waiting for its task to end. */
struct waiter {
	struct mcp_client *cl;
	uint64_t tag;
	jv id;
	bool modern;
	struct task *task;
	struct waiter *next;
};

struct mcp {
	struct loop *loop;
	const struct conf *conf;
	char *conf_path, *bindir;
	struct mcp_client *clients;
	struct chain *chain;
	unsigned max, running;
	/* When each principal (owner) last had a run started, for fairness:
	 * served[owner], grown as owners appear. */
	uint64_t *served, served_seq;
	size_t nserved;
	struct call *calls;    /* every call in flight, queued or not */
	unsigned seq;
	jv languages;          /* cached list_supported_languages, or invalid */
	jv tools;              /* tools/list's answer: made once, shared by copy */
	jv tools_plain;        /* the same without outputSchemas (mcp_client.structured false) */
	struct sessions *sessions;
	struct sproc *procs;   /* the sessions' processes (mcp_proc.c) */
	struct sport *ports;   /* their open ports (mcp_port.c) */
	char base_url[80];     /* the HTTP listener's, for port_open; "" without one */
	mcp_port_closed_fn port_closed; /* and what it does when a port it serves closes */
	void *port_closed_arg;
	struct tasks tasks;
	struct waiter *waiters;
	/* What this host holds of the limits is asked of sbx-run at the start
	 * (mcp_probe); tools/list waits for it, so that the first list an
	 * agent reads already says what is not enforced here. */
	struct parked *parked;
	bool probed;
};

/* A request held until the probe answers, then handled as if it came then. */
struct parked {
	struct mcp_client *cl;
	uint64_t tag;
	jv msg;
	struct parked *next;
};

struct mcp_client {
	struct mcp *m;
	unsigned owner;        /* whose sandbox sessions it may use */
	char principal[24];    /* its runs' in the history, or "" (mcp_client_new) */
	const struct auth *auth; /* HTTP's tokens, for owner's network (mcp_client_auth), or NULL */
	mcp_send_fn send;
	void *arg;
	char legacy[16];       /* version agreed at initialize */
	bool structured;       /* gets outputSchemas and structuredContent ([mcp] structured) */
	int log_level;         /* logging/setLevel's, an index of log_levels; -1: none asked, nothing sent */
	bool elicit;           /* it declared elicitation (form) at initialize */
	/* Can a request reach it on the stream of the call tagged tag?  NULL:
	 * always (stdio); HTTP says (http_mcp.c). */
	bool (*streams)(void *arg, uint64_t tag);
	struct sub *subs;      /* resources/subscribe's URIs */
	size_t nsubs;
	struct mcp_client *next;
};

/* A subscribed URI and what its file was when last seen (sess_resource_stamp). */
struct sub {
	char *uri;
	char stamp[96];
};
#define MAX_SUBS 64
#define MAX_WAITERS 64  /* tasks/result waiting, per client */

#define RES_PAGE 100
#define TASK_AFTER_MS 1000
#define E_NOT_FOUND -32002 /* the revisions' "resource not found" */

/* Messages to a client (NULL: dropped); tag: the call's, 0 unasked. */
void mcp_send_msg(struct mcp_client *cl, uint64_t tag, jv msg);
void mcp_send_error(struct mcp_client *cl, uint64_t tag, jv id, int code, const char *msg, jv data);
void mcp_send_result(struct mcp_client *cl, uint64_t tag, jv id, bool modern, jv result);
/* notifications/message at a level (logging/setLevel's names, in order),
 * if the client asked for it. */
enum { L_DEBUG, L_INFO, L_NOTICE, L_WARNING, L_ERROR };
void mcp_log(struct mcp_client *cl, uint64_t tag, int level, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An error the agent can act on, as a tool result (isError). */
jv mcp_tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether params carry a cursor (not absent, not null). */
bool mcp_cursor_given(jv params);

/* A method's handler (mcp.c's table names them): id consumed, params
 * borrowed (an object), modern: the request named 2026-07-28.  It answers,
 * at once or later. */
typedef void mcp_method_fn(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern);

/* mcp_call.c: tools/call; a call's end (mcp_call_free: without an
 * answer); stopping a cancelled call's work: a queued one is freed, a
 * run's sandbox killed, a helper process killed (their results are
 * dropped). */
mcp_method_fn mcp_tools_call;
void mcp_call_free(struct call *c);
void mcp_call_stop(struct call *c);
/* Answer a call (result consumed) and forget it. */
void mcp_call_finish(struct call *c, jv result);
/* A run's answer, from its record (consumed). */
jv mcp_run_result(struct call *c, jv result);
/* Start what the queue holds, as far as slots allow. */
void mcp_call_dispatch(struct mcp *m);

/* Approve on deny (mcp_ask.c).  mcp_ask_hosts: ask c's user about the
 * hosts its run (*result) was refused, if any may be asked about; true
 * when asked (*result then held, the answer deferred).  mcp_ask_answer:
 * cl's response msg (borrowed) to a question of id; false if none of its
 * calls asked it.  mcp_ask_end: the answer (consumed; invalid: none) ends
 * the question and answers the call. */
bool mcp_ask_hosts(struct call *c, jv *result);
bool mcp_ask_answer(struct mcp_client *cl, jv id, jv msg);
void mcp_ask_end(struct call *c, jv answer);
/* Queue a run (request: the pipeline request without id). */
void mcp_call_submit(struct call *c, jv request);
/* Run bindir/argv[0] with argv, collect its stdout, then done; false (the
 * call finished with the error) if it could not start.  mcp_call_check:
 * sbx-run's report (option: --check or --check=backend), as JSON. */
bool mcp_call_helper(struct call *c, char **argv, void (*done)(struct call *c, int status, char *out, size_t len));
bool mcp_call_check(struct call *c, char *option, void (*done)(struct call *c, int status, char *out, size_t len));
/* A tool's answer: the structured result, the same as JSON text, and isError. */
jv mcp_tool_result(jv structured, bool is_error);

/* mcp_tool.c: start the call's tool (c->tool, c->args), by its kind. */
void mcp_tool_start(struct call *c);

/* mcp_proc.c: a session's processes (its theory of operation): the tools
 * process_start, process_read, process_write, process_signal and
 * process_list; a waiting call stopped or freed (it waits no more); a
 * session's end (its processes go once their results come); the list of
 * a session's processes (for process_list and the dashboard); whether any
 * runs; the server's end (every one freed, the chain gone). */
void mcp_proc_start(struct call *c);
void mcp_proc_read(struct call *c);
void mcp_proc_write(struct call *c);
void mcp_proc_signal(struct call *c);
void mcp_proc_list(struct call *c);
void mcp_proc_unwait(struct call *c);
void mcp_proc_session_end(struct mcp *m, const char *sid);
jv mcp_proc_json(struct mcp *m, const char *sid);
bool mcp_proc_running(const struct mcp *m);
void mcp_proc_free_all(struct mcp *m);

/* mcp_port.c: a session's ports opened to a person (its theory of
 * operation): the tools port_open and port_close; each open port's JSON
 * (port, url, path over HTTP, opened_at); the session's end closes them. */
void mcp_port_open(struct call *c);
void mcp_port_close(struct call *c);
jv mcp_port_json(struct mcp *m, const char *sid);
void mcp_port_session_end(struct mcp *m, const char *sid);
void mcp_port_free_all(struct mcp *m);

/* mcp_res.c: the methods, and the announcement of a session's changed
 * files after a call in it. */
mcp_method_fn mcp_res_list, mcp_res_templates, mcp_res_read, mcp_res_subscribe, mcp_res_unsubscribe, mcp_complete;
void mcp_notify_updates(struct mcp *m, unsigned owner, const char *sid, struct mcp_client *caller, uint64_t tag);

/* mcp_task.c: the tasks methods (tasks/list, get, result, cancel, update); a task
 * call's answer; a task expired while running. */
mcp_method_fn mcp_tasks_list, mcp_tasks_get, mcp_tasks_result, mcp_tasks_cancel, mcp_tasks_update;
void mcp_task_done(struct mcp *m, struct call *c, jv result);
void mcp_task_gone(struct task *t, void *arg);
/* A task's call is freed without its answer (queued and dropped, the
 * server stopping): the task fails, and who waits is answered. */
void mcp_task_orphaned(struct mcp *m, struct call *c);
/* A 2026-07-28 call that may become a task (its client declared the tasks
 * extension): armed at its start, disarmed at its answer. */
void mcp_task_arm(struct call *c);
void mcp_task_disarm(struct call *c);

#endif
