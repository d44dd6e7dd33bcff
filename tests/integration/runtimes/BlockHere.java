// Ground truth for Java frames in off-CPU stacks (test_runtimes.py): warms
// blockHere() up until the JIT has compiled it (WARM_CALLS calls of a
// 0 ms sleep), prints "ready"; once told to go (a line on stdin),
// blockHere() sleeps BLOCK_MS and it prints "done NS", the time it
// measured around the sleep; then waits for stdin to close so that its
// frames can be named.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class BlockHere {
	static final long BLOCK_MS = 1000;
	static final int WARM_CALLS = Integer.getInteger("warmCalls", 20000);

	static long blockHere(long ms) throws InterruptedException {
		long start = System.nanoTime();
		Thread.sleep(ms);
		return System.nanoTime() - start;
	}

	public static void main(String[] args) throws Exception {
		for (int i = 0; i < WARM_CALLS; i++)
			blockHere(0);
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
		System.out.println("ready");
		System.out.flush();
		in.readLine();
		System.out.println("done " + blockHere(BLOCK_MS));
		System.out.flush();
		while (in.readLine() != null) {
		}
	}
}
