// Live updates of the pending approvals: the page polls the pending ids
// and reloads when they change, unless the admin is typing a reason. The
// console's only script; the Content-Security-Policy allows no other.
'use strict';
(function () {
  const body = document.body;
  if (body.dataset.live !== 'approvals') return;
  const shown = body.dataset.pending || '';
  const status = document.getElementById('live');
  async function poll() {
    try {
      const r = await fetch('/console/approvals.json', { credentials: 'same-origin', cache: 'no-store' });
      if (r.status === 401) { location.href = '/console/login?expired=1'; return; }
      if (r.ok) {
        const j = await r.json();
        if (j.pending.join(',') !== shown) {
          const typing = Array.from(document.querySelectorAll('input[name=reason]')).some((i) => i.value !== '');
          if (!typing) { location.reload(); return; }
          if (status) status.textContent = 'The pending list has changed: reload to see it.';
        }
      }
    } catch (e) { /* the server may be restarting: try again */ }
    setTimeout(poll, 1500);
  }
  setTimeout(poll, 1500);
})();
