// Compares two ONNX models under onnxruntime-node on the centre of an input box and random points
// in it. Prints one JSON line: {"max_error": e, "points": n, "outputs": k}, where e is the largest
// max|a - b| / max(1, max|a|) over outputs and points (a from the first model).
// Usage: node ort_compare.js A.onnx[.gz] B.onnx[.gz] [--vnnlib SPEC[.gz]] [--points N] [--seed S]
// Inputs without a vnnlib box are drawn from [-1, 1]. Env ORT_NODE_MODULES: where
// onnxruntime-node lives (default: build/ort/node_modules of the repository).
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const modulesDir = process.env.ORT_NODE_MODULES ||
    path.join(__dirname, '..', '..', 'build', 'ort', 'node_modules');
const ort = require(path.join(modulesDir, 'onnxruntime-node'));

function readMaybeGz(file) {
  const data = fs.readFileSync(file);
  return file.endsWith('.gz') ? zlib.gunzipSync(data) : data;
}

// Per flat input index: [lo, hi] from every (<= X_i c) / (>= X_i c) in the spec.
function parseBox(text) {
  const box = new Map();
  const re = /\((<=|>=)\s+X_(\d+)\s+([-+0-9.eE]+)\s*\)/g;
  let m;
  while ((m = re.exec(text)) !== null) {
    const i = Number(m[2]);
    const v = Number(m[3]);
    const b = box.get(i) || [Infinity, -Infinity];
    if (m[1] === '>=') b[0] = Math.min(b[0], v);
    else b[1] = Math.max(b[1], v);
    box.set(i, b);
  }
  return box;
}

function rng(seed) {
  let s = BigInt(seed) | 1n;
  return () => {
    s ^= (s << 13n) & 0xffffffffffffffffn;
    s ^= s >> 7n;
    s ^= (s << 17n) & 0xffffffffffffffffn;
    return Number(s & 0xffffffn) / 0x1000000;
  };
}

const TYPED = {float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
               int32: Int32Array};

function makeFeeds(meta, box, point, random) {
  const feeds = {};
  let offset = 0;
  for (const m of meta) {
    const dims = m.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const Ctor = TYPED[m.type] || Float32Array;
    const data = new Ctor(n);
    for (let i = 0; i < n; ++i) {
      const b = box.get(offset + i) || [-1, 1];
      const lo = Number.isFinite(b[0]) ? b[0] : b[1] - 1;
      const hi = Number.isFinite(b[1]) ? b[1] : b[0] + 1;
      const t = point === 0 ? 0.5 : random();
      const v = lo + (hi - lo) * t;
      data[i] = Ctor === BigInt64Array ? BigInt(Math.round(v)) : v;
    }
    offset += n;
    feeds[m.name] = new ort.Tensor(m.type, data, dims);
  }
  return feeds;
}

// NaN where the reference has NaN counts as equal; NaN anywhere else as an infinite error.
function maxError(ref, got) {
  if (ref.length !== got.length) return Infinity;
  let scale = 1;
  let err = 0;
  for (let i = 0; i < ref.length; ++i) {
    const a = Number(ref[i]);
    const b = Number(got[i]);
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (Number.isNaN(a) || Number.isNaN(b)) return Infinity;
    if (Number.isFinite(a)) scale = Math.max(scale, Math.abs(a));
    if (a !== b) err = Math.max(err, Math.abs(a - b));
  }
  return err / scale;
}

async function main() {
  const args = process.argv.slice(2);
  const opt = {points: 5, seed: 1, vnnlib: null};
  const files = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--points') opt.points = Number(args[++i]);
    else if (args[i] === '--seed') opt.seed = Number(args[++i]);
    else if (args[i] === '--vnnlib') opt.vnnlib = args[++i];
    else files.push(args[i]);
  }
  if (files.length !== 2) throw new Error('usage: ort_compare.js A B [--vnnlib SPEC]');
  const so = {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, logSeverityLevel: 3};
  const a = await ort.InferenceSession.create(readMaybeGz(files[0]), so);
  const b = await ort.InferenceSession.create(readMaybeGz(files[1]), so);
  const box = opt.vnnlib ? parseBox(readMaybeGz(opt.vnnlib).toString()) : new Map();
  const random = rng(opt.seed);
  let err = 0;
  for (let p = 0; p <= opt.points; ++p) {
    const feeds = makeFeeds(b.inputMetadata, box, p, random);
    const ra = await a.run(feeds);
    const rb = await b.run(feeds);
    for (const name of a.outputNames) {
      if (!(name in rb)) throw new Error(`output ${name} missing from the second model`);
      err = Math.max(err, maxError(ra[name].data, rb[name].data));
    }
  }
  console.log(JSON.stringify({max_error: err, points: opt.points + 1, outputs: a.outputNames.length}));
}

main().catch((e) => {
  console.log(JSON.stringify({error: String(e.message || e).split('\n')[0]}));
  process.exit(1);
});
