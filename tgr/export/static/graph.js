/* tgr graph page: a canvas renderer over positions computed at export time.
   Store text is untrusted: it only ever reaches the page through textContent or the
   canvas's fillText, never as markup. Details (descriptions, passages, reports) are parsed
   only when a panel first needs them, so the first frame waits for nothing but the drawing. */
(function () {
  "use strict";
  var started = performance.now();
  var data = JSON.parse(document.getElementById("tgr-data").textContent);
  var parsed = performance.now();
  var details = null;
  function more() {
    if (!details) details = JSON.parse(document.getElementById("tgr-details").textContent);
    return details;
  }
  var nodes = data.nodes, edges = data.edges, communities = data.communities, N = nodes.length;
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                 "#9c755f", "#86bcb6", "#d37295", "#8cd17d", "#b6992d", "#499894", "#79706e", "#f1ce63",
                 "#a0cbe8", "#ffbe7d", "#d4a6c8", "#6b9ac4", "#c85200", "#5fa2ce", "#57606c", "#a3acb9"];
  var GREY = "#9aa3b0";
  var level = data.level, selected = null, picked = null, hovered = null;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  /* -- the graph in arrays ------------------------------------------------------------ */
  var X = new Float64Array(N), Y = new Float64Array(N), RAD = new Float64Array(N), byId = new Map();
  var maxDegree = 1;
  nodes.forEach(function (n) { if (n.degree > maxDegree) maxDegree = n.degree; });
  nodes.forEach(function (n, i) {
    X[i] = n.x; Y[i] = n.y; byId.set(n.id, i);
    RAD[i] = 2.5 + 10 * Math.sqrt(Math.max(0, n.degree) / maxDegree);
  });
  var degreeOf = new Int32Array(N), adjStart = new Int32Array(N + 1), adjEdge;
  edges.forEach(function (e) { degreeOf[e[0]]++; if (e[1] !== e[0]) degreeOf[e[1]]++; });
  for (var i0 = 0; i0 < N; i0++) adjStart[i0 + 1] = adjStart[i0] + degreeOf[i0];
  adjEdge = new Int32Array(adjStart[N]);
  (function () {
    var fill = adjStart.slice(0, N);
    edges.forEach(function (e, k) { adjEdge[fill[e[0]]++] = k; if (e[1] !== e[0]) adjEdge[fill[e[1]]++] = k; });
  })();
  function neighbourEdges(i) { return Array.prototype.slice.call(adjEdge, adjStart[i], adjStart[i + 1]); }
  function other(k, i) { return edges[k][0] === i ? edges[k][1] : edges[k][0]; }

  /* colour: the entity's community at the chosen level, or its deepest one above it */
  var colourIndex = {}, membersOf = {};
  data.levels.forEach(function (lv) {
    Object.keys(communities).filter(function (id) { return communities[id].level === lv; })
      .sort(function (a, b) { return communities[b].size - communities[a].size || (a < b ? -1 : 1); })
      .forEach(function (id, k) { colourIndex[id] = k; });
  });
  nodes.forEach(function (n, i) {
    n.c.forEach(function (c) { if (c) (membersOf[c] = membersOf[c] || []).push(i); });
  });
  function communityAt(n, lv) {
    for (var l = Math.min(lv, n.c.length - 1); l >= 0; l--) { if (n.c[l]) return n.c[l]; }
    return null;
  }
  function colourOfCommunity(c) {
    return c === null || !(c in colourIndex) ? GREY : PALETTE[colourIndex[c] % PALETTE.length];
  }
  var colourGroups;  /* node indices by colour, rebuilt when the level changes */
  function recolour() {
    var groups = {};
    nodes.forEach(function (n, i) { var c = colourOfCommunity(communityAt(n, level)); (groups[c] = groups[c] || []).push(i); });
    colourGroups = Object.keys(groups).map(function (c) { return [c, groups[c]]; });
  }
  function titleOf(id) {
    var c = communities[id];
    if (c && c.title) return c.title;
    var m = (membersOf[id] || []).slice(0, 3).map(function (i) { return nodes[i].name; });
    return m.join(", ") || id;
  }
  var disks = Object.keys(communities).filter(function (id) { return communities[id].d; })
    .sort(function (a, b) { return communities[b].size - communities[a].size || (a < b ? -1 : 1); });
  /* relationships between two top-level communities, counted: the overview draws one line per pair */
  var bundles = (function () {
    var count = new Map();
    edges.forEach(function (e) {
      var a = nodes[e[0]].c[0], b = nodes[e[1]].c[0];
      if (a === b || !a || !b || !communities[a] || !communities[b] || !communities[a].d || !communities[b].d) return;
      var key = a < b ? a + "\n" + b : b + "\n" + a;
      count.set(key, (count.get(key) || 0) + 1);
    });
    var list = [];
    count.forEach(function (n, key) { var p = key.split("\n"); list.push([communities[p[0]].d, communities[p[1]].d, n]); });
    return list;
  })();
  var BUNDLE_ZOOM = 2.5;  /* closer than this (relative to the first view), every relationship is drawn */

  /* a grid over world coordinates for hit tests */
  var CELL = 60, grid = new Map();
  for (var g = 0; g < N; g++) {
    var key = Math.floor(X[g] / CELL) + "," + Math.floor(Y[g] / CELL);
    if (!grid.has(key)) grid.set(key, []);
    grid.get(key).push(g);
  }
  function nodeAt(wx, wy, slack) {
    var best = null, bestD = Infinity, reach = Math.ceil((14 + slack) / CELL);
    var cx = Math.floor(wx / CELL), cy = Math.floor(wy / CELL);
    for (var a = cx - reach; a <= cx + reach; a++) for (var b = cy - reach; b <= cy + reach; b++) {
      (grid.get(a + "," + b) || []).forEach(function (i) {
        var d = Math.hypot(X[i] - wx, Y[i] - wy);
        if (d <= RAD[i] + slack && d < bestD) { best = i; bestD = d; }
      });
    }
    return best;
  }
  function diskAt(wx, wy) {
    for (var k = disks.length - 1; k >= 0; k--) {
      var d = communities[disks[k]].d;
      if (Math.hypot(d[0] - wx, d[1] - wy) <= d[2]) return disks[k];
    }
    return null;
  }

  /* -- view ---------------------------------------------------------------------------- */
  var canvas = document.getElementById("canvas"), ctx = canvas.getContext("2d");
  var W = 0, H = 0, DPR = 1, view = { x: 0, y: 0, s: 1 }, fitScale = 1;
  function resize() {
    var box = canvas.getBoundingClientRect();
    DPR = window.devicePixelRatio || 1;
    W = Math.max(1, box.width); H = Math.max(1, box.height);
    canvas.width = Math.round(W * DPR); canvas.height = Math.round(H * DPR);
  }
  function fitBox(x0, y0, x1, y1, pad) {
    var s = Math.min((W - 2 * pad) / Math.max(1, x1 - x0), (H - 2 * pad) / Math.max(1, y1 - y0));
    view = { x: (x0 + x1) / 2, y: (y0 + y1) / 2, s: Math.max(0.01, Math.min(s, 3)) };
  }
  function fitIndices(list, pad) {
    if (!list.length) return;
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    list.forEach(function (i) {
      x0 = Math.min(x0, X[i] - RAD[i]); x1 = Math.max(x1, X[i] + RAD[i]);
      y0 = Math.min(y0, Y[i] - RAD[i]); y1 = Math.max(y1, Y[i] + RAD[i]);
    });
    fitBox(x0, y0, x1, y1, pad);
  }
  function fitMain() { var v = data.view; fitBox(v[0] - 20, v[1] - 20, v[2] + 20, v[3] + 20, 24); fitScale = view.s; }
  function sx(wx) { return (wx - view.x) * view.s + W / 2; }
  function sy(wy) { return (wy - view.y) * view.s + H / 2; }

  /* -- drawing ------------------------------------------------------------------------- */
  /* label widths estimated from the characters (wide for CJK), not measured: measuring
     10,000 names would cost more than the whole first frame */
  var widthCache = new Float32Array(N).fill(-1);
  function labelWidth(i, size) {
    if (widthCache[i] < 0) {
      var name = nodes[i].name, w = 0;
      for (var k = 0; k < name.length && k < 40; k++) w += name.charCodeAt(k) > 0x2e80 ? 1.0 : 0.62;
      widthCache[i] = w;
    }
    return widthCache[i] * size;
  }
  function Occupancy() {  /* screen cells already holding a label */
    var cw = 8, cols = Math.ceil(W / cw) + 1, rows = Math.ceil(H / cw) + 1, taken = new Uint8Array(cols * rows);
    function span(x0, y0, x1, y1, mark) {
      var a0 = Math.max(0, Math.floor(x0 / cw)), a1 = Math.min(cols - 1, Math.floor(x1 / cw));
      var b0 = Math.max(0, Math.floor(y0 / cw)), b1 = Math.min(rows - 1, Math.floor(y1 / cw));
      for (var b = b0; b <= b1; b++) for (var a = a0; a <= a1; a++) {
        if (mark) taken[b * cols + a] = 1; else if (taken[b * cols + a]) return false;
      }
      return true;
    }
    this.claim = function (x0, y0, x1, y1) {
      if (x0 < 0 || y0 < 0 || x1 > W || y1 > H || !span(x0, y0, x1, y1, false)) return false;
      span(x0, y0, x1, y1, true);
      return true;
    };
  }
  function inView(i, margin) {
    var x = sx(X[i]), y = sy(Y[i]);
    return x > -margin && x < W + margin && y > -margin && y < H + margin;
  }
  function focusSet() {  /* what stays bright: the picked community, or the selected entity and its neighbours */
    if (selected !== null) {
      var s = new Set([selected]);
      neighbourEdges(selected).forEach(function (k) { s.add(other(k, selected)); });
      return s;
    }
    if (picked !== null) return new Set(membersOf[picked] || []);
    return null;
  }

  function draw() {
    ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    ctx.clearRect(0, 0, W, H);
    var focus = focusSet();
    drawDisks();
    drawEdges(focus);
    drawNodes(focus);
    drawLabels(focus);
  }
  function drawDisks() {
    disks.forEach(function (id) {
      var d = communities[id].d, r = d[2] * view.s, x = sx(d[0]), y = sy(d[1]);
      if (x + r < 0 || x - r > W || y + r < 0 || y - r > H || r < 2) return;
      ctx.beginPath(); ctx.arc(x, y, r, 0, 2 * Math.PI);
      ctx.globalAlpha = picked === id ? 0.16 : 0.07; ctx.fillStyle = colourOfCommunity(id); ctx.fill();
      ctx.globalAlpha = picked === id ? 0.7 : 0.22; ctx.strokeStyle = colourOfCommunity(id); ctx.lineWidth = 1; ctx.stroke();
    });
    ctx.globalAlpha = 1;
  }
  function drawEdges(focus) {
    var lines = [], between = [], strong = [], bundled = view.s / fitScale < BUNDLE_ZOOM;
    for (var k = 0; k < edges.length; k++) {
      var a = edges[k][0], b = edges[k][1];
      if (!inView(a, 0) && !inView(b, 0)) continue;
      if (focus && (selected !== null ? (a === selected || b === selected) : (focus.has(a) && focus.has(b)))) strong.push(k);
      else if (nodes[a].c[0] === nodes[b].c[0]) lines.push(k);
      else if (!bundled || !nodes[a].c[0] || !communities[nodes[a].c[0]] || !communities[nodes[a].c[0]].d) between.push(k);
    }
    if (bundled) drawBundles(focus);
    function stroke(list, colour, alpha, width) {
      ctx.beginPath();
      list.forEach(function (k) { var e = edges[k]; ctx.moveTo(sx(X[e[0]]), sy(Y[e[0]])); ctx.lineTo(sx(X[e[1]]), sy(Y[e[1]])); });
      ctx.globalAlpha = alpha; ctx.strokeStyle = colour; ctx.lineWidth = width; ctx.stroke();
    }
    /* the more lines, the fainter; lines between communities fainter still, so groups read */
    var alpha = Math.max(0.06, Math.min(0.55, 0.55 * Math.sqrt(1500 / Math.max(1, lines.length + between.length))));
    stroke(between, "#7d8796", (focus ? 0.4 : 1) * alpha * 0.35, 1);
    stroke(lines, "#7d8796", focus ? alpha * 0.4 : alpha, 1);
    if (strong.length) stroke(strong, "#33415a", 0.75, 1.4);
    ctx.globalAlpha = 1;
  }
  function drawBundles(focus) {
    ctx.strokeStyle = "#7d8796";
    bundles.forEach(function (b) {
      ctx.beginPath(); ctx.moveTo(sx(b[0][0]), sy(b[0][1])); ctx.lineTo(sx(b[1][0]), sy(b[1][1]));
      ctx.globalAlpha = (focus ? 0.05 : 0.12) + Math.min(0.25, b[2] / 200); ctx.lineWidth = Math.min(8, 0.6 + Math.log(b[2]));
      ctx.stroke();
    });
    ctx.globalAlpha = 1;
  }
  function drawNodes(focus) {
    colourGroups.forEach(function (group) {
      [true, false].forEach(function (bright) {
        if (!focus && !bright) return;
        ctx.beginPath();
        group[1].forEach(function (i) {
          if ((focus ? focus.has(i) : true) !== bright || !inView(i, 20)) return;
          var r = screenRadius(i), x = sx(X[i]), y = sy(Y[i]);
          ctx.moveTo(x + r, y); ctx.arc(x, y, r, 0, 2 * Math.PI);
        });
        ctx.globalAlpha = bright ? 1 : 0.15; ctx.fillStyle = group[0]; ctx.fill();
        if (view.s * 6 > 3) { ctx.strokeStyle = "#fff"; ctx.lineWidth = 0.8; ctx.stroke(); }
      });
    });
    ctx.globalAlpha = 1;
    if (selected !== null) ring(selected, "#1d2430", 3);
    if (hovered !== null && hovered !== selected) ring(hovered, "#5a6475", 2);
  }
  function screenRadius(i) { return Math.max(1.2, Math.min(26, RAD[i] * view.s)); }
  function ring(i, colour, width) {
    ctx.beginPath(); ctx.arc(sx(X[i]), sy(Y[i]), Math.max(3, screenRadius(i)) + 2, 0, 2 * Math.PI);
    ctx.strokeStyle = colour; ctx.lineWidth = width; ctx.stroke();
  }
  function text(str, x, y, size, weight, colour) {
    ctx.font = weight + " " + size + "px system-ui, sans-serif";
    ctx.lineWidth = 3; ctx.strokeStyle = "rgba(255,255,255,.92)"; ctx.strokeText(str, x, y);
    ctx.fillStyle = colour; ctx.fillText(str, x, y);
  }
  function shorten(str, max) { return str.length > max ? str.slice(0, max - 1) + "…" : str; }

  /* Level of detail: community titles first, then the chosen entity and its neighbours, then
     entities by degree while they fit without overlap. The number of entity labels allowed
     grows with the zoom (data.top at the overview), so names appear as you get closer. */
  function drawLabels(focus) {
    var room = new Occupancy(), zoom = view.s / fitScale;
    ctx.textAlign = "center"; ctx.textBaseline = "middle";
    var budget = Math.round(data.top * Math.max(1, zoom * zoom)), placed = 0;
    function label(i, size, weight) {
      var str = shorten(nodes[i].name, 40), w = labelWidth(i, size) + 4;
      if (str !== nodes[i].name) { ctx.font = weight + " " + size + "px system-ui, sans-serif"; w = ctx.measureText(str).width + 4; }
      var x = sx(X[i]), y = sy(Y[i]) + Math.max(2, screenRadius(i)) + size / 2 + 2;
      if (!room.claim(x - w / 2, y - size / 2 - 1, x + w / 2, y + size / 2 + 1)) return false;
      text(str, x, y, size, weight, "#1d2430");
      return true;
    }
    if (selected !== null && inView(selected, 0)) label(selected, 14, "bold");
    if (zoom < 6) communityLabels(room);
    if (focus) focus.forEach(function (i) { if (i !== selected && inView(i, 0)) label(i, 12, "normal"); });
    for (var i = 0; i < N && placed < budget; i++) {
      if (focus && !focus.has(i)) continue;
      if (!inView(i, 0)) continue;
      var size = Math.round(10 + 5 * Math.sqrt(nodes[i].degree / maxDegree));
      if (label(i, size, nodes[i].degree * 4 > maxDegree ? "600" : "normal")) placed++;
    }
  }
  function communityLabels(room) {
    disks.forEach(function (id) {
      var d = communities[id].d, r = d[2] * view.s;
      if (r < 28 || (picked !== null && picked !== id)) return;
      var size = Math.min(17, 11 + r / 40), str = titleOf(id);
      ctx.font = "bold " + size + "px system-ui, sans-serif";
      if (ctx.measureText(str).width > 2 * r + 60) str = shorten(str.split(/[,;，、]/)[0], 28);
      var w = ctx.measureText(str).width + 6, x = sx(d[0]), y = sy(d[1]) - r - size / 2 - 2;
      if (y < size) y = sy(d[1]) - r + size;
      if (!room.claim(x - w / 2, y - size / 2 - 2, x + w / 2, y + size / 2 + 2)) return;
      text(str, x, y, size, "bold", darker(colourOfCommunity(id)));
    });
  }
  function darker(hex) {
    var n = parseInt(hex.slice(1), 16), f = 0.55;
    return "rgb(" + Math.round((n >> 16) * f) + "," + Math.round(((n >> 8) & 255) * f) + "," + Math.round((n & 255) * f) + ")";
  }
  var pending = false;
  function redraw() { if (!pending) { pending = true; requestAnimationFrame(function () { pending = false; draw(); }); } }

  /* -- panels -------------------------------------------------------------------------- */
  function link(i) { var a = el("a", nodes[i].name); a.href = "#node=" + encodeURIComponent(nodes[i].id); return a; }
  function communityLink(id, text) { var a = el("a", text || titleOf(id)); a.href = "#community=" + encodeURIComponent(id); return a; }
  function swatch(id) { var s = el("span", null, "swatch"); s.style.background = colourOfCommunity(id); return s; }
  function reportBox(id, full) {
    var c = communities[id], box = el("div", null, "report");
    if (!c) return box;
    var report = full ? more().reports[id] : null;
    var head = el("div", "Level " + c.level + " · community " + id + " · " + c.size + " entities" +
      (report && report.rating !== null && report.rating !== undefined ? " · rating " + report.rating : ""), "meta");
    head.prepend(swatch(id), " ");
    box.append(head);
    var title = el("strong"); title.append(communityLink(id, c.title || "(untitled) " + titleOf(id)));
    box.append(title);
    if (report) {
      if (report.summary) box.append(el("p", report.summary));
      if (report.findings.length) {
        var ul = el("ul");
        report.findings.forEach(function (f) { var li = el("li"); li.append(el("strong", f[0])); if (f[1]) li.append(" — ", f[1]); ul.append(li); });
        box.append(ul);
      }
    }
    return box;
  }
  function panel(overview) {
    var p = document.getElementById("panel");
    p.replaceChildren(); delete p.dataset.node; delete p.dataset.community;
    document.getElementById("legend").style.display = overview ? "none" : "";  /* the panel lists them then */
    return p;
  }

  function showNode(i) {
    var n = nodes[i], p = panel(), d = more(), description = d.descriptions[i] || "";
    p.dataset.node = n.id;
    p.append(el("h2", n.name), el("div", n.type + " · degree " + n.degree + " · id " + n.id, "meta"));
    if (n.a && n.a.length) p.append(el("div", "Also called: " + n.a.join(" · "), "aliases"));
    if (description.length > 360) {  /* long merged descriptions fold, so the report and sources stay in view */
      var desc = el("p", description.slice(0, 360) + "… "), fold = el("a", "more");
      fold.addEventListener("click", function () { desc.textContent = description; });
      desc.append(fold); p.append(desc);
    } else if (description) p.append(el("p", description));
    var own = communityAt(n, level);
    p.append(el("h3", "Community report (level " + level + ")"));
    if (own) p.append(reportBox(own, true)); else p.append(el("p", "No community at this level.", "meta"));
    var path = n.c.filter(function (c) { return c && c !== own; });
    if (path.length) { p.append(el("h3", "Other levels")); path.forEach(function (c) { p.append(reportBox(c, false)); }); }
    var links = neighbourEdges(i);
    p.append(el("h3", "Relationships (" + links.length + ")"));
    var ul = el("ul");
    links.sort(function (a, b) { return edges[b][2] - edges[a][2] || a - b; }).slice(0, 60).forEach(function (k) {
      var e = edges[k], info = d.edges[k] || ["", ""], li = el("li");
      if (e[0] === i) li.append("→ ", el("em", info[0] || "related to"), " ", link(e[1]));
      else li.append(link(e[0]), " ", el("em", info[0] || "related to"), " → this");
      li.append(el("span", " (weight " + e[2] + ")", "meta"));
      if (info[1]) li.append(el("div", info[1], "meta"));
      ul.append(li);
    });
    if (links.length > 60) ul.append(el("li", "… " + (links.length - 60) + " more", "meta"));
    p.append(ul, el("h3", "Source passages"));
    var passages = d.passages[i] || [];
    if (!passages.length) p.append(el("p", "None recorded.", "meta"));
    passages.forEach(function (x) {
      var doc = d.documents[x[0]] || ["?", "?"], box = el("div", null, "passage");
      box.append(el("div", doc[1] + " — " + doc[0] + " · chunk " + x[1], "doc"), el("div", x[2]));
      p.append(box);
    });
  }

  function showCommunity(id) {
    var c = communities[id], p = panel(), members = membersOf[id] || [];
    p.dataset.community = id;
    var h = el("h2", c.title || titleOf(id)); h.prepend(swatch(id), " ");
    p.append(h, el("div", "Level " + c.level + " community " + id + " · " + c.size + " entities", "meta"));
    p.append(el("h3", "Report"), reportBox(id, true));
    if (c.parent && communities[c.parent]) { p.append(el("h3", "Inside")); p.append(reportBox(c.parent, false)); }
    var children = Object.keys(communities).filter(function (k) { return communities[k].parent === id; });
    if (children.length) {
      p.append(el("h3", "Sub-communities (" + children.length + ")"));
      children.sort(function (a, b) { return communities[b].size - communities[a].size; }).slice(0, 30)
        .forEach(function (k) { p.append(reportBox(k, false)); });
    }
    var inside = 0, set = new Set(members);
    edges.forEach(function (e) { if (set.has(e[0]) && set.has(e[1])) inside++; });
    p.append(el("h3", "Members (" + members.length + ", " + inside + " relationships inside)"));
    var ul = el("ul", null, "members");
    members.slice(0, 300).forEach(function (i) { var li = el("li"); li.append(link(i), el("span", " " + nodes[i].degree, "meta")); ul.append(li); });
    if (members.length > 300) ul.append(el("li", "… " + (members.length - 300) + " more", "meta"));
    p.append(ul);
  }

  function showOverview() {
    var p = panel(true), atLevel = Object.keys(communities).filter(function (id) { return communities[id].level === level; });
    p.append(el("h2", data.title), el("div", N + " entities · " + edges.length + " relationships · " +
      atLevel.length + " communities at level " + level, "meta"));
    p.append(el("p", "Scroll to zoom (more names appear as you get closer), drag to move, click an entity or a community. " +
      "The first view fits the main component; islands and isolated entities sit below it (All).", "meta"));
    p.append(el("h3", "Largest communities (level " + level + ")"));
    var ul = el("ul", null, "members");
    atLevel.sort(function (a, b) { return communities[b].size - communities[a].size || (a < b ? -1 : 1); }).slice(0, 80)
      .forEach(function (id) { var li = el("li"); li.append(swatch(id), " ", communityLink(id), el("span", " " + communities[id].size, "meta")); ul.append(li); });
    p.append(ul);
  }

  /* -- choosing: every way goes through the URL hash, so links work too ---------------- */
  function selectNode(i) {
    selected = i; picked = null;
    var around = [i]; neighbourEdges(i).forEach(function (k) { around.push(other(k, i)); });
    fitIndices(around, 80);
    if (view.s > fitScale * 8) view.s = fitScale * 8;
    showNode(i); redraw();
  }
  function pickCommunity(id) {
    selected = null; picked = id;
    fitIndices(membersOf[id] || [], 60);
    showCommunity(id); redraw();
  }
  function fromHash() {
    var m = /^#(node|community|search)=(.*)$/.exec(location.hash), id;
    if (!m || m[1] === "search") { selected = null; picked = null; showOverview(); redraw(); }
    if (!m) return;
    try { id = decodeURIComponent(m[2]); } catch (err) { return; }
    if (m[1] === "node" && byId.has(id)) selectNode(byId.get(id));
    else if (m[1] === "community" && communities[id]) pickCommunity(id);
    else if (m[1] === "search") { search.value = id; search.dispatchEvent(new Event("input")); }
  }
  function go(kind, id) {
    var target = "#" + kind + "=" + encodeURIComponent(id);
    if (location.hash === target) fromHash(); else location.hash = target;
  }

  /* -- search: names and aliases, forgiving case, accents, `·` and a typo or two ---------- */
  var folded = null;
  var zh = data.zh || {};  /* traditional and regional characters -> simplified, for the page's names */
  function fold(s) {
    return s.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
      .replace(/[\u3400-\u9fff\uf900-\ufaff]/g, function (c) { return zh[c] || c; })
      .replace(/[·・•‧\-_.,'’‘]+/g, " ").replace(/\s+/g, " ").trim();
  }
  function osa(a, b, limit) {  /* edit distance with swaps, or limit + 1 once it is surely above limit */
    if (Math.abs(a.length - b.length) > limit) return limit + 1;
    var prev2 = null, prev = [], cur;
    for (var j = 0; j <= b.length; j++) prev.push(j);
    for (var i = 1; i <= a.length; i++) {
      cur = [i]; var low = i;
      for (j = 1; j <= b.length; j++) {
        var cost = a[i - 1] === b[j - 1] ? 0 : 1, v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
        if (prev2 && i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2] + 1);
        cur.push(v); if (v < low) low = v;
      }
      if (low > limit) return limit + 1;
      prev2 = prev; prev = cur;
    }
    return prev[b.length];
  }
  function searchScore(q, name) {
    if (name === q) return 0;
    if (name.indexOf(q) === 0) return 1;
    var at = name.indexOf(q);
    if (at > 0) return name[at - 1] === " " ? 2 : 3;
    var limit = q.length < 4 ? 0 : q.length <= 7 ? 1 : 2;
    if (!limit) return -1;
    var d = osa(q, name, limit);
    if (d <= limit) return 3 + d;
    var words = name.split(" ");  /* a typo inside one word of a longer name */
    for (var w = 0; w < words.length; w++) if (words.length > 1 && osa(q, words[w], limit) <= limit) return 5 + limit;
    return -1;
  }
  function find(query) {
    if (!folded) folded = nodes.map(function (n) { return [fold(n.name)].concat((n.a || []).map(fold)); });
    var q = fold(query), hits = [];
    if (!q) return hits;
    for (var i = 0; i < N; i++) {
      var best = -1, via = null;
      folded[i].forEach(function (name, k) {
        var s = searchScore(q, name);
        if (s >= 0 && (best < 0 || s < best)) { best = s; via = k ? nodes[i].a[k - 1] : null; }
      });
      if (best >= 0) hits.push([best, i, via]);
    }
    hits.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });  /* nodes come in degree order */
    return hits.slice(0, 20);
  }
  var search = document.getElementById("search"), matches = document.getElementById("matches");
  search.addEventListener("input", function () {
    matches.replaceChildren();
    if (!search.value.trim()) { matches.classList.remove("open"); return; }
    var hits = find(search.value);
    hits.forEach(function (h) {
      var n = nodes[h[1]], b = el("button", n.name + (h[2] ? " (as “" + h[2] + "”)" : "") + " · " + n.degree);
      b.type = "button"; b.dataset.i = String(h[1]); matches.append(b);
    });
    Object.keys(communities).filter(function (id) { return communities[id].title && fold(communities[id].title).indexOf(fold(search.value)) >= 0; })
      .slice(0, 5).forEach(function (id) {
        var b = el("button", "Community: " + communities[id].title); b.type = "button"; b.dataset.c = id; matches.append(b);
      });
    if (!matches.firstChild) matches.append(el("div", "no entity matches", "meta"));
    matches.classList.add("open");
  });
  search.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && matches.firstChild && matches.firstChild.dataset) matches.firstChild.click();
  });
  matches.addEventListener("click", function (ev) {
    var b = ev.target.closest("button");
    if (!b) return;
    matches.classList.remove("open");
    if (b.dataset.c) go("community", b.dataset.c); else go("node", nodes[+b.dataset.i].id);
  });

  /* -- pointer: drag to pan, wheel to zoom, click to choose ------------------------------ */
  var drag = null, tip = document.getElementById("tip");
  function world(ev) {
    var box = canvas.getBoundingClientRect(), x = ev.clientX - box.left, y = ev.clientY - box.top;
    return { sx: x, sy: y, x: (x - W / 2) / view.s + view.x, y: (y - H / 2) / view.s + view.y };
  }
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var p = world(ev), f = Math.exp(-ev.deltaY * 0.0015);
    var s = Math.max(fitScale / 4, Math.min(fitScale * 200, view.s * f));
    view.x = p.x - (p.sx - W / 2) / s; view.y = p.y - (p.sy - H / 2) / s; view.s = s;
    redraw();
  }, { passive: false });
  canvas.addEventListener("pointerdown", function (ev) {
    drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y, moved: false };
    canvas.setPointerCapture(ev.pointerId); canvas.classList.add("dragging");
  });
  canvas.addEventListener("pointermove", function (ev) {
    if (drag) {
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      view.x = drag.vx - dx / view.s; view.y = drag.vy - dy / view.s; redraw();
      return;
    }
    var p = world(ev), i = nodeAt(p.x, p.y, 4 / view.s);
    if (i !== hovered) { hovered = i; redraw(); }
    if (i === null) { tip.style.display = "none"; return; }
    tip.textContent = nodes[i].name + " · " + nodes[i].type + " · degree " + nodes[i].degree;
    tip.style.left = (p.sx + 12) + "px"; tip.style.top = (p.sy + 12) + "px"; tip.style.display = "block";
  });
  canvas.addEventListener("pointerup", function (ev) {
    var was = drag; drag = null; canvas.classList.remove("dragging");
    if (!was || was.moved) return;
    var p = world(ev), i = nodeAt(p.x, p.y, 4 / view.s);
    if (i !== null) { go("node", nodes[i].id); return; }
    var c = diskAt(p.x, p.y);
    if (c) go("community", c);
  });
  canvas.addEventListener("pointerleave", function () { tip.style.display = "none"; hovered = null; redraw(); });

  /* -- controls ------------------------------------------------------------------------ */
  var levelSelect = document.getElementById("level");
  data.levels.forEach(function (lv) {
    var o = el("option", String(lv)); o.value = String(lv); if (lv === level) o.selected = true; levelSelect.append(o);
  });
  levelSelect.addEventListener("change", function () {
    level = +levelSelect.value; recolour(); legend(); fromHash();
  });
  document.getElementById("fit").addEventListener("click", function () { fitMain(); redraw(); });
  document.getElementById("all").addEventListener("click", function () {
    fitIndices(nodes.map(function (n, i) { return i; }), 24); redraw();
  });
  document.getElementById("overview").addEventListener("click", function () {
    if (location.hash) location.hash = ""; else fromHash();
  });
  window.addEventListener("hashchange", fromHash);
  window.addEventListener("resize", function () { resize(); redraw(); });

  function legend() {
    var box = document.getElementById("legend");
    box.replaceChildren(el("strong", "Largest communities, level " + level));
    Object.keys(communities).filter(function (id) { return communities[id].level === level; })
      .sort(function (a, b) { return communities[b].size - communities[a].size || (a < b ? -1 : 1); }).slice(0, 6)
      .forEach(function (id) {
        var row = el("div");
        row.append(swatch(id), el("span", shorten(titleOf(id), 44) + " (" + communities[id].size + ")"));
        row.addEventListener("click", function () { go("community", id); });
        box.append(row);
      });
  }

  function status() {
    var s = document.getElementById("status"), outside = 0;
    nodes.forEach(function (n) { if (n.o) outside++; });
    s.textContent = N + " entities, " + edges.length + " relationships" +
      (outside ? " · " + outside + " outside the main component (All)" : "");
    s.dataset.drawn = String(N);
  }

  document.getElementById("title").textContent = data.title;
  recolour(); resize(); fitMain(); legend(); status();
  var hash = /^#(node|community|search)=/.test(location.hash);
  if (hash) fromHash(); else showOverview();
  var ready = performance.now();
  draw();
  var drawn = performance.now();
  document.body.dataset.ready = "1";
  /* where the time to the first frame went: loading the file, parsing the data, building, drawing */
  document.body.dataset.timing = "load " + Math.round(started) + " ms, parse " + Math.round(parsed - started) +
    " ms, build " + Math.round(ready - parsed) + " ms, draw " + Math.round(drawn - ready) + " ms";
  document.body.dataset.firstFrameMs = String(Math.round(performance.now()));
  requestAnimationFrame(function () {
    document.body.dataset.paintedMs = String(Math.round(performance.now()));
    if (window.console) console.log("tgr-graph first frame " + document.body.dataset.firstFrameMs + " ms, painted " + document.body.dataset.paintedMs + " ms");
  });
})();
