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
const { chromium } = require("playwright-core");

async function main() {
	const [svg] = process.argv.slice(2);
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		headless: true,
		args: ["--no-sandbox", "--disable-gpu"],
	});
	const result = { errors: [] };
	try {
		const page = await browser.newPage({ viewport: { width: 1300, height: 700 } });
		page.on("pageerror", (e) => result.errors.push(String(e)));
		page.on("console", (m) => {
			if (m.type() === "error")
				result.errors.push(m.text());
		});
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
	} finally {
		await browser.close();
	}
	process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((e) => {
	process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
	process.exit(1);
});
