// tracejudge view: follow a run that is still being written. The page polls the run's result count
// and, when it changes, reloads the content of <main id="live"> from the same URL (no full reload,
// so scroll position and focus are kept). The HTML fetched is the server's own escaped page.
(function () {
  var body = document.body;
  var rid = body.getAttribute('data-live-run');
  var state = document.getElementById('live-state');
  if (!rid) return;
  var last = null;
  var busy = false;
  function swap() {
    return fetch(location.href, {headers: {'Accept': 'text/html'}}).then(function (r) { return r.text(); }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, 'text/html');
      var fresh = doc.getElementById('live');
      var main = document.getElementById('live');
      if (fresh && main) { main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes)); }
    });
  }
  function poll() {
    if (busy) return;
    busy = true;
    fetch('/api/run/' + encodeURIComponent(rid) + '/state').then(function (r) { return r.json(); }).then(function (s) {
      var grew = last !== null && s.results !== last;
      last = s.results;
      state.textContent = s.complete ? '' : 'following the run: ' + s.results + ' results';
      body.setAttribute('data-results', String(s.results));
      return grew ? swap() : null;
    }).catch(function () { state.textContent = 'viewer not reachable'; }).then(function () { busy = false; });
  }
  poll();
  setInterval(poll, 2000);
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
