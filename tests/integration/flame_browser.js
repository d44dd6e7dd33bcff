/*
 * Drives a flame graph SVG in headless Chromium the way a person would:
 * hover, click to zoom, Reset Zoom, search (through search() and through
 * Ctrl-F's prompt), the "ic" toggle, and a reload that must restore the
 * state kept in the URL. Prints what it saw as one JSON object; the checks
 * are in test_flamegraph_browser.py.
 *
 *   node flame_browser.js SVG OUTDIR   (screenshots go to OUTDIR)
 *
 * CHROMIUM overrides the browser (default /usr/bin/chromium).
 */
"use strict";

const path = require("path");
const { run } = require("./browser_page");

/* Every frame as the page shows it, in document order. */
function snapshot(page) {
	return page.evaluate(() => {
		const out = [];
		for (const g of document.querySelectorAll("g.f")) {
			const rect = g.querySelector("rect"), text = g.querySelector("text");
			const title = g.querySelector("title").textContent;
			out.push({
				name: title.replace(/ \([^(]*\)$/, ""),
				title,
				x: parseFloat(rect.getAttribute("x")),
				width: parseFloat(rect.getAttribute("width")),
				y: parseFloat(rect.getAttribute("y")),
				fill: rect.getAttribute("fill"),
				visible: getComputedStyle(g).display !== "none",
				parent: g.classList.contains("parent"),
				label: text ? text.textContent : null,
			});
		}
		return {
			frames: out,
			matched: document.getElementById("matched").textContent,
			matchedVisible: getComputedStyle(document.getElementById("matched")).display !== "none",
			unzoomVisible: getComputedStyle(document.getElementById("unzoom")).display !== "none",
			ic: document.getElementById("ic").getAttribute("class") || "",
			details: document.getElementById("details").textContent,
			hash: location.hash,
		};
	});
}

/* The rect of the first frame called name (at depth order). */
async function frameBox(page, name, nth = 0) {
	const handles = await page.$$("g.f");
	let seen = 0;
	for (const g of handles) {
		const t = await g.$eval("title", (e) => e.textContent.replace(/ \([^(]*\)$/, ""));
		if (t === name && seen++ === nth)
			return (await g.$("rect")).boundingBox();
	}
	throw new Error(`no frame ${name}`);
}

async function clickFrame(page, name) {
	const b = await frameBox(page, name);
	await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2);
}

const [svg, outdir] = process.argv.slice(2);

run({ width: 1220, height: 400 }, async (page, result) => {
	await page.goto("file://" + path.resolve(svg));
	result.initial = await snapshot(page);

	const b = await frameBox(page, "alpha");
	await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
	result.hover = (await snapshot(page)).details;
	await page.mouse.move(0, 0);
	result.unhover = (await snapshot(page)).details;

	await clickFrame(page, "alpha");
	result.zoomed = await snapshot(page);
	await page.screenshot({ path: path.join(outdir, "zoomed.png") });
	await page.click("#unzoom");
	result.reset = await snapshot(page);

	result.nestedPct = await page.evaluate(() => search("alpha|beta"));
	result.nested = await snapshot(page);
	result.casePct = await page.evaluate(() => search("beta"));
	result.caseSensitive = await snapshot(page);
	await page.click("#ic");
	result.caseInsensitive = await snapshot(page);

	/* Zoom and search, then a reload must come back to the same. */
	await clickFrame(page, "alpha");
	result.beforeReload = await snapshot(page);
	await page.reload();
	result.afterReload = await snapshot(page);
	await page.screenshot({ path: path.join(outdir, "reloaded.png") });

	/* Ctrl-F prompts for the regex. */
	page.once("dialog", (d) => d.accept("^gamma$"));
	await page.keyboard.press("Control+f");
	result.ctrlF = await snapshot(page);
	await page.click("#search"); /* now "Reset Search" */
	await page.click("#unzoom");
	result.cleared = await snapshot(page);
	await page.screenshot({ path: path.join(outdir, "initial.png") });
});
