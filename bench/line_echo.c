/* line_echo — the floor for bench/run_stdio_bench.sh: the least a stdio
 * JSON-RPC server can do. For every line it reads it writes one fixed
 * CallToolResult carrying the request's id, without parsing anything else. */
#include <stdio.h>
#include <string.h>

int main(void) {
    static char line[1 << 20];
    while (fgets(line, sizeof line, stdin)) {
        const char* id = strstr(line, "\"id\":");
        if (!id) continue; /* a notification: nothing to answer */
        id += 5;
        size_t len = strcspn(id, ",}");
        if (strstr(line, "\"tools/list\""))
            printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"tools\":[{\"name\":\"noop\","
                   "\"inputSchema\":{\"type\":\"object\"}}]}}\n",
                   (int)len, id);
        else
            printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\"}]}}\n",
                   (int)len, id);
        fflush(stdout);
    }
    return 0;
}
