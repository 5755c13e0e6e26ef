// fdr view: the page's script. Hand-written, no framework, nothing loaded from the network.
// Every name from the log is shown with textContent or drawn on a canvas, never as HTML.
(function () {
  'use strict';
  var t0ms = performance.now();
  var D = JSON.parse(document.getElementById('fdr-data').textContent);
  var F = D.functions;

  // ---- helpers ------------------------------------------------------------------------

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function fname(i) { return F[i] === undefined ? '?' : F[i]; }
  // A duration as the other outputs write it: three significant digits and a unit.
  function human(ns) {
    ns = Math.max(0, Math.round(ns));
    if (ns < 1000) return ns + ' ns';
    var v, u;
    if (ns < 1e6) { v = ns / 1e3; u = '\u00b5s'; }
    else if (ns < 1e9) { v = ns / 1e6; u = 'ms'; }
    else { v = ns / 1e9; u = 's'; }
    var d = v < 9.995 ? 2 : (v < 99.95 ? 1 : 0);
    return v.toFixed(d) + ' ' + u;
  }
  function lasted(ns, open) { return open ? '\u2265 ' + human(ns) : human(ns); }
  function rel(ns) { return '+' + human(ns); }
  function hue(i) {
    var s = fname(i), h = 2166136261;
    for (var k = 0; k < s.length; k++) { h ^= s.charCodeAt(k); h = Math.imul(h, 16777619); }
    return (h >>> 0) % 360;
  }
  var colors = {};
  function color(i, light) {
    var key = i + (light ? 'l' : '');
    if (!colors[key]) colors[key] = 'hsl(' + hue(i) + ',' + (light ? '35%,80%)' : '58%,66%)');
    return colors[key];
  }
  // First index in [lo, hi) whose key is >= x (keys ascending).
  function lowerBound(arr, lo, hi, x, key) {
    while (lo < hi) {
      var m = (lo + hi) >> 1;
      if (key(arr, m) < x) lo = m + 1; else hi = m;
    }
    return lo;
  }

  // ---- header: why the log was written ----------------------------------------------------

  document.title = 'fdr view: ' + D.log;
  $('title').textContent = 'fdr view: ' + D.log;
  var meta = [];
  if (D.program) meta.push(D.program + (D.pid ? ' (pid ' + D.pid + ')' : ''));
  meta.push('window ' + human(D.span));
  meta.push(D.threads.length + (D.threads.length === 1 ? ' thread' : ' threads'));
  $('meta').textContent = meta.join(' \u00b7 ');
  if (D.explain) {
    $('explain').hidden = false;
    $('explain').textContent = D.explain;
  }
  if (D.reason) {
    $('reason').textContent = D.reason;
  } else {
    $('reason').textContent = 'The log does not say why it was written (it has no reason record).';
    $('reason').className = 'none';
  }

  // ---- the lanes ------------------------------------------------------------------------

  var ROW = 16, LABEL = 18, TASKROW = 12, MIG = 7, MAXROWS = 64, MAXTASKROWS = 6, AXIS = 22;
  var lanes = D.threads.map(function (t, li) {
    var n = t.slices.length / 6, s = t.slices;
    var L = {
      index: li, tid: t.tid, label: t.label,
      n: n, start: new Float64Array(n), dur: new Float64Array(n), self: new Float64Array(n),
      depth: new Int32Array(n), fn: new Int32Array(n), flags: new Int32Array(n),
      polls: {}, depthFrom: [], barFrom: [], maxDepth: 0,
    };
    for (var k = 0; k < n; k++) {
      L.start[k] = s[6 * k]; L.dur[k] = s[6 * k + 1]; L.self[k] = s[6 * k + 2];
      L.depth[k] = s[6 * k + 3]; L.fn[k] = s[6 * k + 4]; L.flags[k] = s[6 * k + 5];
    }
    t.polls.forEach(function (p) { L.polls[p[0]] = p[1]; });
    var b = t.bars, nb = b.length / 6;
    L.nb = nb;
    L.bStart = new Float64Array(nb); L.bDur = new Float64Array(nb); L.bDepth = new Int32Array(nb);
    L.bCount = new Float64Array(nb); L.bFn = new Int32Array(nb); L.bMixed = new Int32Array(nb);
    for (k = 0; k < nb; k++) {
      L.bStart[k] = b[6 * k]; L.bDur[k] = b[6 * k + 1]; L.bDepth[k] = b[6 * k + 2];
      L.bCount[k] = b[6 * k + 3]; L.bFn[k] = b[6 * k + 4]; L.bMixed[k] = b[6 * k + 5];
    }
    // Ranges of each depth (both lists are sorted by depth, then start).
    function ranges(depths, len) {
      var from = [];
      for (var i = 0; i < len; i++) {
        var d = depths[i];
        while (from.length <= d) from.push(i);
      }
      from.push(len);
      return from;
    }
    L.depthFrom = ranges(L.depth, n);
    L.barFrom = ranges(L.bDepth, nb);
    L.maxDepth = Math.max(L.depthFrom.length - 1, L.barFrom.length - 1);
    L.rows = Math.min(L.maxDepth, MAXROWS);
    // Tasks, packed into rows so that overlapping ones do not hide each other.
    var tk = t.tasks, nt = tk.length / 4, rowEnd = [];
    L.tasks = [];
    for (k = 0; k < nt; k++) {
      var ts = tk[4 * k], td = tk[4 * k + 1], r = 0;
      while (r < rowEnd.length && rowEnd[r] > ts) r++;
      if (r >= MAXTASKROWS) r = MAXTASKROWS - 1;
      rowEnd[r] = Math.max(rowEnd[r] || 0, ts + td);
      L.tasks.push({ start: ts, dur: td, fn: tk[4 * k + 2], flags: tk[4 * k + 3], row: r });
    }
    L.taskRows = Math.min(rowEnd.length, MAXTASKROWS);
    // Waits at await sites and wake-ups, each on its task's row.
    var aw = t.awaits || [], wk = t.wakes || [];
    L.awaits = [];
    for (k = 0; k + 5 < aw.length; k += 6) {
      if (L.tasks[aw[k]]) L.awaits.push({ task: aw[k], start: aw[k + 1], dur: aw[k + 2], site: aw[k + 3], polls: aw[k + 4], flags: aw[k + 5] });
    }
    L.wakes = [];
    for (k = 0; k + 3 < wk.length; k += 4) {
      if (L.tasks[wk[k]]) L.wakes.push({ task: wk[k], start: wk[k + 1], dur: wk[k + 2], waker: wk[k + 3] });
    }
    L.mig = t.migrations;
    L.height = LABEL + L.taskRows * TASKROW + L.rows * ROW + (L.mig.length ? MIG : 0) + 6;
    return L;
  });
  var y = AXIS;
  lanes.forEach(function (L) { L.y = y; y += L.height; });
  var totalHeight = Math.max(y, AXIS + 40);

  // Thread list and legend, in the DOM.
  var tl = $('threads');
  lanes.forEach(function (L) {
    var merged = 0;
    for (var k = 0; k < L.nb; k++) merged += L.bCount[k];
    var parts = [L.n + ' calls in detail'];
    if (merged) parts.push(merged + ' merged');
    if (L.tasks.length) parts.push(L.tasks.length + (L.tasks.length === 1 ? ' task' : ' tasks'));
    if (L.awaits.length) parts.push(L.awaits.length + (L.awaits.length === 1 ? ' wait' : ' waits'));
    if (L.mig.length) parts.push(L.mig.length / 2 + ' CPU migrations');
    if (L.maxDepth > MAXROWS) parts.push('calls deeper than ' + MAXROWS + ' levels not drawn');
    var li = el('li');
    li.appendChild(el('span', L.label, 'thread-label'));
    li.appendChild(el('span', ': ' + parts.join(', ')));
    tl.appendChild(li);
  });
  var legend = $('legend');
  [['\u25ae', 'call (colour by function)'], ['\u2592', 'calls merged (shorter than a pixel)'],
   ['\u25c0', 'entry before the window'], ['\u25b6', 'still running when the window was written'],
   ['|', 'red: the trigger fired'], ['\u2506', 'CPU migration'],
   ['\u2584', 'a task\'s wait at an await site (under its task)'],
   ['\u2581', 'orange: woken, waiting to be polled']].forEach(function (x) {
    legend.appendChild(el('span', x[0] + ' ' + x[1]));
  });

  // ---- the timeline ---------------------------------------------------------------------

  var cv = $('timeline'), ctx = cv.getContext('2d');
  var view = { t0: 0, t1: Math.max(D.span, 1) };
  var W = 800, selected = null, hovered = null;
  // Sizes canvas `c` (context `g`) to its container's width and `height` CSS pixels, sharp on
  // any screen; returns the width.
  function fitCanvas(c, g, height) {
    var dpr = window.devicePixelRatio || 1, w = Math.max(200, c.parentNode.clientWidth);
    c.style.height = height + 'px';
    c.width = Math.round(w * dpr);
    c.height = Math.round(height * dpr);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    return w;
  }
  function resize() {
    W = fitCanvas(cv, ctx, totalHeight);
    draw();
  }
  function xOf(t) { return (t - view.t0) / (view.t1 - view.t0) * W; }
  function tOf(x) { return view.t0 + x / W * (view.t1 - view.t0); }
  function endKey(L) { return function (a, m) { return L.start[m] + L.dur[m]; }; }
  function barEndKey(L) { return function (a, m) { return L.bStart[m] + L.bDur[m]; }; }
  function rowY(L, d) { return L.y + LABEL + L.taskRows * TASKROW + d * ROW; }

  function niceStep(span, px) {
    var raw = span / Math.max(1, px), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  var pending = false;
  function schedule() {
    if (!pending) { pending = true; requestAnimationFrame(function () { pending = false; draw(); }); }
  }

  function drawText(s, x, y, w) {
    if (w < 24) return;
    var max = Math.floor((w - 6) / 6.2);
    if (max < 2) return;
    ctx.fillText(s.length > max ? s.slice(0, max - 1) + '\u2026' : s, x + 3, y);
  }

  function draw() {
    ctx.clearRect(0, 0, W, totalHeight);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    // Axis.
    var step = niceStep(view.t1 - view.t0, W / 110);
    ctx.fillStyle = '#f6f7f8';
    ctx.fillRect(0, 0, W, AXIS);
    ctx.strokeStyle = '#e3e5e8';
    ctx.fillStyle = '#5c6166';
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS - 6); ctx.lineTo(x, totalHeight); ctx.stroke();
      ctx.fillText(rel(t), x + 3, AXIS / 2);
    }
    lanes.forEach(drawLane);
    // The trigger's moment.
    if (D.trigger && D.trigger.lane !== null && lanes[D.trigger.lane]) {
      var L = lanes[D.trigger.lane], tx = xOf(D.trigger.end);
      if (tx >= -2 && tx <= W + 2) {
        ctx.fillStyle = 'rgba(192,57,43,0.95)';
        ctx.fillRect(Math.round(tx) - 1, L.y, 2, L.height);
        ctx.fillText('trigger', Math.min(tx + 4, W - 40), L.y + LABEL / 2);
      }
    }
  }

  function drawLane(L) {
    var y0 = L.y, span = view.t1 - view.t0, px = span / W;
    ctx.fillStyle = L.index % 2 ? '#fbfbfc' : '#ffffff';
    ctx.fillRect(0, y0, W, L.height);
    ctx.fillStyle = '#eef0f2';
    ctx.fillRect(0, y0, W, LABEL);
    ctx.fillStyle = '#1d1f21';
    ctx.font = '600 11px system-ui, sans-serif';
    ctx.fillText(L.label, 6, y0 + LABEL / 2);
    ctx.font = '11px system-ui, sans-serif';
    // Tasks, above their polls.
    L.tasks.forEach(function (k) {
      if (k.start > view.t1 || k.start + k.dur < view.t0) return;
      var x0 = Math.max(xOf(k.start), -1), x1 = Math.min(xOf(k.start + k.dur), W + 1);
      var ty = y0 + LABEL + k.row * TASKROW;
      ctx.fillStyle = color(k.fn, true);
      ctx.fillRect(x0, ty + 1, Math.max(1, x1 - x0), TASKROW - 2);
      if (k.flags & 16) { ctx.fillStyle = '#c0392b'; ctx.fillRect(x1 - 2, ty + 1, 2, TASKROW - 2); }
      ctx.fillStyle = '#333';
      drawText('task ' + fname(k.fn), x0, ty + TASKROW / 2, x1 - x0);
    });
    // Each wait in the lower half of its task's bar; each wake-up a thin mark at its bottom.
    L.awaits.forEach(function (a) {
      if (a.start > view.t1 || a.start + a.dur < view.t0) return;
      var x0 = Math.max(xOf(a.start), -1), x1 = Math.min(xOf(a.start + a.dur), W + 1);
      var ty = y0 + LABEL + L.tasks[a.task].row * TASKROW;
      ctx.fillStyle = a.flags & 1 ? 'rgba(192,57,43,0.55)' : 'rgba(40,44,52,0.45)';
      ctx.fillRect(x0, ty + TASKROW / 2, Math.max(1, x1 - x0), TASKROW / 2 - 1);
    });
    L.wakes.forEach(function (w) {
      if (w.start > view.t1 || w.start + w.dur < view.t0) return;
      var x0 = Math.max(xOf(w.start), -1), x1 = Math.min(xOf(w.start + w.dur), W + 1);
      var ty = y0 + LABEL + L.tasks[w.task].row * TASKROW;
      ctx.fillStyle = '#e67e22';
      ctx.fillRect(x0, ty + TASKROW - 3, Math.max(2, x1 - x0), 2);
    });
    for (var d = 0; d < L.rows; d++) {
      var ry = rowY(L, d);
      // Merged calls first: detail drawn over them.
      if (d < L.barFrom.length - 1) {
        var b0 = L.barFrom[d], b1 = L.barFrom[d + 1];
        var bi = lowerBound(null, b0, b1, view.t0, barEndKey(L)), lastX = -10;
        for (; bi < b1 && L.bStart[bi] <= view.t1; bi++) {
          var bx0 = xOf(L.bStart[bi]), bx1 = xOf(L.bStart[bi] + L.bDur[bi]);
          if (bx1 < lastX + 1 && bx1 - bx0 < 1) continue;
          var bw = Math.max(1, bx1 - bx0);
          ctx.fillStyle = L.bMixed[bi] ? '#c9ccd1' : color(L.bFn[bi], true);
          ctx.fillRect(bx0, ry + 3, bw, ROW - 6);
          lastX = bx0 + bw;
        }
      }
      if (d >= L.depthFrom.length - 1) continue;
      var s0 = L.depthFrom[d], s1 = L.depthFrom[d + 1];
      var i = lowerBound(null, s0, s1, view.t0 - px, endKey(L)), last = -10;
      for (; i < s1 && L.start[i] <= view.t1; i++) {
        var x0 = xOf(L.start[i]), x1 = xOf(L.start[i] + L.dur[i]);
        if (x1 - x0 < 1 && x0 < last) continue;
        var w = Math.max(1, x1 - x0);
        ctx.fillStyle = color(L.fn[i], false);
        ctx.fillRect(x0, ry + 1, w, ROW - 2);
        last = x0 + w;
        if (w > 6) {
          var f = L.flags[i];
          ctx.fillStyle = 'rgba(0,0,0,0.55)';
          if (f & 1) { ctx.beginPath(); ctx.moveTo(x0, ry + ROW / 2); ctx.lineTo(x0 + 5, ry + 3); ctx.lineTo(x0 + 5, ry + ROW - 3); ctx.fill(); }
          if (f & 2) { ctx.beginPath(); ctx.moveTo(x0 + w, ry + ROW / 2); ctx.lineTo(x0 + w - 5, ry + 3); ctx.lineTo(x0 + w - 5, ry + ROW - 3); ctx.fill(); }
        }
        if (w > 24) { ctx.fillStyle = '#111'; drawText(fname(L.fn[i]), Math.max(x0, 0), ry + ROW / 2, x1 - Math.max(x0, 0)); }
      }
    }
    if (selected && selected.lane === L.index && selected.kind === 'slice') {
      var k = selected.i, sx0 = xOf(L.start[k]), sx1 = xOf(L.start[k] + L.dur[k]);
      ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
      ctx.strokeRect(sx0, rowY(L, L.depth[k]) + 1, Math.max(2, sx1 - sx0), ROW - 2);
      ctx.lineWidth = 1;
    }
    // CPU migrations: a tick under the lane each.
    if (L.mig.length) {
      var my = y0 + L.height - MIG - 4;
      ctx.fillStyle = '#7f8c8d';
      for (var m = 0; m < L.mig.length; m += 2) {
        var mx = xOf(L.mig[m]);
        if (mx >= 0 && mx <= W) ctx.fillRect(mx, my, 1, MIG);
      }
    }
  }

  // What is under (x, y): a slice, a bar, a task, a migration, or null.
  function hit(x, y) {
    var L = null;
    for (var k = 0; k < lanes.length; k++) {
      if (y >= lanes[k].y && y < lanes[k].y + lanes[k].height) { L = lanes[k]; break; }
    }
    if (!L) return null;
    var t = tOf(x), tol = (view.t1 - view.t0) / W * 2, top = L.y + LABEL;
    if (y >= top && y < top + L.taskRows * TASKROW) {
      var row = Math.floor((y - top) / TASKROW), best = null;
      var lower = (y - top) - row * TASKROW >= TASKROW / 2;
      if (lower) {
        L.wakes.forEach(function (w, i) {
          if (!best && L.tasks[w.task].row === row && w.start - tol <= t && w.start + w.dur + tol >= t) best = { kind: 'wake', lane: L.index, i: i };
        });
        L.awaits.forEach(function (a, i) {
          if (!best && L.tasks[a.task].row === row && a.start - tol <= t && a.start + a.dur + tol >= t) best = { kind: 'await', lane: L.index, i: i };
        });
        if (best) return best;
      }
      L.tasks.forEach(function (k, i) {
        if (k.row === row && k.start - tol <= t && k.start + k.dur + tol >= t) best = { kind: 'task', lane: L.index, i: i };
      });
      return best;
    }
    var d = Math.floor((y - top - L.taskRows * TASKROW) / ROW);
    if (d >= 0 && d < L.rows) {
      if (d < L.depthFrom.length - 1) {
        var s1 = L.depthFrom[d + 1];
        var i = lowerBound(null, L.depthFrom[d], s1, t - tol, endKey(L));
        if (i < s1 && L.start[i] <= t + tol) return { kind: 'slice', lane: L.index, i: i };
      }
      if (d < L.barFrom.length - 1) {
        var b1 = L.barFrom[d + 1];
        var j = lowerBound(null, L.barFrom[d], b1, t - tol, barEndKey(L));
        if (j < b1 && L.bStart[j] <= t + tol) return { kind: 'bar', lane: L.index, i: j };
      }
    }
    if (L.mig.length && y >= L.y + L.height - MIG - 5) {
      for (var m = 0; m < L.mig.length; m += 2) {
        if (Math.abs(L.mig[m] - t) <= tol) return { kind: 'migration', lane: L.index, i: m };
      }
    }
    return null;
  }

  function describe(h) {
    var L = lanes[h.lane], lines = [];
    if (h.kind === 'slice') {
      var i = h.i, f = L.flags[i];
      lines.push(['name', fname(L.fn[i])]);
      lines.push(['', 'duration ' + lasted(L.dur[i], f & 2) + ', self ' + human(L.self[i])]);
      lines.push(['', 'at ' + rel(L.start[i]) + ' on ' + L.label + ', depth ' + L.depth[i]]);
      if (f & 1) lines.push(['', 'entered before the window: its start is the window\'s']);
      if (f & 2) lines.push(['', 'still running when the window was written']);
      if (f & 4) lines.push(['', 'closed by its caller\'s exit']);
      if (L.polls[i] !== undefined) lines.push(['', 'a poll of task ' + L.polls[i]]);
    } else if (h.kind === 'bar') {
      var j = h.i;
      lines.push(['name', L.bCount[j] + (L.bCount[j] === 1 ? ' call' : ' calls') + ' merged (each shorter than a pixel at the full view)']);
      lines.push(['', (L.bMixed[j] ? 'the longest: ' : 'all: ') + fname(L.bFn[j])]);
      lines.push(['', 'from ' + rel(L.bStart[j]) + ' for ' + human(L.bDur[j]) + ' on ' + L.label]);
    } else if (h.kind === 'task') {
      var k = L.tasks[h.i];
      lines.push(['name', 'task of ' + fname(k.fn)]);
      lines.push(['', 'from creation to ' + (k.flags & 16 ? 'cancellation' : 'completion') + ': ' + lasted(k.dur, k.flags & 2)]);
      lines.push(['', 'created at ' + rel(k.start) + ' on ' + L.label + (k.flags & 1 ? ' (before the window)' : '')]);
    } else if (h.kind === 'await') {
      var a = L.awaits[h.i], at = D.sites[a.site] === undefined ? '?' : D.sites[a.site];
      lines.push(['name', 'awaited ' + at]);
      lines.push(['', 'for ' + human(a.dur) + (a.polls > 1 ? ', woken ' + a.polls + ' times' : '') + (a.flags & 1 ? ', dropped while waiting' : '')]);
      lines.push(['', 'by the task of ' + fname(L.tasks[a.task].fn) + ', from ' + rel(a.start) + ' on ' + L.label]);
    } else if (h.kind === 'wake') {
      var w = L.wakes[h.i];
      lines.push(['name', 'scheduled: woken, waiting to be polled']);
      lines.push(['', human(w.dur) + ' from the wake-up at ' + rel(w.start) + (w.waker ? ' (by thread ' + w.waker + ')' : '') + ' to the poll']);
      lines.push(['', 'the task of ' + fname(L.tasks[w.task].fn) + ' on ' + L.label]);
    } else if (h.kind === 'migration') {
      lines.push(['name', 'moved to CPU ' + L.mig[h.i + 1]]);
      lines.push(['', 'at ' + rel(L.mig[h.i]) + ' on ' + L.label]);
    }
    return lines;
  }

  var tip = $('tooltip');
  function showTip(lines, cx, cy) {
    tip.textContent = '';
    lines.forEach(function (l) { tip.appendChild(el('div', l[1], l[0] || null)); });
    tip.hidden = false;
    var r = tip.getBoundingClientRect();
    var left = cx + 14, top = cy + 14;
    if (left + r.width > window.innerWidth) left = Math.max(0, cx - r.width - 14);
    if (top + r.height > window.innerHeight) top = Math.max(0, cy - r.height - 14);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }
  function hideTip() { tip.hidden = true; }

  function zoomTo(a, b) {
    var span = Math.max(b - a, 10);
    view.t0 = a; view.t1 = a + span;
    schedule();
  }
  function zoomAround(t, factor) {
    var a = t - (t - view.t0) * factor, b = t + (view.t1 - t) * factor;
    if (b - a < 10) return;
    zoomTo(a, b);
  }
  function pan(frac) {
    var d = (view.t1 - view.t0) * frac;
    view.t0 += d; view.t1 += d;
    schedule();
  }
  function reset() { zoomTo(0, Math.max(D.span, 1)); }

  function local(ev) {
    var r = cv.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }
  var drag = null;
  cv.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var p = local(ev);
    zoomAround(tOf(p.x), Math.exp(ev.deltaY * 0.0015));
  }, { passive: false });
  cv.addEventListener('mousedown', function (ev) {
    var p = local(ev);
    drag = { x: p.x, y: p.y, t0: view.t0, t1: view.t1, moved: false };
  });
  window.addEventListener('mousemove', function (ev) {
    if (drag && (ev.buttons & 1)) {
      var p = local(ev), dx = p.x - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        var dt = dx / W * (drag.t1 - drag.t0);
        view.t0 = drag.t0 - dt; view.t1 = drag.t1 - dt;
        hideTip();
        schedule();
        return;
      }
    }
    if (ev.target !== cv) { if (hovered) { hovered = null; hideTip(); } return; }
    var q = local(ev), h = hit(q.x, q.y);
    hovered = h;
    if (h) showTip(describe(h), ev.clientX, ev.clientY); else hideTip();
  });
  window.addEventListener('mouseup', function (ev) {
    if (!drag) return;
    var d = drag;
    drag = null;
    if (d.moved || ev.target !== cv) return;
    var p = local(ev), h = hit(p.x, p.y);
    if (h && h.kind === 'slice') select(h.lane, h.i);
  });
  cv.addEventListener('mouseleave', function () { hovered = null; hideTip(); });
  cv.addEventListener('dblclick', function (ev) {
    var p = local(ev), h = hit(p.x, p.y);
    if (h && h.kind === 'slice') {
      var L = lanes[h.lane], m = L.dur[h.i] * 0.05;
      zoomTo(L.start[h.i] - m, L.start[h.i] + L.dur[h.i] + m);
    }
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var tag = ev.target && ev.target.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA') return;
    var mid = (view.t0 + view.t1) / 2, done = true;
    switch (ev.key) {
      case '+': case '=': case 'w': zoomAround(mid, 0.7); break;
      case '-': case '_': case 's': zoomAround(mid, 1 / 0.7); break;
      case 'a': case 'ArrowLeft': pan(-0.2); break;
      case 'd': case 'ArrowRight': pan(0.2); break;
      case '0': reset(); break;
      default: done = false;
    }
    if (done && (ev.target === cv || ev.target === document.body)) ev.preventDefault();
  });
  window.addEventListener('resize', resize);

  // ---- call trees -----------------------------------------------------------------------

  // One line of a tree: duration, self time, name, marks.
  function nodeLine(node) {
    var frag = document.createDocumentFragment();
    frag.appendChild(el('span', lasted(node.dur, node.fl & 2), 'd'));
    frag.appendChild(el('span', 'self ' + human(node.self), 's'));
    frag.appendChild(el('span', (node.n > 1 ? node.n + ' \u00d7 ' : '') + fname(node.f), 'n'));
    var marks = [];
    if (node.fl & 1) marks.push('entered before the window');
    if (node.fl & 2) marks.push('open at the end');
    if (node.merged) marks.push('merged: each shorter than a pixel');
    if (node.deeper) marks.push(node.deeper + ' deeper calls not shown');
    if (node.more) marks.push(node.more + ' more calls (' + human(node.more_ns) + ') not shown');
    if (marks.length) frag.appendChild(el('span', '  (' + marks.join('; ') + ')', 'm'));
    return frag;
  }
  // A tree as nested lists; built with an explicit stack, so a deep tree cannot overflow it.
  function treeDom(root) {
    var top = el('ul', null, 'tree');
    var stack = [[root, top, 0]];
    while (stack.length) {
      var it = stack.pop(), node = it[0], parent = it[1], depth = it[2];
      var li = el('li');
      if (node.c && node.c.length) {
        var det = el('details');
        det.open = depth < 4;
        var sum = el('summary');
        sum.appendChild(nodeLine(node));
        det.appendChild(sum);
        var ul = el('ul');
        det.appendChild(ul);
        li.appendChild(det);
        for (var k = node.c.length - 1; k >= 0; k--) stack.push([node.c[k], ul, depth + 1]);
      } else {
        var span = el('div', null, 'leaf');
        span.appendChild(nodeLine(node));
        li.appendChild(span);
      }
      // Children are pushed in reverse, so they come out (and are appended) in order.
      parent.appendChild(li);
    }
    return top;
  }

  // The tree under slice i of lane L, from the timeline: the calls nested in it, merged ones
  // included, at most 8 levels and 400 nodes.
  function timelineTree(L, i) {
    var count = 0;
    function node(k) {
      return { f: L.fn[k], n: 1, start: L.start[k], dur: L.dur[k], self: L.self[k], fl: L.flags[k] & 3, c: [] };
    }
    var root = node(i), queue = [[root, L.depth[i], L.start[i], L.start[i] + L.dur[i]]];
    while (queue.length && count < 400) {
      var q = queue.shift(), parent = q[0], d = q[1] + 1, a = q[2], b = q[3];
      if (d - L.depth[i] > 8) { continue; }
      var kids = [];
      if (d < L.depthFrom.length - 1) {
        var s1 = L.depthFrom[d + 1];
        for (var k = lowerBound(null, L.depthFrom[d], s1, a, function (arr, m) { return L.start[m]; }); k < s1 && L.start[k] < b; k++) {
          if (L.start[k] + L.dur[k] > b + 1) continue;
          var c = node(k);
          kids.push(c);
          queue.push([c, d, L.start[k], L.start[k] + L.dur[k]]);
        }
      }
      if (d < L.barFrom.length - 1) {
        var b1 = L.barFrom[d + 1];
        for (var j = lowerBound(null, L.barFrom[d], b1, a, function (arr, m) { return L.bStart[m]; }); j < b1 && L.bStart[j] < b; j++) {
          kids.push({ f: L.bFn[j], n: L.bCount[j], start: L.bStart[j], dur: L.bDur[j], self: 0, fl: 0, merged: true, c: [] });
        }
      }
      kids.sort(function (x, y) { return x.start - y.start; });
      count += kids.length;
      parent.c = kids;
    }
    return root;
  }

  function slowestOf(lane, fn, start) {
    for (var k = 0; k < D.slowest.length; k++) {
      var s = D.slowest[k];
      if (s.lane === lane && s.tree && s.tree.f === fn && Math.abs(s.tree.start - start) < 1) return s;
    }
    return null;
  }

  function select(lane, i) {
    var L = lanes[lane];
    selected = { kind: 'slice', lane: lane, i: i };
    var s = slowestOf(lane, L.fn[i], L.start[i]);
    var root = s ? s.tree : timelineTree(L, i);
    $('tree-title').textContent = fname(L.fn[i]) + ' on ' + L.label + ' at ' + rel(L.start[i]) +
      ': ' + lasted(L.dur[i], L.flags[i] & 2) + (s ? ' (one of the slowest calls)' : '');
    var t = $('tree');
    t.textContent = '';
    t.appendChild(treeDom(root));
    $('tree-panel').hidden = false;
    schedule();
  }

  // ---- the slowest calls ----------------------------------------------------------------

  function findSlice(laneIndex, fn, start) {
    var L = lanes[laneIndex];
    if (!L) return -1;
    for (var k = 0; k < L.n; k++) {
      if (L.fn[k] === fn && Math.abs(L.start[k] - start) < 1) return k;
    }
    return -1;
  }
  var slowDiv = $('slowest');
  if (!D.slowest.length) slowDiv.appendChild(el('p', 'No call passed the filters.', 'help'));
  D.slowest.forEach(function (s, rank) {
    var det = el('details', null, 'slow');
    var sum = el('summary');
    sum.appendChild(el('span', s.dur_text, 'd'));
    sum.appendChild(el('span', fname(s.tree.f), 'n'));
    var where = s.lane !== null && lanes[s.lane] ? lanes[s.lane].label : 'a thread not shown';
    sum.appendChild(el('span', '  on ' + where + ' at ' + rel(s.tree.start) + ', self ' + s.self_text, 't'));
    det.appendChild(sum);
    var body = el('div');
    var btn = el('button', 'Show on the timeline');
    btn.type = 'button';
    btn.addEventListener('click', function () {
      var k = findSlice(s.lane, s.tree.f, s.tree.start);
      var m = s.tree.dur * 0.1;
      zoomTo(s.tree.start - m, s.tree.start + s.tree.dur + m);
      if (k >= 0) select(s.lane, k);
      cv.scrollIntoView({ block: 'center' });
    });
    body.appendChild(btn);
    body.appendChild(treeDom(s.tree));
    det.appendChild(body);
    det.open = rank === 0;
    slowDiv.appendChild(det);
  });

  // ---- the per-function table -----------------------------------------------------------

  var cols = [
    ['function', function (r) { return fname(r.f); }, true],
    ['count', function (r) { return r.count; }],
    ['open', function (r) { return r.open; }],
    ['min', function (r) { return r.min; }, false, true],
    ['p50', function (r) { return r.p50; }, false, true],
    ['p90', function (r) { return r.p90; }, false, true],
    ['p99', function (r) { return r.p99; }, false, true],
    ['max', function (r) { return Math.max(r.max, r.open_max); }, false, true],
    ['total', function (r) { return r.total; }, false, true],
    ['self', function (r) { return r.self; }, false, true],
    ['histogram', null],
  ];
  var SHOWN = 200, showAll = false, sortCol = 8, sortDesc = true;
  var thead = document.querySelector('#functions thead'), tbody = document.querySelector('#functions tbody');
  var hr = el('tr');
  cols.forEach(function (c, k) {
    var th = el('th', c[0], c[2] ? 'name' : null);
    if (c[1]) th.addEventListener('click', function () {
      if (sortCol === k) sortDesc = !sortDesc; else { sortCol = k; sortDesc = !c[2]; }
      fillTable();
    });
    hr.appendChild(th);
  });
  thead.appendChild(hr);
  function histCanvas(r) {
    var c = document.createElement('canvas');
    c.width = 160; c.height = 22;
    c.style.width = '160px'; c.style.height = '22px';
    c.title = r.hist.map(function (h) { return human(h[0]) + '\u2013' + human(h[1]) + ': ' + h[2]; }).join('\n');
    var g = c.getContext('2d'), lo = 64, hi = 0, max = 0;
    r.hist.forEach(function (h) {
      var k = h[0] ? Math.floor(Math.log2(h[0])) + 1 : 0;
      lo = Math.min(lo, k); hi = Math.max(hi, k); max = Math.max(max, h[2]);
    });
    if (!r.hist.length) return c;
    var n = Math.max(hi - lo + 1, 8), w = 160 / n;
    g.fillStyle = color(r.f, false);
    r.hist.forEach(function (h) {
      var k = (h[0] ? Math.floor(Math.log2(h[0])) + 1 : 0) - lo;
      var bh = Math.max(1, Math.round(Math.sqrt(h[2] / max) * 20));
      g.fillRect(k * w, 22 - bh, Math.max(1, w - 1), bh);
    });
    return c;
  }
  function fillTable() {
    var rows = D.table.slice();
    var key = cols[sortCol][1];
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), o = x < y ? -1 : (x > y ? 1 : 0);
      return sortDesc ? -o : o;
    });
    tbody.textContent = '';
    var n = showAll ? rows.length : Math.min(rows.length, SHOWN);
    for (var k = 0; k < n; k++) {
      var r = rows[k], tr = el('tr');
      cols.forEach(function (c) {
        if (!c[1]) { var td = el('td', null, 'hist'); td.appendChild(histCanvas(r)); tr.appendChild(td); return; }
        var v = c[1](r), text;
        if (c[2]) text = v + (r.culled ? ' ~' : '');
        else if (c[3]) text = (c[0] === 'max' && r.open_max > r.max) ? '\u2265 ' + human(v) : human(v);
        else text = String(v);
        tr.appendChild(el('td', text, c[2] ? 'name' : null));
      });
      tbody.appendChild(tr);
      if (r.tasks) {
        var tt = el('tr');
        tt.appendChild(el('td', '\u2514 tasks: ' + r.tasks.count + (r.tasks.cancelled ? ' (' + r.tasks.cancelled + ' cancelled)' : ''), 'name'));
        tt.appendChild(el('td', 'p50 ' + human(r.tasks.p50) + ', p99 ' + human(r.tasks.p99) + ', max ' + human(r.tasks.max)));
        tt.lastChild.colSpan = cols.length - 1;
        tt.lastChild.style.textAlign = 'left';
        tbody.appendChild(tt);
      }
    }
    var more = $('functions-more');
    more.textContent = '';
    if (n < rows.length) {
      var b = el('button', 'Show all ' + rows.length + ' functions');
      b.type = 'button';
      b.addEventListener('click', function () { showAll = true; fillTable(); });
      more.appendChild(b);
    }
  }
  fillTable();

  // ---- the flame graph ------------------------------------------------------------------

  var FROW = 16, FMAXDEPTH = 120;
  var froot = { name: 'all', value: 0, kids: {}, list: [] };
  D.flame.forEach(function (p) {
    var node = froot, parts = p[0].split(';');
    node.value += p[1];
    for (var k = 0; k < parts.length && k < FMAXDEPTH; k++) {
      var nm = parts[k], next = node.kids[nm];
      if (!next) { next = { name: nm, value: 0, kids: Object.create(null), list: [] }; node.kids[nm] = next; node.list.push(next); }
      next.value += p[1];
      node = next;
    }
  });
  froot.kids = null;
  var fdepth = 0;
  (function () {
    var st = [[froot, 0]];
    while (st.length) {
      var it = st.pop();
      fdepth = Math.max(fdepth, it[1]);
      it[0].list.sort(function (a, b) { return a.name < b.name ? -1 : (a.name > b.name ? 1 : 0); });
      it[0].list.forEach(function (c) { c.parent = it[0]; st.push([c, it[1] + 1]); });
    }
  })();
  if (D.flame_notes.length) $('flame-notes').textContent = D.flame_notes.join('; ');
  var fc = $('flame'), fctx = fc.getContext('2d'), FW = 800, fh = (fdepth + 1) * FROW + 4;
  var fzoom = froot, frects = [];
  function fresize() {
    FW = fitCanvas(fc, fctx, fh);
    fdraw();
  }
  function fdraw() {
    fctx.clearRect(0, 0, FW, fh);
    fctx.font = '11px system-ui, sans-serif';
    fctx.textBaseline = 'middle';
    frects = [];
    if (!froot.value) { fctx.fillStyle = '#5c6166'; fctx.fillText('No calls to draw.', 6, 10); return; }
    // The zoomed frame's ancestors span the width; below them, the frame and its callees.
    var chain = [], a = fzoom;
    while (a) { chain.unshift(a); a = a.parent; }
    chain.forEach(function (n, d) { frects.push([n, 0, FW, d]); });
    var st = [[fzoom, 0, FW, chain.length - 1]];
    while (st.length) {
      var it = st.pop(), node = it[0], x = it[1], w = it[2], d = it[3];
      var cx = x;
      node.list.forEach(function (c) {
        var cw = w * c.value / node.value;
        if (cw >= 0.5) { frects.push([c, cx, cw, d + 1]); st.push([c, cx, cw, d + 1]); }
        cx += cw;
      });
    }
    frects.forEach(function (r) {
      var yy = fh - (r[3] + 1) * FROW - 2;
      fctx.fillStyle = r[0] === froot ? '#c9ccd1' : 'hsl(' + (20 + (hash(r[0].name) % 40)) + ',85%,' + (58 + hash(r[0].name) % 12) + '%)';
      fctx.fillRect(r[1], yy, Math.max(0.5, r[2] - 0.5), FROW - 1);
      fctx.fillStyle = '#111';
      var max = Math.floor((r[2] - 6) / 6.2);
      if (max >= 3) fctx.fillText(r[0].name.length > max ? r[0].name.slice(0, max - 1) + '\u2026' : r[0].name, r[1] + 3, yy + FROW / 2);
    });
  }
  function hash(s) {
    var h = 0;
    for (var k = 0; k < s.length; k++) h = (h * 31 + s.charCodeAt(k)) | 0;
    return Math.abs(h);
  }
  function fhit(ev) {
    var r = fc.getBoundingClientRect(), x = ev.clientX - r.left, yy = ev.clientY - r.top;
    var d = Math.floor((fh - 2 - yy) / FROW);
    for (var k = 0; k < frects.length; k++) {
      var q = frects[k];
      if (q[3] === d && x >= q[1] && x < q[1] + q[2]) return q[0];
    }
    return null;
  }
  fc.addEventListener('mousemove', function (ev) {
    var n = fhit(ev);
    if (!n) { hideTip(); return; }
    var pct = froot.value ? (100 * n.value / froot.value).toFixed(2) : '0';
    showTip([['name', n.name], ['', human(n.value) + ' (' + pct + '% of all), with its callees']], ev.clientX, ev.clientY);
  });
  fc.addEventListener('mouseleave', hideTip);
  fc.addEventListener('click', function (ev) {
    var n = fhit(ev);
    if (n) { fzoom = n === fzoom && n.parent ? n.parent : n; fdraw(); }
  });

  // ---- what was left out ----------------------------------------------------------------

  var lo = $('left-out');
  D.left_out.forEach(function (s) { lo.appendChild(el('li', s)); });
  lanes.forEach(function (L) {
    if (L.maxDepth > MAXROWS) lo.appendChild(el('li', L.label + ': calls deeper than ' + MAXROWS + ' levels are not drawn on the timeline (the trees and the flame graph hold them)'));
  });
  if (fdepth >= FMAXDEPTH) lo.appendChild(el('li', 'flame graph frames deeper than ' + FMAXDEPTH + ' levels are merged into their caller'));
  if (!lo.children.length) lo.appendChild(el('li', 'Nothing: every call of the window is drawn in detail.'));

  // ---- start ----------------------------------------------------------------------------

  resize();
  fresize();
  window.addEventListener('resize', fresize);

  // For tests and scripts: where a call's slice is on the screen, and what the page shows.
  window.fdrView = {
    lanes: function () { return lanes.map(function (L) { return L.label; }); },
    // The centre of the first slice of function `name` (widest first), zoomed to be visible,
    // in the viewport's coordinates; null if no slice has that function.
    slicePoint: function (name) {
      var best = null;
      lanes.forEach(function (L) {
        for (var k = 0; k < L.n; k++) {
          if (fname(L.fn[k]) === name && (!best || L.dur[k] > best.dur)) best = { L: L, k: k, dur: L.dur[k] };
        }
      });
      if (!best) return null;
      var L = best.L, k = best.k, m = Math.max(L.dur[k] * 0.25, 10);
      zoomTo(L.start[k] - m, L.start[k] + L.dur[k] + m);
      draw();
      var yy = rowY(L, L.depth[k]) + ROW / 2;
      cv.parentNode.scrollIntoView({ block: 'start' });
      cv.parentNode.scrollTop = Math.max(0, yy - 40);
      var r = cv.getBoundingClientRect();
      return { x: r.left + (xOf(L.start[k]) + xOf(L.start[k] + L.dur[k])) / 2, y: r.top + yy };
    },
    // The centre of the longest wait at await site `site` (FILE:LINE:COLUMN), zoomed to be
    // visible, in the viewport's coordinates; null if none.
    awaitPoint: function (site) {
      var best = null;
      lanes.forEach(function (L) {
        L.awaits.forEach(function (a) {
          if (D.sites[a.site] === site && (!best || a.dur > best.a.dur)) best = { L: L, a: a };
        });
      });
      if (!best) return null;
      var L = best.L, a = best.a, m = Math.max(a.dur * 0.25, 10);
      zoomTo(a.start - m, a.start + a.dur + m);
      draw();
      var yy = L.y + LABEL + L.tasks[a.task].row * TASKROW + TASKROW * 3 / 4;
      cv.parentNode.scrollIntoView({ block: 'start' });
      cv.parentNode.scrollTop = Math.max(0, yy - 40);
      var r = cv.getBoundingClientRect();
      return { x: r.left + (xOf(a.start) + xOf(a.start + a.dur)) / 2, y: r.top + yy };
    },
    readyMs: 0,
  };
  window.fdrView.readyMs = performance.now() - t0ms;
  document.documentElement.setAttribute('data-ready', '1');
})();
