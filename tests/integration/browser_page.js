/*
 * browser_page: what the browser tests' node tools (flame_browser.js,
 * plot_browser.js) share: headless Chromium through playwright-core
 * (CHROMIUM overrides the browser, default /usr/bin/chromium), a page that
 * records JavaScript and console errors, and the results printed as one
 * JSON object; anything thrown prints its stack and exits 1.
 */
"use strict";

const { chromium } = require("playwright-core");

async function withPage(viewport, fn) {
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		headless: true,
		args: ["--no-sandbox", "--disable-gpu"],
	});
	const result = { errors: [] };
	try {
		const page = await browser.newPage({ viewport });
		page.on("pageerror", (e) => result.errors.push(String(e)));
		page.on("console", (m) => {
			if (m.type() === "error")
				result.errors.push(m.text());
		});
		await fn(page, result);
	} finally {
		await browser.close();
	}
	process.stdout.write(JSON.stringify(result) + "\n");
}

/* Runs fn(page, result) on a new page of the viewport's size, then prints
 * result: fn adds what it saw, the page's errors are in result.errors. */
function run(viewport, fn) {
	withPage(viewport, fn).catch((e) => {
		process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
		process.exit(1);
	});
}

module.exports = { run };
