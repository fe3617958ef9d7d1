// Wraps an SDK client transport so every message the host sends through it is
// validated against the schema of the revision in use, exactly as the raw
// harness does. The SDK client sees the same messages, unchanged.
import { checkLine, revisionOfRequest, REVISIONS } from './spec.mjs';

export class CheckedTransport {
  constructor(inner) {
    this.inner = inner;
    this.requests = new Map();
    this.open = new Set();
    this.problems = [];
    this.received = [];
    this.sent = [];
    inner.onmessage = (message, extra) => {
      this.#check(message);
      this.onmessage?.(message, extra);
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => this.onclose?.();
  }

  #check(message) {
    this.received.push(message);
    const openRevisions = [...new Set([...this.open].map((key) => revisionOfRequest(this.requests.get(key))))];
    const { problems } = checkLine(JSON.stringify(message), this.requests, openRevisions.length ? openRevisions : REVISIONS);
    this.problems.push(...problems);
    if (Object.hasOwn(message, 'id') && !Object.hasOwn(message, 'method')) this.open.delete(JSON.stringify(message.id));
  }

  start() {
    return this.inner.start();
  }

  send(message, options) {
    this.sent.push(message);
    if (typeof message.method === 'string' && Object.hasOwn(message, 'id')) {
      const key = JSON.stringify(message.id);
      this.requests.set(key, message);
      this.open.add(key);
    }
    return this.inner.send(message, options);
  }

  close() {
    return this.inner.close();
  }

  get pid() {
    return this.inner.pid;
  }

  get stderr() {
    return this.inner.stderr;
  }

  setProtocolVersion(version) {
    this.inner.setProtocolVersion?.(version);
  }
}
