/* sbx-mcp: the MCP server for AI agents, over stdio.
 *
 * Theory of operation: the client writes JSON-RPC messages to our stdin,
 * one per line, and reads our answers and notifications from stdout, one
 * per line; nothing else ever goes to stdout, and logs go to stderr.  One
 * thread runs one poll loop (lib/loop): stdin, the sandbox pipeline's
 * pipes (lib/chain: sbx-validate | sbx-run | sbx-cap | sbx-log, started
 * on the first run and kept), helper processes (sbx-history, sbx-run
 * --check) and the session timer.  The protocol itself is lib/mcp; the
 * sessions lib/sess.  When the client closes stdin, or on SIGTERM/SIGINT,
 * running sandboxes are killed, sessions removed, and the server exits.
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
#include <unistd.h>

#include "conf.h"
#include "loop.h"
#include "mcp.h"
#include "proc.h"
#include "rec.h"
#include "util.h"

static const char synopsis[] = "usage: sbx-mcp [-c FILE]   (an MCP server on stdin/stdout)\n";

static void help(void)
{
	printf("%s\n"
	       "Serve the Model Context Protocol over stdio: AI clients (Claude Desktop, Cursor,\n"
	       "Claude Code, …) start it and call its tools: run_code, list_supported_languages,\n"
	       "get_execution_history, check_backend, sandbox_initialize, sandbox_exec,\n"
	       "sandbox_stop, write_file, read_file, list_files, install_packages.\n"
	       "\n"
	       "  -c, --config FILE  configuration file (also passed to the tools it runs)\n"
	       "  -h, --help         show this help\n"
	       "      --version      show the version\n"
	       "\n"
	       "Exit status: 0 the client closed the connection or a signal stopped the\n"
	       "server, 2 usage or configuration error, 3 input/output error.\n",
	       synopsis);
}

static struct {
	struct loop *loop;
	struct mcp *mcp;
	struct mcp_client *cl;
	struct rec_reader in;
	bool done, in_eof, out_failed;
	int status;
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

static void on_signal(struct loop *l, int fd, short rev, void *arg)
{
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
		util_warn("%s: stopping", strsignal((int)si.ssi_signo));
	S.done = true;
	(void)l;
	(void)rev;
	(void)arg;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL;
	static const struct option opts[] = {
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		default: util_common_option(o, argv, synopsis, help);
		}
	}
	if (optind < argc)
		util_usage_error(synopsis, "unexpected argument \"%s\"", argv[optind]);

	struct conf *c = conf_open(conf_path);
	char *bindir = util_exe_dir();
	signal(SIGPIPE, SIG_IGN);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	S.loop = loop_new();
	/* The tools get the file we read, so they see the same policy. */
	S.mcp = mcp_new(S.loop, c, c->path, bindir);
	S.cl = mcp_client_new(S.mcp, 0, send_line, NULL);
	proc_set_nonblock(STDIN_FILENO, true);
	rec_reader_init(&S.in, STDIN_FILENO, c->max_record_size);
	loop_watch(S.loop, STDIN_FILENO, POLLIN, on_stdin, NULL);
	loop_watch(S.loop, sigfd, POLLIN, on_signal, NULL);
	util_warn("serving MCP on stdio (%s)", c->path);
	while (!S.done && !(S.in_eof && mcp_pending(S.mcp) == 0))
		if (loop_once(S.loop, -1) < 0) {
			util_warn("poll: %s", strerror(errno));
			S.status = EXIT_IO;
			break;
		}
	mcp_free(S.mcp);
	rec_reader_free(&S.in);
	loop_free(S.loop);
	close(sigfd);
	free(bindir);
	conf_free(c);
	int cs = util_close_stdout();
	return S.status ? S.status : cs;
}
