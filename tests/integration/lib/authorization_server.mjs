// A small OAuth 2.1 authorization server on loopback for the resource-server
// tests: it generates its own signing keys (RS256, ES256, EdDSA) with
// node:crypto, serves RFC 8414 metadata and a JWK Set, issues tokens by the
// client_credentials grant (JWT or opaque), answers RFC 7662 introspection,
// and mints any token a test asks for, forged or not.
import http from 'node:http';
import { once } from 'node:events';
import { generateKeyPairSync, sign, randomBytes, createHash } from 'node:crypto';

const b64url = (data) => Buffer.from(data).toString('base64url');

export class AuthorizationServer {
  // options.clients: { id: { secret, scopes? } }; options.tokens: 'jwt' | 'opaque'.
  static async start(options = {}) {
    const as = new AuthorizationServer(options);
    await as.listen();
    return as;
  }

  constructor({ clients = {}, tokens = 'jwt', tokenLifetime = 300 } = {}) {
    this.clients = clients;
    this.tokenFormat = tokens;
    this.tokenLifetime = tokenLifetime;
    this.keys = new Map(); // kid -> { alg, privateKey, jwk }
    this.published = new Set(); // kids in the JWK Set
    this.signingKid = this.addKey('RS256');
    this.addKey('ES256');
    this.addKey('EdDSA');
    this.opaque = new Map(); // opaque token -> claims
    this.requests = []; // "METHOD path" of every request received
    this.introspectionClients = {}; // resource servers allowed to introspect: id -> secret
    this.delayMs = 0;
    // A JWK Set padded with this many bytes of white space, sent with a
    // Content-Length ('length') or in chunks ('chunked').
    this.jwksPadding = 0;
    this.jwksFraming = 'length';
    this.jwksUri = undefined; // the metadata's jwks_uri when not its own /jwks
    this.server = http.createServer((req, res) => this.#handle(req, res));
    this.sockets = new Set();
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(port = 0) {
    this.server.listen(port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = this.server.address().port;
    this.issuer = `http://127.0.0.1:${this.port}`;
  }

  // Stops answering (connections refused) while keeping its keys; start() again on the same port.
  async stop() {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  async restart() {
    this.server = http.createServer((req, res) => this.#handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await this.listen(this.port);
  }

  // A new key, published in the JWK Set unless publish is false; returns its kid.
  addKey(alg, { publish = true } = {}) {
    const kid = `${alg.toLowerCase()}-${randomBytes(4).toString('hex')}`;
    const pair =
      alg === 'RS256'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : alg === 'ES256'
          ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
          : generateKeyPairSync('ed25519');
    const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
    this.keys.set(kid, { alg, privateKey: pair.privateKey, jwk });
    if (publish) this.published.add(kid);
    return kid;
  }

  publish(kid) {
    this.published.add(kid);
  }

  count(what) {
    return this.requests.filter((r) => r === what).length;
  }

  // A signed JWT access token. claims override the defaults (iss, sub, aud,
  // iat, nbf, exp, client_id, scope); kid picks the key, signWith another
  // key's private half (a forged signature); editPayload rewrites the
  // payload's JSON text before it is signed (members JSON.stringify cannot
  // write, such as one named twice).
  mint(claims = {}, { kid = this.signingKid, signWith, typ = 'at+jwt', editPayload = (text) => text } = {}) {
    const key = this.keys.get(kid);
    const now = Math.floor(Date.now() / 1000);
    const payload = {
      iss: this.issuer,
      sub: 'alice',
      iat: now,
      nbf: now,
      exp: now + this.tokenLifetime,
      client_id: 'itest-client',
      jti: randomBytes(8).toString('hex'),
      ...claims,
    };
    for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
    const header = { alg: key.alg, typ, kid };
    const input = `${b64url(JSON.stringify(header))}.${b64url(editPayload(JSON.stringify(payload)))}`;
    const signer = signWith ? this.keys.get(signWith) : key;
    const signature =
      key.alg === 'EdDSA'
        ? sign(null, Buffer.from(input), signer.privateKey)
        : sign('sha256', Buffer.from(input), key.alg === 'ES256' ? { key: signer.privateKey, dsaEncoding: 'ieee-p1363' } : signer.privateKey);
    return `${input}.${b64url(signature)}`;
  }

  // An opaque token the introspection endpoint knows.
  mintOpaque(claims = {}) {
    const token = randomBytes(24).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    this.opaque.set(token, { active: true, iss: this.issuer, sub: 'alice', client_id: 'itest-client', exp: now + this.tokenLifetime, iat: now, ...claims });
    return token;
  }

  metadata() {
    return {
      issuer: this.issuer,
      token_endpoint: `${this.issuer}/token`,
      jwks_uri: this.jwksUri ?? `${this.issuer}/jwks`,
      introspection_endpoint: `${this.issuer}/introspect`,
      authorization_endpoint: `${this.issuer}/authorize`,
      grant_types_supported: ['client_credentials'],
      response_types_supported: ['code'],
      token_endpoint_auth_methods_supported: ['client_secret_basic'],
      code_challenge_methods_supported: ['S256'],
    };
  }

  async #handle(req, res) {
    const url = new URL(req.url, this.issuer);
    this.requests.push(`${req.method} ${url.pathname}`);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const body = await new Promise((resolve) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (c) => (text += c));
      req.on('end', () => resolve(text));
    });
    const json = (status, value, headers = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') return json(200, this.metadata());
    if (req.method === 'GET' && url.pathname === '/jwks') {
      const set = { keys: [...this.published].map((kid) => this.keys.get(kid).jwk) };
      if (!this.jwksPadding) return json(200, set);
      return this.#padded(res, JSON.stringify(set) + ' '.repeat(this.jwksPadding));
    }
    if (req.method === 'POST' && url.pathname === '/token') return this.#token(req, new URLSearchParams(body), json);
    if (req.method === 'POST' && url.pathname === '/introspect') return this.#introspect(req, new URLSearchParams(body), json);
    json(404, { error: 'not_found' });
  }

  #padded(res, body) {
    if (this.jwksFraming === 'length') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      return res.end(body);
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    for (let at = 0; at < body.length; at += 64 * 1024) res.write(body.slice(at, at + 64 * 1024));
    res.end();
  }

  #basic(req) {
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Basic ')) return null;
    const [id, secret] = Buffer.from(header.slice(6), 'base64').toString('utf8').split(':').map(decodeURIComponent);
    return { id, secret };
  }

  #token(req, form, json) {
    const who = this.#basic(req) ?? { id: form.get('client_id'), secret: form.get('client_secret') };
    const client = this.clients[who.id];
    if (!client || client.secret !== who.secret) return json(401, { error: 'invalid_client' });
    if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
    const asked = (form.get('scope') ?? '').split(' ').filter(Boolean);
    const allowed = client.scopes ?? asked;
    const scope = asked.filter((s) => allowed.includes(s)).join(' ');
    const claims = { sub: client.subject ?? who.id, client_id: who.id, aud: form.get('resource') ?? undefined, scope: scope || undefined };
    this.issued = (this.issued ?? []).concat([{ client: who.id, scope, resource: form.get('resource') }]);
    const access_token = this.tokenFormat === 'opaque' ? this.mintOpaque(claims) : this.mint(claims);
    json(200, { access_token, token_type: 'Bearer', expires_in: this.tokenLifetime, ...(scope ? { scope } : {}) });
  }

  #introspect(req, form, json) {
    const who = this.#basic(req);
    if (!who || this.introspectionClients[who.id] !== who.secret) return json(401, { error: 'invalid_client' });
    const claims = this.opaque.get(form.get('token') ?? '');
    const now = Math.floor(Date.now() / 1000);
    if (!claims || !claims.active || (claims.exp && claims.exp <= now)) return json(200, { active: false });
    json(200, claims);
  }
}

// The host's owner key of a token principal (auth::Principal::owner_key):
// kind, issuer and subject, ':' and '%' escaped in each part.
const ownerPart = (text) => text.replaceAll('%', '%25').replaceAll(':', '%3A');
export const tokenOwnerKey = (issuer, subject) => `token:${ownerPart(issuer)}:${ownerPart(subject)}`;

export const sha256Hex = (text) => createHash('sha256').update(text).digest('hex');
