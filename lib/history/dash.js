// The dashboard's script, served as /static/dash.js; the build embeds it
// in the library as page_js (lib/history/page.h; Makefile).  The pages
// carry no inline script: the Content-Security-Policy forbids it.
//
// Live updates: poll for runs logged after the newest one shown and add
// their rows, as the server renders them (page_rows, the same code as
// every page's rows): the script never builds a row of its own.
'use strict';
(function () {
  const live = document.getElementById('live');
  const body = document.querySelector('#recent tbody');
  if (!live || !body) return;
  let after = Number(live.dataset.after) || 0;
  async function poll() {
    try {
      const r = await fetch('/runs.html?after=' + after, { credentials: 'same-origin', headers: { Accept: 'text/html' } });
      if (r.ok) {
        // a template's content is inert: nothing in it loads or runs
        const t = document.createElement('template');
        t.innerHTML = await r.text();
        for (const tr of [...t.content.querySelectorAll('tr')].reverse()) {
          tr.classList.add('new');
          body.insertBefore(tr, body.firstChild);
          after = Math.max(after, Number(tr.dataset.id) || 0);
          while (body.rows.length > 200) body.deleteRow(-1);
        }
        live.dataset.after = String(after);
      }
    } catch (e) { /* the server went away: try again later */ }
    setTimeout(poll, 2000);
  }
  setTimeout(poll, 2000);
})();
