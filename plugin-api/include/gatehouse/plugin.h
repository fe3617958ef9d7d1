/*
 * Gatehouse plugin ABI — the stable C boundary between the host and a tool family.
 *
 * A plugin is a shared library exporting exactly one symbol, gh_plugin_entry.
 * The host calls it once after loading, hands it the host function table, and
 * receives a descriptor that lists the family's tools. Everything that crosses
 * this boundary is plain C: fixed-width integers, pointers and gh_str views.
 *
 * Growth rules (see STYLE.md): every struct begins with struct_size; fields are
 * only ever appended; zero in a new field means the old behaviour; a changed
 * function signature becomes a new "...2" slot and the old slot stays.
 *
 * Ownership: everything the host passes in is borrowed until the call returns.
 * Everything a plugin hands out (descriptor, tool table, strings in them) stays
 * valid until the plugin's shutdown returns. Output text crosses through a
 * gh_sink: the host copies the bytes before sink_write returns. Neither side
 * frees the other's memory.
 */
#ifndef GATEHOUSE_PLUGIN_H
#define GATEHOUSE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version: major in the high 16 bits, minor in the low 16. A host refuses
 * a plugin whose major differs from its own; minor growth is backward
 * compatible in both directions (struct_size tells what each side knows). */
#define GH_ABI_VERSION_MAJOR 1
#define GH_ABI_VERSION_MINOR 8
#define GH_ABI_VERSION ((uint32_t)((GH_ABI_VERSION_MAJOR << 16) | GH_ABI_VERSION_MINOR))
#define GH_ABI_MAJOR(v) ((uint32_t)(v) >> 16)
#define GH_ABI_MINOR(v) ((uint32_t)(v)&0xFFFFu)

#if defined(_WIN32)
#define GH_EXPORT __declspec(dllexport)
#else
#define GH_EXPORT __attribute__((visibility("default")))
#endif

/* The one exported entry symbol, as a string for loaders. */
#define GH_ENTRY_SYMBOL "gh_plugin_entry"

/* ---- Status codes returned by plugin functions ------------------------- */

#define GH_STATUS_OK 0
/* The tool ran and failed; the sink holds a sentence for the agent. */
#define GH_STATUS_TOOL_ERROR 1
/* The arguments were wrong in a way the schema could not express; the sink
 * holds a sentence saying what to fix. */
#define GH_STATUS_INVALID_ARGS 2
/* A fault inside the plugin; the sink text goes to the log, not the agent. */
#define GH_STATUS_INTERNAL 3
/* The call noticed is_cancelled() and stopped. */
#define GH_STATUS_CANCELLED 4
/* ABI 1.2+, from a resource read only: the URI matched a template but names
 * nothing that exists (the client gets the protocol's resource-not-found
 * error). */
#define GH_STATUS_NOT_FOUND 5
/* ABI 1.3+, from a tool call, a resource read or a prompt get only: the call
 * cannot finish before the client answers some requests of its own. The sink
 * holds a JSON object
 *   {"inputRequests": {"<key>": {"method": "elicitation/create" |
 *                                  "sampling/createMessage" | "roots/list",
 *                                "params": {...}}, ...},
 *    "requestState": "<the plugin's state, at most 8 KiB>"}
 * (either member may be left out, not both). The host asks the client — as an
 * InputRequiredResult for 2026-07-28 clients, as server-to-client requests
 * for 2025-11-25 ones — and calls the same function again with the answers
 * (api->input_responses) and the state (api->request_state). The host seals
 * the state: a plugin can trust it as its own. It never sends a request the
 * client did not declare a capability for: the call fails instead, so check
 * "clientCapabilities" in api->call_context first when there is another way.
 * ABI 1.7+, for a tool with GH_TOOL_ASKS_BEFORE_TASK while its call context
 * has "taskStart": true: {"startTask": true, "requestState": ...} (no
 * inputRequests) starts the call's task, whose first round gets this round's
 * input responses and the state again (see GH_TASK_*). */
#define GH_STATUS_INPUT_REQUIRED 6
/* ABI 1.5+, from a tool call only: the family refuses, the way the gate does.
 * The sink holds a JSON object
 *   {"code": "<UPPER_SNAKE: A-Z first, then A-Z, 0-9, '_'; at most 64>",
 *    "message": "<a sentence the agent can act on>",
 *    "next": {<what the agent needs for its next step>}}   ("next" optional)
 * and the agent gets what a gate refusal looks like: isError, the text
 * "CODE: message" and structuredContent {code, message, next}. A code, once
 * shipped, keeps its meaning. A host older than 1.5 does not know this
 * status (it reports a fault inside the plugin): test GH_HOST_KNOWS_REFUSALS
 * first and answer GH_STATUS_TOOL_ERROR with "CODE: message" there, as
 * plugin.hpp does. */
#define GH_STATUS_REFUSED 7

/* ---- Risk of a tool (what calling it can do) --------------------------- */

#define GH_RISK_READ 1
#define GH_RISK_WRITE 2
#define GH_RISK_MONEY 3
#define GH_RISK_DESTRUCTIVE 4

/* ---- Flags ------------------------------------------------------------- */

/* gh_plugin_desc.flags: call() may run concurrently on several threads.
 * Without it the host serializes calls into this plugin. */
#define GH_PLUGIN_REENTRANT 0x1u
#define GH_PLUGIN_KNOWN_FLAGS (GH_PLUGIN_REENTRANT)

/* gh_tool_desc.flags: the gate does not check this tool (session tools). */
#define GH_TOOL_GATE_EXEMPT 0x1u
/* gh_tool_desc.flags (ABI 1.1+): the tool reads its family's critical notes,
 * so the gate lets it run while critical notes are still unread. It reports
 * what it showed through api->critical_read. */
#define GH_TOOL_READS_CRITICAL 0x2u
/* gh_tool_desc.flags (ABI 1.7+), for a tool with task_support: the tool asks
 * for what it needs before its task starts. The host runs its first rounds as
 * a plain call (input requests reach the client as multi round-trip
 * requests) until it answers GH_STATUS_INPUT_REQUIRED with {"startTask":
 * true}; only then does the task start, and its first round gets the last
 * round's answers and state again. Without the flag the task starts before
 * the tool's first round. */
#define GH_TOOL_ASKS_BEFORE_TASK 0x4u
#define GH_TOOL_KNOWN_FLAGS (GH_TOOL_GATE_EXEMPT | GH_TOOL_READS_CRITICAL | GH_TOOL_ASKS_BEFORE_TASK)
/* gh_tool_desc.task_support (ABI 1.7+): whether a call may run as a task
 * (the Tasks extension, io.modelcontextprotocol/tasks; docs/tasks.md). A task
 * runs the same gh_tool_fn, on a host thread of its own, after the call was
 * answered with the task's id: progress becomes the task's status message,
 * is_cancelled turns true on tasks/cancel, input requests make the task
 * input_required, and the final answer is the task's result. */
#define GH_TASK_NONE 0u     /* never: every call is a plain call (today's behaviour) */
#define GH_TASK_OPTIONAL 1u /* as a task for a client that declared the extension, else a plain call */
#define GH_TASK_REQUIRED                                                                                               \
    2u /* always a task: a client without the extension gets a job handle (2025-11-25)                                 \
          or -32021 naming the extension (2026-07-28) */

/* gh_resource_desc.flags (ABI 1.2+): gh_resource_desc.size holds the size of
 * the raw content in bytes (without it the size is unknown, and not 0). */
#define GH_RESOURCE_HAS_SIZE 0x1u
#define GH_RESOURCE_KNOWN_FLAGS (GH_RESOURCE_HAS_SIZE)
/* gh_resource_template_desc.flags and gh_prompt_desc.flags: none yet. */
#define GH_RESOURCE_TEMPLATE_KNOWN_FLAGS 0x0u
#define GH_PROMPT_KNOWN_FLAGS 0x0u

/* ---- Log levels (the MCP logging levels, in order) --------------------- */

#define GH_LOG_DEBUG 0
#define GH_LOG_INFO 1
#define GH_LOG_NOTICE 2
#define GH_LOG_WARNING 3
#define GH_LOG_ERROR 4
#define GH_LOG_CRITICAL 5
#define GH_LOG_ALERT 6
#define GH_LOG_EMERGENCY 7

/* ---- Basic types ------------------------------------------------------- */

/* A borrowed byte view; not NUL-terminated unless said otherwise. */
typedef struct gh_str {
    const char* ptr;
    size_t len;
} gh_str;

/* Opaque, host-owned: where a plugin writes its output. */
typedef struct gh_sink gh_sink;

/* Opaque, host-owned: one tool call in progress. Valid only on the thread the
 * call runs on and only until the call returns; storing it is a bug. */
typedef struct gh_call gh_call;

/* ---- Host functions handed to the plugin ------------------------------- */

/* All functions are thread-safe. ABI 1.0+ unless marked otherwise; test a
 * later slot with GH_HAS(api, field) before calling it. */
typedef struct gh_host_api {
    uint32_t struct_size;
    uint32_t abi_version;

    /* Append bytes to a sink. The host copies them before returning. */
    void (*sink_write)(gh_sink* sink, gh_str bytes);

    /* Log a message. `call` may be NULL outside a call. Inside a call the
     * message also reaches the client as notifications/message when the
     * request asked for that level. Always written to the host's log. */
    void (*log)(gh_call* call, int32_t level, gh_str message);

    /* Report progress of a call. Sent to the client only when the request
     * carried a progress token. total <= 0 means unknown. message may be
     * empty. */
    void (*progress)(gh_call* call, double progress, double total, gh_str message);

    /* Non-zero once the client cancelled the call, its time limit
     * (limits.tool_timeout_ms) passed, or the host is stopping. Long calls
     * poll this and return GH_STATUS_CANCELLED; a call that never returns
     * keeps its host thread for good (see docs/security.md). */
    int32_t (*is_cancelled)(gh_call* call);

    /* The call's context as a JSON object, borrowed until the call returns:
     * {"principal": {"subject": ..., "kind": ..., "owner": ...,
     *  "issuer": ..., "client_id": ..., "scopes": [...]}, "revision": ...,
     * "tool": ..., "family": ...} (over HTTP the issuer, subject, client and
     * scopes of the verified token, never the token itself; "owner" is the
     * opaque key of everything kept per caller, kind, issuer and subject
     * together: key by it, never by the subject alone); from ABI 1.3 also "clientCapabilities":
     * the capabilities the client declared (what input requests it can
     * answer: "elicitation" with "form"/"url", "sampling", "roots"); from
     * ABI 1.7 "task": {"taskId"} when the call runs as a task, and
     * "taskStart": true while answering {"startTask": true} would start one
     * (GH_TOOL_ASKS_BEFORE_TASK); from ABI 1.8 "trace": {"traceparent",
     * "tracestate"?}, the W3C trace context of the call with the host's span
     * as parent, to pass on to what the family calls (HTTP headers of the
     * same names, or _meta of an MCP request). Later host versions add keys. */
    gh_str (*call_context)(gh_call* call);

    /* ABI 1.1+: a new empty sink for answers of the host functions below.
     * Owned by the host and freed when the call returns; NULL when `call` is
     * NULL. */
    gh_sink* (*sink_new)(gh_call* call);

    /* ABI 1.1+: the bytes written to a sink so far. Borrowed until the next
     * write to that sink or the end of the call. */
    gh_str (*sink_bytes)(gh_sink* sink);

    /* ---- Session services (ABI 1.1+) ----
     * Each writes one JSON object to `out` and returns GH_STATUS_OK, or
     * GH_STATUS_TOOL_ERROR with {"code": ..., "message": ..., "next": {...}}
     * (a refusal the plugin passes on to the agent). The caller's principal
     * is the call's; a handle of another principal behaves as unknown. No
     * answer ever carries the store password. */

    /* Looks around without changing anything. With an empty handle:
     * {"store", "user", "program_running", "pinned", "password_available"}.
     * With a handle of the caller's live session, also "session":
     * {"topic", "folder", "conversations_root", "conversations_dir",
     *  "conversations_levels", "scopes", "expires"}: the root is
     * conversations_dir followed by the folder names of
     * conversations_levels; walk them one by one without following links. */
    int32_t (*session_describe)(gh_call* call, gh_str handle, gh_sink* out);

    /* Opens the session of the caller for `topic` anew (a new handle and
     * nonce; the previous handle of that topic stops working) and answers
     * {"session", "store", "user", "scopes", "unread_critical_notes",
     *  "folder", "expires", "rules"}. */
    int32_t (*session_open)(gh_call* call, gh_str topic, gh_sink* out);

    /* Accepts the rules the code was issued for, in the session `handle`.
     * Answers {"accepted": <tool name>}. */
    int32_t (*rules_accept)(gh_call* call, gh_str handle, gh_str code, gh_sink* out);

    /* Marks critical items of the calling family as read in the session of
     * the current (gated) call. item_ids: a JSON array of id strings.
     * Answers {"unread": <count of unread items left, all families>}. */
    int32_t (*critical_read)(gh_call* call, gh_str item_ids, gh_sink* out);

    /* ABI 1.2+: tells the host what this family offers changed, so open
     * subscriptions (subscriptions/listen) get notifications/<kind>. From any
     * thread, inside a call or not (`call` may be NULL); never blocks.
     * kind: GH_CHANGE_*; uri: the resource, for GH_CHANGE_RESOURCE_UPDATED
     * only (empty otherwise). */
    void (*notify_changed)(gh_call* call, int32_t kind, gh_str uri);

    /* ---- Multi round-trip requests (ABI 1.3+) ---- */

    /* What the client answered to input requests, as a JSON object keyed like
     * the "inputRequests" of GH_STATUS_INPUT_REQUIRED; "{}" on a first round.
     * Each value is the client's result for that request (ElicitResult,
     * CreateMessageResult, ListRootsResult). It comes from the client: check
     * what you use, ignore keys you did not ask for, and ask again (another
     * GH_STATUS_INPUT_REQUIRED) for what is missing. Borrowed until the call
     * returns. */
    gh_str (*input_responses)(gh_call* call);

    /* The "requestState" this plugin answered with on the previous round of
     * the same request, unchanged (the host verified it); empty on a first
     * round. Borrowed until the call returns. */
    gh_str (*request_state)(gh_call* call);

    /* ---- State (ABI 1.3+) ----
     * The family's share of the host's state backend (state.backend: memory
     * or a SQLite file, shared by every instance that points at it), for
     * what must outlive a call. Keys belong to the calling family: the host
     * keeps each family's keys apart from every other family's and from its
     * own. `call` is the tool call or page request in progress (never NULL).
     * key: 1..512 bytes; value: up to 1 MiB. The host does not check owners:
     * a family keys what it keeps by principal where it must. */

    /* Writes the value stored under `key` to `out` and returns GH_STATUS_OK;
     * GH_STATUS_NOT_FOUND when nothing (or nothing unexpired) is stored;
     * GH_STATUS_INTERNAL when the backend failed (logged by the host). */
    int32_t (*state_get)(gh_call* call, gh_str key, gh_sink* out);

    /* Stores `value` under `key`, replacing what was there. ttl_ms 0: kept
     * until erased. GH_STATUS_OK, GH_STATUS_INVALID_ARGS (key or value out
     * of bounds) or GH_STATUS_INTERNAL. */
    int32_t (*state_put)(gh_call* call, gh_str key, gh_str value, uint64_t ttl_ms);

    /* Erases `key`: GH_STATUS_OK when something was erased, else
     * GH_STATUS_NOT_FOUND (or GH_STATUS_INTERNAL). */
    int32_t (*state_erase)(gh_call* call, gh_str key);

    /* ABI 1.4+: erases `key` and writes the value it held to `out`, as one
     * step: of any number of callers taking the same key at once, in this
     * process or in another host instance sharing the backend, exactly one
     * gets GH_STATUS_OK and the value; the others GH_STATUS_NOT_FOUND. For
     * what must be used once (an approval code). GH_STATUS_INVALID_ARGS or
     * GH_STATUS_INTERNAL as for state_get. */
    int32_t (*state_take)(gh_call* call, gh_str key, gh_sink* out);

    /* ---- Store credentials (ABI 1.4+) ----
     * For a family that must sign in to the store itself. From a gated tool
     * call in a live session only, and only when the operator allowed it for
     * this plugin (`store_credentials: true` in its `plugins:` entry). Writes
     * {"store", "user", "password"} of the session's store to `out` and
     * returns GH_STATUS_OK; otherwise GH_STATUS_TOOL_ERROR with
     * {"code", "message"} (CREDENTIALS_NOT_ALLOWED, CREDENTIALS_UNAVAILABLE,
     * CREDENTIALS_REFUSED; NOT_CONNECTED outside a gated call with a
     * session). The password must never leave the plugin in a result, a log
     * line or a file: the host refuses any answer that contains it
     * (SECRET_IN_RESULT) and masks it in log lines. Borrowed nothing; `out`
     * is a sink from sink_new. Thread-safe. Read afresh on every call: do
     * not keep the password beyond the call that uses it. */
    int32_t (*store_credentials)(gh_call* call, gh_sink* out);
} gh_host_api;

#define GH_HOST_API_SIZE_V1 (offsetof(gh_host_api, call_context) + sizeof(void*))
#define GH_HOST_API_SIZE_V2 (offsetof(gh_host_api, critical_read) + sizeof(void*))
#define GH_HOST_API_SIZE_V3 (offsetof(gh_host_api, notify_changed) + sizeof(void*))
#define GH_HOST_API_SIZE_V4 (offsetof(gh_host_api, state_erase) + sizeof(void*))
#define GH_HOST_API_SIZE_V5 (offsetof(gh_host_api, store_credentials) + sizeof(void*))

/* gh_host_api.notify_changed kinds. */
#define GH_CHANGE_TOOLS_LIST 1
#define GH_CHANGE_PROMPTS_LIST 2
#define GH_CHANGE_RESOURCES_LIST 3
#define GH_CHANGE_RESOURCE_UPDATED 4

/* True when the host answers GH_STATUS_REFUSED as a refusal (ABI 1.5+): a
 * status, not a function, so its host is told by the table's abi_version. */
#define GH_HOST_KNOWS_REFUSALS(api)                                                                                    \
    ((api) != NULL && GH_ABI_MAJOR((api)->abi_version) == GH_ABI_VERSION_MAJOR &&                                      \
     GH_ABI_MINOR((api)->abi_version) >= 5u)

/* True when the host's table is large enough to hold `field`. */
#define GH_HAS(api, field)                                                                                             \
    ((api) != NULL && (api)->struct_size >= offsetof(gh_host_api, field) + sizeof((api)->field) && (api)->field != NULL)

/* ---- Tools ------------------------------------------------------------- */

/* Run one tool call.
 *   plugin_state: what init returned.
 *   tool_data:    gh_tool_desc.tool_data of the tool being called.
 *   arguments:    the call's arguments as a JSON object, already validated
 *                 against input_schema; borrowed until return.
 *   out:          on GH_STATUS_OK, a JSON object shaped like an MCP
 *                 CallToolResult without isError ({"content": [...],
 *                 "structuredContent": {...}}); on TOOL_ERROR or INVALID_ARGS,
 *                 a plain-text sentence for the agent; on INTERNAL, text for
 *                 the log. */
typedef int32_t (*gh_tool_fn)(void* plugin_state, void* tool_data, gh_call* call, gh_str arguments, gh_sink* out);

typedef struct gh_tool_desc {
    uint32_t struct_size;
    uint32_t flags;         /* GH_TOOL_* */
    gh_str name;            /* [a-zA-Z0-9_.-]{1,64}; unique in the family */
    gh_str title;           /* optional human title */
    gh_str description;     /* what the tool does, for the model */
    gh_str input_schema;    /* JSON Schema object, "type": "object" at the root */
    gh_str output_schema;   /* optional JSON Schema for structuredContent */
    gh_str scope;           /* the scope a token must carry to call it (HTTP) */
    gh_str required_scopes; /* JSON array of grant names, all required; may be empty */
    uint32_t risk;          /* GH_RISK_* */
    uint32_t reserved0;     /* zero */
    gh_str rules;           /* optional text the agent must accept before first use */
    gh_str annotations;     /* optional JSON object (MCP ToolAnnotations) */
    gh_tool_fn call;
    void* tool_data;       /* passed back to call() unchanged */
    uint32_t task_support; /* ABI 1.7+: GH_TASK_*; zero (GH_TASK_NONE) in older descriptors */
    uint32_t reserved1;    /* zero */
} gh_tool_desc;

#define GH_TOOL_DESC_SIZE_V1 (offsetof(gh_tool_desc, tool_data) + sizeof(void*))
#define GH_TOOL_DESC_SIZE_V2 (offsetof(gh_tool_desc, reserved1) + sizeof(uint32_t))

/* ---- Resources, resource templates, prompts (ABI 1.2+) ----------------- */

/* Read one resource. Runs on a request thread like a tool call (serialized
 * unless the plugin is reentrant); `call` gives log, progress, is_cancelled
 * and call_context.
 *   data:      gh_resource_desc.resource_data or
 *              gh_resource_template_desc.template_data.
 *   uri:       the URI the client asked for; borrowed until return.
 *   variables: JSON object of the template's variables as matched in `uri`
 *              (percent-decoded strings); "{}" for a static resource.
 *   out:       on GH_STATUS_OK a JSON object {"contents": [{"uri", "mimeType"?,
 *              "text" | "blob" (base64)}, ...]}, optionally with "ttlMs"
 *              (integer >= 0, default 0) and "cacheScope" ("public" or
 *              "private", the default) for 2026-07-28 clients;
 *              on GH_STATUS_NOT_FOUND nothing; on TOOL_ERROR or INVALID_ARGS
 *              a sentence for the client; on INTERNAL text for the log. */
typedef int32_t (*gh_resource_read_fn)(void* plugin_state, void* data, gh_call* call, gh_str uri, gh_str variables,
                                       gh_sink* out);

/* Produce one prompt.
 *   arguments: JSON object of string values, already checked by the host:
 *              every required argument is present and no unknown one is.
 *   out:       on GH_STATUS_OK a JSON object {"description"?, "messages":
 *              [{"role": "user" | "assistant", "content": {ContentBlock}}]};
 *              otherwise as for gh_resource_read_fn. */
typedef int32_t (*gh_prompt_get_fn)(void* plugin_state, void* data, gh_call* call, gh_str arguments, gh_sink* out);

/* Suggest values for one argument of a prompt or one variable of a resource
 * template (completion/complete). Optional.
 *   argument: the argument's (variable's) name; value: what the user typed
 *   so far; context: JSON object of arguments already resolved ("{}" if none).
 *   out: on GH_STATUS_OK a JSON object {"values": [string, ...], "total"?:
 *        integer, "hasMore"?: boolean}; the host keeps the first 100 values. */
typedef int32_t (*gh_complete_fn)(void* plugin_state, void* data, gh_call* call, gh_str argument, gh_str value,
                                  gh_str context, gh_sink* out);

/* A resource with a fixed URI. The URI is unique across all loaded families. */
typedef struct gh_resource_desc {
    uint32_t struct_size;
    uint32_t flags;     /* GH_RESOURCE_* */
    gh_str uri;         /* absolute URI with a scheme, e.g. "test://static-text" */
    gh_str name;        /* required, for programs */
    gh_str title;       /* optional human title */
    gh_str description; /* optional, for the model */
    gh_str mime_type;   /* optional, "type/subtype" */
    gh_str annotations; /* optional JSON object (MCP Annotations) */
    uint64_t size;      /* bytes of raw content, when flags has GH_RESOURCE_HAS_SIZE */
    gh_resource_read_fn read;
    void* resource_data; /* passed back to read() unchanged */
} gh_resource_desc;

#define GH_RESOURCE_DESC_SIZE_V1 (offsetof(gh_resource_desc, resource_data) + sizeof(void*))

/* A family of resources whose URIs fit an RFC 6570 template. The host
 * matches a URI against it and hands read() the variables. This host
 * matches literal text, {name} (one path segment: no '/', '?' or '#', even
 * percent-encoded) and {+name} (anything else); no value it hands read()
 * holds a control byte or a "." or ".." segment. Two expressions need
 * literal text between them. */
typedef struct gh_resource_template_desc {
    uint32_t struct_size;
    uint32_t flags;      /* zero */
    gh_str uri_template; /* e.g. "test://template/{id}/data"; unique across families */
    gh_str name;         /* required */
    gh_str title;        /* optional */
    gh_str description;  /* optional */
    gh_str mime_type;    /* optional: the type of every resource it names */
    gh_str annotations;  /* optional JSON object (MCP Annotations) */
    gh_resource_read_fn read;
    gh_complete_fn complete; /* optional: suggests values for the variables */
    void* template_data;     /* passed back to read() and complete() unchanged */
} gh_resource_template_desc;

#define GH_RESOURCE_TEMPLATE_DESC_SIZE_V1 (offsetof(gh_resource_template_desc, template_data) + sizeof(void*))

/* A prompt. Its published name carries the domain's prefix, like a tool's,
 * and is unique across families. */
typedef struct gh_prompt_desc {
    uint32_t struct_size;
    uint32_t flags;     /* zero */
    gh_str name;        /* [a-zA-Z0-9_.-]{1,64}; unique in the family */
    gh_str title;       /* optional */
    gh_str description; /* optional */
    gh_str arguments;   /* optional JSON array of {"name", "title"?, "description"?, "required"?: boolean} */
    gh_prompt_get_fn get;
    gh_complete_fn complete; /* optional: suggests values for the arguments */
    void* prompt_data;       /* passed back to get() and complete() unchanged */
} gh_prompt_desc;

#define GH_PROMPT_DESC_SIZE_V1 (offsetof(gh_prompt_desc, prompt_data) + sizeof(void*))

/* ---- Pages (ABI 1.3+) --------------------------------------------------- */

/* A page a person opens in a browser, served by the host's HTTP transport at
 * /pages/<family>/<name>/<token>. The family never writes HTML: it answers
 * what the page shows as JSON, and the host renders it (escaped), guards its
 * form against cross-site requests, forbids caching, and checks any redirect.
 * The token is the family's: an unguessable link it handed out.
 *
 * show: out gets {"title": string, "intro"?: string, "fields": [{"label":
 *       string, "value": string}], "actions": [{"id": [a-z_]{1,32},
 *       "label": string}], "notice"?: string}; no actions means nothing is
 *       left to decide. GH_STATUS_NOT_FOUND: no such token (a 404 page).
 * act:  the person pressed the button `action` (one the last show offered).
 *       out gets {"message": string, "redirect_url"?: absolute http(s) URL};
 *       GH_STATUS_TOOL_ERROR with a sentence when the action no longer
 *       applies (decided, expired), GH_STATUS_NOT_FOUND for no such token.
 * Both run like a tool call (serialized unless the plugin is reentrant);
 * `call` gives log and the state functions, and its call_context has no
 * principal: the person holding the link is not the agent's caller. */
typedef int32_t (*gh_page_fn)(void* plugin_state, void* page_data, gh_call* call, gh_str token, gh_str action,
                              gh_sink* out);

typedef struct gh_page_desc {
    uint32_t struct_size;
    uint32_t flags; /* zero */
    gh_str name;    /* [a-z0-9_-]{1,64}; unique in the family */
    gh_page_fn show;
    gh_page_fn act;
    void* page_data; /* passed back to show() and act() unchanged */
} gh_page_desc;

#define GH_PAGE_DESC_SIZE_V1 (offsetof(gh_page_desc, page_data) + sizeof(void*))
#define GH_PAGE_KNOWN_FLAGS 0x0u

/* ---- Command-line verbs (ABI 1.6+) -------------------------------------- */

/* Run one verb of the family on the command line: `gatehouse <name> ARGS...
 * [--config FILE]`, for what a person does outside any MCP session (choose
 * the active bot, say). The host loads the families of the configuration as
 * `serve` would (init runs first), finds the verb, runs it once on the main
 * thread with no tool call alongside, shuts the families down and exits with
 * the status it returns. There is no gh_call: the call functions of the host
 * table (state, session services, sink_new) are not available here.
 *   context:   JSON object {"verb": ..., "config_file": the configuration's
 *              path (or "<embedded gatehouse.yaml>"), "data_dir": the
 *              family's data folder, as init got it}; borrowed until return.
 *   args:      arg_count words after the verb, the host's own options
 *              (--config FILE) taken out; borrowed until return.
 *   out, err:  what goes to stdout and to stderr (the host copies the bytes
 *              and writes them when the verb returns).
 * Returns the exit status: 0 done, 1 failed, 2 wrong usage (by convention). */
typedef int32_t (*gh_command_fn)(void* plugin_state, void* command_data, gh_str context, const gh_str* args,
                                 uint32_t arg_count, gh_sink* out, gh_sink* err);

typedef struct gh_command_desc {
    uint32_t struct_size;
    uint32_t flags; /* zero */
    gh_str name;    /* [a-z][a-z0-9-]{0,31}; unique across the loaded families. The host's own verbs
                     * (serve, check-config, plugins, license, docs, help) are never routed to a family. */
    gh_str usage;   /* optional: one line of what follows the verb, e.g. "[use SLUG]" */
    gh_str summary; /* optional: one sentence for gatehouse --help */
    gh_command_fn run;
    void* command_data; /* passed back to run() unchanged */
} gh_command_desc;

#define GH_COMMAND_DESC_SIZE_V1 (offsetof(gh_command_desc, command_data) + sizeof(void*))
#define GH_COMMAND_KNOWN_FLAGS 0x0u

/* ---- The plugin descriptor --------------------------------------------- */

/* Called once, before any tool call, on one thread.
 *   config: JSON object {"data_dir": ..., "settings": {...from YAML...}};
 *           borrowed until return.
 *   state_out: set to the plugin's opaque state, passed to every call.
 *   error: on a non-OK status, a sentence saying why init failed. */
typedef int32_t (*gh_init_fn)(const gh_host_api* api, gh_str config, void** state_out, gh_sink* error);

/* Called once after the last call returned, on one thread. */
typedef void (*gh_shutdown_fn)(void* plugin_state);

/* ABI 1.1+, optional. Lists the critical notes of this family that the owner
 * must read before other gated tools run. Called at session_connect, never
 * alongside a call when the plugin is not reentrant.
 *   owner: JSON object {"store", "user", "principal"} (principal: the
 *          caller's owner key, as "principal.owner" in the call context);
 *          borrowed until return.
 *   out:   on GH_STATUS_OK a JSON array of {"id": string, "title": string};
 *          otherwise text for the log (the connect then fails closed). */
typedef int32_t (*gh_critical_items_fn)(void* plugin_state, gh_str owner, gh_sink* out);

typedef struct gh_plugin_desc {
    uint32_t struct_size;
    uint32_t abi_version; /* GH_ABI_VERSION the plugin was built against */
    uint32_t flags;       /* GH_PLUGIN_* */
    uint32_t tool_count;
    gh_str name;                         /* the plugin's own name, e.g. "gatehouse-memory" */
    gh_str version;                      /* the plugin's version, e.g. "1.2.0" */
    gh_str family;                       /* the domain it serves, e.g. "memory" */
    gh_str rules;                        /* optional general rules of the family */
    const gh_tool_desc* const* tools;    /* tool_count pointers */
    gh_init_fn init;                     /* optional */
    gh_shutdown_fn shutdown;             /* optional */
    gh_critical_items_fn critical_items; /* ABI 1.1+, optional */
    /* ABI 1.2+: what the family offers besides tools. Zero counts mean none. */
    uint32_t resource_count;
    uint32_t resource_template_count;
    const gh_resource_desc* const* resources;                   /* resource_count pointers */
    const gh_resource_template_desc* const* resource_templates; /* resource_template_count pointers */
    uint32_t prompt_count;
    uint32_t reserved1;                   /* zero */
    const gh_prompt_desc* const* prompts; /* prompt_count pointers */
    /* ABI 1.3+: pages the host serves for this family. */
    uint32_t page_count;
    uint32_t reserved2;               /* zero */
    const gh_page_desc* const* pages; /* page_count pointers */
    /* ABI 1.6+: command-line verbs of the family. */
    uint32_t command_count;
    uint32_t reserved3;                     /* zero */
    const gh_command_desc* const* commands; /* command_count pointers */
} gh_plugin_desc;

#define GH_PLUGIN_DESC_SIZE_V1 (offsetof(gh_plugin_desc, shutdown) + sizeof(void*))
#define GH_PLUGIN_DESC_SIZE_V2 (offsetof(gh_plugin_desc, critical_items) + sizeof(void*))
#define GH_PLUGIN_DESC_SIZE_V3 (offsetof(gh_plugin_desc, prompts) + sizeof(void*))
#define GH_PLUGIN_DESC_SIZE_V4 (offsetof(gh_plugin_desc, pages) + sizeof(void*))
#define GH_PLUGIN_DESC_SIZE_V5 (offsetof(gh_plugin_desc, commands) + sizeof(void*))

/* The entry symbol every plugin exports. Called once, right after loading.
 * Returns a descriptor valid until shutdown returns, or NULL to refuse to
 * load (after logging why through api->log). */
typedef const gh_plugin_desc* (*gh_plugin_entry_fn)(const gh_host_api* api);

GH_EXPORT const gh_plugin_desc* gh_plugin_entry(const gh_host_api* api);

#ifdef __cplusplus
}
#endif

/* The newest published size of each struct is the size as it stands; older
 * sizes stay valid minimums (a V1 struct is zero-filled by the reader). */
#ifdef __cplusplus
static_assert(GH_HOST_API_SIZE_V1 == offsetof(gh_host_api, sink_new), "gh_host_api v1 size");
static_assert(GH_HOST_API_SIZE_V2 == offsetof(gh_host_api, notify_changed), "gh_host_api v2 size");
static_assert(GH_HOST_API_SIZE_V3 == offsetof(gh_host_api, input_responses), "gh_host_api v3 size");
static_assert(GH_HOST_API_SIZE_V4 == offsetof(gh_host_api, state_take), "gh_host_api v4 size");
static_assert(GH_HOST_API_SIZE_V5 == sizeof(gh_host_api), "gh_host_api v5 size");
static_assert(GH_TOOL_DESC_SIZE_V1 == offsetof(gh_tool_desc, task_support), "gh_tool_desc v1 size");
static_assert(GH_TOOL_DESC_SIZE_V2 == sizeof(gh_tool_desc), "gh_tool_desc v2 size");
static_assert(GH_PLUGIN_DESC_SIZE_V1 == offsetof(gh_plugin_desc, critical_items), "gh_plugin_desc v1 size");
static_assert(GH_PLUGIN_DESC_SIZE_V2 == offsetof(gh_plugin_desc, resource_count), "gh_plugin_desc v2 size");
static_assert(GH_PLUGIN_DESC_SIZE_V3 == offsetof(gh_plugin_desc, page_count), "gh_plugin_desc v3 size");
static_assert(GH_PLUGIN_DESC_SIZE_V4 == offsetof(gh_plugin_desc, command_count), "gh_plugin_desc v4 size");
static_assert(GH_PLUGIN_DESC_SIZE_V5 == sizeof(gh_plugin_desc), "gh_plugin_desc v5 size");
static_assert(GH_COMMAND_DESC_SIZE_V1 == sizeof(gh_command_desc), "gh_command_desc v1 size");
static_assert(GH_PAGE_DESC_SIZE_V1 == sizeof(gh_page_desc), "gh_page_desc v1 size");
static_assert(GH_RESOURCE_DESC_SIZE_V1 == sizeof(gh_resource_desc), "gh_resource_desc v1 size");
static_assert(GH_RESOURCE_TEMPLATE_DESC_SIZE_V1 == sizeof(gh_resource_template_desc),
              "gh_resource_template_desc v1 size");
static_assert(GH_PROMPT_DESC_SIZE_V1 == sizeof(gh_prompt_desc), "gh_prompt_desc v1 size");
#else
_Static_assert(GH_HOST_API_SIZE_V1 == offsetof(gh_host_api, sink_new), "gh_host_api v1 size");
_Static_assert(GH_HOST_API_SIZE_V2 == offsetof(gh_host_api, notify_changed), "gh_host_api v2 size");
_Static_assert(GH_HOST_API_SIZE_V3 == offsetof(gh_host_api, input_responses), "gh_host_api v3 size");
_Static_assert(GH_HOST_API_SIZE_V4 == offsetof(gh_host_api, state_take), "gh_host_api v4 size");
_Static_assert(GH_HOST_API_SIZE_V5 == sizeof(gh_host_api), "gh_host_api v5 size");
_Static_assert(GH_TOOL_DESC_SIZE_V1 == offsetof(gh_tool_desc, task_support), "gh_tool_desc v1 size");
_Static_assert(GH_TOOL_DESC_SIZE_V2 == sizeof(gh_tool_desc), "gh_tool_desc v2 size");
_Static_assert(GH_PLUGIN_DESC_SIZE_V1 == offsetof(gh_plugin_desc, critical_items), "gh_plugin_desc v1 size");
_Static_assert(GH_PLUGIN_DESC_SIZE_V2 == offsetof(gh_plugin_desc, resource_count), "gh_plugin_desc v2 size");
_Static_assert(GH_PLUGIN_DESC_SIZE_V3 == offsetof(gh_plugin_desc, page_count), "gh_plugin_desc v3 size");
_Static_assert(GH_PLUGIN_DESC_SIZE_V4 == offsetof(gh_plugin_desc, command_count), "gh_plugin_desc v4 size");
_Static_assert(GH_PLUGIN_DESC_SIZE_V5 == sizeof(gh_plugin_desc), "gh_plugin_desc v5 size");
_Static_assert(GH_COMMAND_DESC_SIZE_V1 == sizeof(gh_command_desc), "gh_command_desc v1 size");
_Static_assert(GH_PAGE_DESC_SIZE_V1 == sizeof(gh_page_desc), "gh_page_desc v1 size");
_Static_assert(GH_RESOURCE_DESC_SIZE_V1 == sizeof(gh_resource_desc), "gh_resource_desc v1 size");
_Static_assert(GH_RESOURCE_TEMPLATE_DESC_SIZE_V1 == sizeof(gh_resource_template_desc),
               "gh_resource_template_desc v1 size");
_Static_assert(GH_PROMPT_DESC_SIZE_V1 == sizeof(gh_prompt_desc), "gh_prompt_desc v1 size");
#endif

#endif /* GATEHOUSE_PLUGIN_H */
