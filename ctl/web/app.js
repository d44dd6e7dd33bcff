/*
 * offcpuctl serve's page: a heatmap of off-CPU time over the stored windows
 * (/api/heatmap), the flame graph of a dragged range drawn by offcpud's own
 * renderer (/api/export?format=svg, in an iframe, with its zoom, search and
 * tooltips), a differential one against a shift-dragged baseline, the
 * latency histograms of the range (/api/hist), and the threads off the CPU
 * now (/api/blocked). The whole view lives in the URL's query, so a link
 * reproduces it. Plain JavaScript, no libraries.
 */
"use strict";

const $ = (id) => document.getElementById(id);
const ROW_H = 14;
const DEFAULTS = {
	window: "last1h", from: "", to: "", kind: "offcpu", rows: "process", refresh: "0",
	pid: "", comm: "", state: "", grep: "", exclude: "", sel: "", base: "", histkind: "offcpu",
	cgroup: "", unit: "", container: "", group_by: "comm",
};

let view = readURL();
let heat = null;     /* the last heatmap reply's body */
let dense = [];      /* per series: n_windows values (ns) */
let timer = null;
const loads = { heatmap: 0, flame: 0, notes: 0, hist: 0, blocked: 0 }; /* for tests: completed loads */

function readURL() {
	const q = new URLSearchParams(location.search), v = {};
	for (const k in DEFAULTS)
		v[k] = q.has(k) ? q.get(k) : DEFAULTS[k];
	return v;
}

function writeURL() {
	const q = new URLSearchParams();
	for (const k in DEFAULTS)
		if (view[k] !== DEFAULTS[k])
			q.set(k, view[k]);
	const s = q.toString();
	history.replaceState(null, "", s ? "?" + s : location.pathname);
}

/* "FROM..TO" in unix seconds (ms precision), as offcpuctl takes them. */
function rangeText(fromMs, toMs) {
	return (fromMs / 1000).toFixed(3) + ".." + (toMs / 1000).toFixed(3);
}

function parseRange(s) {
	const m = /^(\d+(?:\.\d+)?)\.\.(\d+(?:\.\d+)?)$/.exec(s || "");
	return m ? { from: Math.round(parseFloat(m[1]) * 1000), to: Math.round(parseFloat(m[2]) * 1000) } : null;
}

function api(path, params) {
	const q = new URLSearchParams();
	for (const k in params)
		if (params[k] !== "" && params[k] !== undefined && params[k] !== null)
			q.set(k, params[k]);
	return path + "?" + q.toString();
}

async function getJSON(url) {
	const r = await fetch(url);
	const body = await r.json();
	if (!body.ok)
		throw new Error(body.error ? `${body.error.code}: ${body.error.message}` : r.statusText);
	return body;
}

/* The heatmap's range parameters. */
function heatRange() {
	if (view.refresh !== "0")
		return { window: `last${view.refresh}m` };
	if (view.window === "custom")
		return { from: view.from, to: view.to };
	return { window: view.window };
}

function filterParams() {
	return { kind: view.kind, pid: view.pid, comm: view.comm, state: view.state };
}

/* Who the flame graph and histograms are about; the heatmap's index has no
 * cgroups, so it shows everyone. */
function whoParams() {
	return { cgroup: view.cgroup, unit: view.unit, container: view.container };
}

/* ---- heatmap ---- */

async function loadHeatmap() {
	const info = $("heatinfo");
	if (view.rows === "thread" && !view.pid) {
		info.textContent = "Rows of threads need a process: click a process's name, or give a pid.";
		return;
	}
	try {
		const body = await getJSON(api("/api/heatmap", { ...heatRange(), ...filterParams(), rows: view.rows }));
		heat = body.heatmap;
	} catch (e) {
		info.textContent = String(e.message);
		heat = null;
		drawHeatmap();
		return;
	}
	const n = heat.start_ms.length;
	dense = heat.series.map((s) => {
		const v = new Float64Array(n);
		for (let i = 0; i < s.cells.length; i += 2)
			v[s.cells[i]] = s.cells[i + 1];
		return v;
	});
	info.textContent = n ? `${n} windows, ${new Date(heat.start_ms[0]).toLocaleString()} to ` +
		`${new Date(heat.end_ms[n - 1]).toLocaleString()}; colour: seconds of ${heat.kind} time per window` :
		"No stored window in this range.";
	drawHeatmap();
	if (n && !heat.series.length)
		await heatNotes(info);
	loads.heatmap++;
}

/* Windows but no rows (a kind the always-on profile does not record,
 * filters that matched nothing): the daemon's notes say why. */
async function heatNotes(info) {
	try {
		const notes = (await getJSON(api("/api/export", { ...heatRange(), ...filterParams(),
			format: "notes" }))).notes;
		if (notes.length)
			info.textContent += " Nothing to show: " + notes.join(" ");
	} catch (_) { /* the heatmap's own line stays */ }
}

function plotWidth() {
	return Math.max(200, $("plot").clientWidth);
}

/* Column i's left edge in canvas pixels, and the column under pixel x. */
function colX(i) {
	return (i * plotWidth()) / heat.start_ms.length;
}

function colAt(x) {
	const n = heat.start_ms.length;
	return Math.min(n - 1, Math.max(0, Math.floor((x * n) / plotWidth())));
}

function colour(v, max) {
	const t = Math.sqrt(v / max); /* small values stay visible */
	return `hsl(${Math.round(40 - 40 * t)}, 100%, ${Math.round(93 - 55 * t)}%)`;
}

function drawHeatmap() {
	const canvas = $("heatmap"), labels = $("labels");
	labels.textContent = "";
	if (!heat) {
		canvas.height = 0;
		return;
	}
	const W = plotWidth(), n = heat.start_ms.length, rows = heat.series.length;
	canvas.width = W;
	canvas.height = Math.max(1, rows * ROW_H);
	const ctx = canvas.getContext("2d");
	ctx.fillStyle = "#fafafa";
	ctx.fillRect(0, 0, W, canvas.height);
	let max = 0;
	for (const v of dense)
		for (const x of v)
			max = Math.max(max, x);
	heat.series.forEach((s, r) => {
		const v = dense[r], y = r * ROW_H;
		if (n <= W) {
			for (let i = 0; i < n; i++) {
				if (!v[i])
					continue;
				const x0 = Math.floor(colX(i)), x1 = Math.floor(colX(i + 1));
				ctx.fillStyle = colour(v[i], max);
				ctx.fillRect(x0, y, Math.max(1, x1 - x0), ROW_H - 1);
			}
		} else { /* more windows than pixels: each pixel shows its largest */
			const bin = new Float64Array(W);
			for (let i = 0; i < n; i++)
				if (v[i])
					bin[Math.floor((i * W) / n)] = Math.max(bin[Math.floor((i * W) / n)], v[i]);
			for (let x = 0; x < W; x++) {
				if (!bin[x])
					continue;
				ctx.fillStyle = colour(bin[x], max);
				ctx.fillRect(x, y, 1, ROW_H - 1);
			}
		}
		const label = document.createElement("div");
		label.textContent = s.other ? "(others)" : heat.rows === "state" ? `state ${s.label}` :
			`${s.label} (${s.key})`;
		label.title = `${label.textContent}: ${(s.total_ns / 1e9).toFixed(3)} s`;
		if (!s.other)
			label.onclick = () => pickRow(s);
		labels.appendChild(label);
	});
	drawAxis();
	drawSelections();
}

function drawAxis() {
	const axis = $("axis"), n = heat.start_ms.length;
	axis.textContent = "";
	if (!n)
		return;
	const ticks = Math.min(n, 6);
	for (let t = 0; t < ticks; t++) {
		const i = Math.floor((t * (n - 1)) / Math.max(1, ticks - 1));
		const span = document.createElement("span");
		span.style.left = `${Math.min(colX(i), plotWidth() - 60)}px`;
		span.textContent = new Date(heat.start_ms[i]).toLocaleTimeString();
		axis.appendChild(span);
	}
}

/* A process's name: its threads; a state's: that state only. */
function pickRow(s) {
	if (heat.rows === "process") {
		view.pid = String(s.key);
		view.rows = "thread";
	} else if (heat.rows === "state") {
		view.state = s.label;
	} else {
		return;
	}
	writeURL();
	fillForms();
	refreshAll();
}

/* The columns a range covers: the windows that start in it. */
function rangeCols(range) {
	let lo = -1, hi = -1;
	heat.start_ms.forEach((s, i) => {
		if (s >= range.from && s < range.to) {
			if (lo < 0)
				lo = i;
			hi = i;
		}
	});
	return lo < 0 ? null : [lo, hi];
}

function placeBox(el, cols) {
	if (!heat || !cols) {
		el.style.display = "none";
		return;
	}
	el.style.display = "block";
	el.style.left = `${colX(cols[0])}px`;
	el.style.width = `${Math.max(1, colX(cols[1] + 1) - colX(cols[0]))}px`;
	el.style.height = `${$("heatmap").height}px`;
}

function drawSelections() {
	const b = parseRange(view.sel), a = parseRange(view.base);
	placeBox($("selB"), b && heat ? rangeCols(b) : null);
	placeBox($("selA"), a && heat ? rangeCols(a) : null);
}

function canvasXY(ev) {
	const r = $("heatmap").getBoundingClientRect();
	return [ev.clientX - r.left, ev.clientY - r.top];
}

function setupDrag() {
	const canvas = $("heatmap"), tip = $("tip");
	let start = null, shift = false;

	canvas.addEventListener("mousedown", (ev) => {
		if (!heat || !heat.start_ms.length)
			return;
		start = colAt(canvasXY(ev)[0]);
		shift = ev.shiftKey;
		ev.preventDefault();
	});
	canvas.addEventListener("mousemove", (ev) => {
		if (!heat || !heat.start_ms.length)
			return;
		const [x, y] = canvasXY(ev), i = colAt(x), r = Math.floor(y / ROW_H);
		if (start !== null)
			placeBox($("drag"), [Math.min(start, i), Math.max(start, i)]);
		const s = heat.series[r];
		if (!s) {
			tip.style.display = "none";
			return;
		}
		const v = dense[r][i];
		tip.dataset.col = i;
		tip.dataset.row = r;
		tip.dataset.ns = v;
		tip.textContent = `${s.other ? "(others)" : s.label + " (" + s.key + ")"}\n` +
			`${new Date(heat.start_ms[i]).toLocaleTimeString()} + ` +
			`${((heat.end_ms[i] - heat.start_ms[i]) / 1000).toFixed(1)} s\n${(v / 1e9).toFixed(3)} s`;
		tip.style.left = `${ev.clientX + 12}px`;
		tip.style.top = `${ev.clientY + 12}px`;
		tip.style.display = "block";
	});
	canvas.addEventListener("mouseleave", () => (tip.style.display = "none"));
	window.addEventListener("mouseup", (ev) => {
		if (start === null)
			return;
		const i = colAt(canvasXY(ev)[0]), lo = Math.min(start, i), hi = Math.max(start, i);
		start = null;
		$("drag").style.display = "none";
		const text = rangeText(heat.start_ms[lo], heat.end_ms[hi]);
		if (shift)
			view.base = text;
		else
			view.sel = text;
		writeURL();
		drawSelections();
		loadFlame();
		loadHist();
	});
}

/* ---- flame graph ---- */

function exportParams() {
	const b = parseRange(view.sel), a = parseRange(view.base);
	return {
		from: (b.from / 1000).toFixed(3), to: (b.to / 1000).toFixed(3), ...filterParams(),
		grep: view.grep, exclude: view.exclude, ...whoParams(),
		group_by: view.group_by === "comm" ? "" : view.group_by,
		diff_against: a ? rangeText(a.from, a.to) : "",
	};
}

/* The offcpuctl command line that prints the same profile. */
function cliText(p) {
	let s = `offcpuctl export --from ${p.from} --to ${p.to}`;
	const opts = { kind: "--kind", pid: "--pid", comm: "--comm", state: "--state", grep: "--grep",
		exclude: "--exclude", cgroup: "--cgroup", unit: "--unit", container: "--container",
		group_by: "--group-by", diff_against: "--diff-against" };
	for (const k in opts)
		if (p[k] && !(k === "kind" && p[k] === "offcpu"))
			s += ` ${opts[k]} '${p[k]}'`;
	return s;
}

/* The daemon's notes on the graph's export: why it is empty (a kind the
 * always-on profile does not record, filters that matched nothing), a
 * baseline no window matched, frames it could not name. */
async function loadNotes(p) {
	const out = $("notes");
	let notes = [];
	try {
		notes = (await getJSON(api("/api/export", { ...p, format: "notes" }))).notes;
	} catch (e) {
		notes = [String(e.message)];
	}
	if (p !== lastExport)
		return; /* a newer selection's notes are on their way */
	out.textContent = "";
	for (const n of notes) {
		const d = document.createElement("div");
		d.textContent = "Note: " + n;
		out.appendChild(d);
	}
	loads.notes++;
}

let lastExport = null;

function loadFlame() {
	const frame = $("graph"), err = $("error"), links = $("links");
	err.textContent = "";
	$("notes").textContent = "";
	if (!parseRange(view.sel)) {
		$("selinfo").textContent = "Drag over the heatmap to see a flame graph of that time.";
		frame.style.display = "none";
		links.textContent = "";
		return;
	}
	const p = exportParams(), b = parseRange(view.sel), a = parseRange(view.base);
	$("selinfo").textContent = `B: ${new Date(b.from).toLocaleString()} to ${new Date(b.to).toLocaleString()}` +
		(a ? `; against baseline A: ${new Date(a.from).toLocaleString()} to ${new Date(a.to).toLocaleString()}` +
			" (red: grew in B, blue: shrank)" : "");
	links.textContent = "";
	for (const f of a ? ["folded", "svg"] : ["folded", "json", "svg", "speedscope", "pprof"]) {
		const l = document.createElement("a");
		l.href = api("/api/export", { ...p, format: f });
		l.textContent = f;
		l.style.marginRight = "8px";
		links.appendChild(l);
	}
	const cli = document.createElement("code");
	cli.id = "cli";
	cli.textContent = cliText(p);
	links.appendChild(cli);
	frame.style.display = "block";
	lastExport = p;
	loadNotes(p);
	frame.onload = () => {
		const doc = frame.contentDocument;
		if (doc && doc.contentType !== "image/svg+xml") {
			/* An error: the API's JSON, shown here instead of the graph. An
			 * empty graph's reason is in the notes, said once. */
			let msg = doc.body ? doc.body.textContent : "";
			try {
				const e = JSON.parse(msg).error;
				msg = e.code === "no_data" ? "Nothing to draw: no stack in the selection." :
					`${e.code}: ${e.message}`;
			} catch (_) { /* shown as it came */ }
			err.textContent = msg;
			frame.style.display = "none";
		}
		loads.flame++;
	};
	frame.src = api("/api/export", { ...p, format: "svg", width: Math.max(200, frame.clientWidth - 4) });
}

/* ---- histograms ---- */

async function loadHist() {
	const out = $("histograms");
	const b = parseRange(view.sel);
	if (!b) {
		out.textContent = "";
		return;
	}
	let h;
	try {
		h = (await getJSON(api("/api/hist", {
			from: (b.from / 1000).toFixed(3), to: (b.to / 1000).toFixed(3), pid: view.pid,
			...whoParams(), kind: view.histkind,
		}))).hist;
	} catch (e) {
		out.textContent = String(e.message);
		return;
	}
	out.textContent = "";
	const sum = (p) => p.counts.reduce((x, y) => x + y, 0);
	const procs = h.processes.filter((p) => sum(p) > 0).sort((x, y) => sum(y) - sum(x)).slice(0, 8);
	if (!procs.length)
		out.textContent = "No blocks recorded in the range.";
	for (const p of procs) {
		const box = document.createElement("div");
		box.className = "histo";
		box.dataset.tgid = p.tgid;
		const lo = p.counts.findIndex((c) => c > 0), hi = p.counts.length - 1 -
			[...p.counts].reverse().findIndex((c) => c > 0);
		const max = Math.max(...p.counts);
		const title = document.createElement("div");
		title.textContent = `pid ${p.tgid} ${p.comm}: usecs : count`;
		box.appendChild(title);
		for (let i = lo; i <= hi; i++) {
			const line = document.createElement("div");
			const bar = document.createElement("span");
			bar.className = "bar";
			bar.style.width = `${Math.round((160 * p.counts[i]) / max)}px`;
			line.textContent = `${String(i ? 2 ** i : 0).padStart(10)} -> ${String(2 ** (i + 1) - 1).padEnd(10)} : ` +
				`${String(p.counts[i]).padEnd(8)} `;
			line.appendChild(bar);
			box.appendChild(line);
		}
		out.appendChild(box);
	}
	loads.hist++;
}

/* ---- blocked now ---- */

/* A time as offcpuctl prints it (format_duration in ctl/output.c). */
function duration(ns) {
	const ms = Math.floor(ns / 1e6), pad = (x) => String(x).padStart(2, "0");
	if (ms < 1)
		return "<1 ms";
	if (ms < 1000)
		return `${ms} ms`;
	if (ms < 60000)
		return `${(ms / 1000).toFixed(1)} s`;
	if (ms < 3600000)
		return `${Math.floor(ms / 60000)}m${pad(Math.floor(ms / 1000) % 60)}s`;
	if (ms < 86400000)
		return `${Math.floor(ms / 3600000)}h${pad(Math.floor(ms / 60000) % 60)}m`;
	return `${Math.floor(ms / 86400000)}d${pad(Math.floor(ms / 3600000) % 24)}h`;
}

/* The innermost kernel frame that names the wait, past the scheduler's own
 * frames and markers, as offcpuctl blocked picks it (ctl/cmd_blocked.c). */
const SCHED_FRAME = /^(\[|__schedule|schedule|io_schedule|preempt_schedule|__cond_resched|_cond_resched)/;

function waitingIn(t) {
	for (let i = t.kstack.length - 1; i >= 0; i--)
		if (!SCHED_FRAME.test(t.kstack[i]))
			return t.kstack[i];
	return "-";
}

const BLOCKED_COLS = [7, 7, 16, 5, 15];

function blockedLine(cells) {
	return cells.map((c, i) => (i < BLOCKED_COLS.length ? String(c).padEnd(BLOCKED_COLS[i]) : c)).join(" ");
}

/* A thread's details, leaf first, as offcpuctl blocked prints them. */
function blockedDetails(t) {
	const lines = [];
	if (!t.since_ms)
		lines.push("since before offcpud started");
	let woken = t.waker ? `woken by ${t.waker.comm}` + (t.waker.pid ? ` (pid ${t.waker.tgid} tid ${t.waker.pid})` : "") :
		t.runq_ns ? "woken" : "";
	if (t.runq_ns)
		woken += `; waiting to run for ${duration(t.runq_ns)}`;
	if (woken)
		lines.push(woken);
	for (const [what, frames] of [["kernel", t.kstack], ["user", t.ustack]])
		[...frames].reverse().forEach((f, i) => lines.push(`${(i ? "" : what).padEnd(8)}${f}`));
	return lines.join("\n");
}

async function loadBlocked() {
	const info = $("blockedinfo"), out = $("blockedlist");
	let b;
	try {
		b = (await getJSON(api("/api/blocked", { pid: view.pid, state: view.state }))).blocked;
	} catch (e) {
		info.textContent = String(e.message);
		out.textContent = "";
		return;
	}
	const threads = [...b.threads].sort((x, y) => y.blocked_ns - x.blocked_ns);
	const which = `in state ${view.state || "S or D"}${view.pid ? ` of pid ${view.pid}` : ""}`;
	info.textContent = threads.length ? `${threads.length} thread${threads.length === 1 ? "" : "s"} off the CPU ${which} at ` +
		`${new Date(b.now_ms).toLocaleTimeString()}, longest first` +
		(b.more ? `; ${b.more} more not shown` : "") + "; click one for its stacks" :
		`No thread is off the CPU now ${which}.`;
	out.textContent = "";
	if (threads.length) {
		const head = document.createElement("div");
		head.textContent = blockedLine(["PID", "TID", "COMM", "STATE", "BLOCKED-FOR", "WAITING-IN"]);
		out.appendChild(head);
	}
	for (const t of threads) {
		const d = document.createElement("details"), s = document.createElement("summary");
		const pre = document.createElement("pre");
		d.dataset.tid = t.pid;
		s.textContent = blockedLine([t.tgid, t.pid, t.comm, t.state,
			(t.since_ms ? "" : "at least ") + duration(t.blocked_ns), waitingIn(t)]);
		pre.textContent = blockedDetails(t);
		d.append(s, pre);
		out.appendChild(d);
	}
	loads.blocked++;
}

/* ---- the forms ---- */

function fillForms() {
	for (const k of ["window", "from", "to", "kind", "rows", "refresh", "pid", "comm", "state",
		"grep", "exclude", "cgroup", "unit", "container", "group_by", "histkind"])
		$(k).value = view[k];
}

function readForm(keys) {
	for (const k of keys)
		view[k] = $(k).value.trim();
}

function refreshAll() {
	loadHeatmap();
	loadFlame();
	loadHist();
	loadBlocked();
	clearInterval(timer);
	timer = null;
	if (view.refresh !== "0") /* new windows close every window_seconds */
		timer = setInterval(loadHeatmap, 10000);
}

$("view").addEventListener("submit", (ev) => {
	ev.preventDefault();
	readForm(["window", "from", "to", "kind", "rows", "refresh"]);
	if (view.from || view.to)
		view.window = "custom";
	writeURL();
	refreshAll();
});
$("filters").addEventListener("submit", (ev) => {
	ev.preventDefault();
	readForm(["pid", "comm", "state", "grep", "exclude", "cgroup", "unit", "container", "group_by"]);
	writeURL();
	refreshAll();
});
$("clearA").addEventListener("click", () => {
	view.base = "";
	writeURL();
	drawSelections();
	loadFlame();
});
$("histkind").addEventListener("change", () => {
	view.histkind = $("histkind").value;
	writeURL();
	loadHist();
});
$("group_by").addEventListener("change", () => {
	view.group_by = $("group_by").value;
	writeURL();
	loadFlame();
});
$("blockedrefresh").addEventListener("click", loadBlocked);
window.addEventListener("resize", drawHeatmap);

fillForms();
setupDrag();
refreshAll();
getJSON("/api/status").then((b) => {
	$("daemon").textContent = `offcpud ${b.status.version}, up ${b.status.uptime_s} s`;
}).catch((e) => ($("daemon").textContent = String(e.message)));

/* For tests and the curious: the view, the data drawn and the geometry. */
window.offcpu = {
	view: () => ({ ...view }), heatmap: () => heat, loads, colX, rowY: (r) => r * ROW_H, ROW_H,
};
