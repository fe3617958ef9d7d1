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
