/* mcptools: the MCP tools as data (names, titles, descriptions for
 * agents, input and output schemas), the light argument check done before
 * any work, and the views that turn pipeline records into tool results.
 * A tool's arguments are its own and the request fields req.h's table
 * says it takes; its input schema's request fields are made from that
 * table (names, types, which are required, descriptions) and the whole is
 * checked against its arguments at start-up.
 * mcptext.c writes the text a model reads (mcp_run_text, the verdict
 * table), the rest is mcptools.c's.
 *
 * Descriptions quote the configuration's limits, so an agent reads the
 * limits that actually apply.  All returned jv values belong to the caller.
 */
#ifndef SBX_MCPTOOLS_H
#define SBX_MCPTOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

#include "conf.h"

enum mcp_tool_kind {
	MCP_T_RUN,
	MCP_T_LANGUAGES,
	MCP_T_HISTORY,
	MCP_T_CHECK,
	MCP_T_INIT,
	MCP_T_EXEC,
	MCP_T_STOP,
	MCP_T_WRITE,
	MCP_T_READ,
	MCP_T_LIST,
	MCP_T_INSTALL,
	MCP_T_CELL,
	MCP_T_PSTART,
	MCP_T_PREAD,
	MCP_T_PWRITE,
	MCP_T_PSIGNAL,
	MCP_T_PLIST,
	MCP_T_POPEN,
	MCP_T_PCLOSE,
	MCP_T_CKPT,
	MCP_T_RESTORE,
	MCP_T_FORK,
	MCP_T_CKLIST,
	MCP_T_CKDELETE,
	MCP_T_N /* not a tool: how many kinds there are */
};

struct mcp_tool {
	const char *name;
	enum mcp_tool_kind kind;
};

const struct mcp_tool *mcp_tool_find(const char *name);
/* Every tool's name, ", " between them, for --help (static). */
const char *mcp_tool_names(void);
/* The tools/list array; host_note: what this host does not enforce, a
 * sentence for the descriptions of the tools that run ("" if all holds). */
jv mcp_tools_list(const struct conf *c, const char *workspace_note, const char *host_note);
/* Check args (borrowed, an object) against the tool's input schema: known
 * keys only, required keys present, JSON types right.  False with why in
 * err. */
bool mcp_tool_check_args(const struct mcp_tool *t, jv args, char *err, size_t errlen);
/* Whether a call of the tool may be a task (execution.taskSupport
 * "optional"): the ones that run a program. */
bool mcp_tool_tasks(const struct mcp_tool *t);
/* A pipeline result (consumed) as a run tool's structured result: the
 * record's fields an agent uses, the artifacts' resources; each stream cut
 * to max_output bytes (head and tail) unless max_output < 0. */
jv mcp_run_view(jv result, double max_output);
/* A stream's text (consumed) cut to at most max bytes: its head and tail
 * with the contract's marker between them, at UTF-8 character
 * boundaries; total: every byte the program wrote. */
jv mcp_cut_stream(jv str, size_t max, double total);
/* The result's text block, for a model to read (view borrowed): a status
 * line, the error, what this host did not enforce, the compiler's
 * messages, the kernel, each stream's head and tail up to text_output
 * bytes, the files, the verdict table.  output_limit: the most a call may
 * ask for with max_output, said where output was cut. */
jv mcp_run_text(jv view, size_t text_output, uint64_t output_limit);
/* The content blocks for the files a run made (result borrowed): raster
 * images as image blocks when their base64 takes at most image_max bytes,
 * else a copy scaled down to that (thumb.h, made as thumb_uid, -1: as we
 * are) and the whole as a file; other
 * files as resource_links into the session, or, for a stateless run,
 * embedded resources (sbx://run/ID/PATH).  Each image's entry in the
 * view's artifacts gets "shown": how it came. */
jv mcp_run_blocks(jv result, jv *view, size_t image_max, int64_t thumb_uid);
/* A judged result's verdict and tests as a table, for people (result
 * borrowed). */
jv mcp_verdict_table(jv result);
/* list_supported_languages' result from the configuration and sbx-run
 * --check's "languages" (consumed). */
jv mcp_languages_view(const struct conf *c, jv checked, const char *backend);

#endif
