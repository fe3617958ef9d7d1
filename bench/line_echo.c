/* line_echo — the floor for bench/run_stdio_bench.sh: the least a stdio
 * JSON-RPC server can do. For every line it reads it writes one fixed
 * CallToolResult carrying the request's id, without parsing anything else.
 *
 * usage: line_echo [TOOL [PLUGIN.so ...]]
 * TOOL (default noop) is the tool its tools/list names. Each PLUGIN.so is
 * opened first as the host opens its plugins (dlopen, lazy binding, local
 * symbols; their static initialisers run as they load) and none of their
 * functions is called: built as library_floor, linked against every library
 * the gatehouse binary needs, it is the floor of the host's start. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    const char* tool = argc > 1 ? argv[1] : "noop";
    for (int i = 2; i < argc; ++i)
        if (!dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL)) {
            fprintf(stderr, "%s: %s\n", argv[0], dlerror());
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
                   (int)len, id, tool);
        else
            printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\"}]}}\n",
                   (int)len, id);
        fflush(stdout);
    }
    return 0;
}
