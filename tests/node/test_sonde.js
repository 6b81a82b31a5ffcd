'use strict';
// The Node package (bindings/node) against the library in SONDE_LIBRARY: a LOSSLESS buffer
// filled from JavaScript and polled back on the same JavaScript thread (with a delivery
// thread calling into koffi this case deadlocks: the callback waits for the event loop that
// the emitting thread holds), exact counts, order and statistics, errors by status name,
// profile arrays and trace reading.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const sonde = require('../../bindings/node');

test.before(() => sonde.initialize());
test.after(() => sonde.finalize());

function seqPayload(i) {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(i, 0);
  b.writeUInt32LE(0xc0ffee, 4);
  return b;
}

test('version is the loaded library', () => {
  assert.match(sonde.version(), /^1\.\d+\.\d+$/);
  assert.ok(sonde.isInitialized());
});

test('LOSSLESS buffer filled and polled on the JS thread: exact, in order, no deadlock', () => {
  const session = new sonde.Session('node-lossless');
  // 16 chunks of 4 KiB hold about 2000 of these records: far fewer than emitted below.
  const buffer = session.createBuffer(64 * 1024, { policy: 'lossless', chunkSize: 4096, losslessTimeoutMs: 30000 });
  session.start();
  const total = 50000;
  const got = [];
  let polls = 0;
  for (let i = 0; i < total; ++i) {
    assert.strictEqual(buffer.emit(sonde.RecordKind.USER + 1, seqPayload(i), i % 3 === 0), true);
    if (i % 500 === 499) {
      const records = buffer.poll(0);
      if (records.length) polls++;
      got.push(...records);
    }
  }
  for (let r = buffer.poll(0); r.length; r = buffer.poll(0)) {
    polls++;
    got.push(...r);
  }
  assert.strictEqual(got.length, total);
  const thread = got[0].thread;
  assert.ok(thread > 0);
  for (let i = 0; i < total; ++i) {
    const r = got[i];
    assert.strictEqual(r.kind, sonde.RecordKind.USER + 1);
    assert.strictEqual(r.thread, thread);
    assert.strictEqual(r.size, 8);
    assert.strictEqual(r.payload.readUInt32LE(0), i);
    assert.strictEqual(r.payload.readUInt32LE(4), 0xc0ffee);
    assert.strictEqual(r.timestamp !== undefined, i % 3 === 0);
  }
  const stats = buffer.stats();
  assert.strictEqual(stats.emitted, total);
  assert.strictEqual(stats.delivered, total);
  assert.strictEqual(stats.dropped, 0);
  assert.ok(stats.polls >= polls);
  assert.strictEqual(buffer.destroy(), true);
  session.destroy();
});

test('a full LOSSLESS buffer that nobody polls drops after its timeout, and reports the loss', () => {
  const session = new sonde.Session('node-full');
  const buffer = session.createBuffer(4 * 4096, { chunkSize: 4096, losslessTimeoutMs: 2 });
  session.start();
  let accepted = 0, dropped = 0;
  for (let i = 0; i < 1100; ++i) {
    if (buffer.emit(sonde.RecordKind.USER, seqPayload(i))) accepted++;
    else dropped++;
  }
  assert.ok(dropped > 0);
  const got = buffer.poll(0);
  assert.strictEqual(buffer.emit(sonde.RecordKind.USER, seqPayload(1100)), true);
  got.push(...buffer.poll(0));
  const losses = got.filter((r) => r.kind === sonde.RecordKind.LOSS);
  assert.strictEqual(losses.reduce((n, r) => n + r.lost, 0), dropped);
  assert.strictEqual(got.length - losses.length, accepted + 1);
  const stats = buffer.stats();
  assert.strictEqual(stats.emitted, 1101);
  assert.strictEqual(stats.dropped, dropped);
  assert.strictEqual(stats.emitted, stats.delivered + stats.dropped);
  session.destroy();
});

test('poll waits for records up to its timeout; stop and flush make records pollable', () => {
  const session = new sonde.Session();
  const buffer = session.createBuffer(1 << 20);
  session.start();
  const t0 = process.hrtime.bigint();
  assert.deepStrictEqual(buffer.poll(20), []);
  assert.ok(process.hrtime.bigint() - t0 >= 20000000n);
  buffer.emit(sonde.RecordKind.USER, 'one');
  buffer.flush();
  session.stop();
  assert.strictEqual(session.isActive(), false);
  const records = buffer.poll(0);
  assert.strictEqual(records.length, 1);
  assert.strictEqual(records[0].payload.toString('utf8', 0, 3), 'one');
  // Unpolled records at destroy are discarded, and destroy says so.
  session.start();
  buffer.emit(sonde.RecordKind.USER, 'two');
  assert.strictEqual(buffer.destroy(), false);
  session.destroy();
});

test('errors carry the status name', () => {
  const session = new sonde.Session();
  const buffer = session.createBuffer(1 << 20);
  session.start();
  assert.throws(() => buffer.emit(sonde.RecordKind.THREAD, Buffer.alloc(16)),
    (e) => e instanceof sonde.SondeError && e.code === 'SONDE_STATUS_ERROR_INVALID_ARGUMENT');
  assert.strictEqual(buffer.destroy(), true);
  for (const call of [() => buffer.poll(0), () => buffer.emit(sonde.RecordKind.USER, 'x'), () => buffer.stats()])
    assert.throws(call, (e) => e.code === 'SONDE_STATUS_ERROR_BUFFER_NOT_FOUND' && e.status === sonde.Status.ERROR_BUFFER_NOT_FOUND &&
      /SONDE_STATUS_ERROR_BUFFER_NOT_FOUND/.test(e.message));
  session.destroy();
  assert.throws(() => session.start(), (e) => e.code === 'SONDE_STATUS_ERROR_SESSION_NOT_FOUND');
  assert.throws(() => session.createBuffer(1 << 20), (e) => e.code === 'SONDE_STATUS_ERROR_SESSION_NOT_FOUND');
  assert.throws(() => new sonde.Session().createBuffer(100), (e) => e.code === 'SONDE_STATUS_ERROR_INVALID_ARGUMENT');
  assert.strictEqual(sonde.statusName(sonde.Status.ERROR_TIMEOUT), 'SONDE_STATUS_ERROR_TIMEOUT');
});

test('profile arrays: write, read back, per bucket', () => {
  const arr = new sonde.ProfileArray(8, 16, 3);
  assert.strictEqual(arr.recordSize, 8);
  assert.strictEqual(arr.numRecords, 16);
  assert.strictEqual(arr.numThreadBuckets, 4); // rounded up to a power of two
  assert.ok(arr.read(0, 16, 2).equals(Buffer.alloc(128)));
  const rec = Buffer.alloc(16);
  rec.writeBigUInt64LE(41n, 0);
  rec.writeBigUInt64LE(42n, 8);
  arr.write(3, rec, 2);
  assert.ok(arr.read(3, 2, 2).equals(rec));
  assert.ok(arr.read(3, 2, 1).equals(Buffer.alloc(16)));
  assert.throws(() => arr.read(0, 1, 9), (e) => e.code === 'SONDE_STATUS_ERROR_INVALID_ARGUMENT');
  arr.destroy();
});

test('trace reader: a DynamoRIO drmemtrace file', () => {
  const file = path.join(process.env.SONDE_SHARED_DATA || path.join(__dirname, '..', 'data'), 'drmemtrace',
    'reuse_offline', 'drmemtrace.small.x64.trace');
  const reader = new sonde.TraceReader(file, 'drmemtrace');
  assert.strictEqual(reader.format, 'drmemtrace');
  assert.strictEqual(reader.numShards, 1);
  let accesses = 0;
  for (let batch = reader.readShard(0, 64); batch.length > 0; batch = reader.readShard(0, 64))
    for (const m of batch) accesses += m.type !== 4 && m.type !== 5 && m.type !== 15 ? 1 : 0;
  assert.strictEqual(accesses, 229); /* 173 fetched instructions, 42 loads, 14 stores */
  reader.close();
});

test('trace reader: a lackey trace, and a missing file', () => {
  const file = path.join(process.env.SONDE_SHARED_DATA || path.join(__dirname, '..', 'data'), 'gzip-gpl3.lackey.zst');
  const reader = new sonde.TraceReader(file);
  assert.strictEqual(reader.format, 'lackey');
  assert.strictEqual(reader.numShards, 1);
  const batch = reader.read(1000);
  assert.strictEqual(batch.length, 1000);
  for (const m of batch) {
    assert.strictEqual(typeof m.address, 'bigint');
    assert.ok(m.type <= 4 && m.shard === 0);
  }
  assert.strictEqual(reader.warnings, '');
  reader.close();
  assert.throws(() => new sonde.TraceReader(path.join(__dirname, 'no-such-trace')),
    (e) => e.code === 'SONDE_STATUS_ERROR_IO' && /no-such-trace/.test(e.message));
});
