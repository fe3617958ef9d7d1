/* pipe_round_trip [ROUND_TRIPS] — what one exchange between two processes
 * costs on this machine, the floor under every stdio figure: a parent and a
 * child pass one byte back and forth over two pipes, each blocking in read,
 * as a client and a stdio server (or a host and a family's process) do one
 * call at a time. Three placements:
 *   same CPU    both pinned to CPU 0: each wake-up is a switch on that CPU
 *   apart       the parent on CPU 0, the child on CPU 1: each wake-up wakes
 *               the other CPU out of idle
 *   scheduler   neither pinned, as the benches run
 * For each, wall time and the CPU time of both processes per round trip
 * (two wake-ups). One JSON line per placement on stdout. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t) {
    return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* CPU of this process and of the children it has waited for. */
static double cpu_so_far(void) {
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    return seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) + seconds(children.ru_stime);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int pin(int cpu) {
    if (cpu < 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

/* One placement: -1 leaves a side to the scheduler. 0 on success. */
static int measure(const char* name, int parent_cpu, int child_cpu, long round_trips) {
    int there[2], back[2];
    if (pipe(there) != 0 || pipe(back) != 0) return perror("pipe"), 1;
    const double cpu_before = cpu_so_far(), wall_before = now();
    const pid_t child = fork();
    if (child < 0) return perror("fork"), 1;
    char byte = 'x';
    if (child == 0) {
        if (pin(child_cpu) != 0) _exit(3);
        for (long i = 0; i < round_trips; ++i)
            if (read(there[0], &byte, 1) != 1 || write(back[1], &byte, 1) != 1) _exit(4);
        _exit(0);
    }
    cpu_set_t was;
    sched_getaffinity(0, sizeof was, &was);
    if (pin(parent_cpu) != 0) return perror("sched_setaffinity"), 1;
    for (long i = 0; i < round_trips; ++i)
        if (write(there[1], &byte, 1) != 1 || read(back[0], &byte, 1) != 1) return perror("round trip"), 1;
    int status = 0;
    waitpid(child, &status, 0);
    const double wall = now() - wall_before, cpu = cpu_so_far() - cpu_before;
    sched_setaffinity(0, sizeof was, &was);
    for (int i = 0; i < 2; ++i)
        close(there[i]), close(back[i]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "pipe_round_trip: the child could not run %s (status %d)\n", name, status);
        return 1;
    }
    printf("{\"placement\":\"%s\",\"round_trips\":%ld,\"wall_us\":%.2f,\"cpu_us\":%.2f}\n", name, round_trips,
           wall * 1e6 / (double)round_trips, cpu * 1e6 / (double)round_trips);
    return 0;
}

int main(int argc, char** argv) {
    const long round_trips = argc > 1 ? atol(argv[1]) : 100000;
    if (round_trips <= 0) {
        fprintf(stderr, "usage: pipe_round_trip [ROUND_TRIPS]\n");
        return 2;
    }
    int failed = measure("same CPU", 0, 0, round_trips);
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1) failed |= measure("apart", 0, 1, round_trips);
    failed |= measure("scheduler", -1, -1, round_trips);
    return failed;
}
