/* page: the history as HTML, for people (sbx-mcp's dashboard and
 * sbx-history --format html).
 *
 * Everything read from the history is hostile: code, output, ids, error
 * messages and languages were all written by, or about, untrusted programs.
 * It reaches the page only through page_text and page_attr, which escape
 * HTML's five characters, show control characters as visible symbols
 * (ESC as U+241B, so an ANSI sequence is text, not a terminal command),
 * and replace invalid UTF-8.  Links are built from numbers and from
 * percent-encoded values only.  The pages hold no inline script and no
 * inline style attribute: the server sends a Content-Security-Policy that
 * forbids both, and a page that works under it keeps working (a static
 * file gets its stylesheet inline in a <style> element instead).
 *
 * A struct page is a growing buffer the caller owns.
 */
#ifndef SBX_PAGE_H
#define SBX_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "hist.h"

struct page {
	char *buf;
	size_t len, cap;
	bool standalone; /* one self-contained file: inline stylesheet, no script, no links */
	const char *who; /* the signed-in principal's label for the header, or NULL */
};

void page_init(struct page *p, bool standalone);
void page_free(struct page *p);
/* Trusted text (markup we write). */
void page_raw(struct page *p, const char *s);
void page_printf(struct page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Untrusted text, escaped for element content or an attribute value. */
void page_text(struct page *p, const char *s, size_t n);
void page_str(struct page *p, const char *s);
/* Percent-encoded, for a query value. */
void page_url(struct page *p, const char *s);

/* The stylesheet and the live-update script, NUL-terminated: the files
 * lib/history/dash.css and dash.js, embedded by the build (Makefile;
 * served as /static/dash.css and /static/dash.js; the script adds
 * page_rows's rows). */
extern const char page_css[];
extern const char page_js[];

/* The views of the dashboard (range: "1h", "24h", "7d", "30d" or "all").
 * f's filters restrict every view (a token's own runs).  0, or -1 with
 * err. */
int page_overview(struct page *p, struct hist *h, const struct hist_filter *f, const char *range, char *err,
		  size_t errlen);
/* Runs newest first, PAGE_RUNS at a time; q: the query string's filters
 * (language, status, session, q, since, until, before) already parsed into
 * f, echoed into the form from the raw values in form[]. */
#define PAGE_RUNS 50
struct page_form {
	const char *language, *status, *session, *q, *since, *until;
};
int page_runs(struct page *p, struct hist *h, const struct hist_filter *f, const struct page_form *form, char *err,
	      size_t errlen);
/* One run; 0, 1 when there is no such run (for f), -1 with err. */
int page_run(struct page *p, struct hist *h, const struct hist_filter *f, int64_t history_id, char *err,
	     size_t errlen);
/* f's rows as the <tr> elements of the pages' run tables, newest first,
 * and nothing else: what the overview's script adds as runs are logged
 * (served as /runs.html?after=ID).  Rows, or -1 with err. */
int64_t page_rows(struct page *p, struct hist *h, const struct hist_filter *f, char *err, size_t errlen);
/* Sessions: live ones (live: sess_live's array, borrowed; jv_invalid()
 * for none known), then those the history (h; NULL: there is none yet)
 * has runs of, newest first. */
int page_sessions(struct page *p, struct hist *h, const struct hist_filter *f, jv live, char *err, size_t errlen);
/* The sign-in page (message: NULL, or why the last attempt failed). */
void page_login(struct page *p, const char *message);
/* Start and end of every page. */
void page_begin(struct page *p, const char *title, const char *nav);
void page_end(struct page *p);

/* A range's length in seconds (0 for "all"), or -1 if it is none of them. */
int64_t page_range_seconds(const char *range);

#endif
