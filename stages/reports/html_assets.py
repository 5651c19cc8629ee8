"""The inline CSS and script of `report.html` (`html.py` writes them into the page; the file has no external assets).

The script builds the case table from the JSON the page embeds: one line per
result, a score chip per metric, 50 rows a page, sorted by a column header and
each row's reasons opened under it. Headers and row toggles are buttons, so the
table works from the keyboard (Tab, then Enter or Space) and says its state to
assistive technology (`aria-sort`, `aria-expanded`).
"""

from __future__ import annotations

__all__ = ["PAGE_CSS", "PAGE_JS"]

# Nothing may be wider than the viewport: tables have a fixed layout at 100% width and every
# cell wraps long reasons, ids and JSON (overflow-wrap:anywhere) instead of spilling over.
PAGE_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1b1f24;max-width:1400px;overflow-wrap:anywhere}
h1{margin:0 0 4px}h2{margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;table-layout:fixed;width:100%}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere;word-break:break-word}
code,pre{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}svg{max-width:100%;height:auto}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:4px 12px;border-radius:6px;font-weight:700;color:#fff}
.PASS{background:#1a7f37}.FAIL{background:#cf222e}.INTERRUPTED{background:#9a6700}.ok{color:#1a7f37}.bad{color:#cf222e;font-weight:600}
.reason{color:#57606a;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
.charts{display:flex;flex-wrap:wrap;gap:24px}.chart{border:1px solid #d0d7de;border-radius:6px;padding:8px}
#cases th{cursor:pointer;user-select:none}#cases th.sorted-asc:after{content:" ▲"}#cases th.sorted-desc:after{content:" ▼"}
#cases th button.sort{font:inherit;color:inherit;background:none;border:0;padding:0;margin:0;cursor:pointer;text-align:left;overflow-wrap:anywhere;word-break:break-word}
#cases button:focus-visible{outline:2px solid #0969da;outline-offset:1px}
#cases button.expand{border:0;background:none;padding:0 2px;margin-right:2px;cursor:pointer;color:#57606a;font-size:11px}
#cases button.expand[aria-expanded=true]{transform:rotate(90deg)}
#cases{font-size:13px;line-height:1.3}#cases td,#cases th{padding:2px 6px}#cases tbody tr[data-case]{cursor:pointer}
#cases td.clip{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}#cases tr.why td{background:#f6f8fa}
.chip{display:inline-block;min-width:4.2em;text-align:center;border-radius:9px;padding:0 6px;font-size:12px;font-variant-numeric:tabular-nums}
.chip.pass{background:#dafbe1;color:#1a7f37}.chip.fail{background:#ffebe9;color:#cf222e;font-weight:600}.chip.none{background:#eaeef2;color:#57606a}
.pager{display:flex;gap:10px;align-items:center}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}
.muted{color:#57606a}
.warn{color:#9a6700;font-weight:600}.reason code,#checks code,#run-errors code{background:#eaeef2;border-radius:4px;padding:0 3px}
"""

PAGE_JS = r"""
(function(){
  var data = JSON.parse(document.getElementById('case-data').textContent);
  // Text shown as report.md shows it (Python's `inert_text.visible`): a control character as \xNN, an invisible one (a
  // bidirectional override, a zero-width space) as \u{NNNN}, a backslash of the text before such a form doubled.
  var SHOWN = new RegExp('(\\\\+)(?=x[0-9a-fA-F]{2}|u\\{[0-9a-fA-F]+\\})|(\\\\*)(@CONTROL@)|(\\\\*)(@INVISIBLE@)', 'gu');
  function hex(c, n){ var h = c.codePointAt(0).toString(16); while(h.length < n){ h = '0' + h; } return h; }
  function shown(text){
    return String(text).replace(SHOWN, function(m, run, b1, ctl, b2, inv){
      if(run !== undefined) return run + run;
      if(ctl !== undefined) return b1 + b1 + '\\x' + hex(ctl, 2);
      return b2 + b2 + '\\u{' + hex(inv, 4) + '}';
    });
  }
  var cols = ['case','trial','status'].concat(data.metrics);
  var table = document.getElementById('cases');
  var head = table.tHead.rows[0];
  var body = table.tBodies[0];
  var SIZE = 50, rows = data.rows, page = 1;
  function pages(){ return Math.max(1, Math.ceil(rows.length / SIZE)); }
  function cellValue(row, col){
    if(col==='case') return row.case_id;
    if(col==='trial') return row.trial;
    if(col==='status') return row.status;
    var s = row.scores[col]; return (s && s.value!==null && s.value!==undefined) ? s.value : -1;
  }
  // Python's f"{x:.{nd}f}", which report.md and the terminal print: the exact binary value rounded, an exact tie to even.
  // toFixed rounds the exact value too, but a tie away from zero (0.0625: "0.063" where report.md says "0.062"). A tie
  // shows in the exact expansion toFixed(100) gives (a double near a tie at 20 places or fewer is at least 1e-58 off it,
  // so none looks like one within 100 digits), and is rounded to even here.
  function fixed(x, nd){
    x = Number(x);
    if(x !== x) return 'nan';
    var sign = (x < 0 || Object.is(x, -0)) ? '-' : '', a = Math.abs(x);
    if(a === Infinity) return sign + 'inf';
    if(a >= 1e21) return sign + BigInt(a).toString() + (nd ? '.' + '0'.repeat(nd) : '');  // (toFixed writes "1e+21"; such a double is whole)
    var exact = a.toFixed(100), dot = exact.indexOf('.'), out = a.toFixed(nd);
    if(/^50*$/.test(exact.slice(dot + 1 + nd))){
      var kept = nd ? exact.slice(0, dot + 1 + nd) : exact.slice(0, dot);
      if(Number(kept.charAt(kept.length - 1)) % 2 === 0) out = kept;
    }
    return sign + out;
  }
  function el(tag, cls, text){ var x=document.createElement(tag); if(cls){x.className=cls;} if(text!==undefined){x.textContent=text;} return x; }
  // `text` shown into `parent`, each `x` in backticks (on one line) as a <code> element, as report.md shows it. Text
  // nodes and elements holding text only: nothing of a reason is ever parsed as HTML.
  var CODE = /`([^`\r\n]+)`/g;
  function withCode(parent, text){
    var s = shown(text), at = 0, m;
    CODE.lastIndex = 0;
    while((m = CODE.exec(s)) !== null){
      if(m.index > at){ parent.appendChild(document.createTextNode(s.slice(at, m.index))); }
      parent.appendChild(el('code', '', m[1]));
      at = CODE.lastIndex;
    }
    if(at < s.length){ parent.appendChild(document.createTextNode(s.slice(at))); }
    return parent;
  }
  // One line per result: a chip per metric, coloured by its verdict, its reason on hover; a click on the row (or Enter on
  // its ▸ button) shows every reason.
  function render(){
    var frag = document.createDocumentFragment();
    page = Math.min(Math.max(1, page), pages());
    rows.slice((page-1)*SIZE, page*SIZE).forEach(function(r, n){
      var tr = el('tr'); tr.setAttribute('data-case', r.case_id);
      var why = el('tr', 'why'); why.hidden = true; why.id = 'why-' + n; var wtd = el('td'); wtd.colSpan = cols.length; why.appendChild(wtd);
      var toggle = el('button', 'expand', '▸'); toggle.type = 'button'; toggle.title = 'all reasons';
      toggle.setAttribute('aria-expanded', 'false'); toggle.setAttribute('aria-controls', why.id); toggle.setAttribute('aria-label', 'reasons of ' + shown(r.case_id));
      if(r.error){ wtd.appendChild(withCode(el('div', 'bad reason'), r.error)); }
      // The agent's run ended in an error (`metadata.run_error`): the result is scored as recorded, and marked.
      if(r.run_error){ var ran = el('div', 'warn reason'); ran.appendChild(el('b', '', 'run ended in an error: ')); wtd.appendChild(withCode(ran, r.run_error));
                       tr.setAttribute('data-run-error', ''); }
      cols.forEach(function(c){
        var td = el('td');
        if(c==='case'){ td.appendChild(toggle); td.appendChild(document.createTextNode(shown(r.case_id))); td.className='clip'; td.title=shown(r.case_id); }
        else if(c==='trial'){ td.textContent = r.trial; td.className='num'; }
        else if(c==='status'){ td.textContent = shown(r.status) + (r.run_error ? ' · run error' : ''); td.className = 'clip' + (r.status!=='ok' ? ' bad' : r.run_error ? ' warn' : '');
                               td.title = shown(r.error || (r.run_error ? 'run ended in an error: ' + r.run_error : r.status)); }
        else { var s = r.scores[c];
          if(!s){ td.textContent='—'; }
          else { var word = s.passed===true ? 'pass' : s.passed===false ? 'fail' : 'none';
                 var chip = el('span', 'chip '+word, (s.value===null || s.value===undefined) ? 'n/a' : fixed(s.value, 3));
                 chip.title = shown(c + ': ' + s.reason); td.appendChild(chip);
                 var line = el('div'); line.appendChild(el('b', '', shown(c) + ' ')); line.appendChild(withCode(el('span', 'reason'), s.reason)); wtd.appendChild(line); } }
        tr.appendChild(td);
      });
      // The button's click (a mouse, Enter or Space) reaches the row's handler: one toggle either way.
      tr.addEventListener('click', function(){ why.hidden = !why.hidden; toggle.setAttribute('aria-expanded', String(!why.hidden)); });
      frag.appendChild(tr); frag.appendChild(why);
    });
    body.innerHTML=''; body.appendChild(frag);
    document.getElementById('page-no').textContent = String(page);
    document.getElementById('pages').textContent = String(pages());
    document.getElementById('prev-page').disabled = page <= 1;
    document.getElementById('next-page').disabled = page >= pages();
    table.setAttribute('data-page', String(page));
  }
  var state = {col:null, desc:false};
  // Text in natural order (case 2-0 before 10-0) exactly as `tracejudge view` sorts case ids (`case_query.natural_key`:
  // a digit run as its length in 3 digits then its digits, compared by code point, the id itself breaking ties), not
  // by the browser's locale, which folds case and ranks punctuation and accents its own way.
  function natKey(s){ return String(s).replace(/[0-9]+/g, function(d){ d = d.replace(/^0+/, '') || '0';
    return ('00' + Math.min(d.length, 999)).slice(-3) + d; }); }
  function byCodePoint(x, y){ var i=0, j=0;
    while(i<x.length && j<y.length){ var a=x.codePointAt(i), b=y.codePointAt(j);
      if(a!==b){ return a<b ? -1 : 1; } i += a>0xFFFF ? 2 : 1; j += b>0xFFFF ? 2 : 1; }
    return (i<x.length ? 1 : 0) - (j<y.length ? 1 : 0); }
  function natural(x, y){ return byCodePoint(natKey(x), natKey(y)) || byCodePoint(String(x), String(y)); }
  function sortBy(col, desc){
    rows = data.rows.slice();
    rows.sort(function(a,b){ var x=cellValue(a,col), y=cellValue(b,col);
      var r = (typeof x==='number' && typeof y==='number') ? x-y : natural(x, y);
      if(r===0){ r = natural(a.case_id, b.case_id) || (a.trial-b.trial); return r; }
      return desc ? -r : r; });
    state = {col:col, desc:desc};
    for(var i=0;i<head.cells.length;i++){
      var on = cols[i]===col;
      head.cells[i].className = on ? (desc?'sorted-desc':'sorted-asc') : '';
      if(on){ head.cells[i].setAttribute('aria-sort', desc ? 'descending' : 'ascending'); } else { head.cells[i].removeAttribute('aria-sort'); }
    }
    table.setAttribute('data-sorted', (desc?'-':'')+col);
    page = 1; render();
  }
  // The header's button takes the focus and Enter / Space; its click reaches the cell's handler, as a click beside it does.
  for(var i=0;i<head.cells.length;i++){ (function(c){ head.cells[i].addEventListener('click', function(){
      sortBy(c, state.col===c ? !state.desc : false); }); })(cols[i]); }
  document.getElementById('prev-page').addEventListener('click', function(){ page -= 1; render(); });
  document.getElementById('next-page').addEventListener('click', function(){ page += 1; render(); });
  // The fragment: `sort=<column>` (`sort=-<column>` descending) and `page=<n>`, joined by `&`, each part decoded on its own.
  // A part that is not valid percent-encoding (`#%`, a link cut mid-escape) is ignored: the default view, not an empty table.
  var given = Object.create(null);
  (location.hash || '').replace(/^#/, '').split('&').forEach(function(part){
    var text; try { text = decodeURIComponent(part); } catch(e){ return; }
    var eq = text.indexOf('='); if(eq > 0){ given[text.slice(0, eq)] = text.slice(eq + 1); }
  });
  var sort = given.sort || '';
  if(sort.charAt(0)==='-' && cols.indexOf(sort.slice(1))>=0){ sortBy(sort.slice(1), true); }
  else if(cols.indexOf(sort)>=0){ sortBy(sort, false); }
  if(/^\d+$/.test(given.page || '')){ page = parseInt(given.page, 10); }
  render();
  document.getElementById('rows-shown').textContent = String(data.rows.length);
})();
"""


def _js_class(pattern: str) -> str:
    """A character class of `inert_text` as the text of a JS string giving the same class to `new RegExp(…, 'u')`."""
    return "".join(c if c in "[]-" else f"\\\\u{{{ord(c):x}}}" for c in pattern)


def _with_classes(js: str) -> str:
    from tracejudge.core.inert_text import CONTROL, INVISIBLE

    return js.replace("@CONTROL@", _js_class(CONTROL.pattern)).replace("@INVISIBLE@", _js_class(INVISIBLE.pattern))


PAGE_JS = _with_classes(PAGE_JS)
