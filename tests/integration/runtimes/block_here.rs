// Ground truth for Rust frames in off-CPU stacks (test_runtimes.py): prints
// "ready"; once told to go (a line on stdin), block_here() sleeps BLOCK on
// the main thread and prints "done NS", the time it measured around the
// sleep; then waits for stdin to close so that its frames can be named.
use std::io::{BufRead, Read, Write};
use std::time::{Duration, Instant};

const BLOCK: Duration = Duration::from_millis(1000);

// Not inlined, and with work after the sleep: a tail call would leave no
// frame of its own in the stack.
#[inline(never)]
fn block_here() -> Duration {
    let start = Instant::now();
    std::thread::sleep(BLOCK);
    start.elapsed()
}

fn main() {
    let mut out = std::io::stdout();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let blocked = block_here();
    writeln!(out, "done {}", blocked.as_nanos()).unwrap();
    out.flush().unwrap();
    std::io::stdin().lock().read_to_end(&mut Vec::new()).unwrap();
}
