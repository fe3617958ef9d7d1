/* line_relay COMMAND... — the floor of a relay for bench/run_upstream_bench.sh:
 * the least a host mounting a stdio server can add. It starts COMMAND with
 * pipes and, on one thread, copies whatever arrives on its stdin to the
 * command's stdin and whatever the command writes to its stdout, without
 * looking at a byte: one more process and two more pipe crossings per call,
 * nothing else. */
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static int copy(int from, int to) {
    char buffer[1 << 16];
    ssize_t n = read(from, buffer, sizeof buffer);
    if (n <= 0) return 0;
    for (ssize_t done = 0; done < n;) {
        ssize_t written = write(to, buffer + done, (size_t)(n - done));
        if (written <= 0) return 0;
        done += written;
    }
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: line_relay COMMAND [ARGS...]\n");
        return 2;
    }
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return 1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    pid_t pid;
    if (posix_spawnp(&pid, argv[1], &actions, NULL, argv + 1, environ) != 0) return 1;
    close(in[0]);
    close(out[1]);
    struct pollfd fds[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) continue;
        if (fds[0].revents && !copy(0, in[1])) break;
        if (fds[1].revents && !copy(out[0], 1)) break;
    }
    close(in[1]);
    int status;
    waitpid(pid, &status, 0);
    return 0;
}
