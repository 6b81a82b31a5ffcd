"""Sessions, buffers and records (sonde/session.h, sonde/buffer.h, sonde/record.h).

A :class:`Session` groups buffers; while it is started, records emitted into its buffers are
collected and delivered. A :class:`Buffer` either calls a Python function with every delivered
span of records, or keeps the records for iteration. Delivery runs on Sonde's delivery thread
(or on the thread that flushes, stops or destroys): the Python callback is called there, while
that thread holds the GIL. Keep it short; ctypes releases the GIL around every Sonde call, so a
producer blocked in :meth:`Buffer.emit` on a full LOSSLESS buffer does not stop delivery.
"""
import collections
import ctypes
import struct
import threading

from . import _lib
from ._lib import Id, check, lib

RECORD_KIND_THREAD = 1
"""Kind of the record that starts every span: the thread that emitted the span."""
RECORD_KIND_LOSS = 2
"""Kind of the record that counts records dropped before the next one."""
RECORD_KIND_TRACER = 3
"""Kind of a ``sonde_tracer_record_t`` payload."""
RECORD_KIND_PROFILER = 4
"""Kind of a ``sonde_profiler_record_t`` payload."""
RECORD_KIND_MEMREF = 5
"""Kind of a ``sonde_memref_record_t`` payload."""
RECORD_KIND_CALL = 6
"""Kind of a ``sonde_call_record_t`` payload."""
RECORD_KIND_USER = 0x8000
"""First custom record kind."""
RECORD_KIND_USER_MAX = 0xFFFF
"""Last custom record kind."""
RECORD_FLAG_TIMESTAMP = 1
"""Header flag: the record carries a timestamp (:meth:`Buffer.emit` with ``timestamped=True``)."""

POLICY_LOSSLESS = 0
"""Buffer policy: a producer waits for space up to the lossless timeout, then drops and counts."""
POLICY_DISCARD = 1
"""Buffer policy: a record that finds no space is dropped and counted at once."""

_PROPERTY_KINDS = {"interval_flush_ns": 0, "policy": 1, "watermark": 2, "lossless_timeout_ns": 3,
                   "chunk_size": 4}

_STANDARD_PAYLOADS = {
    RECORD_KIND_THREAD: ("<QQ", ("thread_id", "os_tid")),
    RECORD_KIND_LOSS: ("<QQQQ", ("count", "thread_id", "first_ns", "last_ns")),
    RECORD_KIND_TRACER: ("<QQQII", ("begin_ns", "end_ns", "correlation_id", "domain", "operation")),
    RECORD_KIND_PROFILER: ("<QQQ", ("counter_id", "value", "timestamp_ns")),
    RECORD_KIND_MEMREF: ("<QQII", ("address", "pc", "size", "type")),
    RECORD_KIND_CALL: ("<QQII", ("method_id", "timestamp_ns", "event", "reserved")),
}


def initialize():
    """Initialises the runtime (``sonde_initialize``) unless it is initialised already.

    Creating a :class:`Session` does this by itself.
    """
    _lib.ensure_initialized()


def finalize():
    """Stops and destroys every session, delivering every record emitted before the call
    (``sonde_finalize``). Every :class:`Session` and :class:`Buffer` becomes stale."""
    check(lib.sonde_finalize(), "sonde_finalize")
    Buffer._live.clear()


def is_initialized():
    """Whether the runtime is initialised (``sonde_is_initialized``)."""
    return bool(lib.sonde_is_initialized())


def timestamp():
    """Nanoseconds of CLOCK_MONOTONIC as Sonde timestamps records (``sonde_get_timestamp``)."""
    return lib.sonde_get_timestamp()


class Record:
    """One delivered record.

    ``kind`` is the record kind, ``flags`` the header flags, ``payload`` the payload bytes
    (including the padding to 8 bytes: a payload of 5 bytes arrives as 8),
    ``timestamp`` the time Sonde took for a timestamped record (else ``None``) and
    ``thread_id`` Sonde's number of the emitting thread (from the span's THREAD record).
    """

    __slots__ = ("kind", "flags", "payload", "timestamp", "thread_id")

    def __init__(self, kind, flags, payload, timestamp, thread_id):
        self.kind = kind
        self.flags = flags
        self.payload = payload
        self.timestamp = timestamp
        self.thread_id = thread_id

    def fields(self):
        """The payload of a standard kind as a dict (e.g. ``{"address": ..., "pc": ...}`` for
        MEMREF), or ``None`` for a custom kind."""
        layout = _STANDARD_PAYLOADS.get(self.kind)
        if layout is None:
            return None
        fmt, names = layout
        return dict(zip(names, struct.unpack_from(fmt, self.payload)))

    def __repr__(self):
        return "Record(kind=%d, thread_id=%d, payload=%d bytes%s)" % (
            self.kind, self.thread_id, len(self.payload),
            "" if self.timestamp is None else ", timestamp=%d" % self.timestamp)


BufferStats = collections.namedtuple(
    "BufferStats", "records_emitted records_delivered records_dropped bytes_delivered callbacks callback_failures")
BufferStats.__doc__ = """Counters of a buffer (``sonde_buffer_stats_t``). After a flush with no
producer running, ``records_emitted == records_delivered + records_dropped``."""


class Session:
    """A Sonde session (``sonde_create_session``), created stopped.

    Usable as a context manager: leaving the ``with`` block destroys the session, delivering
    every record emitted before. The runtime is initialised on first use.
    """

    def __init__(self, name=None):
        """Creates a stopped session with an optional ``name`` (at most 63 bytes are kept)."""
        _lib.ensure_initialized()
        props = _lib.sized(_lib.SessionProperties)
        props.name = name.encode() if name is not None else None
        self._id = Id()
        check(lib.sonde_create_session(ctypes.byref(props), ctypes.byref(self._id)), "sonde_create_session")
        self._buffers = []

    @property
    def handle(self):
        """The session id's handle (an int)."""
        return self._id.handle

    def start(self):
        """Starts the session: its buffers accept records from now on."""
        check(lib.sonde_start_session(self._id), "sonde_start_session")

    def stop(self):
        """Stops the session, then delivers every record emitted before the call. Re-raises the
        first exception a Python callback of its buffers raised."""
        check(lib.sonde_stop_session(self._id), "sonde_stop_session")
        self._raise_callback_errors()

    @property
    def active(self):
        """Whether the session is started."""
        active = ctypes.c_bool()
        check(lib.sonde_session_is_active(self._id, ctypes.byref(active)), "sonde_session_is_active")
        return active.value

    def create_buffer(self, size=1 << 20, callback=None, **properties):
        """Creates a :class:`Buffer` in this session; see :class:`Buffer` for the arguments."""
        return Buffer(self, size, callback, **properties)

    def flush(self):
        """Delivers every record emitted into any buffer of the session before the call."""
        check(lib.sonde_flush_data(self._id, Id(0)), "sonde_flush_data")
        self._raise_callback_errors()

    def destroy(self):
        """Destroys the session and its buffers, delivering every record emitted before the call.
        Calling it again does nothing."""
        if self._id.handle == 0:
            return
        check(lib.sonde_destroy_session(self._id), "sonde_destroy_session")
        self._id = Id(0)
        for b in self._buffers:
            b._destroyed()
        self._raise_callback_errors()

    def _raise_callback_errors(self):
        for b in self._buffers:
            b._raise_callback_error()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False


class Buffer:
    """A buffer of a session (``sonde_create_buffer``).

    ``callback``, when given, is called as ``callback(records)`` with the list of
    :class:`Record` of each delivered span (the records of one thread, in emission order; the
    span's THREAD record is left out, LOSS records are kept). It runs on Sonde's delivery thread,
    or on the thread that flushes, stops or destroys, holding the GIL; an exception it raises is
    kept and raised again by the next :meth:`flush`, :meth:`Session.stop` or :meth:`destroy`.
    Without a callback the buffer keeps the records, and iterating over it (``for r in buffer``,
    :meth:`records`) yields those received so far.

    Properties, as keyword arguments: ``policy`` (:data:`POLICY_LOSSLESS`, the default, or
    :data:`POLICY_DISCARD`), ``watermark`` (bytes), ``interval_flush_ns``,
    ``lossless_timeout_ns`` and ``chunk_size`` (bytes, a power of two), as in sonde/buffer.h.
    """

    _live = {}  # handle -> ctypes callback, kept alive while the C buffer may call it

    def __init__(self, session, size=1 << 20, callback=None, **properties):
        """Creates the buffer in ``session`` with ``size`` bytes of chunk memory."""
        props = []
        for key, value in properties.items():
            if key not in _PROPERTY_KINDS:
                raise TypeError("unknown buffer property %r (known: %s)" % (key, ", ".join(sorted(_PROPERTY_KINDS))))
            props.append(_lib.BufferProperty(_PROPERTY_KINDS[key], 0, value))
        array = (_lib.BufferProperty * max(len(props), 1))(*props)
        self._session = session
        self._callback = callback
        self._pending = collections.deque()
        self._error = None
        self._error_lock = threading.Lock()
        self._trampoline = _lib.BufferCallback(self._deliver)
        self._id = Id()
        check(lib.sonde_create_buffer(session._id, size, self._trampoline, None, array, len(props),
                                      ctypes.byref(self._id)), "sonde_create_buffer")
        Buffer._live[self._id.handle] = self._trampoline
        session._buffers.append(self)

    @property
    def handle(self):
        """The buffer id's handle (an int)."""
        return self._id.handle

    def _deliver(self, begin, end, session, buffer, _user):
        try:
            records = []
            thread_id = 0
            end_addr = ctypes.cast(end, ctypes.c_void_p).value
            rec = begin
            size = ctypes.c_uint32()
            nxt = ctypes.POINTER(_lib.RecordHeader)()
            ts = ctypes.c_uint64()
            while ctypes.cast(rec, ctypes.c_void_p).value != end_addr:
                head = rec.contents
                addr = lib.sonde_record_payload(rec, ctypes.byref(size))
                payload = ctypes.string_at(addr, size.value) if addr else b""
                if head.kind == RECORD_KIND_THREAD:
                    thread_id = struct.unpack_from("<Q", payload)[0]
                else:
                    stamp = None
                    if head.flags & RECORD_FLAG_TIMESTAMP and lib.sonde_record_timestamp(rec, ctypes.byref(ts)) == 0:
                        stamp = ts.value
                    records.append(Record(head.kind, head.flags, payload, stamp, thread_id))
                check(lib.sonde_next_record(rec, ctypes.byref(nxt), session, buffer), "sonde_next_record")
                rec = nxt
            if self._callback is not None:
                self._callback(records)
            else:
                self._pending.extend(records)
        except BaseException as e:  # noqa: B902 - kept for the consuming thread
            with self._error_lock:
                if self._error is None:
                    self._error = e

    def _raise_callback_error(self):
        with self._error_lock:
            e, self._error = self._error, None
        if e is not None:
            raise e

    def emit(self, kind, payload=b"", timestamped=False):
        """Emits one record of ``kind`` (a standard kind with its payload struct, or a custom kind
        from :data:`RECORD_KIND_USER`); ``payload`` is bytes-like or a ctypes structure.

        Raises :class:`SondeError` when the record is not recorded: SESSION_NOT_ACTIVE (the
        session is stopped), BUFFER_FULL (dropped and counted), ...
        """
        data = bytes(payload)
        fn = lib.sonde_emit_timestamped if timestamped else lib.sonde_emit
        check(fn(self._id, kind, data, len(data)), "sonde_emit")

    def flush(self):
        """Delivers every record emitted into this buffer before the call, then returns."""
        check(lib.sonde_flush_data(self._session._id, self._id), "sonde_flush_data")
        self._raise_callback_error()

    def stats(self):
        """The buffer's counters as a :class:`BufferStats`."""
        s = _lib.sized(_lib.BufferStatsStruct)
        check(lib.sonde_get_buffer_stats(self._session._id, self._id, ctypes.byref(s)), "sonde_get_buffer_stats")
        return BufferStats(s.records_emitted, s.records_delivered, s.records_dropped, s.bytes_delivered,
                           s.callbacks, s.callback_failures)

    def records(self):
        """Yields the records received so far and not yet yielded (buffers without a callback).
        Call :meth:`flush` first to receive everything emitted until now."""
        while True:
            try:
                yield self._pending.popleft()
            except IndexError:
                return

    def __iter__(self):
        return self.records()

    def destroy(self):
        """Delivers everything emitted before the call, then destroys the buffer. Calling it
        again does nothing."""
        if self._id.handle == 0:
            return
        check(lib.sonde_destroy_buffer(self._session._id, self._id), "sonde_destroy_buffer")
        self._destroyed()
        self._raise_callback_error()

    def _destroyed(self):
        Buffer._live.pop(self._id.handle, None)
        self._id = Id(0)
