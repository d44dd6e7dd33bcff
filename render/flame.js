/*
 * flame.js: the interactive part of the SVG that flame_svg.c writes, which
 * embeds this file after a line "var FG = {...}" of layout constants:
 *   xpad   px left of the frames     dw  px the total spans
 *   total  the root's value          fh  px per level
 *   cw     px per label character (0: no labels)
 *   ty     label baseline below a frame's top    inverted  root on top
 *
 * Each frame is <g class="f" data-x data-w>, start and width in the input's
 * unit, with <title>NAME (details)</title>, <rect> and maybe <text>. Zoom and
 * search are computed from data-x/data-w, never from the drawn geometry, so
 * they are exact at any depth of zoom. The state lives in the URL's
 * fragment: #x=START&d=DEPTH (the zoomed frame), s=REGEX, ic.
 *
 * For scripts: search(regex) returns the matched percentage, resetSearch(),
 * zoom(start, depth), unzoom(), toggleIgnorecase().
 */
(function () {
	"use strict";

	var SVGNS = "http://www.w3.org/2000/svg";
	var MATCH_FILL = "rgb(230,0,230)";
	var frames = [], rects = [], X, W, D, XS, names, fills, state;
	var details, unzoomBtn, searchBtn, icBtn, matchedText;
	var zoomed = -1, pattern = null, ignorecase = false, ready = false;

	function init() {
		var list = document.querySelectorAll("g.f"), n = list.length, i, y0 = 0;

		details = document.getElementById("details");
		unzoomBtn = document.getElementById("unzoom");
		searchBtn = document.getElementById("search");
		icBtn = document.getElementById("ic");
		matchedText = document.getElementById("matched");
		X = new Float64Array(n);
		W = new Float64Array(n);
		D = new Int32Array(n);
		XS = new Array(n);
		names = new Array(n);
		fills = new Array(n);
		state = new Int8Array(n); /* 0 drawn, 1 parent, 2 hidden */
		for (i = 0; i < n; i++) {
			var g = list[i], rect = g.querySelector("rect");
			var y = parseFloat(rect.getAttribute("y"));

			frames.push(g);
			rects.push(rect);
			g._fi = i;
			XS[i] = g.getAttribute("data-x");
			X[i] = parseFloat(XS[i]);
			W[i] = parseFloat(g.getAttribute("data-w"));
			if (i === 0)
				y0 = y;
			D[i] = Math.round(Math.abs(y - y0) / FG.fh);
		}
		var area = document.getElementById("frames");
		if (area) {
			area.addEventListener("mouseover", function (e) {
				var i = frameOf(e.target);
				if (i >= 0)
					details.textContent = FG.nametype + " " + frames[i].firstChild.textContent;
			});
			area.addEventListener("mouseout", function (e) {
				if (frameOf(e.target) >= 0)
					details.textContent = " ";
			});
			area.addEventListener("click", function (e) {
				var i = frameOf(e.target);
				if (i >= 0) {
					zoomTo(i);
					saveState();
				}
			});
		}
		unzoomBtn.addEventListener("click", function () {
			unzoomAll();
			saveState();
		});
		searchBtn.addEventListener("click", function () {
			if (pattern !== null) {
				clearSearch();
				saveState();
			} else {
				searchPrompt();
			}
		});
		icBtn.addEventListener("click", toggleIgnorecase);
		window.addEventListener("keydown", function (e) {
			if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
				e.preventDefault(); /* F3, Ctrl-F: our search, not the browser's */
				searchPrompt();
			} else if (e.ctrlKey && e.keyCode === 73) {
				e.preventDefault();
				toggleIgnorecase();
			} else if (e.keyCode === 27 && pattern !== null) {
				clearSearch();
				saveState();
			}
		});
		window.addEventListener("hashchange", loadState);
		ready = true;
		loadState();
	}

	function frameOf(el) {
		while (el && el !== document.documentElement) {
			if (el._fi !== undefined)
				return el._fi;
			el = el.parentNode;
		}
		return -1;
	}

	function nameOf(i) {
		if (names[i] === undefined)
			names[i] = frames[i].firstChild.textContent.replace(/ \([^(]*\)$/, "");
		return names[i];
	}

	/* The same rule as flame_svg.c: a label is the name, cut with ".."
	 * to fit, or nothing under 3 characters. */
	function place(i, x, w) {
		var g = frames[i], rect = rects[i], text = g.querySelector("text");
		var chars = FG.cw > 0 ? Math.floor(w / FG.cw) : 0, name, label = "";

		rect.setAttribute("x", x.toFixed(2));
		rect.setAttribute("width", w.toFixed(2));
		if (chars >= 3) {
			name = nameOf(i);
			label = name.length <= chars ? name : name.substr(0, chars - 2) + "..";
		}
		if (!label) {
			if (text)
				g.removeChild(text);
			return;
		}
		if (!text) {
			text = document.createElementNS(SVGNS, "text");
			text.setAttribute("y", (parseFloat(rect.getAttribute("y")) + FG.ty).toFixed(2));
			g.appendChild(text);
		}
		text.setAttribute("x", (x + 3).toFixed(2));
		text.textContent = label;
	}

	function setState(i, s) {
		if (state[i] !== s) {
			state[i] = s;
			frames[i].setAttribute("class", s === 0 ? "f" : s === 1 ? "f parent" : "f hide");
		}
	}

	/* The frame spans the width, its subtree scales with it; its
	 * ancestors stay, full width, dimmed; everything else is hidden. */
	function zoomTo(z) {
		if (z <= 0) {
			unzoomAll();
			return;
		}
		var cx = X[z], cw = W[z], cd = D[z], eps = FG.total * 1e-9;
		var scale = FG.dw / cw, n = frames.length, i;

		for (i = 0; i < n; i++) {
			var x = X[i], w = W[i];
			if (D[i] >= cd && x >= cx - eps && x + w <= cx + cw + eps) {
				setState(i, 0);
				place(i, FG.xpad + (x - cx) * scale, w * scale);
			} else if (D[i] < cd && x <= cx + eps && x + w >= cx + cw - eps) {
				setState(i, 1);
				place(i, FG.xpad, FG.dw);
			} else {
				setState(i, 2);
			}
		}
		zoomed = z;
		unzoomBtn.setAttribute("class", "");
	}

	function unzoomAll() {
		var scale = FG.dw / FG.total, n = frames.length, i;

		if (zoomed < 0)
			return;
		for (i = 0; i < n; i++) {
			setState(i, 0);
			place(i, FG.xpad + X[i] * scale, W[i] * scale);
		}
		zoomed = -1;
		unzoomBtn.setAttribute("class", "hide");
	}

	function clearSearch() {
		for (var i = 0; i < frames.length; i++) {
			if (fills[i] !== undefined) {
				rects[i].setAttribute("fill", fills[i]);
				fills[i] = undefined;
			}
		}
		pattern = null;
		matchedText.setAttribute("class", "hide");
		matchedText.textContent = " ";
		searchBtn.setAttribute("class", "");
		searchBtn.textContent = "Search";
	}

	/* Highlights the frames whose name matches; returns the share of the
	 * total they cover, a frame inside a matched one counted once. */
	function runSearch(regex) {
		var re = new RegExp(regex, ignorecase ? "i" : ""), hits = [], n = frames.length;
		var i, sum = 0, end = -Infinity, pct;

		clearSearch();
		pattern = regex;
		for (i = 0; i < n; i++) {
			if (!re.test(nameOf(i)))
				continue;
			fills[i] = rects[i].getAttribute("fill");
			rects[i].setAttribute("fill", MATCH_FILL);
			hits.push(i);
		}
		/* Frames nest, so the union of their extents is the sum over the
		 * matches with no matched ancestor. */
		hits.sort(function (a, b) {
			return X[a] - X[b] || W[b] - W[a];
		});
		for (i = 0; i < hits.length; i++) {
			var x = X[hits[i]], e = x + W[hits[i]];
			if (x >= end) {
				sum += W[hits[i]];
				end = e;
			} else if (e > end) {
				sum += e - end;
				end = e;
			}
		}
		pct = FG.total > 0 ? 100 * sum / FG.total : 0;
		matchedText.textContent = "Matched: " + (pct === 100 ? "100" : pct.toFixed(1)) + "%";
		matchedText.setAttribute("class", "");
		searchBtn.setAttribute("class", "on");
		searchBtn.textContent = "Reset Search";
		return pct;
	}

	function searchPrompt() {
		var s = prompt("Search: a regular expression (e.g. ^ext4_)" +
			(ignorecase ? ", ignoring case" : "") + "\nCtrl-I toggles case sensitivity",
			pattern === null ? "" : pattern);
		if (s === null)
			return;
		try {
			if (s === "")
				clearSearch();
			else
				runSearch(s);
		} catch (err) {
			details.textContent = "Bad regular expression: " + err.message;
		}
		saveState();
	}

	function toggleIgnorecase() {
		ignorecase = !ignorecase;
		icBtn.setAttribute("class", ignorecase ? "on" : "");
		if (pattern !== null)
			runSearch(pattern);
		saveState();
	}

	function saveState() {
		var p = [], url;

		if (zoomed > 0)
			p.push("x=" + encodeURIComponent(XS[zoomed]), "d=" + D[zoomed]);
		if (pattern !== null)
			p.push("s=" + encodeURIComponent(pattern));
		if (ignorecase)
			p.push("ic");
		url = location.href.replace(/#.*$/, "") + (p.length ? "#" + p.join("&") : "");
		try {
			history.replaceState(null, "", url);
		} catch (e) {
			location.hash = p.join("&"); /* fires hashchange: loadState is idempotent */
		}
	}

	function loadState() {
		var h = location.hash.replace(/^#/, ""), p = {}, parts = h ? h.split("&") : [];
		var i, z = -1;

		for (i = 0; i < parts.length; i++) {
			var kv = parts[i].split("=");
			p[kv[0]] = kv.length > 1 ? decodeURIComponent(kv.slice(1).join("=")) : "";
		}
		ignorecase = "ic" in p;
		icBtn.setAttribute("class", ignorecase ? "on" : "");
		if ("x" in p && "d" in p) {
			for (i = 0; i < frames.length; i++) {
				if (XS[i] === p.x && D[i] === parseInt(p.d, 10)) {
					z = i;
					break;
				}
			}
		}
		if (z > 0)
			zoomTo(z);
		else
			unzoomAll();
		try {
			if ("s" in p && p.s !== "")
				runSearch(p.s);
			else
				clearSearch();
		} catch (err) {
			clearSearch();
		}
	}

	function api(fn) {
		return function () {
			if (!ready)
				init();
			var r = fn.apply(null, arguments);
			saveState();
			return r;
		};
	}

	window.search = api(function (regex) {
		if (regex === null || regex === undefined || regex === "") {
			clearSearch();
			return 0;
		}
		return runSearch(String(regex));
	});
	window.resetSearch = api(clearSearch);
	window.unzoom = api(unzoomAll);
	window.toggleIgnorecase = api(function () {
		toggleIgnorecase();
		return ignorecase;
	});
	window.zoom = api(function (start, depth) {
		for (var i = 0; i < frames.length; i++) {
			if (X[i] === Number(start) && D[i] === depth) {
				zoomTo(i);
				return true;
			}
		}
		return false;
	});

	if (document.readyState === "complete")
		init();
	else
		window.addEventListener("load", function () {
			if (!ready)
				init();
		});
})();
