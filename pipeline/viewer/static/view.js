// tracejudge view: follow a run that is still being written. The page polls the run's result count
// and, when it changes, reloads the content of <main id="live"> from the same URL (no full reload,
// so scroll position is kept). The HTML fetched is the server's own escaped page.
// What the reader is doing survives the reload: a filter form being edited (or holding the focus) is
// kept as it is, and the rows whose reasons were opened (▸) stay open.
(function () {
  var body = document.body;
  var rid = body.getAttribute('data-live-run');
  var state = document.getElementById('live-state');
  if (!rid) return;
  var last = null;
  var busy = false;
  function edited(form) {
    // Whether the reader changed or is in the form: its values differ from what the page was served with.
    if (form.contains(document.activeElement)) return true;
    return Array.prototype.some.call(form.elements, function (el) {
      if (el.type === 'checkbox' || el.type === 'radio') return el.checked !== el.defaultChecked;
      if (el.tagName === 'SELECT') return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
      return el.value !== undefined && el.defaultValue !== undefined && el.value !== el.defaultValue;
    });
  }
  function openRows(main) {
    return Array.prototype.map.call(main.querySelectorAll('tr.why:not([hidden])'), function (why) {
      var row = why.previousElementSibling;
      return row ? [row.getAttribute('data-case'), row.getAttribute('data-trial')] : null;
    }).filter(Boolean);
  }
  function reopen(main, keys) {
    Array.prototype.forEach.call(main.querySelectorAll('tr[data-case]'), function (row) {
      var hit = keys.some(function (k) { return k[0] === row.getAttribute('data-case') && k[1] === row.getAttribute('data-trial'); });
      var why = row.nextElementSibling;
      var btn = row.querySelector('button.expand');
      if (hit && why && why.classList.contains('why')) { why.hidden = false; if (btn) btn.setAttribute('aria-expanded', 'true'); }
    });
  }
  function swap() {
    return fetch(location.href, {headers: {'Accept': 'text/html'}}).then(function (r) { return r.text(); }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, 'text/html');
      var fresh = doc.getElementById('live');
      var main = document.getElementById('live');
      if (!fresh || !main) return;
      var keys = openRows(main);
      var nodes = Array.prototype.slice.call(fresh.childNodes);
      var form = main.querySelector('form#filters');
      var at = nodes.indexOf(fresh.querySelector('form#filters'));
      if (form && form.parentNode === main && at >= 0 && edited(form)) {
        // The form being edited stays where it is (taken out of the page, even for a moment, it would lose the
        // focus); everything around it is the fresh page's.
        Array.prototype.slice.call(main.childNodes).forEach(function (n) { if (n !== form) main.removeChild(n); });
        nodes.slice(0, at).forEach(function (n) { main.insertBefore(n, form); });
        nodes.slice(at + 1).forEach(function (n) { main.appendChild(n); });
      } else {
        main.replaceChildren.apply(main, nodes);
      }
      reopen(main, keys);
    });
  }
  // Every 2 s while the run is written; every 30 s once it is complete or gone, or has not grown for a minute (an
  // interrupted run is never complete: a resume, or a new run in the same directory, is still seen, without a request
  // every 2 s from each page left open on it); none while the tab is hidden: it polls at once when shown again.
  // `data-poll-ms` says which, for the reader's tools and the tests.
  var FOLLOW_MS = 2000, SETTLED_MS = 30000, STILL_MS = 60000;
  var timer = null;
  var grewAt = Date.now();
  function schedule(ms) {
    clearTimeout(timer);
    body.setAttribute('data-poll-ms', String(ms));
    timer = setTimeout(poll, ms);
  }
  function poll() {
    if (busy) return;
    if (document.hidden) { body.setAttribute('data-poll-ms', 'paused'); return; }
    busy = true;
    var next = FOLLOW_MS;
    fetch('/api/run/' + encodeURIComponent(rid) + '/state').then(function (r) { return r.json(); }).then(function (s) {
      var grew = last !== null && s.results !== last;
      last = s.results;
      state.textContent = s.gone ? s.gone : s.complete ? '' : 'following the run: ' + s.results + ' results';
      body.setAttribute('data-results', String(s.results));
      if (grew) grewAt = Date.now();
      if ((s.complete || s.gone || Date.now() - grewAt >= STILL_MS) && !grew) next = SETTLED_MS;
      return grew ? swap() : null;
    }).catch(function () { state.textContent = 'viewer not reachable'; }).then(function () { busy = false; schedule(next); });
  }
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden) { clearTimeout(timer); poll(); }
  });
  poll();
})();
// Cases table: the ▸ button of a row shows or hides the row under it, which holds every reason in full.
document.addEventListener('click', function (ev) {
  var btn = ev.target.closest ? ev.target.closest('button.expand') : null;
  if (!btn) return;
  var row = btn.closest('tr');
  var why = row && row.nextElementSibling;
  if (!why || !why.classList.contains('why')) return;
  why.hidden = !why.hidden;
  btn.setAttribute('aria-expanded', String(!why.hidden));
});
// Case page: its "Cases" link goes back to the list as the reader left it in this tab (filters, sort, page). The list
// keeps its query in the tab's sessionStorage; no referrer is sent (the server asks for none), and nothing leaves the tab.
(function () {
  try {
    var here = location.pathname;
    if (/^\/run\/[^/]+\/cases$/.test(here)) { sessionStorage.setItem('cases:' + here, location.search); return; }
    Array.prototype.forEach.call(document.querySelectorAll('header nav a'), function (a) {
      var path = new URL(a.href, location.href).pathname;
      if (!/^\/run\/[^/]+\/cases$/.test(path) || a.search) return;
      var kept = sessionStorage.getItem('cases:' + path);
      if (kept && kept.charAt(0) === '?') a.setAttribute('href', path + kept);
    });
  } catch (e) { /* storage refused (a private window's quota): the link stays the plain list */ }
})();
// Case page: a long transcript or expected-vs-actual table shows its first part; the rest (`.rest[data-src]`, an HTML
// fragment of the server's own escaped page) is fetched in its place when its button is pressed, or when a link points
// into it (a judge's question about call 4,000, a URL with that #call): everything left out is fetched, then shown.
(function () {
  function load(el) {
    if (el.getAttribute('data-loading')) return el.loading;
    el.setAttribute('data-loading', '1');
    el.loading = fetch(el.getAttribute('data-src')).then(function (r) {
      if (!r.ok) throw new Error(String(r.status));
      return r.text();
    }).then(function (html) {
      el.insertAdjacentHTML('beforebegin', html);
      el.remove();
    }).catch(function () {
      el.removeAttribute('data-loading');
      var b = el.querySelector('button');
      if (b) b.textContent = 'the rest could not be loaded: press to try again';
    });
    return el.loading;
  }
  function reveal(id, followed) {
    var rests = document.querySelectorAll('.rest[data-src]');
    if (!id || document.getElementById(id) || !rests.length) return false;
    Promise.all(Array.prototype.map.call(rests, load)).then(function () {
      var el = document.getElementById(id);
      if (!el) return;
      // (a link followed now navigates to it, which marks it :target as any link does; the page's own URL, scrolled to)
      if (followed) location.hash = id; else el.scrollIntoView();
    });
    return true;
  }
  document.addEventListener('click', function (ev) {
    var btn = ev.target.closest ? ev.target.closest('.rest button.load-rest') : null;
    if (btn) { load(btn.closest('.rest')); return; }
    var a = ev.target.closest ? ev.target.closest('a[href^="#"]') : null;
    if (a && reveal(decodeURIComponent(a.getAttribute('href').slice(1)), true)) ev.preventDefault();
  });
  if (location.hash) reveal(decodeURIComponent(location.hash.slice(1)), false);
})();
// Keys, for reading case after case without the mouse (never while typing in a field, nor with a modifier held):
// on the Cases table j / k move to the next / previous row (its case link takes the focus: Enter opens it, and the
// Case page keeps the list's filters); on a Case page j / k open the next / previous case of that list, n / p its next /
// previous failed one, and u goes back to the list's page holding it.
document.addEventListener('keydown', function (ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
  var el = ev.target;
  if (el && (el.isContentEditable || /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(el.tagName))) return;
  var key = ev.key;
  var link = {j: 'next-case', k: 'prev-case', n: 'next-failed', p: 'prev-failed', u: 'to-list'}[key];
  if (!link) return;
  var go = document.getElementById(link);
  if (go && go.tagName === 'A') { ev.preventDefault(); location.href = go.href; return; }
  if (key !== 'j' && key !== 'k') return;
  var links = Array.prototype.slice.call(document.querySelectorAll('#cases a.case-link'));
  if (!links.length) return;
  var at = links.indexOf(document.activeElement);
  var next = at < 0 ? (key === 'j' ? 0 : links.length - 1) : Math.max(0, Math.min(links.length - 1, at + (key === 'j' ? 1 : -1)));
  ev.preventDefault();
  links[next].focus();
  links[next].scrollIntoView({block: 'nearest'});
});
// Back on the list from a case (its ↑ list, the keys, the browser's back button): the row of the case just read has
// the focus, so the reader goes on from where they were (j / k from there), not from the top of the page.
(function () {
  try {
    var params = new URLSearchParams(location.search);
    var cases = location.pathname.replace(/\/case$/, '/cases');
    if (document.getElementById('case-nav') && params.get('id') !== null) {
      sessionStorage.setItem('read:' + cases, JSON.stringify([params.get('id'), params.get('trial') || '0']));
      return;
    }
    if (!/^\/run\/[^/]+\/cases$/.test(location.pathname)) return;
    var read = JSON.parse(sessionStorage.getItem('read:' + location.pathname) || 'null');
    sessionStorage.removeItem('read:' + location.pathname);
    if (!read) return;
    var row = Array.prototype.find.call(document.querySelectorAll('#cases tr[data-case]'), function (tr) {
      return tr.getAttribute('data-case') === read[0] && tr.getAttribute('data-trial') === read[1];
    });
    var link = row && row.querySelector('a.case-link');
    if (link) { link.focus({preventScroll: true}); link.scrollIntoView({block: 'center'}); }
  } catch (e) { /* storage refused: the list opens at its top */ }
})();
