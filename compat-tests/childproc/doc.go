// Package childproc starts the test beds' child processes (samsa nodes,
// client programs, the test binary re-run as a client) tied to the life of
// the test process, so that a test binary that dies (a -timeout panic, a
// SIGKILL, an OOM kill) does not leave nodes and clients running that load
// the machine and hold ports for the next runs.
//
// Two mechanisms:
//
//   - Start sets PR_SET_PDEATHSIG (SIGKILL) on the child. Linux sends the
//     signal when the thread that forked the child exits, not the process,
//     and the Go runtime may end a thread (a goroutine that exits while
//     locked to its thread takes the thread with it), so every Start forks
//     from one dedicated goroutine locked to its thread for the life of the
//     process. The attribute survives execve (unless the new program is
//     set-user-ID or has file capabilities), so `ip netns exec ns prog`,
//     which execs prog in place, keeps it, and so does the java launcher.
//   - Start also records the child in a directory of the test process
//     (<tmp>/samsa-childproc/<pid>-<start time>/<child pid>, holding the
//     child's start time). Sweep, which the first Start of a process runs,
//     SIGKILLs the recorded children of test processes that are gone, when
//     the process with that pid has the recorded start time (pids are
//     reused: it never kills a process it did not start), and removes
//     their directories.
//
// Usage:
//
//	cmd := exec.Command(binary, args...)
//	if err := childproc.Start(cmd); err != nil { ... }
//	defer cmd.Wait()
package childproc
