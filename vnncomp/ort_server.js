// onnxruntime-node reference server for vnncomp/ortref.py.
//
// One long-lived process answers many requests over stdin/stdout with a binary framing
// (little-endian). Every message is `u32 length` followed by `length` payload bytes.
//
// Request payload:  u8 op (1 = run) | str model_path | u32 n_inputs | n_inputs x tensor
// Response payload: u8 status (0 = ok) | u32 n_outputs | n_outputs x tensor      (ok)
//                   u8 status (1 = error) | str message                           (error)
// str    = u32 byte length | UTF-8 bytes
// tensor = str name | u8 onnx_dtype | u8 rank | rank x i64 dims | raw element bytes (C order;
//          bool as one byte per element)
//
// Model paths ending in .gz are gunzipped in memory. Sessions are cached per path (size + mtime),
// keeping the two most recent. Env ORT_NODE_MODULES overrides where onnxruntime-node lives;
// ORTREF_THREADS sets intra-op threads (default 1), ORTREF_OPT the graph optimization level.
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const modulesDir =
    process.env.ORT_NODE_MODULES || path.join(__dirname, '..', 'build', 'ort', 'node_modules');
const ort = require(path.join(modulesDir, 'onnxruntime-node'));

// ONNX TensorProto data type -> [ort type string, typed array constructor].
const DTYPES = {
  1: ['float32', Float32Array],
  2: ['uint8', Uint8Array],
  3: ['int8', Int8Array],
  4: ['uint16', Uint16Array],
  5: ['int16', Int16Array],
  6: ['int32', Int32Array],
  7: ['int64', BigInt64Array],
  9: ['bool', Uint8Array],
  10: ['float16', Uint16Array],
  11: ['float64', Float64Array],
  12: ['uint32', Uint32Array],
  13: ['uint64', BigUint64Array],
};
const CODE_OF = {};
for (const [code, [name]] of Object.entries(DTYPES)) CODE_OF[name] = Number(code);

function readExact(n) {
  const buf = Buffer.allocUnsafe(n);
  let got = 0;
  while (got < n) {
    let k;
    try {
      k = fs.readSync(0, buf, got, n - got, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      if (e.code === 'EOF') return null;
      throw e;
    }
    if (k === 0) return null;
    got += k;
  }
  return buf;
}

function writeAll(buf) {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(1, buf, off, buf.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

class Reader {
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }
  u8() {
    return this.buf.readUInt8(this.pos++);
  }
  u32() {
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i64() {
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return Number(v);
  }
  bytes(n) {
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  str() {
    return this.bytes(this.u32()).toString('utf8');
  }
  tensor() {
    const name = this.str();
    const code = this.u8();
    const rank = this.u8();
    const dims = [];
    for (let i = 0; i < rank; ++i) dims.push(this.i64());
    const entry = DTYPES[code];
    if (!entry) throw new Error(`unsupported dtype code ${code} for input '${name}'`);
    const [type, Ctor] = entry;
    const count = dims.reduce((a, b) => a * b, 1);
    const raw = this.bytes(count * Ctor.BYTES_PER_ELEMENT);
    // Copy into an aligned buffer: typed arrays need offsets that are multiples of the item size.
    const aligned = new Uint8Array(raw.length);
    aligned.set(raw);
    const data = type === 'bool' ? aligned : new Ctor(aligned.buffer, 0, count);
    return [name, new ort.Tensor(type, data, dims)];
  }
}

function str(s) {
  const b = Buffer.from(s, 'utf8');
  const n = Buffer.allocUnsafe(4);
  n.writeUInt32LE(b.length);
  return [n, b];
}

function tensorParts(name, t) {
  const code = CODE_OF[t.type];
  if (code === undefined) throw new Error(`unsupported output type ${t.type} for '${name}'`);
  const head = Buffer.allocUnsafe(2 + 8 * t.dims.length);
  head.writeUInt8(code, 0);
  head.writeUInt8(t.dims.length, 1);
  t.dims.forEach((d, i) => head.writeBigInt64LE(BigInt(d), 2 + 8 * i));
  const d = t.data;
  return [...str(name), head, Buffer.from(d.buffer, d.byteOffset, d.byteLength)];
}

function frame(parts) {
  const body = Buffer.concat(parts);
  const n = Buffer.allocUnsafe(4);
  n.writeUInt32LE(body.length);
  return Buffer.concat([n, body]);
}

const sessions = new Map();  // key -> session, insertion order = recency

async function session(modelPath) {
  const st = fs.statSync(modelPath);
  const key = `${modelPath}|${st.size}|${st.mtimeMs}`;
  if (sessions.has(key)) {
    const s = sessions.get(key);
    sessions.delete(key);
    sessions.set(key, s);
    return s;
  }
  const options = {
    intraOpNumThreads: Number(process.env.ORTREF_THREADS || 1),
    interOpNumThreads: 1,
    graphOptimizationLevel: process.env.ORTREF_OPT || 'all',
    logSeverityLevel: 3,
  };
  let source = modelPath;
  if (modelPath.endsWith('.gz')) source = zlib.gunzipSync(fs.readFileSync(modelPath));
  const s = await ort.InferenceSession.create(source, options);
  sessions.set(key, s);
  while (sessions.size > 2) {
    const oldest = sessions.keys().next().value;
    sessions.get(oldest).release();
    sessions.delete(oldest);
  }
  return s;
}

async function handle(payload) {
  const r = new Reader(payload);
  const op = r.u8();
  if (op !== 1) throw new Error(`unknown op ${op}`);
  const modelPath = r.str();
  const n = r.u32();
  const feeds = {};
  for (let i = 0; i < n; ++i) {
    const [name, t] = r.tensor();
    feeds[name] = t;
  }
  const s = await session(modelPath);
  const results = await s.run(feeds);
  const count = Buffer.allocUnsafe(4);
  count.writeUInt32LE(s.outputNames.length);
  const parts = [Buffer.from([0]), count];
  for (const name of s.outputNames) parts.push(...tensorParts(name, results[name]));
  return frame(parts);
}

function errorText(e) {
  const msg = e && e.message ? e.message : String(e);
  return msg.split('\n').filter((l) => l.trim()).join(' | ');
}

async function main() {
  for (;;) {
    const head = readExact(4);
    if (head === null) return;
    const payload = readExact(head.readUInt32LE(0));
    if (payload === null) return;
    let reply;
    try {
      reply = await handle(payload);
    } catch (e) {
      reply = frame([Buffer.from([1]), ...str(errorText(e))]);
    }
    writeAll(reply);
  }
}

main().catch((e) => {
  process.stderr.write(`ort_server: ${errorText(e)}\n`);
  process.exit(2);
});
