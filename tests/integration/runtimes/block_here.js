// Ground truth for JavaScript frames in off-CPU stacks (test_runtimes.py),
// run with --perf-basic-prof: prints "ready"; once told to go (a line on
// stdin), blockHere() blocks the main thread in Atomics.wait for BLOCK_MS
// and prints "done NS", the time it measured around the wait; then waits
// for stdin to close so that its frames (named in /tmp/perf-PID.map) can be
// named.
"use strict";

const BLOCK_MS = 1000;
const cell = new Int32Array(new SharedArrayBuffer(4));

function blockHere() {
	const start = process.hrtime.bigint();
	Atomics.wait(cell, 0, 0, BLOCK_MS);
	return process.hrtime.bigint() - start;
}

process.stdout.write("ready\n");
let went = false;
process.stdin.on("data", () => {
	if (!went) {
		went = true;
		process.stdout.write(`done ${blockHere()}\n`);
	}
});
process.stdin.on("end", () => process.exit(0));
