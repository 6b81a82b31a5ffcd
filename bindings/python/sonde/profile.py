"""Profile arrays (sonde/profile.h): fixed-size records in a profile buffer, one copy per thread
bucket, so that threads update counters without atomics (the GTPin ``GtProfileArray`` model).

A :class:`ProfileBuffer` is a memory block (or a shared-memory file another process can map);
a :class:`ProfileArray` describes ``num_records`` records of ``record_size`` bytes in each of
``num_thread_buckets`` buckets and is allocated in a buffer. Records are read and written as
bytes; :meth:`ProfileArray.sum_u64` and :meth:`ProfileArray.add_u64` work on 64-bit counters.
"""
import ctypes

from . import _lib
from ._lib import check, lib

EMIT_SUMMED = 1
"""Flag of :meth:`ProfileArray.emit`: one PROFILER record per non-zero counter summed over the
buckets."""


class ProfileBuffer:
    """A profile buffer (``sonde_profile_buffer_create``) of ``size`` bytes.

    Use :meth:`create_shared` / :meth:`open_shared` for a buffer in a shared-memory file.
    Usable as a context manager (leaving it destroys the buffer).
    """

    def __init__(self, size, _handle=None):
        """Creates a private buffer of ``size`` bytes."""
        if _handle is None:
            _handle = ctypes.c_void_p()
            check(lib.sonde_profile_buffer_create(size, ctypes.byref(_handle)), "sonde_profile_buffer_create")
        self._pb = _handle
        self._arrays = []

    @classmethod
    def create_shared(cls, path, size):
        """Creates (truncates) the file ``path`` of ``size`` bytes and maps it as a buffer."""
        h = ctypes.c_void_p()
        check(lib.sonde_profile_buffer_create_shared(path.encode(), size, ctypes.byref(h)),
              "sonde_profile_buffer_create_shared")
        return cls(size, h)

    @classmethod
    def open_shared(cls, path):
        """Maps a shared buffer another process created with :meth:`create_shared`; its arrays are
        reached with :meth:`ProfileArray.open`."""
        h = ctypes.c_void_p()
        check(lib.sonde_profile_buffer_open_shared(path.encode(), ctypes.byref(h)), "sonde_profile_buffer_open_shared")
        return cls(None, h)

    @property
    def size(self):
        """Bytes of the buffer."""
        return lib.sonde_profile_buffer_size(self._pb)

    @property
    def num_arrays(self):
        """Arrays allocated in the buffer (listed in a shared buffer's header)."""
        n = ctypes.c_uint32()
        check(lib.sonde_profile_buffer_num_arrays(self._pb, ctypes.byref(n)), "sonde_profile_buffer_num_arrays")
        return n.value

    def destroy(self):
        """Frees the buffer (unmaps a shared one). Arrays allocated in it can no longer be read."""
        if self._pb:
            lib.sonde_profile_buffer_destroy(self._pb)
            self._pb = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    def __del__(self):
        self.destroy()


class ProfileArray:
    """A profile array (``sonde_profile_array_create``): ``num_records`` records of
    ``record_size`` bytes, in ``num_thread_buckets`` buckets (rounded up to a power of two),
    each bucket aligned to ``alignment`` (a power of two).

    Allocate it in a :class:`ProfileBuffer` with :meth:`allocate` before reading or writing.
    """

    def __init__(self, record_size, num_records, num_thread_buckets=1, alignment=64, _handle=None):
        """Describes the array; nothing is allocated yet."""
        if _handle is None:
            _handle = ctypes.c_void_p()
            check(lib.sonde_profile_array_create(record_size, num_records, num_thread_buckets, alignment,
                                                 ctypes.byref(_handle)), "sonde_profile_array_create")
        self._arr = _handle
        self._pb = None

    @classmethod
    def open(cls, buffer, index):
        """The array number ``index`` of a (shared) buffer, already allocated there."""
        h = ctypes.c_void_p()
        check(lib.sonde_profile_array_open(buffer._pb, index, ctypes.byref(h)), "sonde_profile_array_open")
        arr = cls(0, 0, _handle=h)
        arr._pb = buffer
        return arr

    def allocate(self, buffer):
        """Allocates the array in ``buffer`` (a :class:`ProfileBuffer`). The memory is not
        cleared: call :meth:`initialize` to zero it."""
        check(lib.sonde_profile_array_allocate(self._arr, buffer._pb), "sonde_profile_array_allocate")
        self._pb = buffer
        buffer._arrays.append(self)

    def initialize(self):
        """Zeroes every record of every bucket."""
        check(lib.sonde_profile_array_initialize(self._arr, self._buffer()), "sonde_profile_array_initialize")

    def _buffer(self):
        if self._pb is None or not self._pb._pb:
            raise _lib.error(18, "profile array", "the array is not allocated in a live buffer")
        return self._pb._pb

    def read(self, first_record=0, num_records=None, thread_bucket=0):
        """The bytes of records ``[first_record, first_record + num_records)`` of one bucket
        (all records from ``first_record`` when ``num_records`` is None)."""
        if num_records is None:
            num_records = self.num_records - first_record
        out = ctypes.create_string_buffer(max(num_records, 1) * self.record_size)
        check(lib.sonde_profile_array_read(self._arr, self._buffer(), out, first_record, num_records, thread_bucket),
              "sonde_profile_array_read")
        return out.raw[:num_records * self.record_size]

    def write(self, data, first_record=0, thread_bucket=0):
        """Writes whole records from ``data`` (a multiple of ``record_size`` bytes) into one
        bucket, from ``first_record`` on."""
        data = bytes(data)
        if len(data) % self.record_size != 0:
            raise ValueError("%d bytes are not whole records of %d bytes" % (len(data), self.record_size))
        check(lib.sonde_profile_array_write(self._arr, self._buffer(), data, first_record,
                                            len(data) // self.record_size, thread_bucket),
              "sonde_profile_array_write")

    def record_offset(self, record, thread_bucket=0):
        """Offset in the buffer of a record of a bucket."""
        off = ctypes.c_uint64()
        check(lib.sonde_profile_array_record_offset(self._arr, record, thread_bucket, ctypes.byref(off)),
              "sonde_profile_array_record_offset")
        return off.value

    def add_u64(self, record, field_offset, delta=1):
        """Adds ``delta`` to the 64-bit counter at ``field_offset`` of a record in the calling
        thread's bucket (a plain, non-atomic add: the bucket is this thread's)."""
        if field_offset % 8 != 0 or field_offset + 8 > self.record_size:
            raise ValueError("field_offset must be 8-byte aligned and inside the record")
        ptr = ctypes.c_void_p()
        check(lib.sonde_profile_array_thread_record(self._arr, self._buffer(), record, ctypes.byref(ptr)),
              "sonde_profile_array_thread_record")
        counter = ctypes.c_uint64.from_address(ptr.value + field_offset)
        counter.value = (counter.value + delta) & 0xFFFFFFFFFFFFFFFF

    def sum_u64(self, record, field_offset):
        """The sum over every bucket of the 64-bit counter at ``field_offset`` of ``record``."""
        s = ctypes.c_uint64()
        check(lib.sonde_profile_array_sum_u64(self._arr, self._buffer(), record, field_offset, ctypes.byref(s)),
              "sonde_profile_array_sum_u64")
        return s.value

    def snapshot(self):
        """A copy of the whole array as bytes (bucket ``b`` at ``b * chunk_size``)."""
        n = self.size
        out = ctypes.create_string_buffer(max(n, 1))
        check(lib.sonde_profile_array_snapshot(self._arr, self._buffer(), out, n), "sonde_profile_array_snapshot")
        return out.raw[:n]

    def emit(self, buffer, summed=False):
        """Emits the array's non-zero 64-bit counters as PROFILER records into ``buffer`` (a
        :class:`sonde.Buffer` of a started session), one per bucket and word, or with ``summed``
        one per word summed over the buckets; returns how many records were emitted. Decode a
        record's ``counter_id`` with :func:`counter_id_parts`."""
        n = ctypes.c_uint64()
        check(lib.sonde_profile_array_emit(self._arr, self._buffer(), buffer._id, EMIT_SUMMED if summed else 0,
                                           ctypes.byref(n)), "sonde_profile_array_emit")
        return n.value

    @property
    def size(self):
        """Bytes of the whole array (every bucket)."""
        return lib.sonde_profile_array_size(self._arr)

    @property
    def offset(self):
        """Offset of the array in its buffer (``2**64 - 1`` before allocation)."""
        return lib.sonde_profile_array_offset(self._arr)

    @property
    def is_allocated(self):
        """Whether the array is allocated in a buffer."""
        return bool(lib.sonde_profile_array_is_allocated(self._arr))

    @property
    def record_size(self):
        """Bytes per record."""
        return lib.sonde_profile_array_record_size(self._arr)

    @property
    def num_records(self):
        """Records per bucket."""
        return lib.sonde_profile_array_num_records(self._arr)

    @property
    def num_thread_buckets(self):
        """Buckets (a power of two)."""
        return lib.sonde_profile_array_num_thread_buckets(self._arr)

    @property
    def chunk_size(self):
        """Bytes between two buckets."""
        return lib.sonde_profile_array_chunk_size(self._arr)

    @property
    def thread_bucket(self):
        """The calling thread's bucket."""
        return lib.sonde_profile_array_thread_bucket(self._arr)

    def destroy(self):
        """Frees the array's description (not its records, which belong to the buffer)."""
        if self._arr:
            lib.sonde_profile_array_destroy(self._arr)
            self._arr = None

    def __del__(self):
        self.destroy()


def thread_index():
    """The calling thread's profile thread index (``sonde_profile_thread_index``)."""
    return lib.sonde_profile_thread_index()


def set_thread_index(index):
    """Sets the calling thread's profile thread index (``sonde_profile_set_thread_index``)."""
    check(lib.sonde_profile_set_thread_index(index), "sonde_profile_set_thread_index")


def counter_id_parts(counter_id):
    """``(bucket, record, word)`` of a PROFILER record's ``counter_id`` written by
    :meth:`ProfileArray.emit` (``SONDE_PROFILE_COUNTER_BUCKET/RECORD/WORD``); the bucket of a
    summed record is ``0xFFFF``."""
    return counter_id >> 48, (counter_id >> 16) & 0xFFFFFFFF, counter_id & 0xFFFF
