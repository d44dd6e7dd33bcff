/*
 * Opens offcpuctl serve's page on views whose flame graph is empty or has
 * a baseline no window matches, in headless Chromium, and prints what the
 * page says about them (the notes under the graph, the error line, the
 * heatmap's line) as one
 * JSON object; the checks are in test_empty_answers.py.
 *
 *   node serve_notes_browser.js URL...
 *
 * Each URL: the page with a view (sel, base, kind) in its query.
 */
"use strict";

const { run } = require("./browser_page");

const urls = process.argv.slice(2);

run({ width: 1400, height: 1000 }, async (page, result) => {
	result.views = [];
	for (const url of urls) {
		await page.goto("about:blank");
		await page.goto(url);
		await page.waitForFunction(() => window.offcpu && window.offcpu.loads.flame >= 1 &&
			window.offcpu.loads.notes >= 1 && window.offcpu.loads.heatmap >= 1, null,
			{ timeout: 60000 });
		result.views.push(await page.evaluate(() => ({
			notes: [...document.querySelectorAll("#notes div")].map((d) => d.textContent),
			error: document.getElementById("error").textContent,
			graphShown: getComputedStyle(document.getElementById("graph")).display !== "none",
			heatinfo: document.getElementById("heatinfo").textContent,
		})));
	}
});
