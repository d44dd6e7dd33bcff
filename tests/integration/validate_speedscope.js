/*
 * Checks speedscope files against the JSON schema that the speedscope
 * package ships (dist/release/file-format-schema.json), with ajv, then what
 * the schema cannot say: frame indices in range, one weight per sample,
 * weights not negative and within endValue - startValue.
 *
 *   node validate_speedscope.js FILE...   exit 0 if all are valid, else 1
 *
 * Needs tests/integration/node_modules (npm install in this directory).
 */
"use strict";

const fs = require("fs");

function load(name) {
	try {
		return require(name);
	} catch (e) {
		console.error(`validate_speedscope: ${e.message}\n(run npm install in ${__dirname})`);
		process.exit(1);
	}
}

const Ajv = load("ajv");
const schema = load("speedscope/dist/release/file-format-schema.json");

/* Problems the schema does not catch, as strings. */
function semantics(file) {
	const errors = [];
	const n_frames = file.shared.frames.length;

	file.profiles.forEach((p, i) => {
		const at = `profiles[${i}]`;

		if (p.type !== "sampled")
			return;
		if (p.samples.length !== p.weights.length)
			errors.push(`${at}: ${p.samples.length} samples, ${p.weights.length} weights`);
		p.samples.forEach((s, j) => {
			for (const f of s) {
				if (!Number.isInteger(f) || f < 0 || f >= n_frames) {
					errors.push(`${at}.samples[${j}]: frame ${f} of ${n_frames}`);
					break;
				}
			}
		});
		let sum = 0;
		for (const w of p.weights) {
			if (!(w >= 0))
				errors.push(`${at}: weight ${w}`);
			sum += w;
		}
		const span = p.endValue - p.startValue;
		if (sum > span * (1 + 1e-9))
			errors.push(`${at}: weights add up to ${sum}, more than endValue - startValue ${span}`);
	});
	return errors;
}

function main(paths) {
	if (!paths.length) {
		console.error("usage: node validate_speedscope.js FILE...");
		return 1;
	}
	const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
	let bad = 0;

	for (const path of paths) {
		let file;
		try {
			file = JSON.parse(fs.readFileSync(path, "utf8"));
		} catch (e) {
			console.error(`${path}: ${e.message}`);
			bad++;
			continue;
		}
		if (!validate(file)) {
			for (const e of validate.errors)
				console.error(`${path}: ${e.instancePath || "/"} ${e.message}`);
			bad++;
			continue;
		}
		const errors = semantics(file);
		for (const e of errors)
			console.error(`${path}: ${e}`);
		if (errors.length)
			bad++;
		else
			console.log(`${path}: valid`);
	}
	return bad ? 1 : 0;
}

process.exit(main(process.argv.slice(2)));
