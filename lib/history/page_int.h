/* page_int: what the parts of page share, and nobody else (page.c the
 * buffer, values, frame, rows, runs list and sessions; page_overview.c
 * the overview; page_run.c one run).  Everything here writes through
 * page_text and its kin (page.h): the one place hostile text is escaped.
 */
#ifndef SBX_PAGE_INT_H
#define SBX_PAGE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "page.h"
#include "status.h"

/* Values out of rows and records (o borrowed; any kind): a string, or
 * NULL; page_sval_n with its length (a NUL inside is shown, as ␀, not an
 * end); a finite number, or false. */
const char *page_sval(jv o, const char *key);
const char *page_sval_n(jv o, const char *key, size_t *n);
bool page_nval(jv o, const char *key, double *d);
/* Text of at most max bytes (cut at a character), and a note of the rest. */
void page_text_capped(struct page *p, const char *s, size_t n, size_t max);
/* o's number with its unit, its bytes in human units, or a muted dash. */
void page_put_num(struct page *p, jv o, const char *key, const char *unit);
void page_put_bytes(struct page *p, jv o, const char *key);
/* A status or verdict as a badge in its tone (status.h). */
void page_put_status(struct page *p, const char *status);
/* The record's own id (a string, or a number), as text. */
void page_put_id(struct page *p, jv row);

/* A table of runs: page_runs_head opens it (id: the table's), then one
 * row per hist_query row through page_on_run (arg: a page_rows_ctx,
 * which counts them and keeps the newest history_id), then
 * "</tbody></table>". */
struct page_rows_ctx {
	struct page *p;
	int64_t n, max_id;
};
void page_runs_head(struct page *p, const char *id);
bool page_on_run(jv row, void *arg);

/* Stylesheet rules that only C can write (made from a table), which the
 * build appends to dash.css's to make page_css (Makefile,
 * build/gen/dash_assets.c): one rule per status and verdict (status.h),
 * in its tone's colours, for page_put_status's badges. */
#define TONE_ok "background:#dcf2e1;color:var(--ok)"
#define TONE_bad "background:#fbe1e1;color:var(--bad)"
#define TONE_warn "background:#fbeed9;color:var(--warn)"
#define TONE_note "background:#ecebf5;color:#5b4a9e"
#define PAGE_BADGE_CSS_(n, x, as, tone) ".st-" #n "{" TONE_##tone "}"
#define PAGE_CSS_FROM_C STATUSES(PAGE_BADGE_CSS_) VERDICTS(PAGE_BADGE_CSS_)

#endif
