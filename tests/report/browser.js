#!/usr/bin/env node
// Loads pages in headless Chromium and checks them from the DOM, driving the browser through
// the DevTools protocol over --remote-debugging-pipe (file descriptors 3 and 4, messages
// separated by NUL), with Node's standard library only. Run by check_browser.py:
//   browser.js html PAGE.html REPORT.json ANALYSIS.json SCREENSHOT.png
//     the HTML report: the flame graph shows fibo, hover shows a tooltip, click zooms and
//     "Reset zoom" goes back, the table equals the JSON report (all threads and one thread),
//     names are text (an <img> name creates no element), the analysis section shows the
//     cache_sim levels and the curve, and the page requests nothing but itself;
//   browser.js speedscope INDEX.html PROFILE VIEWS SCREENSHOT.png
//     speedscope's own viewer (its npm package) loads PROFILE; VIEWS is a JSON array with, for
//     each profile speedscope makes of it (one per thread for chrome), the names it must show,
//     or an object {name: [total, self]} of the weights its sandwich table must show.
// Prints what it checks and exits 1 on the first failure. CHROMIUM names the browser.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

class Failure extends Error {}
function fail(message) {
  throw new Failure(message);
}
function check(cond, message) {
  if (!cond) fail(message);
  console.log('ok: ' + message);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Browser {
  constructor() {
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sonde-chromium-'));
    const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--user-data-dir=' + this.dataDir, '--remote-debugging-pipe', 'about:blank'];
    this.proc = spawn(process.env.CHROMIUM || 'chromium', args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.proc.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    this.exited = new Promise((resolve) => this.proc.on('exit', resolve));
    this.proc.on('exit', (code) => { if (!this.closing) fail('chromium exited (' + code + '): ' + this.stderr); });
    this.nextId = 0;
    this.pending = new Map();
    this.listeners = [];
    let buf = Buffer.alloc(0);
    this.proc.stdio[4].on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      let end;
      while ((end = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, end).toString('utf8'));
        buf = buf.subarray(end + 1);
        if (msg.id !== undefined && this.pending.has(msg.id)) {
          const { resolve, reject, method } = this.pending.get(msg.id);
          this.pending.delete(msg.id);
          if (msg.error) reject(new Error(method + ': ' + msg.error.message));
          else resolve(msg.result);
        } else if (msg.method) {
          for (const l of this.listeners) l(msg);
        }
      }
    });
  }
  send(method, params = {}, sessionId = undefined) {
    return new Promise((resolve, reject) => {
      const id = ++this.nextId;
      this.pending.set(id, { resolve, reject, method });
      const msg = { id, method, params };
      if (sessionId) msg.sessionId = sessionId;
      this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
    });
  }
  async page(width, height) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId);
    await page.send('Page.enable');
    await page.send('Runtime.enable');
    await page.send('Network.enable');
    await page.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    this.listeners.push((msg) => {
      if (msg.sessionId !== sessionId) return;
      if (msg.method === 'Network.requestWillBeSent') page.requests.push(msg.params.request.url);
      if (msg.method === 'Runtime.exceptionThrown') page.errors.push(JSON.stringify(msg.params.exceptionDetails));
    });
    return page;
  }
  async close() {
    this.closing = true;
    try {
      await Promise.race([this.send('Browser.close'), sleep(5000)]);
    } catch (e) { /* already gone */ }
    if ((await Promise.race([this.exited.then(() => true), sleep(5000)])) !== true) {
      this.proc.kill();
      await this.exited;
    }
    fs.rmSync(this.dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

class Page {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
    this.requests = [];
    this.errors = [];
  }
  send(method, params = {}) { return this.browser.send(method, params, this.sessionId); }
  async eval(expression) {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) fail('evaluating ' + expression + ': ' + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  }
  async waitFor(expression, what, ms = 20000) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (await this.eval(expression)) return;
      await sleep(100);
    }
    fail('timed out waiting for ' + what + (this.errors.length ? ' (page errors: ' + this.errors.join('; ') + ')' : ''));
  }
  async open(url) {
    await this.send('Page.navigate', { url });
    await this.waitFor('document.readyState === "complete"', 'the page to load');
  }
  async mouse(type, x, y) {
    await this.send('Input.dispatchMouseEvent', { type, x, y, button: type === 'mouseMoved' ? 'none' : 'left', clickCount: 1 });
  }
  async click(x, y) {
    await this.mouse('mouseMoved', x, y);
    await this.mouse('mousePressed', x, y);
    await this.mouse('mouseReleased', x, y);
  }
  async screenshot(file) {
    const { data } = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
    fs.writeFileSync(file, Buffer.from(data, 'base64'));
    console.log('screenshot: ' + file);
  }
}

const tableRows = `Array.from(document.querySelectorAll('#functions tbody tr')).map((tr) => {
  const td = tr.querySelectorAll('td');
  return [td[0].textContent, +td[1].dataset.value, +td[2].dataset.value, +td[3].dataset.value];
})`;
const asRows = (functions) => functions.map((f) => [f.name, f.calls, f.total_ns, f.self_ns]);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// The frame of `name` with the widest rectangle: its node, centre and width.
const widest = (name) => `(() => {
  let best = null;
  for (const g of document.querySelectorAll('#flame-svg g.frame')) {
    if (g.getAttribute('data-name') !== ${JSON.stringify(name)}) continue;
    const r = g.querySelector('rect').getBoundingClientRect();
    if (!best || r.width > best.width)
      best = { node: g.getAttribute('data-node'), x: r.left + r.width / 2, y: r.top + r.height / 2, width: r.width,
               svgWidth: document.getElementById('flame-svg').getBoundingClientRect().width };
  }
  return best;
})()`;
const frameWidth = (node) =>
  `document.querySelector('#flame-svg g.frame:not(.ancestor)[data-node="${node}"] rect').getBoundingClientRect().width`;

async function checkHtml(page, reportPath, analysisPath, shot) {
  const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
  const analysis = JSON.parse(fs.readFileSync(analysisPath, 'utf8'));
  const url = 'file://' + path.resolve(page.file);
  await page.open(url);
  await page.waitFor('document.querySelectorAll("#flame-svg g.frame").length > 0', 'the flame graph');
  check(page.errors.length === 0, 'the page runs without script errors ' + page.errors.join('; '));

  const labels = await page.eval(`Array.from(document.querySelectorAll('#flame-svg g.frame text')).map((t) => t.textContent)`);
  check(labels.includes('fibo'), 'the flame graph shows fibo (labels: ' + labels.slice(0, 8).join(', ') + ', ...)');
  check(labels.includes('all threads') && labels.includes('main'), 'the flame graph has the root and main');

  const rows = await page.eval(tableRows);
  check(same(rows, asRows(report.functions)), 'the functions table equals the JSON report (' + rows.length + ' rows)');
  check(rows[0][0] === report.functions[0].name, 'the table is sorted by self time like the report');

  const threads = await page.eval(`Array.from(document.querySelectorAll('#threads tbody tr')).map((tr) => tr.children[2].textContent)`);
  check(same(threads, report.threads.map((t) => t.name)), 'the threads table lists the threads: ' + threads.join(', '));

  const img = report.functions.find((f) => f.name.startsWith('<img')).name;
  check(await page.eval(`window.__injected === undefined && document.querySelectorAll('img').length === 0`),
    'a function named like an <img> tag creates no element');
  check(await page.eval(`Array.from(document.querySelectorAll('#functions td.name')).some((td) => td.textContent === ${JSON.stringify(img)})`),
    'its name is shown as text');

  // Hover: the tooltip names the frame with its time and share.
  const fibo = await page.eval(widest('fibo'));
  check(fibo !== null && fibo.width > 20, 'fibo has a frame wide enough to point at');
  await page.mouse('mouseMoved', fibo.x, fibo.y);
  await page.waitFor(`!document.getElementById('flame-tooltip').hidden`, 'the tooltip');
  const tip = await page.eval(`document.getElementById('flame-tooltip').textContent`);
  check(tip.startsWith('fibo') && /total [0-9.]+ (ns|us|ms|s) \([0-9.]+% of all\)/.test(tip) && /self .* calls?/.test(tip),
    'hovering fibo shows its name, time and share: ' + JSON.stringify(tip));
  await page.screenshot(shot);

  // Click zooms: the frame takes the whole width; Reset zoom restores the view.
  await page.click(fibo.x, fibo.y);
  await page.waitFor(`document.getElementById('flame-svg').getAttribute('data-zoom') === '${fibo.node}'`, 'the zoom');
  const zoomed = await page.eval(frameWidth(fibo.node));
  const full = await page.eval(`document.getElementById('flame-svg').getBoundingClientRect().width`);
  check(Math.abs(zoomed - full) < 1.5 && zoomed > fibo.width + 1,
    'clicking fibo zooms it to the full width (' + fibo.width.toFixed(1) + ' -> ' + zoomed.toFixed(1) + ' of ' + full.toFixed(1) + ' px)');
  await page.screenshot(shot.replace(/\.png$/, '-zoomed.png'));
  const reset = await page.eval(`(() => { const r = document.getElementById('flame-reset').getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; })()`);
  await page.click(reset.x, reset.y);
  await page.waitFor(`document.getElementById('flame-svg').getAttribute('data-zoom') === '0'`, 'the reset');
  const back = await page.eval(frameWidth(fibo.node));
  const scale = (await page.eval(`document.getElementById('flame-svg').getBoundingClientRect().width`)) / fibo.svgWidth;
  check(Math.abs(back - fibo.width * scale) < 0.5, 'Reset zoom restores the frame (' + back.toFixed(1) + ' px)');

  // Per thread: the table shows the JSON report's thread 2.
  await page.eval(`(() => { const s = document.getElementById('thread-select'); s.value = '1';
    s.dispatchEvent(new Event('change')); })()`);
  check(same(await page.eval(tableRows), asRows(report.threads[1].functions)),
    'with thread 2 selected the table equals the report of thread 2');

  // Analysis: the cache_sim levels and the miss-ratio curve.
  const levels = await page.eval(`Array.from(document.querySelectorAll('#cache-sim tbody tr')).map((tr) =>
    [tr.children[0].textContent, +tr.children[1].dataset.value, +tr.children[3].dataset.value])`);
  check(same(levels, analysis.cache_sim.levels.map((l) => [l.name, l.accesses, l.misses])),
    'the cache_sim table shows the levels of sonde analyze: ' + JSON.stringify(levels));
  const points = await page.eval(`(() => { const p = document.querySelector('#mrc-plot path.mrc-line');
    return p ? [+p.dataset.points, p.getTotalLength() > 50] : null; })()`);
  check(points !== null && points[0] === analysis.reuse_distance.mrc.length && points[1],
    'the miss-ratio curve is drawn from ' + analysis.reuse_distance.mrc.length + ' points');

  check(page.requests.every((u) => u === url), 'the page loads nothing but itself: ' + JSON.stringify(page.requests));
}

async function checkSpeedscope(page, index, profile, views, shot) {
  // speedscope's own loader: a script that hands the file over as base64, named in the hash.
  const loader = path.join(path.dirname(path.resolve(shot)), path.basename(profile) + '.speedscope.js');
  fs.writeFileSync(loader, 'speedscope.loadFileFromBase64(' + JSON.stringify(path.basename(profile)) + ', ' +
    JSON.stringify(fs.readFileSync(profile).toString('base64')) + ');\n');
  const url = 'file://' + path.resolve(index) + '#localProfilePath=' + encodeURIComponent(loader) + '&view=sandwich';
  try {
    await page.open(url);
    for (let v = 0; v < views.length; ++v) {
      const numbers = Array.isArray(views[v]) ? null : views[v];
      const names = numbers ? Object.keys(numbers) : views[v];
      if (v > 0) {  // speedscope's key for the next profile (thread)
        await page.send('Input.dispatchKeyEvent', { type: 'keyDown', key: 'n', code: 'KeyN', text: 'n' });
        await page.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'n', code: 'KeyN' });
      }
      const cells = `Array.from(document.querySelectorAll('table td')).map((td) => td.textContent)`;
      const shows = `(() => { const t = ${cells}; return ${JSON.stringify(names)}.every((n) => t.includes(n)); })()`;
      await page.waitFor(shows, 'speedscope to show ' + names.join(', ') + ' (profile ' + (v + 1) + ')');
      check(true, 'speedscope shows ' + names.join(', ') + ' in profile ' + (v + 1) + ' of ' + path.basename(profile));
      if (numbers) {
        const rows = await page.eval(`Object.fromEntries(Array.from(document.querySelectorAll('table tr')).filter((tr) =>
          tr.children.length === 3 && tr.children[0].tagName === 'TD').map((tr) => [tr.children[2].textContent,
          [tr.children[0].textContent, tr.children[1].textContent].map((t) => +t.split(' ')[0].replace(/,/g, ''))]))`);
        check(same(Object.keys(rows).sort(), names.slice().sort()) && names.every((n) => same(rows[n], numbers[n])),
          'speedscope computes the same total and self weights: ' + JSON.stringify(rows));
      }
      await page.screenshot(views.length === 1 ? shot : shot.replace(/\.png$/, '-' + (v + 1) + '.png'));
    }
    check(page.errors.length === 0, 'speedscope imports it without script errors ' + page.errors.join('; '));
  } finally {
    fs.unlinkSync(loader);
  }
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  const browser = new Browser();
  const watchdog = setTimeout(() => {
    console.error('FAIL: no answer from chromium within 120 s: ' + browser.stderr);
    browser.proc.kill();
    process.exit(1);
  }, 120000);
  try {
    const page = await browser.page(1280, 900);
    if (mode === 'html') {
      page.file = args[0];
      await checkHtml(page, args[1], args[2], args[3]);
    } else if (mode === 'speedscope') {
      await checkSpeedscope(page, args[0], args[1], JSON.parse(args[2]), args[3]);
    } else {
      fail('usage: browser.js html|speedscope ...');
    }
  } finally {
    clearTimeout(watchdog);
    await browser.close();
  }
}

main().catch((e) => {
  console.error('FAIL: ' + (e instanceof Failure ? e.message : e.stack || String(e)));
  process.exit(1);
});
