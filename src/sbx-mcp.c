/* sbx-mcp: the MCP server for AI agents, over stdio or HTTP.
 *
 * Theory of operation: over stdio, the client writes JSON-RPC messages to
 * our stdin, one per line, and reads our answers and notifications from
 * stdout, one per line; nothing else ever goes to stdout, and logs go to
 * stderr.  With --listen, lib/http serves MCP's Streamable HTTP transport
 * (/mcp) and the older HTTP+SSE one (/sse, /messages) to many clients,
 * each behind a bearer token.  One thread runs one poll loop (lib/loop):
 * stdin or the HTTP server, the sandbox pipeline's pipes (lib/chain:
 * sbx-validate | sbx-run | sbx-cap | sbx-log, started on the first run and
 * kept), helper processes (sbx-history, sbx-run --check) and the timers.
 * The protocol itself is lib/mcp; the sessions lib/sess.
 *
 * Stopping: over stdio, when the client closes stdin the calls in flight
 * are answered, then the server exits; when the client dies (the reader of
 * stdout is gone) or on SIGTERM/SIGINT, running sandboxes are killed,
 * sessions removed, and the server exits at once.
 * Over HTTP, SIGTERM stops accepting connections and lets the calls in
 * flight finish and be answered for [http] shutdown_grace; then what is
 * left is killed.  A second signal stops at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "conf.h"
#include "http.h"
#include "loop.h"
#include "mcp.h"
#include "mcptools.h"
#include "proc.h"
#include "rec.h"
#include "util.h"

static const char synopsis[] =
	"usage: sbx-mcp [-c FILE]                                     (MCP on stdin/stdout)\n"
	"       sbx-mcp [-c FILE] --listen [ADDR:]PORT|systemd [--token-file FILE]  (HTTP)\n";

/* The tools' names, wrapped before 80 columns (static). */
static const char *tool_list(void)
{
	static char out[600];
	const char *names = mcp_tool_names();
	size_t o = 0, col = 0;
	for (const char *p = names; *p && o + 2 < sizeof out;) {
		size_t w = strcspn(p, " ");
		if (col && col + 1 + w > 79) {
			out[o - 1] = '\n'; /* the space before the word */
			col = 0;
		}
		o += (size_t)snprintf(out + o, sizeof out - o, "%.*s%s", (int)w, p, p[w] ? " " : ".");
		col += w + 1;
		p += w + (p[w] != 0);
	}
	return out;
}

static void help(void)
{
	printf("%s\n"
	       "Serve the Model Context Protocol over stdio: AI clients (Claude Desktop, Cursor,\n"
	       "Claude Code, …) start it and call its tools:\n"
	       "%s\n"
	       "\n"
	       "  -c, --config FILE      configuration file (also passed to the tools it runs)\n"
	       "  -l, --listen ADDR:PORT serve HTTP instead of stdio: Streamable HTTP on /mcp,\n"
	       "                         HTTP+SSE (2024-11-05) on /sse and /messages, /healthz;\n"
	       "                         ADDR defaults to 127.0.0.1, port 0 picks a free one;\n"
	       "                         \"systemd\": the socket a .socket unit passes\n"
	       "      --token-file FILE  bearer tokens, one per line (default: $SBX_MCP_TOKEN,\n"
	       "                         else one is generated and printed once on stderr)\n"
	       "      --transport T      stdio (default), or http / sse: serve HTTP on --listen,\n"
	       "                         default 127.0.0.1:8000 (both serve both HTTP transports)\n"
	       "  -h, --help             show this help\n"
	       "      --version          show the version\n"
	       "\n"
	       "Limits, rate and origins over HTTP: the [http] section of the configuration.\n"
	       "\n"
	       "Exit status: 0 the client closed the connection or a signal stopped the\n"
	       "server, 2 usage or configuration error, 3 input/output error.\n",
	       synopsis, tool_list());
}

static struct {
	struct loop *loop;
	struct mcp *mcp;
	struct mcp_client *cl;
	struct rec_reader in;
	bool done, in_eof, out_failed;
	int status, signals;
} S;

/* Answers go out whole, one line each, in the order made. */
static void send_line(jv msg, uint64_t tag, void *arg)
{
	if (!jv_is_valid(msg))
		return; /* a cancelled request: stdio answers nothing */
	size_t n;
	char *line = rec_dump(msg, &n);
	if (!S.out_failed && (fwrite(line, 1, n, stdout) != n || fflush(stdout) != 0)) {
		util_warn("writing to the client: %s", strerror(errno));
		S.out_failed = true;
		S.done = true;
		S.status = EXIT_IO;
	}
	free(line);
	(void)tag;
	(void)arg;
}

static void on_stdin(struct loop *l, int fd, short rev, void *arg)
{
	ssize_t n = rec_fill(&S.in);
	for (;;) {
		const char *line;
		size_t len;
		jv inv;
		enum rec_status st = rec_next_raw(&S.in, &line, &len, &inv);
		if (st == REC_OK)
			mcp_handle_line(S.cl, line, len, 0);
		else if (st == REC_INVALID) {
			/* too long, or not one JSON object */
			mcp_reject_line(S.cl, rec_str(inv, "error", NULL), 0);
			jv_free(inv);
		} else
			break;
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* The client is done sending: answer what is in flight,
		 * then exit (a signal stops at once). */
		loop_unwatch(l, fd);
		S.in_eof = true;
	}
	(void)rev;
	(void)arg;
}

/* Watched for POLLERR only (poll reports it whatever was asked): the
 * pipe's or socket's reader is gone, so the client died.  No answer can
 * reach it: what runs for it is cancelled and the server exits now, not
 * when the longest run ends. */
static void on_stdout_gone(struct loop *l, int fd, short rev, void *arg)
{
	if (rev & (POLLERR | POLLHUP)) {
		util_warn("the client closed its end of stdout: stopping");
		S.out_failed = true;
		S.done = true;
	}
	loop_unwatch(l, fd);
	(void)arg;
}

static void on_signal(struct loop *l, int fd, short rev, void *arg)
{
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
		util_warn("%s: stopping", strsignal((int)si.ssi_signo));
	S.signals++;
	S.done = true;
	(void)l;
	(void)rev;
	(void)arg;
}

/* Over HTTP until a signal; then drain for the grace period. */
static int serve_http(struct loop *l, struct conf *c, const char *listen, const char *token_file)
{
	char err[512];
	const char *generated;
	struct auth *a = auth_new(token_file, &generated, err, sizeof err);
	/* A token's own network is a narrowing of the configuration's: one
	 * wider is a mistake in the files, found now, not at a call. */
	if (!a || !auth_network_check(a, c, err, sizeof err)) {
		util_warn("%s", err);
		auth_free(a);
		return EXIT_USAGE;
	}
	struct http *h = http_new(l, S.mcp, c, a, listen, err, sizeof err);
	if (!h) {
		util_warn("%s", err);
		auth_free(a);
		return EXIT_USAGE;
	}
	const char *base = http_base_url(h);
	if (generated)
		util_warn("no --token-file or SBX_MCP_TOKEN: this run's token is %s", generated);
	char own[64] = "";
	if (auth_network_count(a))
		snprintf(own, sizeof own, ", %zu with a network of its own", auth_network_count(a));
	util_warn("serving MCP at %s/mcp (HTTP+SSE: %s/sse) for %zu token%s%s (%s)", base, base, auth_count(a),
		  auth_count(a) == 1 ? "" : "s", own, c->path);
	double deadline = 0;
	for (;;) {
		if (S.done && !deadline) {
			http_drain(h);
			deadline = util_now_ms() + (double)c->http_grace_ms;
			util_warn("draining: %u request%s in flight, at most %.0f s", http_busy(h), http_busy(h) == 1 ? "" : "s",
				  (double)c->http_grace_ms / 1000);
		}
		if (deadline && (S.signals > 1 || http_busy(h) == 0 || util_now_ms() >= deadline))
			break;
		int t = http_timeout_ms(h);
		if (deadline) {
			int left = (int)(deadline - util_now_ms()) + 1;
			t = t < 0 || t > left ? left : t;
		}
		if (loop_once(l, t) < 0) {
			util_warn("poll: %s", strerror(errno));
			S.status = EXIT_IO;
			break;
		}
		http_run(h);
	}
	if (http_busy(h))
		util_warn("%u request%s still running after the grace period: killed", http_busy(h),
			  http_busy(h) == 1 ? "" : "s");
	http_free(h);
	auth_free(a);
	return S.status;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL, *listen = NULL, *token_file = NULL, *transport = NULL;
	enum { O_TOKEN_FILE = 0x100, O_TRANSPORT };
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, O_TOKEN_FILE },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:l:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		case 'l': listen = optarg; break;
		case O_TOKEN_FILE: token_file = optarg; break;
		case O_TRANSPORT: transport = optarg; break;
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	if (optind < argc)
		util_usage_error(synopsis, "unexpected argument \"%s\"", argv[optind]);
	if (transport && strcmp(transport, "stdio") && strcmp(transport, "http") && strcmp(transport, "sse") &&
	    strcmp(transport, "streamable-http"))
		util_usage_error(synopsis, "--transport: \"%s\" is not stdio, http or sse", transport);
	if (transport && !strcmp(transport, "stdio") && listen)
		util_usage_error(synopsis, "--transport stdio and --listen exclude each other");
	if (transport && strcmp(transport, "stdio") && !listen)
		listen = "127.0.0.1:8000";
	if (token_file && !listen)
		util_usage_error(synopsis, "--token-file is for HTTP (--listen)");

	struct conf *c = conf_open(conf_path);
	char *bindir = util_exe_dir();
	signal(SIGPIPE, SIG_IGN);
	int sigfd = proc_stop_signals();
	if (sigfd < 0)
		util_die(EXIT_IO, "signalfd: %s", strerror(errno));

	S.loop = loop_new();
	/* The tools get the file we read, so they see the same policy. */
	S.mcp = mcp_new(S.loop, c, c->path, bindir);
	loop_watch(S.loop, sigfd, POLLIN, on_signal, NULL);
	if (listen) {
		S.status = serve_http(S.loop, c, listen, token_file);
	} else {
		S.cl = mcp_client_new(S.mcp, 0, NULL, send_line, NULL);
		proc_set_nonblock(STDIN_FILENO, true);
		rec_reader_init(&S.in, STDIN_FILENO, c->max_record_size);
		loop_watch(S.loop, STDIN_FILENO, POLLIN, on_stdin, NULL);
		struct stat st;
		if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
			loop_watch(S.loop, STDOUT_FILENO, 0, on_stdout_gone, NULL);
		util_warn("serving MCP on stdio (%s)", c->path);
		while (!S.done && !(S.in_eof && mcp_pending(S.mcp) == 0))
			if (loop_once(S.loop, -1) < 0) {
				util_warn("poll: %s", strerror(errno));
				S.status = EXIT_IO;
				break;
			}
		rec_reader_free(&S.in);
	}
	mcp_free(S.mcp);
	loop_free(S.loop);
	close(sigfd);
	free(bindir);
	conf_free(c);
	int cs = util_close_stdout();
	return S.status ? S.status : cs;
}
