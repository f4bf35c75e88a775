/* tgr graph page. Store text is untrusted: it only ever reaches the page through
   textContent (or Cytoscape's canvas labels), never as markup. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tgr-data").textContent);
  var nodes = data.nodes, edges = data.edges, communities = data.communities;
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                 "#9c755f", "#86bcb6", "#d37295", "#8cd17d", "#b6992d", "#499894", "#79706e", "#f1ce63",
                 "#a0cbe8", "#ffbe7d", "#d4a6c8", "#fabfd2", "#6b9ac4", "#c85200", "#5fa2ce", "#57606c"];
  var byId = new Map(), adjacency = nodes.map(function () { return []; });
  nodes.forEach(function (n, i) { byId.set(n.id, i); });
  edges.forEach(function (e, k) { adjacency[e[0]].push(k); if (e[1] !== e[0]) adjacency[e[1]].push(k); });
  var level = data.level, drawnTop = 0, selected = null;
  var maxDegree = nodes.length ? Math.max(1, nodes[0].degree) : 1;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  /* colour: the entity's community at the chosen level, or its deepest one above it */
  var colourIndex = {};
  data.levels.forEach(function (lv) {
    Object.keys(communities).filter(function (id) { return communities[id].level === lv; })
      .sort(function (a, b) { return communities[b].size - communities[a].size || (a < b ? -1 : 1); })
      .forEach(function (id, i) { colourIndex[id] = i; });
  });
  function communityAt(n, lv) {
    for (var l = Math.min(lv, n.c.length - 1); l >= 0; l--) { if (n.c[l]) return n.c[l]; }
    return null;
  }
  function colourOf(n) {
    var c = communityAt(n, level);
    return c === null || !(c in colourIndex) ? "#9aa3b0" : PALETTE[colourIndex[c] % PALETTE.length];
  }
  function sizeOf(n) { return 12 + 40 * Math.sqrt(n.degree / maxDegree); }

  var cy = cytoscape({
    container: document.getElementById("graph"),
    layout: { name: "preset" },
    minZoom: 0.02, maxZoom: 4,
    style: [
      { selector: "node", style: {
          "background-color": "data(colour)", "width": "data(size)", "height": "data(size)",
          "label": "data(label)", "font-size": 11, "min-zoomed-font-size": 7, "color": "#1d2430",
          "text-valign": "bottom", "text-margin-y": 2, "text-outline-color": "#fff", "text-outline-width": 2,
          "border-width": 1, "border-color": "#fff" } },
      { selector: "node.hit", style: { "border-width": 4, "border-color": "#1d2430" } },
      { selector: "node.near", style: { "border-width": 3, "border-color": "#5a6475" } },
      { selector: "edge", style: {
          "width": "mapData(weight, 1, 10, 0.8, 4)", "line-color": "#b8c0cc", "opacity": 0.7,
          "curve-style": "straight", "target-arrow-shape": "triangle", "target-arrow-color": "#b8c0cc",
          "arrow-scale": 0.6 } },
      { selector: "edge.near", style: { "line-color": "#3b4a61", "target-arrow-color": "#3b4a61", "opacity": 1 } },
    ],
  });

  function draw(indices) {
    var add = [], seen = new Set();
    indices.forEach(function (i) {
      if (seen.has(i) || cy.getElementById("n" + i).nonempty()) return;
      seen.add(i);
      var n = nodes[i];
      add.push({ group: "nodes", data: { id: "n" + i, i: i, label: n.name, colour: colourOf(n), size: sizeOf(n) },
                 position: { x: n.x, y: n.y } });
    });
    seen.forEach(function (i) {
      adjacency[i].forEach(function (k) {
        var e = edges[k], other = e[0] === i ? e[1] : e[0];
        if ((seen.has(other) && other < i) || cy.getElementById("e" + k).nonempty()) return;
        if (seen.has(other) || cy.getElementById("n" + other).nonempty())
          add.push({ group: "edges", data: { id: "e" + k, source: "n" + e[0], target: "n" + e[1], weight: e[3] } });
      });
    });
    cy.add(add);
    status();
  }
  function status() {
    var drawn = cy.nodes().length;
    var s = document.getElementById("status");
    s.textContent = drawn + " of " + nodes.length + " entities drawn, " + cy.edges().length + " of " +
      edges.length + " relationships";
    s.dataset.drawn = String(drawn);
    document.getElementById("more").disabled = drawnTop >= nodes.length;
  }
  function drawTop(count) {
    var upTo = Math.min(nodes.length, count), list = [];
    for (var i = drawnTop; i < upTo; i++) list.push(i);
    drawnTop = Math.max(drawnTop, upTo);
    draw(list);
  }

  /* every way of choosing an entity goes through the URL hash, so a link to it works too */
  function go(i) {
    var target = "#node=" + encodeURIComponent(nodes[i].id);
    if (location.hash === target) select(i); else location.hash = target;
  }

  /* the panel */
  function link(i) {
    var a = el("a", nodes[i].name);
    a.href = "#node=" + encodeURIComponent(nodes[i].id);
    return a;
  }
  function report(id, full) {
    var c = communities[id], box = el("div", null, "report");
    if (!c) return box;
    var head = el("div", "Level " + c.level + " · community " + id + " · " + c.size + " entities" +
      (c.rating !== null && c.rating !== undefined ? " · rating " + c.rating : ""), "meta");
    var swatch = el("span", null, "swatch"); swatch.style.background = PALETTE[colourIndex[id] % PALETTE.length];
    head.prepend(swatch, " ");
    box.append(head, el("strong", c.title || "(no report)"));
    if (full) {
      if (c.summary) box.append(el("p", c.summary));
      if (c.findings.length) {
        var ul = el("ul");
        c.findings.forEach(function (f) { var li = el("li"); li.append(el("strong", f[0])); if (f[1]) li.append(" — ", f[1]); ul.append(li); });
        box.append(ul);
      }
    }
    return box;
  }
  function show(i) {
    var n = nodes[i], panel = document.getElementById("panel");
    panel.replaceChildren();
    panel.dataset.node = n.id;
    panel.append(el("h2", n.name), el("div", n.type + " · degree " + n.degree + " · id " + n.id, "meta"));
    if (n.description.length > 360) {  /* long merged descriptions fold, so the report and sources stay in view */
      var desc = el("p", n.description.slice(0, 360) + "… "), more = el("a", "more");
      more.addEventListener("click", function () { desc.textContent = n.description; });
      desc.append(more);
      panel.append(desc);
    } else if (n.description) panel.append(el("p", n.description));
    var own = communityAt(n, level);
    panel.append(el("h3", "Community report (level " + level + ")"));
    if (own) panel.append(report(own, true)); else panel.append(el("p", "No community at this level.", "meta"));
    var path = n.c.filter(function (c) { return c && c !== own; });
    if (path.length) {
      panel.append(el("h3", "Other levels"));
      path.forEach(function (c) { panel.append(report(c, false)); });
    }
    var links = adjacency[i];
    panel.append(el("h3", "Relationships (" + links.length + ")"));
    var ul = el("ul");
    links.slice().sort(function (a, b) { return edges[b][3] - edges[a][3]; }).slice(0, 60).forEach(function (k) {
      var e = edges[k], li = el("li");
      if (e[0] === i) li.append("→ ", el("em", e[2] || "related to"), " ", link(e[1]));
      else li.append(link(e[0]), " ", el("em", e[2] || "related to"), " → this");
      li.append(el("span", " (weight " + e[3] + ")", "meta"));
      if (e[4]) li.append(el("div", e[4], "meta"));
      ul.append(li);
    });
    if (links.length > 60) ul.append(el("li", "… " + (links.length - 60) + " more", "meta"));
    panel.append(ul);
    panel.append(el("h3", "Source passages"));
    if (!n.p.length) panel.append(el("p", "None recorded.", "meta"));
    n.p.forEach(function (p) {
      var doc = data.documents[p[0]] || ["?", "?"];
      var box = el("div", null, "passage");
      box.append(el("div", doc[1] + " — " + doc[0] + " · chunk " + p[1], "doc"), el("div", p[2]));
      panel.append(box);
    });
  }

  function select(i) {
    selected = i;
    var around = [i];
    adjacency[i].forEach(function (k) { around.push(edges[k][0] === i ? edges[k][1] : edges[k][0]); });
    draw(around);
    cy.elements().removeClass("hit near");
    var node = cy.getElementById("n" + i);
    node.addClass("hit");
    node.neighborhood().addClass("near");
    cy.fit(node.closedNeighborhood(), 80);
    if (cy.zoom() > 1.2) cy.zoom({ level: 1.2, position: node.position() });
    show(i);
  }

  function fromHash() {
    var m = /^#node=(.*)$/.exec(location.hash);
    if (!m) return;
    var id;
    try { id = decodeURIComponent(m[1]); } catch (err) { return; }
    if (byId.has(id)) select(byId.get(id));
  }

  /* search */
  var search = document.getElementById("search"), matches = document.getElementById("matches");
  search.addEventListener("input", function () {
    var q = search.value.trim().toLowerCase();
    matches.replaceChildren();
    if (!q) { matches.classList.remove("open"); return; }
    var found = 0;
    for (var i = 0; i < nodes.length && found < 20; i++) {  /* nodes are in degree order */
      if (nodes[i].name.toLowerCase().indexOf(q) < 0 && nodes[i].id.indexOf(q) < 0) continue;
      var b = el("button", nodes[i].name + " (" + nodes[i].degree + ")");
      b.type = "button";
      b.dataset.i = String(i);
      matches.append(b);
      found++;
    }
    if (!found) matches.append(el("div", "no entity matches", "meta"));
    matches.classList.add("open");
  });
  search.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && matches.firstChild && matches.firstChild.dataset && matches.firstChild.dataset.i) matches.firstChild.click();
  });
  matches.addEventListener("click", function (ev) {
    var b = ev.target.closest("button");
    if (!b) return;
    matches.classList.remove("open");
    go(+b.dataset.i);
  });

  /* controls */
  var levelSelect = document.getElementById("level");
  data.levels.forEach(function (lv) {
    var o = el("option", String(lv)); o.value = String(lv); if (lv === level) o.selected = true; levelSelect.append(o);
  });
  levelSelect.addEventListener("change", function () {
    level = +levelSelect.value;
    cy.nodes().forEach(function (node) { node.data("colour", colourOf(nodes[node.data("i")])); });
    legend();
    if (selected !== null) show(selected);
  });
  document.getElementById("more").addEventListener("click", function () { drawTop(drawnTop + data.top); });
  document.getElementById("reset").addEventListener("click", function () {
    cy.elements().remove(); drawnTop = 0; drawTop(data.top); cy.fit(undefined, 30);
  });
  document.getElementById("fit").addEventListener("click", function () { cy.fit(undefined, 30); });
  cy.on("tap", "node", function (ev) { go(ev.target.data("i")); });
  window.addEventListener("hashchange", fromHash);

  function legend() {
    var box = document.getElementById("legend"), counts = {};
    box.replaceChildren(el("strong", "Largest communities, level " + level));
    nodes.forEach(function (n) { var c = communityAt(n, level); if (c) counts[c] = (counts[c] || 0) + 1; });
    Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a] || (a < b ? -1 : 1); }).slice(0, 10)
      .forEach(function (id) {
        var row = el("div"), sw = el("span", null, "swatch");
        sw.style.background = PALETTE[colourIndex[id] % PALETTE.length];
        row.append(sw, el("span", id + " · " + (communities[id].title || "untitled") + " (" + counts[id] + ")"));
        box.append(row);
      });
  }

  document.getElementById("title").textContent = data.title;
  legend();
  drawTop(data.top);
  cy.fit(undefined, 30);
  fromHash();
  document.body.dataset.ready = "1";
})();
