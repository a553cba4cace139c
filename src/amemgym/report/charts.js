// Charts of the amemgym report, drawn as SVG from the page's inline JSON (no library, no network).
// Labels come from run directories and environments, so they only ever reach the page as textContent.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var charts = data.charts || {};

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function tip(node, text) { node.appendChild(svgEl("title", null, text)); return node; }
  function fmt(x) { return x === null || x === undefined ? "undefined" : Number(x).toFixed(3); }
  function root(width, height, label) {
    return svgEl("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                          role: "img", "aria-label": label, "font-size": 10, "font-family": "sans-serif" });
  }

  // A frame with y ticks and period ticks; returns scales for the plotting area.
  function frame(svg, x0, y0, w, h, n, lo, hi, title) {
    var sx = function (p) { return x0 + (n <= 1 ? w / 2 : (p * w) / (n - 1)); };
    var sy = function (v) { return y0 + h - ((v - lo) / (hi - lo || 1)) * h; };
    svg.appendChild(svgEl("text", { x: x0 + w / 2, y: y0 - 8, "text-anchor": "middle", "font-size": 11,
                                    "font-weight": 600 }, title));
    svg.appendChild(svgEl("rect", { x: x0, y: y0, width: w, height: h, fill: "none", stroke: "#bbb" }));
    for (var i = 0; i <= 4; i++) {
      var v = lo + ((hi - lo) * i) / 4;
      svg.appendChild(svgEl("line", { x1: x0, x2: x0 + w, y1: sy(v), y2: sy(v), stroke: "#eee" }));
      svg.appendChild(svgEl("text", { x: x0 - 4, y: sy(v) + 3, "text-anchor": "end" }, v.toFixed(2)));
    }
    var step = Math.max(1, Math.ceil(n / 10));
    for (var p = 0; p < n; p += step) {
      svg.appendChild(svgEl("text", { x: sx(p), y: y0 + h + 12, "text-anchor": "middle" }, p));
    }
    svg.appendChild(svgEl("text", { x: x0 + w / 2, y: y0 + h + 25, "text-anchor": "middle" }, "period"));
    return { sx: sx, sy: sy };
  }

  function legend(box, series) {
    var list = document.createElement("div");
    list.className = "chart-legend";
    series.forEach(function (s) {
      var item = document.createElement("span");
      var swatch = document.createElement("i");
      swatch.style.background = s.colour;
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(s.label));
      list.appendChild(item);
    });
    box.appendChild(list);
  }

  function periods(series, key, name) {
    var n = 0;
    series.forEach(function (s) { n = Math.max(n, (s[key][name] || []).length); });
    return n;
  }

  function drawCurves(box, spec) {
    var pw = 250, ph = 150, ml = 40, mt = 22, gap = 24;
    var svg = root(spec.panels.length * (pw + ml + gap), ph + mt + 34, "per-period curves");
    spec.panels.forEach(function (panel, k) {
      var lo = panel.signed ? -1 : 0, hi = 1;
      spec.series.forEach(function (s) {
        (s.curves[panel.name] || []).forEach(function (c) {
          if (!c) return;
          lo = Math.min(lo, c.lo === null ? c.mean : c.lo, c.mean);
          hi = Math.max(hi, c.hi === null ? c.mean : c.hi, c.mean);
        });
      });
      var n = periods(spec.series, "curves", panel.name);
      var f = frame(svg, k * (pw + ml + gap) + ml, mt, pw, ph, n, lo, hi, panel.title);
      if (panel.signed) {
        svg.appendChild(svgEl("line", { x1: f.sx(0), x2: f.sx(Math.max(n - 1, 0)), y1: f.sy(0), y2: f.sy(0),
                                        stroke: "#888", "stroke-dasharray": "3 3" }));
      }
      spec.series.forEach(function (s) {
        var pts = s.curves[panel.name] || [];
        var band = pts.map(function (c, p) { return [p, c]; }).filter(function (e) {
          return e[1] && e[1].lo !== null && e[1].hi !== null;
        });
        if (band.length > 1) {
          var d = band.map(function (e, i) { return (i ? "L" : "M") + f.sx(e[0]) + "," + f.sy(e[1].hi); }).join("") +
            band.slice().reverse().map(function (e) { return "L" + f.sx(e[0]) + "," + f.sy(e[1].lo); }).join("") + "Z";
          svg.appendChild(svgEl("path", { d: d, fill: s.colour, "fill-opacity": 0.15, stroke: "none" }));
        }
        // An undefined period breaks the line instead of being drawn as a value.
        var d2 = "", pen = false;
        pts.forEach(function (c, p) {
          if (!c) { pen = false; return; }
          d2 += (pen ? "L" : "M") + f.sx(p) + "," + f.sy(c.mean);
          pen = true;
        });
        if (d2) svg.appendChild(svgEl("path", { d: d2, fill: "none", stroke: s.colour, "stroke-width": 1.6 }));
        pts.forEach(function (c, p) {
          if (!c) return;
          var ci = c.lo === null ? "" : " [" + fmt(c.lo) + ", " + fmt(c.hi) + "]";
          svg.appendChild(tip(svgEl("circle", { cx: f.sx(p), cy: f.sy(c.mean), r: 2.5, fill: s.colour }),
                              s.label + ", period " + p + ": " + fmt(c.mean) + ci));
        });
      });
    });
    box.appendChild(svg);
    legend(box, spec.series);
  }

  function drawBars(box, spec) {
    var pw = 280, ph = 150, ml = 40, mt = 22, gap = 24;
    var svg = root(spec.panels.length * (pw + ml + gap), ph + mt + 34, "failure diagnosis");
    spec.panels.forEach(function (panel, k) {
      var n = periods(spec.series, "values", panel.name);
      var x0 = k * (pw + ml + gap) + ml;
      var slot = pw / Math.max(n, 1), width = (slot * 0.8) / Math.max(spec.series.length, 1);
      var f = frame(svg, x0 + slot / 2, mt, pw - slot, ph, n, 0, 1, panel.title);
      spec.series.forEach(function (s, i) {
        (s.values[panel.name] || []).forEach(function (v, p) {
          var x = f.sx(p) - (slot * 0.8) / 2 + i * width;
          if (v === null) {
            svg.appendChild(tip(svgEl("text", { x: x + width / 2, y: f.sy(0) - 3, "text-anchor": "middle",
                                                fill: "#999" }, "n/a"), s.label + ", period " + p + ": undefined"));
            return;
          }
          svg.appendChild(tip(svgEl("rect", { x: x, y: f.sy(v), width: Math.max(width - 1, 1),
                                              height: f.sy(0) - f.sy(v), fill: s.colour }),
                              s.label + ", period " + p + ": " + fmt(v)));
        });
      });
    });
    box.appendChild(svg);
    legend(box, spec.series);
  }

  // Viridis-like and red-white-blue ramps, by linear interpolation between a few stops.
  var SEQ = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  var DIV = [[178, 24, 43], [239, 138, 98], [247, 247, 247], [103, 169, 207], [33, 102, 172]];
  function ramp(stops, t) {
    t = Math.min(1, Math.max(0, t)) * (stops.length - 1);
    var i = Math.min(Math.floor(t), stops.length - 2), u = t - i;
    var c = [0, 1, 2].map(function (j) { return Math.round(stops[i][j] + (stops[i + 1][j] - stops[i][j]) * u); });
    return { css: "rgb(" + c.join(",") + ")", dark: 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] < 128 };
  }

  var hatchCount = 0;
  function drawHeatmap(box, spec) {
    var rows = spec.rows.length, cols = spec.cols.length;
    var cw = cols > 20 ? 16 : 34, ch = rows > 40 ? 12 : 18, ml = 8, mt = 30;
    var labelw = 8 + 6 * spec.rows.reduce(function (m, r) { return Math.max(m, String(r).length); }, 4);
    var width = Math.max(ml + labelw + cols * cw + 70, ml + 7 * spec.title.length), height = mt + rows * ch + 34;
    var svg = root(width, height, spec.title);
    var hatch = "amemgym-hatch-" + (hatchCount++);
    var defs = svgEl("defs");
    var pat = svgEl("pattern", { id: hatch, width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                 patternTransform: "rotate(45)" });
    pat.appendChild(svgEl("rect", { width: 6, height: 6, fill: "#eeeeee" }));
    pat.appendChild(svgEl("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#aaaaaa", "stroke-width": 2 }));
    defs.appendChild(pat);
    svg.appendChild(defs);
    svg.appendChild(svgEl("text", { x: ml, y: 12, "font-size": 11, "font-weight": 600 }, spec.title));
    var x0 = ml + labelw, stops = spec.diverging ? DIV : SEQ, span = spec.vmax - spec.vmin || 1;
    var showValues = rows * cols <= 400 && cw >= 30;
    spec.cols.forEach(function (c, j) {
      svg.appendChild(svgEl("text", { x: x0 + j * cw + cw / 2, y: mt - 4, "text-anchor": "middle" }, c));
    });
    spec.rows.forEach(function (r, i) {
      var y = mt + i * ch;
      svg.appendChild(svgEl("text", { x: x0 - 4, y: y + ch / 2 + 3, "text-anchor": "end" }, r));
      spec.cols.forEach(function (c, j) {
        var v = spec.values[i][j], x = x0 + j * cw;
        if (v === null || v === undefined) {
          svg.appendChild(tip(svgEl("rect", { x: x, y: y, width: cw, height: ch, fill: "url(#" + hatch + ")",
                                              stroke: "#fff", "data-undefined": "1" }), r + ", " + c + ": undefined"));
          return;
        }
        var col = ramp(stops, (v - spec.vmin) / span);
        svg.appendChild(tip(svgEl("rect", { x: x, y: y, width: cw, height: ch, fill: col.css, stroke: "#fff" }),
                            r + ", " + c + ": " + fmt(v)));
        if (showValues) {
          svg.appendChild(svgEl("text", { x: x + cw / 2, y: y + ch / 2 + 3, "text-anchor": "middle", "font-size": 8,
                                          fill: col.dark ? "#fff" : "#000", "pointer-events": "none" },
                                v.toFixed(2)));
        }
      });
    });
    // Colour bar and the undefined-cell key.
    var bx = x0 + cols * cw + 14, bh = Math.max(rows * ch, 60);
    for (var k = 0; k < 20; k++) {
      svg.appendChild(svgEl("rect", { x: bx, y: mt + (bh * k) / 20, width: 10, height: bh / 20 + 0.5,
                                      fill: ramp(stops, 1 - k / 19).css }));
    }
    svg.appendChild(svgEl("text", { x: bx + 13, y: mt + 8 }, spec.vmax.toFixed(1)));
    svg.appendChild(svgEl("text", { x: bx + 13, y: mt + bh }, spec.vmin.toFixed(1)));
    box.appendChild(svg);
    var key = document.createElement("div");
    key.className = "chart-legend";
    var item = document.createElement("span");
    var swatch = document.createElement("i");
    swatch.className = "undefined-swatch";
    item.appendChild(swatch);
    item.appendChild(document.createTextNode("undefined: " + (spec.undefined || "no value for this cell")));
    key.appendChild(item);
    box.appendChild(key);
  }

  var draw = { curves: drawCurves, bars: drawBars, heatmap: drawHeatmap };
  Array.prototype.forEach.call(document.querySelectorAll("[data-chart]"), function (box) {
    var spec = charts[box.getAttribute("data-chart")];
    if (!spec || !draw[spec.kind]) {
      box.appendChild(document.createTextNode("chart data missing"));
      return;
    }
    draw[spec.kind](box, spec);
  });
  // Contents links scroll without touching location.hash, which holds the trace browser's selection.
  Array.prototype.forEach.call(document.querySelectorAll("#toc a"), function (link) {
    link.addEventListener("click", function (e) {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (!target) return;
      e.preventDefault();
      target.scrollIntoView();
    });
  });
  document.body.setAttribute("data-charts", "1");
})();
