"""Ground truth for CPython frames in off-CPU stacks (test_python.py): once
told to go (a line on stdin), three threads block in known Python
functions for known times: nap() sleeps NAP_S, Waiter.wait_lock() waits
LOCK_S for a lock the main thread releases, Peer.read_peer() waits READ_S
for a byte from a socket. Prints "ready" when it may be told to go, "done"
when every thread is back, then waits for stdin to close, so that its
code can still be read when its stacks are named. Runs on 3.10 to 3.13;
the lines marked "# blocks:" are the ones the stacks must name."""
import socket
import sys
import threading
import time

NAP_S, LOCK_S, READ_S = 1.0, 1.5, 2.0


def nap(seconds):
    time.sleep(seconds)  # blocks: nap


class Waiter:
    def __init__(self):
        self.lock = threading.Lock()
        self.lock.acquire()

    def wait_lock(self):
        self.lock.acquire()  # blocks: wait_lock


class Peer:
    def __init__(self):
        self.mine, self.theirs = socket.socketpair()

    def read_peer(self):
        return self.mine.recv(1)  # blocks: read_peer


def main():
    waiter, peer = Waiter(), Peer()
    threads = [threading.Thread(target=nap, args=(NAP_S,)),
               threading.Thread(target=waiter.wait_lock),
               threading.Thread(target=peer.read_peer)]
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(LOCK_S - (time.monotonic() - start))
    waiter.lock.release()
    time.sleep(READ_S - (time.monotonic() - start))
    peer.theirs.send(b"x")
    for t in threads:
        t.join()
    print("done", flush=True)
    sys.stdin.read()


main()
