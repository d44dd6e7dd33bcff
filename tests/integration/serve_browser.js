/*
 * Drives offcpuctl serve's page in headless Chromium the way a person would:
 * loads a view, hovers heatmap cells, drags over columns (the flame graph),
 * shift-drags a baseline (the differential graph), reads the histograms, and
 * reopens the page from its URL. Prints what it saw as one JSON object; the
 * checks are in test_serve.py.
 *
 *   node serve_browser.js URL ROW_KEY COLS_B COLS_A OUTDIR
 *
 * URL: the page with a view in its query; ROW_KEY: the heatmap row (pid)
 * to hover; COLS_B, COLS_A: "LO-HI" column ranges to drag, then shift-drag.
 */
"use strict";

const path = require("path");
const { run } = require("./browser_page");

const [url, rowKey, colsB, colsA, outdir] = process.argv.slice(2);

async function waitLoads(page, what, n) {
	await page.waitForFunction(([w, k]) => window.offcpu && window.offcpu.loads[w] >= k, [what, n],
		{ timeout: 60000 });
}

/* The page point at the middle of column col of row r, in page pixels. */
async function cellPoint(page, col, r) {
	return page.evaluate(([c, row]) => {
		const rect = document.getElementById("heatmap").getBoundingClientRect();
		const o = window.offcpu;
		return [rect.left + (o.colX(c) + o.colX(c + 1)) / 2, rect.top + o.rowY(row) + o.ROW_H / 2];
	}, [col, r]);
}

/* The root frame's title of the flame graph in the iframe, and its kind. */
function graph(page) {
	return page.evaluate(() => {
		const frame = document.getElementById("graph");
		const doc = frame.contentDocument;
		const out = { src: frame.getAttribute("src"), error: document.getElementById("error").textContent };
		if (!doc || doc.contentType !== "image/svg+xml")
			return out;
		for (const g of doc.querySelectorAll("g.f")) {
			const t = g.querySelector("title").textContent;
			if (t.startsWith("all ")) {
				out.root = t;
				break;
			}
		}
		out.frames = doc.querySelectorAll("g.f").length;
		out.title = doc.getElementById("title") ? doc.getElementById("title").textContent : "";
		out.svgText = doc.documentElement.outerHTML.length;
		return out;
	});
}

async function drag(page, r, lo, hi, shift) {
	const [x0, y] = await cellPoint(page, lo, r);
	const [x1] = await cellPoint(page, hi, r);
	if (shift)
		await page.keyboard.down("Shift");
	await page.mouse.move(x0, y);
	await page.mouse.down();
	await page.mouse.move((x0 + x1) / 2, y, { steps: 3 });
	await page.mouse.move(x1, y, { steps: 3 });
	await page.mouse.up();
	if (shift)
		await page.keyboard.up("Shift");
}

run({ width: 1400, height: 1200 }, async (page, result) => {
	await page.goto(url);
	await waitLoads(page, "heatmap", 1);
	const heat = await page.evaluate(() => window.offcpu.heatmap());
	result.heatmap = { start_ms: heat.start_ms, end_ms: heat.end_ms,
		series: heat.series.map((s) => ({ key: s.key, label: s.label, other: s.other })) };
	result.labels = await page.$$eval("#labels div", (ds) => ds.map((d) => d.textContent));
	const r = heat.series.findIndex((s) => String(s.key) === rowKey);
	result.row = r;
	if (r < 0)
		return;

	/* Every column of the row, as the tooltip shows it. */
	result.hover = [];
	for (let c = 0; c < heat.start_ms.length; c++) {
		const [x, y] = await cellPoint(page, c, r);
		await page.mouse.move(x, y);
		result.hover.push(await page.$eval("#tip", (t) => ({
			col: Number(t.dataset.col), row: Number(t.dataset.row), ns: Number(t.dataset.ns),
			visible: getComputedStyle(t).display !== "none", text: t.textContent })));
	}

	const [bLo, bHi] = colsB.split("-").map(Number), [aLo, aHi] = colsA.split("-").map(Number);
	await drag(page, r, bLo, bHi, false);
	await waitLoads(page, "flame", 1);
	await waitLoads(page, "hist", 1);
	result.afterDrag = { view: await page.evaluate(() => window.offcpu.view()), graph: await graph(page),
		cli: await page.$eval("#cli", (e) => e.textContent),
		boxB: await page.$eval("#selB", (e) => getComputedStyle(e).display) };
	result.hist = await page.$$eval(".histo", (hs) => hs.map((h) => ({ tgid: Number(h.dataset.tgid),
		lines: h.querySelectorAll("div").length - 1 })));
	await page.screenshot({ path: path.join(outdir, "drag.png"), fullPage: true });

	await drag(page, r, aLo, aHi, true);
	await waitLoads(page, "flame", 2);
	result.afterShiftDrag = { view: await page.evaluate(() => window.offcpu.view()), graph: await graph(page),
		boxA: await page.$eval("#selA", (e) => getComputedStyle(e).display) };
	await page.screenshot({ path: path.join(outdir, "diff.png"), fullPage: true });

	/* The URL holds the view: the page loaded afresh from it shows the same. */
	result.url = page.url();
	const boxes = (p) => p.evaluate(() => Object.fromEntries(["selA", "selB"].map((id) => {
		const e = document.getElementById(id);
		return [id, [getComputedStyle(e).display, e.style.left, e.style.width]];
	})));
	result.original = await boxes(page);
	await page.goto("about:blank");
	await page.goto(result.url);
	await waitLoads(page, "heatmap", 1);
	await waitLoads(page, "flame", 1);
	result.reopened = { view: await page.evaluate(() => window.offcpu.view()), graph: await graph(page),
		labels: await page.$$eval("#labels div", (ds) => ds.map((d) => d.textContent)),
		boxes: await boxes(page) };
});
