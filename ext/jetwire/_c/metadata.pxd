# JetStream ack-subject metadata (see metadata.pyx): the types, and the parser the
# compiled ``MsgBase.metadata`` calls from C.

cdef class SequencePair:
    cdef readonly object stream
    cdef readonly object consumer


cdef class MsgMetadata:
    cdef readonly object sequence
    cdef readonly object num_delivered
    cdef readonly object num_pending
    cdef readonly object timestamp_ns
    cdef readonly object stream
    cdef readonly object consumer
    cdef readonly object domain
    cdef object _ts  # the datetime, built on first use when not given


cdef MsgMetadata parse_metadata_c(object subject)

# (delivered, stream_seq, consumer_seq, timestamp_ns, pending) of an ack subject into out[0:5],
# checked as parse_metadata_fields checks it (NotJSMessageError; OverflowError past int64)
cdef int ack_numbers(object subject, long long* out) except -1
# the same from the UTF-8 bytes s[:n] (a message frame's reply, straight from the parser's buffer)
cdef int ack_numbers_raw(const char* s, Py_ssize_t n, long long* out) except -1
