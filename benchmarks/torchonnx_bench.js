// onnxruntime-node latency for benchmarks/torchonnx_bench.py: one thread, batch as given.
//   node torchonnx_bench.js  <  one JSON job per line  ->  one JSON line per job: {"model", "us"} or
//   {"model", "error"}
// Job: {"model": path(.onnx[.gz]), "inputs": [{"name", "type", "dims", "file"}], "min_s": seconds,
//       "max_runs": n}; "file" holds the raw little-endian elements. The session of the last model
// is kept, so repeated jobs for one model (interleaved with the torch measurements) reuse it.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const zlib = require('zlib');

const modulesDir =
    process.env.ORT_NODE_MODULES || path.join(__dirname, '..', 'build', 'ort', 'node_modules');
const ort = require(path.join(modulesDir, 'onnxruntime-node'));

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

function tensor(spec) {
  const raw = fs.readFileSync(spec.file);
  const Ctor = ARRAYS[spec.type];
  const aligned = new Uint8Array(raw.length);
  aligned.set(raw);
  const count = spec.dims.reduce((a, b) => a * b, 1);
  return new ort.Tensor(spec.type, new Ctor(aligned.buffer, 0, count), spec.dims);
}

let cached = {key: null, session: null, feeds: null};

async function prepare(job) {
  const key = JSON.stringify([job.model, job.inputs]);
  if (cached.key === key) return cached;
  let bytes = fs.readFileSync(job.model);
  if (job.model.endsWith('.gz')) bytes = zlib.gunzipSync(bytes);
  const session = await ort.InferenceSession.create(bytes, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const spec of job.inputs) feeds[spec.name] = tensor(spec);
  cached = {key, session, feeds};
  return cached;
}

async function timeJob(job) {
  const {session, feeds} = await prepare(job);
  for (let i = 0; i < 5; ++i) await session.run(feeds);
  const times = [];
  const start = process.hrtime.bigint();
  while (times.length < job.max_runs &&
         (times.length < 5 || Number(process.hrtime.bigint() - start) / 1e9 < job.min_s)) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

async function main() {
  const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  for await (const line of lines) {
    if (!line.trim()) continue;
    const job = JSON.parse(line);
    try {
      console.log(JSON.stringify({model: job.model, us: await timeJob(job)}));
    } catch (e) {
      console.log(JSON.stringify({model: job.model, error: String(e.message || e).split('\n')[0]}));
    }
  }
}

main();
