// Ground truth for Go frames in off-CPU stacks (test_runtimes.py): prints
// "ready"; once told to go (a line on stdin), blockHere() blocks its OS
// thread in a nanosleep(2) of BLOCK (time.Sleep would park only the
// goroutine: the thread would show the scheduler) and prints "done NS", the
// time it measured around the call; then waits for stdin to close so that
// its frames can be named.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

const BLOCK = time.Second

//go:noinline
func blockHere() time.Duration {
	start := time.Now()
	ts := syscall.NsecToTimespec(int64(BLOCK))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
	return time.Since(start)
}

func main() {
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	in.ReadString('\n')
	fmt.Println("done", blockHere().Nanoseconds())
	io.Copy(io.Discard, in)
}
