// The HTML report's stylesheet and script, inlined into every page (see html.h). The script
// reads the JSON object of <script id="sonde-data"> and draws the flame graph (SVG), its
// tooltip and zoom, and re-renders the functions table for another thread or sort key. It uses
// DOM calls only (textContent, setAttribute), never HTML strings, so names need no escaping
// there. No external resource is loaded.
namespace sonde::report {

extern const char *const kHtmlStyle;
extern const char *const kHtmlScript;

const char *const kHtmlStyle = R"CSS(
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --head: #f3f5f8; --accent: #c2410c; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1400px; padding: 16px 24px 40px; color: var(--fg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 22px; margin: 4px 0; }
h1 .title { color: var(--muted); font-weight: normal; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.summary, .hint, footer { color: var(--muted); }
footer { margin-top: 32px; font-size: 12px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; }
th { background: var(--head); font-weight: 600; white-space: nowrap; }
th[data-key] { cursor: pointer; }
th.sorted::after { content: " \25BE"; }
th.sorted[data-key="name"]::after { content: " \25B4"; }
td.num { text-align: right; white-space: nowrap; }
td.name { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; word-break: break-all; }
#functions tbody tr:hover, #threads tbody tr:hover { background: #fff7ed; }
#warnings li { color: #9a3412; }
.controls { display: flex; gap: 12px; align-items: center; margin-bottom: 6px; }
#flame-details { color: var(--muted); font-size: 13px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
button { font: inherit; padding: 2px 10px; border: 1px solid var(--line); background: #fff; border-radius: 4px;
         cursor: pointer; }
button:hover { border-color: var(--accent); }
#flame { width: 100%; overflow-x: hidden; border: 1px solid var(--line); }
#flame-svg { display: block; font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
#flame-svg g.frame { cursor: pointer; }
#flame-svg g.frame rect { stroke: #fff; stroke-width: 0.5; }
#flame-svg g.frame:hover rect { stroke: #000; stroke-width: 1; }
#flame-svg g.ancestor rect { opacity: 0.55; }
#flame-svg text { pointer-events: none; fill: #1d2330; }
#flame-tooltip { position: fixed; z-index: 10; max-width: 520px; padding: 6px 9px; pointer-events: none;
                 background: #1d2330; color: #fff; border-radius: 4px; font-size: 12px; white-space: pre-line; }
#flame-tooltip strong { display: block; font-family: ui-monospace, "DejaVu Sans Mono", monospace;
                        word-break: break-all; }
#threads td.span { width: 320px; }
#threads .bar { height: 10px; background: #fb923c; border-radius: 2px; }
.plot { border: 1px solid var(--line); background: #fff; }
.plot .grid { stroke: #eceef2; }
.plot .tick, .plot .label { font-size: 11px; fill: var(--muted); }
.plot .mrc-line { fill: none; stroke: var(--accent); stroke-width: 2; }
pre { background: var(--head); padding: 8px; overflow-x: auto; }
)CSS";

const char *const kHtmlScript = R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('sonde-data').textContent);
  var SVGNS = 'http://www.w3.org/2000/svg';

  function fmtNs(ns) {
    if (ns < 1000) return ns + ' ns';
    if (ns < 1e6) return (ns / 1e3).toFixed(3) + ' us';
    if (ns < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function pct(part, whole) { return (whole > 0 ? 100 * part / whole : 0).toFixed(1) + '%'; }
  function grouped(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }

  // ---- flame graph ----------------------------------------------------------------------
  // nodes[i] = [parent, function, calls, total_ns, self_ns]; node 0 is all threads, function
  // -2 - t is thread t. Parents come before their children.
  var nodes = data.nodes, N = nodes.length, ROW = 18;
  var kids = [], x = new Float64Array(N), depth = new Int32Array(N), i;
  function label(i) {
    var f = nodes[i][1];
    if (f >= 0) return data.names[f];
    if (f === -1) return 'all threads';
    var t = data.threads[-2 - f];
    return (t.name ? t.name + ' ' : '') + '(thread ' + t.id + ')';
  }
  for (i = 0; i < N; ++i) kids.push([]);
  for (i = 1; i < N; ++i) kids[nodes[i][0]].push(i);
  for (i = 0; i < N; ++i) {
    kids[i].sort(function (a, b) { var la = label(a), lb = label(b); return la < lb ? -1 : la > lb ? 1 : a - b; });
    var off = x[i];
    for (var k = 0; k < kids[i].length; ++k) {
      var c = kids[i][k];
      x[c] = off;
      depth[c] = depth[i] + 1;
      off += nodes[c][3];
    }
  }
  function color(i) {
    if (nodes[i][1] < 0) return '#cbd5e1';
    var s = label(i), h = 2166136261;
    for (var k = 0; k < s.length; ++k) { h ^= s.charCodeAt(k); h = Math.imul(h, 16777619); }
    h >>>= 0;
    var r = 205 + (h % 50), g = 80 + ((h >>> 8) % 150), b = 30 + ((h >>> 16) % 50);
    return 'rgb(' + r + ',' + g + ',' + b + ')';
  }
  function fit(s, width) {
    var chars = Math.floor((width - 6) / 7.2);
    if (chars >= s.length) return s;
    return chars < 4 ? '' : s.slice(0, chars - 2) + '..';
  }

  var svg = document.getElementById('flame-svg'), box = document.getElementById('flame');
  var tip = document.getElementById('flame-tooltip'), details = document.getElementById('flame-details');
  var zoom = 0;

  function frame(i, px, pw, ancestor) {
    var g = document.createElementNS(SVGNS, 'g');
    g.setAttribute('class', ancestor ? 'frame ancestor' : 'frame');
    g.setAttribute('data-node', String(i));
    g.setAttribute('data-name', label(i));
    var r = document.createElementNS(SVGNS, 'rect');
    r.setAttribute('x', px.toFixed(2));
    r.setAttribute('y', String(depth[i] * ROW));
    r.setAttribute('width', Math.max(pw, 0.5).toFixed(2));
    r.setAttribute('height', String(ROW - 1));
    r.setAttribute('fill', color(i));
    g.appendChild(r);
    var text = fit(label(i), pw);
    if (text) {
      var t = document.createElementNS(SVGNS, 'text');
      t.setAttribute('x', (px + 3).toFixed(2));
      t.setAttribute('y', String(depth[i] * ROW + 13));
      t.textContent = text;
      g.appendChild(t);
    }
    svg.appendChild(g);
  }

  function render() {
    var W = Math.max(320, box.clientWidth - 2);
    var span = nodes[zoom][3] || 1, x0 = x[zoom], scale = W / span, maxDepth = depth[zoom];
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    for (var a = nodes[zoom][0]; a >= 0; a = nodes[a][0]) frame(a, 0, W, true);
    var stack = [zoom];
    while (stack.length) {
      var n = stack.pop(), pw = n === zoom ? W : nodes[n][3] * scale;
      if (pw < 0.5) continue;  // too narrow to see, and so are its children
      frame(n, (x[n] - x0) * scale, pw, false);
      if (depth[n] > maxDepth) maxDepth = depth[n];
      for (var k = kids[n].length - 1; k >= 0; --k) stack.push(kids[n][k]);
    }
    svg.setAttribute('width', String(W));
    svg.setAttribute('height', String((maxDepth + 1) * ROW));
    svg.setAttribute('data-zoom', String(zoom));
  }

  function describe(i) {
    var n = nodes[i], all = nodes[0][3], lines = [];
    var share = pct(n[3], all) + ' of all';
    if (zoom !== 0 && zoom !== i) share += ', ' + pct(n[3], nodes[zoom][3]) + ' of ' + label(zoom);
    lines.push('total ' + fmtNs(n[3]) + ' (' + share + ')');
    if (n[1] >= 0) lines.push('self ' + fmtNs(n[4]) + ' (' + pct(n[4], all) + '), ' + grouped(n[2]) + ' call' + (n[2] === 1 ? '' : 's'));
    else lines.push(grouped(n[2]) + ' call' + (n[2] === 1 ? '' : 's'));
    return lines;
  }
  function target(ev) {
    var el = ev.target;
    while (el && el !== svg) {
      if (el.getAttribute && el.getAttribute('data-node') !== null) return +el.getAttribute('data-node');
      el = el.parentNode;
    }
    return -1;
  }
  svg.addEventListener('mousemove', function (ev) {
    var i = target(ev);
    if (i < 0) { tip.hidden = true; return; }
    var lines = describe(i);
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    var name = document.createElement('strong');
    name.textContent = label(i);
    tip.appendChild(name);
    tip.appendChild(document.createTextNode(lines.join('\n')));
    tip.hidden = false;
    var left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(4, left) + 'px';
    tip.style.top = (ev.clientY + 16) + 'px';
    details.textContent = label(i) + ': ' + lines.join('; ');
  });
  svg.addEventListener('mouseleave', function () { tip.hidden = true; });
  svg.addEventListener('click', function (ev) {
    var i = target(ev);
    if (i < 0) return;
    zoom = i;
    render();
  });
  document.getElementById('flame-reset').addEventListener('click', function () { zoom = 0; render(); });
  window.addEventListener('resize', render);
  render();

  // ---- functions table --------------------------------------------------------------------
  var select = document.getElementById('thread-select');
  var tbody = document.querySelector('#functions tbody');
  var heads = document.querySelectorAll('#functions th[data-key]');
  var sortKey = data.sort;
  var column = { calls: 1, total: 2, self: 3 };
  function cell(tr, text, value, cls) {
    var td = document.createElement('td');
    td.className = cls;
    if (value !== null) td.setAttribute('data-value', String(value));
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function renderTable() {
    var list = (select.value === 'all' ? data.functions : data.thread_functions[+select.value]).slice();
    list.sort(function (a, b) {
      if (sortKey !== 'name') {
        var d = b[column[sortKey]] - a[column[sortKey]];
        if (d !== 0) return d;
      }
      var na = data.names[a[0]], nb = data.names[b[0]];
      return na < nb ? -1 : na > nb ? 1 : a[0] - b[0];
    });
    var selfSum = 0;
    list.forEach(function (r) { selfSum += r[3]; });
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    list.forEach(function (r) {
      var tr = document.createElement('tr');
      var name = cell(tr, data.names[r[0]], null, 'name');
      if (data.where[r[0]]) name.title = data.where[r[0]];
      cell(tr, grouped(r[1]), r[1], 'num');
      cell(tr, fmtNs(r[2]), r[2], 'num');
      cell(tr, fmtNs(r[3]), r[3], 'num');
      cell(tr, pct(r[3], selfSum), null, 'num');
      tbody.appendChild(tr);
    });
    for (var k = 0; k < heads.length; ++k)
      heads[k].classList.toggle('sorted', heads[k].getAttribute('data-key') === sortKey);
  }
  select.addEventListener('change', renderTable);
  for (var h = 0; h < heads.length; ++h) {
    heads[h].addEventListener('click', function () { sortKey = this.getAttribute('data-key'); renderTable(); });
  }
  for (var m = 0; m < heads.length; ++m)
    heads[m].classList.toggle('sorted', heads[m].getAttribute('data-key') === sortKey);
})();
)JS";

}  // namespace sonde::report
