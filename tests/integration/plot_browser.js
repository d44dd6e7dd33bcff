/*
 * Opens a latency timeline plot (offcpuctl latency --timeline --svg) in
 * headless Chromium and prints what it rendered as one JSON object: the
 * root element, XML parse errors, JavaScript and console errors, the
 * page's size, and each point's box, computed fill opacity and tooltip;
 * the checks are in test_latency.py.
 *
 *   node plot_browser.js SVG
 *
 * CHROMIUM overrides the browser (default /usr/bin/chromium).
 */
"use strict";

const path = require("path");
const { run } = require("./browser_page");

const [svg] = process.argv.slice(2);

run({ width: 1300, height: 700 }, async (page, result) => {
	await page.goto("file://" + path.resolve(svg));
	Object.assign(result, await page.evaluate(() => {
		const root = document.documentElement;
		const points = [];
		for (const c of document.querySelectorAll("#points circle")) {
			const b = c.getBoundingClientRect();
			points.push({
				x: b.x + b.width / 2,
				y: b.y + b.height / 2,
				width: b.width,
				fillOpacity: getComputedStyle(c).fillOpacity,
				title: c.querySelector("title").textContent,
			});
		}
		return {
			root: root.nodeName,
			parseErrors: document.getElementsByTagName("parsererror").length,
			width: root.getBoundingClientRect().width,
			height: root.getBoundingClientRect().height,
			points,
		};
	}));
});
