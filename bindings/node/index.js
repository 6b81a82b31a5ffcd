'use strict';
// Sonde for Node: libsonde.so.1 through koffi, with no compiled glue.
//
// Buffers are consumed in pull mode (SONDE_BUFFER_DELIVERY_POLL): `buffer.poll(timeoutMs)`
// runs the delivery on the calling JavaScript thread and returns the decoded records. Sonde
// never calls JavaScript from one of its own threads, so a LOSSLESS buffer filled from JS and
// polled from JS cannot deadlock on the event loop (docs/node.md, docs/buffers.md).
//
// The library is looked for next to this file, then at $SONDE_LIBRARY, then by the dynamic
// loader's own search (LD_LIBRARY_PATH, RUNPATH, ldconfig).

const fs = require('fs');
const path = require('path');
const koffi = require('koffi');

// ---- statuses and constants (include/sonde/*.h) -------------------------------------------

const Status = Object.freeze({
  SUCCESS: 0, PARTIAL_INFO: 1, ERROR: 2, ERROR_NOT_INITIALIZED: 3, ERROR_ALREADY_INITIALIZED: 4,
  ERROR_INVALID_ARGUMENT: 5, ERROR_NULL_POINTER: 6, ERROR_SESSION_NOT_FOUND: 7,
  ERROR_BUFFER_NOT_FOUND: 8, ERROR_SESSION_ACTIVE: 9, ERROR_SESSION_NOT_ACTIVE: 10,
  ERROR_RECORD_CORRUPTED: 11, ERROR_CORRUPTED_SESSION_BUFFER: 12, ERROR_BUFFER_FULL: 13,
  ERROR_OUT_OF_MEMORY: 14, ERROR_BUFFER_TOO_SHORT: 15, ERROR_ILLEGAL_ID: 16,
  ERROR_NOT_SUPPORTED: 17, ERROR_PHASE_FAILURE: 18, ERROR_INCOMPATIBLE_ABI: 19, ERROR_IO: 20,
  ERROR_FORMAT: 21, ERROR_CALLBACK_FAILED: 22, ERROR_IN_CALLBACK: 23, ERROR_VERIFY_FAILED: 24,
  ERROR_TOOL: 25, ERROR_LOAD_FAILED: 26, ERROR_TIMEOUT: 27, ERROR_LIMIT: 28,
});

const RecordKind = Object.freeze({
  THREAD: 1, LOSS: 2, TRACER: 3, PROFILER: 4, MEMREF: 5, CALL: 6, USER: 0x8000, USER_MAX: 0xffff,
});

const Policy = Object.freeze({ LOSSLESS: 0, DISCARD: 1 });

const PropertyKind = Object.freeze({
  INTERVAL_FLUSH: 0, POLICY: 1, WATERMARK: 2, LOSSLESS_TIMEOUT: 3, CHUNK_SIZE: 4, DELIVERY: 5,
});

const Delivery = Object.freeze({ THREAD: 0, POLL: 1 });

const TraceFormat = Object.freeze({ AUTO: 0, SONDE: 1, LACKEY: 2, RAW64: 3, DRMEMTRACE: 4 });

const RECORD_FLAG_TIMESTAMP = 1;
const HEADER_SIZE = 8;

// ---- the library ------------------------------------------------------------------------

function openLibrary() {
  const candidates = [path.join(__dirname, 'libsonde.so.1')];
  if (process.env.SONDE_LIBRARY) candidates.push(process.env.SONDE_LIBRARY);
  const errors = [];
  for (const file of candidates) {
    if (!fs.existsSync(file)) continue;
    try {
      return { lib: koffi.load(file), path: file };
    } catch (e) {
      errors.push(`${file}: ${e.message}`);
    }
  }
  try {
    return { lib: koffi.load('libsonde.so.1'), path: 'libsonde.so.1' };
  } catch (e) {
    errors.push(`libsonde.so.1 (dynamic loader): ${e.message}`);
  }
  throw new Error(`cannot load libsonde.so.1; set SONDE_LIBRARY to its path\n  ${errors.join('\n  ')}`);
}

const { lib, path: libraryPath } = openLibrary();

const SessionId = koffi.struct('sonde_session_id_t', { handle: 'uint64_t' });
const BufferId = koffi.struct('sonde_buffer_id_t', { handle: 'uint64_t' });
const BufferProperty = koffi.struct('sonde_buffer_property_t', {
  kind: 'uint32_t', reserved: 'uint32_t', value: 'uint64_t',
});
const BufferStats = koffi.struct('sonde_buffer_stats_t', {
  struct_size: 'uint32_t', reserved: 'uint32_t', records_emitted: 'uint64_t',
  records_delivered: 'uint64_t', records_dropped: 'uint64_t', bytes_delivered: 'uint64_t',
  callbacks: 'uint64_t', callback_failures: 'uint64_t',
});
const SessionProperties = koffi.struct('sonde_session_properties_t', {
  struct_size: 'uint32_t', flags: 'uint32_t', name: 'const char *',
});
const RecordHeader = koffi.opaque('sonde_record_header_t');
const BufferCallback = koffi.proto('void sonde_buffer_callback_t(const sonde_record_header_t *begin, ' +
  'const sonde_record_header_t *end, sonde_session_id_t session, sonde_buffer_id_t buffer, void *user_data)');
const ProfileBuffer = koffi.opaque('sonde_profile_buffer_t');
const ProfileArray = koffi.opaque('sonde_profile_array_t');
const TraceReader = koffi.opaque('sonde_trace_reader_t');

const c = {
  status_name: lib.func('const char *sonde_status_name(uint32_t status)'),
  status_string: lib.func('const char *sonde_status_string(uint32_t status)'),
  get_version: lib.func('uint32_t sonde_get_version(_Out_ uint32_t *major, _Out_ uint32_t *minor, _Out_ uint32_t *patch)'),
  initialize: lib.func('uint32_t sonde_initialize(void)'),
  finalize: lib.func('uint32_t sonde_finalize(void)'),
  is_initialized: lib.func('bool sonde_is_initialized(void)'),
  get_timestamp: lib.func('uint64_t sonde_get_timestamp(void)'),
  create_session: lib.func('uint32_t sonde_create_session(const sonde_session_properties_t *props, _Out_ sonde_session_id_t *out)'),
  start_session: lib.func('uint32_t sonde_start_session(sonde_session_id_t session)'),
  stop_session: lib.func('uint32_t sonde_stop_session(sonde_session_id_t session)'),
  destroy_session: lib.func('uint32_t sonde_destroy_session(sonde_session_id_t session)'),
  session_is_active: lib.func('uint32_t sonde_session_is_active(sonde_session_id_t session, _Out_ bool *active)'),
  create_buffer: lib.func('uint32_t sonde_create_buffer(sonde_session_id_t session, uint64_t size, ' +
    'sonde_buffer_callback_t *callback, void *user_data, const sonde_buffer_property_t *properties, ' +
    'uint32_t num_properties, _Out_ sonde_buffer_id_t *out)'),
  poll_buffer: lib.func('uint32_t sonde_poll_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer, ' +
    'uint64_t timeout_ns, sonde_buffer_callback_t *callback, void *user_data)'),
  flush_data: lib.func('uint32_t sonde_flush_data(sonde_session_id_t session, sonde_buffer_id_t buffer)'),
  get_buffer_stats: lib.func('uint32_t sonde_get_buffer_stats(sonde_session_id_t session, sonde_buffer_id_t buffer, ' +
    '_Inout_ sonde_buffer_stats_t *stats)'),
  destroy_buffer: lib.func('uint32_t sonde_destroy_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer)'),
  emit: lib.func('uint32_t sonde_emit(sonde_buffer_id_t buffer, uint32_t kind, const void *payload, uint32_t size)'),
  emit_timestamped: lib.func('uint32_t sonde_emit_timestamped(sonde_buffer_id_t buffer, uint32_t kind, ' +
    'const void *payload, uint32_t size)'),
  profile_buffer_create: lib.func('uint32_t sonde_profile_buffer_create(uint64_t size, _Out_ sonde_profile_buffer_t **out)'),
  profile_buffer_destroy: lib.func('void sonde_profile_buffer_destroy(sonde_profile_buffer_t *pb)'),
  profile_array_create: lib.func('uint32_t sonde_profile_array_create(uint32_t record_size, uint32_t num_records, ' +
    'uint32_t num_thread_buckets, uint32_t alignment, _Out_ sonde_profile_array_t **out)'),
  profile_array_destroy: lib.func('void sonde_profile_array_destroy(sonde_profile_array_t *arr)'),
  profile_array_allocate: lib.func('uint32_t sonde_profile_array_allocate(sonde_profile_array_t *arr, sonde_profile_buffer_t *pb)'),
  profile_array_initialize: lib.func('uint32_t sonde_profile_array_initialize(const sonde_profile_array_t *arr, ' +
    'sonde_profile_buffer_t *pb)'),
  profile_array_read: lib.func('uint32_t sonde_profile_array_read(const sonde_profile_array_t *arr, ' +
    'const sonde_profile_buffer_t *pb, void *records, uint32_t first_record, uint32_t num_records, ' +
    'uint32_t thread_bucket)'),
  profile_array_write: lib.func('uint32_t sonde_profile_array_write(const sonde_profile_array_t *arr, ' +
    'sonde_profile_buffer_t *pb, const void *records, uint32_t first_record, uint32_t num_records, ' +
    'uint32_t thread_bucket)'),
  profile_array_record_size: lib.func('uint32_t sonde_profile_array_record_size(const sonde_profile_array_t *arr)'),
  profile_array_num_records: lib.func('uint32_t sonde_profile_array_num_records(const sonde_profile_array_t *arr)'),
  profile_array_num_thread_buckets: lib.func('uint32_t sonde_profile_array_num_thread_buckets(const sonde_profile_array_t *arr)'),
  trace_reader_open: lib.func('uint32_t sonde_trace_reader_open(const char *path, uint32_t format, void *error, ' +
    'size_t error_size, _Out_ sonde_trace_reader_t **out)'),
  trace_reader_num_shards: lib.func('uint32_t sonde_trace_reader_num_shards(const sonde_trace_reader_t *reader, ' +
    '_Out_ uint32_t *num_shards)'),
  trace_reader_format: lib.func('uint32_t sonde_trace_reader_format(const sonde_trace_reader_t *reader, _Out_ uint32_t *format)'),
  trace_reader_read_shard: lib.func('uint32_t sonde_trace_reader_read_shard(sonde_trace_reader_t *reader, uint32_t shard, ' +
    'void *memrefs, size_t max, _Out_ size_t *num_read)'),
  trace_reader_read: lib.func('uint32_t sonde_trace_reader_read(sonde_trace_reader_t *reader, void *memrefs, ' +
    'size_t max, _Out_ size_t *num_read)'),
  trace_reader_error: lib.func('const char *sonde_trace_reader_error(const sonde_trace_reader_t *reader)'),
  trace_reader_warnings: lib.func('const char *sonde_trace_reader_warnings(const sonde_trace_reader_t *reader)'),
  trace_reader_close: lib.func('uint32_t sonde_trace_reader_close(sonde_trace_reader_t *reader)'),
};

// ---- errors ---------------------------------------------------------------------------

/** A failed Sonde call: `code` is the status name, `status` its number. */
class SondeError extends Error {
  constructor(fn, status, detail) {
    const name = c.status_name(status);
    super(`${fn}: ${name}: ${detail || c.status_string(status)}`);
    this.name = 'SondeError';
    this.code = name;
    this.status = status;
  }
}

function check(fn, status, ...allowed) {
  if (status !== Status.SUCCESS && !allowed.includes(status)) throw new SondeError(fn, status);
  return status;
}

function statusName(status) {
  return c.status_name(status);
}

// ---- runtime ---------------------------------------------------------------------------

/** The loaded library's version as "major.minor.patch". */
function version() {
  const major = [0], minor = [0], patch = [0];
  c.get_version(major, minor, patch);
  return `${major[0]}.${minor[0]}.${patch[0]}`;
}

/** Starts the runtime; a second call while it runs is harmless. */
function initialize() {
  check('sonde_initialize', c.initialize(), Status.ERROR_ALREADY_INITIALIZED);
}

/** Stops the runtime: destroys every session (records nobody polled are discarded). */
function finalize() {
  check('sonde_finalize', c.finalize(), Status.ERROR_NOT_INITIALIZED);
}

function isInitialized() {
  return c.is_initialized();
}

/** Sonde's clock (ns), the one stored in timestamped records. */
function timestamp() {
  return Number(c.get_timestamp());
}

// ---- records ---------------------------------------------------------------------------

function toBuffer(payload) {
  if (payload === undefined || payload === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(payload)) return payload;
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (ArrayBuffer.isView(payload)) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (payload instanceof ArrayBuffer) return Buffer.from(payload);
  throw new TypeError('payload must be a Buffer, a typed array, an ArrayBuffer or a string');
}

// Decodes one delivered span (copied out of Sonde's memory) into `out`. Every header is
// checked as sonde_next_record does: size a multiple of 8, at least the header, inside the span.
function decodeSpan(bytes, out) {
  let thread = 0, osTid = 0;
  for (let at = 0; at < bytes.length;) {
    if (bytes.length - at < HEADER_SIZE) throw new SondeError('poll', Status.ERROR_RECORD_CORRUPTED, 'truncated header');
    const size = bytes.readUInt32LE(at);
    const kind = bytes.readUInt16LE(at + 4);
    const flags = bytes.readUInt16LE(at + 6);
    if (size < HEADER_SIZE || size % 8 !== 0 || size > bytes.length - at)
      throw new SondeError('poll', Status.ERROR_RECORD_CORRUPTED, `bad record size ${size} at offset ${at}`);
    let body = at + HEADER_SIZE;
    let timestamp;
    if (flags & RECORD_FLAG_TIMESTAMP) {
      timestamp = Number(bytes.readBigUInt64LE(body));
      body += 8;
    }
    const payload = bytes.subarray(body, at + size);
    if (kind === RecordKind.THREAD) {
      thread = Number(payload.readBigUInt64LE(0));
      osTid = Number(payload.readBigUInt64LE(8));
    } else {
      const record = { kind, size: payload.length, thread, osTid, payload };
      if (timestamp !== undefined) record.timestamp = timestamp;
      if (kind === RecordKind.LOSS) record.lost = Number(payload.readBigUInt64LE(0));
      out.push(record);
    }
    at += size;
  }
}

// One native callback for every poll: sonde_poll_buffer calls it on this thread, before it
// returns, so the records go to the poll in progress (a poll from inside it is refused).
let pollSink = null;
const pollCallback = koffi.register((begin, end) => {
  const length = Number(koffi.address(end) - koffi.address(begin));
  // Copy: the span is valid only during the call.
  const bytes = Buffer.from(new Uint8Array(koffi.view(begin, length)));
  try {
    decodeSpan(bytes, pollSink.records);
  } catch (e) {
    if (!pollSink.error) pollSink.error = e;
  }
}, koffi.pointer(BufferCallback));

// ---- sessions and buffers ----------------------------------------------------------------

/** A session: created stopped; its buffers record between start() and stop(). */
class Session {
  constructor(name) {
    const props = { struct_size: koffi.sizeof(SessionProperties), flags: 0, name: name || null };
    const out = {};
    check('sonde_create_session', c.create_session(props, out));
    this.id = out;
  }

  start() {
    check('sonde_start_session', c.start_session(this.id));
  }

  /** Stops recording; every record emitted before is then pollable. */
  stop() {
    check('sonde_stop_session', c.stop_session(this.id));
  }

  isActive() {
    const active = [false];
    check('sonde_session_is_active', c.session_is_active(this.id, active));
    return active[0];
  }

  /** Destroys the session and its buffers (records nobody polled are discarded). */
  destroy() {
    check('sonde_destroy_session', c.destroy_session(this.id));
  }

  /**
   * A pull-mode buffer of `size` bytes. Options: policy ('lossless' | 'discard'),
   * chunkSize, watermark, losslessTimeoutMs, intervalMs.
   */
  createBuffer(size, options = {}) {
    return new SondeBuffer(this, size, options);
  }
}

function policyValue(p) {
  if (p === undefined || p === 'lossless' || p === Policy.LOSSLESS) return Policy.LOSSLESS;
  if (p === 'discard' || p === Policy.DISCARD) return Policy.DISCARD;
  throw new TypeError(`unknown policy ${p}`);
}

/** A buffer in pull mode: emit() from any JS code, poll() to take the records back. */
class SondeBuffer {
  constructor(session, size, options) {
    this.session = session;
    const props = [
      { kind: PropertyKind.DELIVERY, reserved: 0, value: Delivery.POLL },
      { kind: PropertyKind.POLICY, reserved: 0, value: policyValue(options.policy) },
    ];
    if (options.chunkSize !== undefined) props.push({ kind: PropertyKind.CHUNK_SIZE, reserved: 0, value: options.chunkSize });
    if (options.watermark !== undefined) props.push({ kind: PropertyKind.WATERMARK, reserved: 0, value: options.watermark });
    if (options.losslessTimeoutMs !== undefined)
      props.push({ kind: PropertyKind.LOSSLESS_TIMEOUT, reserved: 0, value: BigInt(Math.round(options.losslessTimeoutMs * 1e6)) });
    if (options.intervalMs !== undefined)
      props.push({ kind: PropertyKind.INTERVAL_FLUSH, reserved: 0, value: BigInt(Math.round(options.intervalMs * 1e6)) });
    const out = {};
    check('sonde_create_buffer', c.create_buffer(session.id, size, null, null,
      props, props.length, out));
    this.id = out;
  }

  /**
   * Emits one record of `kind` (a RecordKind, USER.. for custom payloads). Returns true, or
   * false when the record was dropped for lack of space (counted in stats().dropped). With
   * `timestamped`, Sonde stores its clock in the record.
   */
  emit(kind, payload, timestamped = false) {
    const bytes = toBuffer(payload);
    const fn = timestamped ? c.emit_timestamped : c.emit;
    const st = fn(this.id, kind, bytes.length ? bytes : null, bytes.length);
    return check(timestamped ? 'sonde_emit_timestamped' : 'sonde_emit', st, Status.ERROR_BUFFER_FULL) === Status.SUCCESS;
  }

  /**
   * Takes the records that are ready, waiting up to `timeoutMs` for some (0: look once).
   * Returns an array of { kind, size, thread, osTid, payload, timestamp? , lost? } in
   * emission order per thread; empty when nothing was ready in time.
   */
  poll(timeoutMs = 0) {
    if (pollSink) throw new SondeError('sonde_poll_buffer', Status.ERROR_IN_CALLBACK);
    const sink = { records: [], error: null };
    pollSink = sink;
    let st;
    try {
      st = c.poll_buffer(this.session.id, this.id, BigInt(Math.max(0, Math.round(timeoutMs * 1e6))), pollCallback, null);
    } finally {
      pollSink = null;
    }
    if (sink.error) throw sink.error;
    check('sonde_poll_buffer', st, Status.ERROR_TIMEOUT);
    return sink.records;
  }

  /** Wakes pollers; every record emitted before is pollable (pull mode calls nothing). */
  flush() {
    check('sonde_flush_data', c.flush_data(this.session.id, this.id));
  }

  /** The buffer's counters: emitted, delivered, dropped, bytesDelivered, polls. */
  stats() {
    const s = { struct_size: koffi.sizeof(BufferStats), reserved: 0, records_emitted: 0, records_delivered: 0,
      records_dropped: 0, bytes_delivered: 0, callbacks: 0, callback_failures: 0 };
    check('sonde_get_buffer_stats', c.get_buffer_stats(this.session.id, this.id, s));
    return {
      emitted: Number(s.records_emitted), delivered: Number(s.records_delivered), dropped: Number(s.records_dropped),
      bytesDelivered: Number(s.bytes_delivered), polls: Number(s.callbacks),
    };
  }

  /** Destroys the buffer: true when every record had been polled, false when some were discarded. */
  destroy() {
    return check('sonde_destroy_buffer', c.destroy_buffer(this.session.id, this.id), Status.PARTIAL_INFO) === Status.SUCCESS;
  }
}

// ---- profile arrays ---------------------------------------------------------------------

/**
 * A profile array (GTPin model) in a profile buffer of its own: `numRecords` records of
 * `recordSize` bytes per thread bucket, zeroed.
 */
class ProfileArrayObject {
  constructor(recordSize, numRecords, numThreadBuckets = 1, alignment = 64) {
    const arr = [null];
    check('sonde_profile_array_create', c.profile_array_create(recordSize, numRecords, numThreadBuckets, alignment, arr));
    this.handle = arr[0];
    this.recordSize = c.profile_array_record_size(this.handle);
    this.numRecords = c.profile_array_num_records(this.handle);
    this.numThreadBuckets = c.profile_array_num_thread_buckets(this.handle);
    const pb = [null];
    const bytes = this.recordSize * this.numRecords * this.numThreadBuckets + 2 * Math.max(alignment, 64) + 4096;
    try {
      check('sonde_profile_buffer_create', c.profile_buffer_create(bytes, pb));
      this.buffer = pb[0];
      check('sonde_profile_array_allocate', c.profile_array_allocate(this.handle, this.buffer));
      check('sonde_profile_array_initialize', c.profile_array_initialize(this.handle, this.buffer));
    } catch (e) {
      this.destroy();
      throw e;
    }
  }

  /** Copies `count` records from `first` of bucket `bucket` into a new Buffer. */
  read(first = 0, count = this.numRecords - first, bucket = 0) {
    const out = Buffer.alloc(count * this.recordSize);
    check('sonde_profile_array_read', c.profile_array_read(this.handle, this.buffer, out, first, count, bucket));
    return out;
  }

  /** Writes whole records from `data` at record `first` of bucket `bucket`. */
  write(first, data, bucket = 0) {
    const bytes = toBuffer(data);
    if (bytes.length === 0 || bytes.length % this.recordSize !== 0)
      throw new SondeError('sonde_profile_array_write', Status.ERROR_INVALID_ARGUMENT, 'data is not whole records');
    check('sonde_profile_array_write',
      c.profile_array_write(this.handle, this.buffer, bytes, first, bytes.length / this.recordSize, bucket));
  }

  destroy() {
    if (this.handle) c.profile_array_destroy(this.handle);
    if (this.buffer) c.profile_buffer_destroy(this.buffer);
    this.handle = this.buffer = null;
  }
}

// ---- trace reading ------------------------------------------------------------------------

const MEMREF_SIZE = 32;

function decodeMemrefs(bytes, n) {
  const out = new Array(n);
  for (let i = 0; i < n; ++i) {
    const at = i * MEMREF_SIZE;
    out[i] = {
      address: bytes.readBigUInt64LE(at), pc: bytes.readBigUInt64LE(at + 8),
      timestamp: Number(bytes.readBigUInt64LE(at + 16)), shard: bytes.readUInt32LE(at + 24),
      type: bytes.readUInt16LE(at + 28), size: bytes.readUInt16LE(at + 30),
    };
  }
  return out;
}

/** Reads a trace (Sonde, lackey, raw64, or a DynamoRIO drmemtrace directory or file): memory references as objects, in batches. */
class TraceReaderObject {
  constructor(file, format = 'auto') {
    const formats = {
      auto: TraceFormat.AUTO, sonde: TraceFormat.SONDE, lackey: TraceFormat.LACKEY, raw64: TraceFormat.RAW64,
      drmemtrace: TraceFormat.DRMEMTRACE,
    };
    const f = typeof format === 'number' ? format : formats[format];
    if (f === undefined) throw new TypeError(`unknown trace format ${format}`);
    const error = Buffer.alloc(512);
    const out = [null];
    const st = c.trace_reader_open(file, f, error, error.length, out);
    if (st !== Status.SUCCESS) throw new SondeError('sonde_trace_reader_open', st, error.toString('utf8', 0, error.indexOf(0)));
    this.handle = out[0];
  }

  get numShards() {
    const n = [0];
    check('sonde_trace_reader_num_shards', c.trace_reader_num_shards(this.handle, n));
    return n[0];
  }

  get format() {
    const f = [0];
    check('sonde_trace_reader_format', c.trace_reader_format(this.handle, f));
    return Object.keys(TraceFormat).find((k) => TraceFormat[k] === f[0]).toLowerCase();
  }

  _read(fn, args, max) {
    const bytes = Buffer.alloc(max * MEMREF_SIZE);
    const n = [0];
    const st = fn(this.handle, ...args, bytes, max, n);
    if (st !== Status.SUCCESS) throw new SondeError('trace read', st, c.trace_reader_error(this.handle));
    return decodeMemrefs(bytes, Number(n[0]));
  }

  /** Up to `max` records of every shard, interleaved by time; [] at the end. */
  read(max = 4096) {
    return this._read(c.trace_reader_read, [], max);
  }

  /** Up to `max` records of one shard; [] at its end. */
  readShard(shard, max = 4096) {
    return this._read(c.trace_reader_read_shard, [shard], max);
  }

  /** What a recovered trace lost, one line each; '' when nothing. */
  get warnings() {
    return c.trace_reader_warnings(this.handle);
  }

  close() {
    if (this.handle) c.trace_reader_close(this.handle);
    this.handle = null;
  }
}

module.exports = {
  Status, RecordKind, Policy, Delivery, TraceFormat, SondeError,
  libraryPath, version, statusName, initialize, finalize, isInitialized, timestamp,
  Session, Buffer: SondeBuffer, ProfileArray: ProfileArrayObject, TraceReader: TraceReaderObject,
};
