// A CA and a server certificate for localhost and 127.0.0.1, made by the
// openssl command in `dir`, and a second CA that vouches for nothing here:
// what the TLS tests (rediss://, https:// upstreams) check a server against.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export function makeCertificates(dir) {
  const openssl = (...args) => execFileSync('openssl', args, { stdio: 'ignore' });
  const file = (name) => path.join(dir, name);
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ecKey, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=Gatehouse itest CA');
  openssl('req', '-x509', ...ecKey, '-keyout', file('other-ca.key'), '-out', file('other-ca.pem'), '-days', '2', '-subj', '/CN=Untrusted CA');
  openssl('req', ...ecKey, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=localhost');
  writeFileSync(file('server.ext'), 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial',
    '-out', file('server.pem'), '-days', '2', '-extfile', file('server.ext'));
  return { ca: file('ca.pem'), otherCa: file('other-ca.pem'), cert: file('server.pem'), key: file('server.key') };
}
