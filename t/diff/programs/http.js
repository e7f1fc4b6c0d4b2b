// Node.js: a local HTTP server and a client that requests it by name,
// a worker thread, a child process, and files in os.tmpdir().
'use strict';
const http = require('http');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { Worker } = require('worker_threads');

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, url: req.url, body }));
  });
});

function request(port, method, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: 'localhost', port, method, path: '/echo?x=1' }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve(`${res.statusCode} ${data}`));
    });
    req.on('error', reject);
    req.end(body);
  });
}

server.listen(0, 'localhost', async () => {
  const { port } = server.address();
  console.log(await request(port, 'GET'));
  console.log(await request(port, 'POST', 'payload'));
  const all = await Promise.all(Array.from({ length: 20 }, () => request(port, 'GET')));
  console.log(`20 concurrent requests, all 200: ${all.every((r) => r.startsWith('200'))}`);
  server.close();

  const w = new Worker('const { parentPort } = require("worker_threads"); parentPort.postMessage(6 * 7);', { eval: true });
  w.on('message', (m) => console.log(`worker says ${m}`));
  w.on('exit', () => {
    console.log(execFileSync('sh', ['-c', 'echo child process ok']).toString().trim());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-'));
    fs.writeFileSync(path.join(dir, 'f.txt'), 'x'.repeat(100000));
    console.log(`temp file ${fs.statSync(path.join(dir, 'f.txt')).size} bytes`);
    fs.rmSync(dir, { recursive: true });
  });
});
