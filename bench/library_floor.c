/* library_floor — the least a host with Gatehouse's libraries and families can
 * start in: linked against the libraries the gatehouse binary needs, it opens
 * every plugin named on its command line as the host does (dlopen, lazy
 * binding, local symbols; their static initialisers run as they load, as
 * in the host), calls none of their functions, and then answers like
 * line_echo, naming TOOL in its tools/list. run_stdio_bench.sh times its
 * start beside the host's: what the dynamic linker, the kernel and the
 * libraries' own start cost before any of the host's own code runs.
 *
 * usage: library_floor TOOL [PLUGIN.so ...] */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: library_floor TOOL [PLUGIN.so ...]\n");
        return 2;
    }
    for (int i = 2; i < argc; ++i)
        if (!dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL)) {
            fprintf(stderr, "library_floor: %s\n", dlerror());
            return 1;
        }
    static char line[1 << 20];
    while (fgets(line, sizeof line, stdin)) {
        const char* id = strstr(line, "\"id\":");
        if (!id) continue; /* a notification: nothing to answer */
        id += 5;
        size_t len = strcspn(id, ",}");
        if (strstr(line, "\"tools/list\""))
            printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"tools\":[{\"name\":\"%s\","
                   "\"inputSchema\":{\"type\":\"object\"}}]}}\n",
                   (int)len, id, argv[1]);
        else
            printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\"}]}}\n",
                   (int)len, id);
        fflush(stdout);
    }
    return 0;
}
