// Fan-out benchmark peer: the broadcast server the `ws` README leads to, speaking the same
// protocol subset and frame shapes as benchmarks/reference_server.py (welcome, subscribe ->
// subscribed, publish -> message to every subscriber + publish_result, ping -> pong).
//   node benchmarks/peers/node/server.js --port 8902
'use strict';
const crypto = require('crypto');
const { WebSocketServer } = require('ws');

const portArg = process.argv.indexOf('--port');
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 8902;
const subscribers = new Map(); // subject -> Set of sockets
const seqs = new Map();
const epoch = crypto.randomBytes(6).toString('hex');
let sessions = 0;

const frame = (type, fields) => JSON.stringify({ type, ...fields });

const wss = new WebSocketServer({ host: '127.0.0.1', port, perMessageDeflate: false });
wss.on('connection', (ws) => {
  const mine = new Set();
  ws.send(frame('welcome', {
    server: 'node-ws', version: '0.0.0', session: String(++sessions), keepalive: 30.0,
    max_message_size: 65536, max_subscriptions: 10000,
  }));
  ws.on('message', (data) => {
    let req;
    try { req = JSON.parse(data); } catch (e) {
      ws.send(frame('error', { code: 'invalid_frame', message: 'bad request', id: null }));
      return;
    }
    const id = req.id;
    if (req.op === 'subscribe') {
      for (const item of req.subjects) {
        const subject = item.subject;
        if (!subscribers.has(subject)) subscribers.set(subject, new Set());
        subscribers.get(subject).add(ws);
        mine.add(subject);
        ws.send(frame('subscribed', {
          subject, status: 'allow', recovery: 'none', epoch, seq: seqs.get(subject) || 0, id,
          reason: null,
        }));
      }
    } else if (req.op === 'publish') {
      const subject = req.subject;
      const seq = (seqs.get(subject) || 0) + 1;
      seqs.set(subject, seq);
      // Encoded once, sent as text to every subscriber (a string would be converted per send).
      const message = Buffer.from(frame('message', {
        kind: 'update', subject, content: req.content, fields: req.fields || {}, epoch, seq,
        qos: req.qos || 'guaranteed', retained: req.retained !== false, ts: Date.now(),
      }));
      for (const sub of subscribers.get(subject) || []) sub.send(message, { binary: false });
      ws.send(frame('publish_result', {
        result: 'ok', subject, id, epoch, seq, code: null, reason: null,
      }));
    } else if (req.op === 'ping') {
      ws.send(frame('pong', { id }));
    }
  });
  ws.on('close', () => {
    for (const subject of mine) subscribers.get(subject)?.delete(ws);
  });
});
