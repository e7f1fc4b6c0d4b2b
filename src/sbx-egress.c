/* sbx-egress UID PARENT BYTES CONNS RATE HOST...: the proxy of one sandbox
 * with an allow-list (lib/sandbox/egress.h),
 * run by sbx-run with the listening socket as fd 3 and the pipe for its
 * connections' records as fd 4; not a tool.
 *
 * Theory of operation: started from a fresh exec, it holds nothing of the
 * supervisor but that socket.  As root (UID >= 0) it first becomes UID,
 * with no supplementary groups; the parent-death signal, which a change of
 * ids clears, is then set again, and if PARENT (sbx-run) is already gone
 * it ends at once.  It then serves fd 3 for the HOSTs (host patterns)
 * until sbx-run stops it (egress_stop) or dies, its run's connections
 * moving at most BYTES both ways (egress_bytes), CONNS connections
 * (egress_connections), RATE bytes a second (egress_rate, 0: no bound).
 *
 * Exit status: 2 if misused; otherwise it does not end by itself.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress.h"
#include "limit.h"
#include "util.h"

int main(int argc, char **argv)
{
	util_init(argv[0]);
	int64_t uid, parent, bytes, conns, rate;
	int type = 0;
	socklen_t tl = sizeof type;
	/* the bounds as the limit table has them (limit.h) */
	const struct limit_def *lb = &limit_defs[LIM_egress_bytes], *lc = &limit_defs[LIM_egress_conns],
			       *lr = &limit_defs[LIM_egress_rate];
	if (argc < 7 || !util_parse_i64(argv[1], -1, 0x7fffffff, &uid) || !util_parse_i64(argv[2], 1, 0x7fffffff, &parent) ||
	    !util_parse_i64(argv[3], (int64_t)lb->min, (int64_t)lb->max, &bytes) ||
	    !util_parse_i64(argv[4], (int64_t)lc->min, (int64_t)lc->max, &conns) ||
	    !util_parse_i64(argv[5], (int64_t)lr->min, (int64_t)lr->max, &rate) ||
	    getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM || fcntl(4, F_GETFD) < 0) {
		fprintf(stderr, "usage: sbx-egress UID PARENT BYTES CONNS RATE HOST... (run by sbx-run, with a listening "
				"socket as fd 3 and a pipe as fd 4; the numbers within the limit table's egress_ rows)\n");
		return 2;
	}
	if (uid >= 0 && (setgroups(0, NULL) < 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
			 setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0))
		util_die(1, "cannot become uid %lld", (long long)uid);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != (pid_t)parent)
		return 0;
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	struct egress_bounds b = { (uint64_t)bytes, (uint64_t)conns, (uint64_t)rate };
	egress_serve(3, 4, argv + 6, &b);
}
