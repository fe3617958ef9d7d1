// Validates every message the host writes against the JSON Schema of the
// protocol revision it belongs to (shared/spec/mcp-schema-<revision>.json).
// A message passes only when it fits the generic JSON-RPC shape AND the
// specific MCP type its method or error code names.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';

export const LEGACY = '2025-11-25';
export const MODERN = '2026-07-28';
export const REVISIONS = [LEGACY, MODERN];

const here = path.dirname(fileURLToPath(import.meta.url));

export function specDir() {
  // In CI shared/ sits beside the repository; the env var wins when set.
  return process.env.GATEHOUSE_SPEC_DIR ?? path.resolve(here, '../../../../shared/spec');
}

// Methods both revisions define under the same result type.
const SHARED_RESULT_TYPES = {
  'resources/list': 'ListResourcesResult',
  'resources/templates/list': 'ListResourceTemplatesResult',
  'resources/read': 'ReadResourceResult',
  'prompts/list': 'ListPromptsResult',
  'prompts/get': 'GetPromptResult',
  'completion/complete': 'CompleteResult',
};

// method -> result definition, per revision. A method missing here is one the
// revision does not have, so a result for it is itself a problem.
const RESULT_TYPES = {
  [LEGACY]: {
    initialize: 'InitializeResult',
    ping: 'EmptyResult',
    'logging/setLevel': 'EmptyResult',
    'resources/subscribe': 'EmptyResult',
    'resources/unsubscribe': 'EmptyResult',
    'tools/list': 'ListToolsResult',
    'tools/call': 'CallToolResult',
    ...SHARED_RESULT_TYPES,
  },
  [MODERN]: {
    'server/discover': 'DiscoverResult',
    'subscriptions/listen': 'SubscriptionsListenResult',
    'tools/list': 'ListToolsResult',
    'tools/call': 'CallToolResult',
    ...SHARED_RESULT_TYPES,
  },
};

const NOTIFICATION_TYPES = {
  'notifications/message': 'LoggingMessageNotification',
  'notifications/progress': 'ProgressNotification',
  'notifications/tools/list_changed': 'ToolListChangedNotification',
  'notifications/prompts/list_changed': 'PromptListChangedNotification',
  'notifications/resources/list_changed': 'ResourceListChangedNotification',
  'notifications/resources/updated': 'ResourceUpdatedNotification',
  'notifications/subscriptions/acknowledged': 'SubscriptionsAcknowledgedNotification',
};

// What the host may ask a 2025-11-25 client in the middle of one of its
// requests (2026-07-28 asks by InputRequiredResult instead, never by a request).
const SERVER_REQUEST_TYPES = {
  'elicitation/create': 'ElicitRequest',
  'sampling/createMessage': 'CreateMessageRequest',
  'roots/list': 'ListRootsRequest',
};

// Methods whose 2026-07-28 result may be an InputRequiredResult instead.
const INPUT_REQUIRED_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

// 2026-07-28 names its error codes; 2025-11-25 only has the generic Error.
const MODERN_ERRORS_BY_CODE = {
  [-32700]: 'ParseError',
  [-32600]: 'InvalidRequestError',
  [-32601]: 'MethodNotFoundError',
  [-32602]: 'InvalidParamsError',
  [-32603]: 'InternalError',
};
// Errors whose schema covers the whole response, not only the error object.
const MODERN_ERROR_RESPONSES_BY_CODE = {
  [-32020]: 'HeaderMismatchError',
  [-32021]: 'MissingRequiredClientCapabilityError',
  [-32022]: 'UnsupportedProtocolVersionError',
};

// The Tasks extension (io.modelcontextprotocol/tasks, 2026-07-28 wire) has
// no schema in the protocol's own files: its shapes are checked here, as its
// specification states them.
const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})$/;
const TASK_PAYLOAD = ['result', 'error', 'inputRequests'];

// `kind`: 'created' (CreateTaskResult), 'detailed' (tasks/get,
// notifications/tasks).
export function taskProblems(task, kind) {
  const p = [];
  const where = kind === 'created' ? 'CreateTaskResult' : 'DetailedTask';
  if (typeof task?.taskId !== 'string' || task.taskId === '') p.push(`${where}: taskId must be a non-empty string`);
  if (!TASK_STATUSES.includes(task?.status)) p.push(`${where}: status ${JSON.stringify(task?.status)} is not a task status`);
  for (const k of ['createdAt', 'lastUpdatedAt'])
    if (typeof task?.[k] !== 'string' || !ISO_8601.test(task[k])) p.push(`${where}: ${k} must be an ISO 8601 time`);
  if (!(task?.ttlMs === null || (Number.isInteger(task?.ttlMs) && task.ttlMs > 0)))
    p.push(`${where}: ttlMs must be null or a positive integer`);
  if (Object.hasOwn(task ?? {}, 'pollIntervalMs') && !(Number.isInteger(task.pollIntervalMs) && task.pollIntervalMs > 0))
    p.push(`${where}: pollIntervalMs must be a positive integer`);
  if (Object.hasOwn(task ?? {}, 'statusMessage') && typeof task.statusMessage !== 'string')
    p.push(`${where}: statusMessage must be a string`);
  for (const legacy of ['requestState', 'ttl', 'pollInterval', 'task'])
    if (Object.hasOwn(task ?? {}, legacy)) p.push(`${where}: carries ${legacy}, which the extension does not define`);
  const expected = kind === 'created' ? [] : { input_required: ['inputRequests'], completed: ['result'], failed: ['error'] }[task?.status] ?? [];
  for (const k of TASK_PAYLOAD) {
    const present = Object.hasOwn(task ?? {}, k);
    if (present && !expected.includes(k)) p.push(`${where} (${task.status}): carries ${k}`);
    if (!present && expected.includes(k)) p.push(`${where} (${task.status}): lacks ${k}`);
  }
  if (expected.includes('inputRequests'))
    for (const [key, asked] of Object.entries(task.inputRequests ?? {}))
      if (typeof asked?.method !== 'string') p.push(`${where}: inputRequests.${key} has no method`);
  if (expected.includes('error') && !(Number.isInteger(task.error?.code) && typeof task.error?.message === 'string'))
    p.push(`${where}: error must be a JSON-RPC error {code, message}`);
  return p;
}

function tasksResultProblems(s, method, result) {
  if (method === 'tools/call') {
    const p = taskProblems(result, 'created');
    return p;
  }
  if (result?.resultType !== 'complete') return [`${method}: resultType must be "complete"`];
  if (method === 'tasks/get') {
    const p = taskProblems(result, 'detailed');
    if (result.status === 'completed' && result.result) p.push(...s.check('CallToolResult', result.result));
    return p;
  }
  const envelope = ['taskId', 'status', ...TASK_PAYLOAD].filter((k) => Object.hasOwn(result, k));
  return envelope.length ? [`${method}: the acknowledgement carries ${envelope.join(', ')}`] : [];
}

class RevisionSchema {
  constructor(revision) {
    this.revision = revision;
    const file = path.join(specDir(), `mcp-schema-${revision}.json`);
    const schema = JSON.parse(readFileSync(file, 'utf8'));
    this.defs = schema.$defs;
    // Formats (uri, byte) are not what these tests are about; strict off
    // because the published schemas carry keywords Ajv does not know.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    this.ajv.addSchema(schema, revision);
    this.validators = new Map();
  }

  has(definition) {
    return Object.hasOwn(this.defs, definition);
  }

  // Returns a list of problems (empty when the value fits).
  check(definition, value) {
    if (!this.has(definition)) return [`${this.revision} has no definition ${definition}`];
    let validate = this.validators.get(definition);
    if (!validate) {
      validate = this.ajv.getSchema(`${this.revision}#/$defs/${definition}`);
      this.validators.set(definition, validate);
    }
    if (validate(value)) return [];
    return validate.errors.map(
      (e) =>
        `${this.revision} ${definition}: ${e.instancePath || '/'} ${e.message}${
          e.params && Object.keys(e.params).length ? ' ' + JSON.stringify(e.params) : ''
        }`,
    );
  }
}

const schemas = new Map();
export function revisionSchema(revision) {
  if (!schemas.has(revision)) schemas.set(revision, new RevisionSchema(revision));
  return schemas.get(revision);
}

// The revision a request the client wrote belongs to: modern when its _meta
// names 2026-07-28, legacy otherwise (initialize, ping, or after initialize).
export function revisionOfRequest(request) {
  const version = request?.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
  return version === MODERN ? MODERN : LEGACY;
}

// Validates one response. `request` is what the client sent for this id (or
// undefined when the host could not know the id, e.g. a parse error: then
// the answer must fit both revisions).
export function checkResponse(message, request) {
  const revisions = request ? [revisionOfRequest(request)] : REVISIONS;
  const problems = [];
  for (const revision of revisions) {
    const s = revisionSchema(revision);
    if (Object.hasOwn(message, 'error')) {
      problems.push(...s.check('JSONRPCErrorResponse', message));
      if (revision === MODERN) {
        const code = message.error?.code;
        if (MODERN_ERRORS_BY_CODE[code]) problems.push(...s.check(MODERN_ERRORS_BY_CODE[code], message.error));
        if (MODERN_ERROR_RESPONSES_BY_CODE[code])
          problems.push(...s.check(MODERN_ERROR_RESPONSES_BY_CODE[code], message));
      }
    } else {
      problems.push(...s.check('JSONRPCResultResponse', message));
      if (!request) {
        problems.push(`a result for id ${JSON.stringify(message.id)}, which no request carried`);
        continue;
      }
      if (
        revision === MODERN &&
        (['tasks/get', 'tasks/update', 'tasks/cancel'].includes(request.method) ||
          (request.method === 'tools/call' && message.result?.resultType === 'task'))
      ) {
        problems.push(...tasksResultProblems(s, request.method, message.result));
        continue;
      }
      const type =
        revision === MODERN && message.result?.resultType === 'input_required' && INPUT_REQUIRED_METHODS.has(request.method)
          ? 'InputRequiredResult'
          : RESULT_TYPES[revision][request.method];
      if (type) problems.push(...s.check(type, message.result));
      else problems.push(`a result for ${request.method}, which ${revision} does not define`);
    }
  }
  return problems;
}

// Validates one notification against the revisions it may belong to.
export function checkNotification(message, revisions = REVISIONS) {
  const problems = [];
  for (const revision of revisions) {
    const s = revisionSchema(revision);
    problems.push(...s.check('JSONRPCNotification', message));
    if (revision === MODERN && message.method === 'notifications/tasks') {
      const { _meta, ...task } = message.params ?? {};
      problems.push(...taskProblems(task, 'detailed'));
      continue;
    }
    const type = NOTIFICATION_TYPES[message.method];
    if (type && s.has(type)) problems.push(...s.check(type, message));
    else problems.push(`${revision}: the server sent an unexpected notification ${message.method}`);
  }
  return problems;
}

// Validates a request the host sent the client: only 2025-11-25 has them.
export function checkServerRequest(message) {
  const s = revisionSchema(LEGACY);
  const type = SERVER_REQUEST_TYPES[message.method];
  if (!type) return [`the host sent a request (${message.method}) it never announced`];
  return [...s.check('JSONRPCRequest', message), ...s.check(type, message)];
}

// Classifies one line the host wrote to stdout and validates it.
// `requests` maps JSON id text -> the request the client sent.
export function checkLine(line, requests, notificationRevisions) {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return { message: undefined, problems: [`stdout carried a line that is not JSON: ${line.slice(0, 200)}`] };
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message))
    return { message: undefined, problems: [`stdout carried JSON that is not a JSON-RPC object: ${line.slice(0, 200)}`] };
  if (message.jsonrpc !== '2.0')
    return { message, problems: [`a message without "jsonrpc": "2.0": ${line.slice(0, 200)}`] };
  if (typeof message.method === 'string') {
    if (Object.hasOwn(message, 'id')) return { message, problems: checkServerRequest(message) };
    return { message, problems: checkNotification(message, notificationRevisions) };
  }
  const request = Object.hasOwn(message, 'id') ? requests.get(JSON.stringify(message.id)) : undefined;
  if (Object.hasOwn(message, 'id') && !request)
    return { message, problems: [`a response for id ${JSON.stringify(message.id)}, which no request carried`] };
  return { message, problems: checkResponse(message, request) };
}
