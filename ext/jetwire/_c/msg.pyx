# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""``MsgBase``: the fields of a message, shared by the parser, the router and the ack mux."""
include "common.pxi"

from jetwire._c.metadata cimport parse_metadata_c

from jetwire.errors import MsgAlreadyAckedError, NatsError, NotJSMessageError, payload_type_error
from jetwire.protocol.headers import Headers

cdef object _Headers = Headers
cdef bytes _ACK = b"+ACK"
jw_set_headers_type(  # (see jw_track_if)
    Headers, Headers.__dict__.get("_d"), Headers.__dict__.get("status"), Headers.__dict__.get("description"))

cdef bytes _as_bytes(object data):
    """A message's data given by hand: a copy of a bytes-like object (``bytes(5)`` would
    be five zero bytes), or the payload ``TypeError``."""
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise payload_type_error(data) from None


# ------------------------------------------------------------------------------- MsgBase
cdef class MsgBase:
    """Base of ``jetwire.Msg``: the fields of a delivered or to-be-published message.

    The parser creates instances without calling ``__init__``; ``__init__`` is for
    users building a message by hand.

    Garbage collection: a message whose fields are all atomic (None, str, bytes, int)
    or a ``Headers`` (which only holds str) cannot be part of a reference cycle, so the
    parser untracks the messages it builds from the cycle collector (as CPython does
    for tuples and dicts of atomic values). Every setter re-tracks the message as soon
    as any other value is stored (``_client``, ``_meta``, ...), and so does the C code
    that binds ``_client`` (``Router`` for direct handlers, ``SubState._next``): a
    message waiting in a subscription's queue is not bound yet, so it stays untracked.
    """


    def __init__(self, subject="", data=b"", reply=None, headers=None, sid=0):
        self.c_subject = subject
        self.c_data = data if type(data) is bytes else _as_bytes(data)
        self.c_reply = reply
        if headers is not None and not isinstance(headers, _Headers):
            headers = _Headers(headers)
        self.c_headers = headers
        self.c_sid = sid
        self.c_client = None
        self._ackd = False
        self.c_meta = None
        jw_track_if(self, subject)
        jw_track_if(self, reply)
        jw_track_if(self, headers)
        jw_track_if(self, sid)

    @property
    def subject(self):
        return self.c_subject

    @subject.setter
    def subject(self, value):
        self.c_subject = value
        jw_track_if(self, value)

    @property
    def reply(self):
        return self.c_reply

    @reply.setter
    def reply(self, value):
        self.c_reply = value
        jw_track_if(self, value)

    @property
    def data(self):
        return self.c_data

    @data.setter
    def data(self, value):
        self.c_data = value
        jw_track_if(self, value)

    @property
    def headers(self):
        return self.c_headers

    @headers.setter
    def headers(self, value):
        self.c_headers = value
        jw_track_if(self, value)

    @property
    def sid(self):
        return self.c_sid

    @sid.setter
    def sid(self, value):
        self.c_sid = value
        jw_track_if(self, value)

    @property
    def _client(self):
        return self.c_client

    @_client.setter
    def _client(self, value):
        self.c_client = value
        jw_track_if(self, value)

    @property
    def _meta(self):
        return self.c_meta

    @_meta.setter
    def _meta(self, value):
        self.c_meta = value
        jw_track_if(self, value)

    @property
    def metadata(self):
        """JetStream metadata parsed from the ack subject, once (``NotJSMessageError`` when
        the message has none)."""
        m = self.c_meta
        if m is None:
            if not self.c_reply:
                raise NotJSMessageError("message has no JetStream ack subject")
            m = parse_metadata_c(self.c_reply)
            self.c_meta = m  # not a cycle-collected type (see metadata.pyx): no need to re-track
        return m

    # -- JetStream acks: fire and forget, through the connection that delivered it ----
    def _ack_subject(self):
        """The ack subject, after checking the message can still be acknowledged."""
        if self.c_client is None:
            raise NatsError("message is not bound to a connection")
        if self._ackd:
            raise MsgAlreadyAckedError("message was already acknowledged")
        reply = self.c_reply
        if not reply or not reply.startswith("$JS.ACK."):
            raise NotJSMessageError("message is not a JetStream message")
        return reply

    def _ack(self, payload, bint terminal):
        """Send ``payload`` to the ack subject now: what the connection's ``publish``
        returns (in ``jetwire.aio`` an awaitable). ``terminal``: no ack may follow."""
        reply = self._ack_subject()
        r = self.c_client.publish(reply, payload)
        if terminal:
            self._ackd = True
        return r

    def ack(self):
        """Acknowledge (fire and forget)."""
        return self._ack(_ACK, True)

    def __repr__(self):
        data = self.data
        shown = data[:32] + (b"..." if len(data) > 32 else b"")
        return (
            f"<{type(self).__name__} subject={self.subject!r} sid={self.sid!r} reply={self.reply!r} "
            f"data={shown!r} headers={self.headers!r}>"
        )


jw_set_msgbase(MsgBase)




# ----------------------------------------------------------------------------- FrameSink
cdef class FrameSink:
    """A subscription handler that may take its messages straight from the parser's
    buffer, before any message object is built (see the pure twin)."""

    cdef int take(self, const unsigned char* subject, Py_ssize_t sn, const unsigned char* reply, Py_ssize_t rn,
                  const unsigned char* hdr, Py_ssize_t hn, const unsigned char* data, Py_ssize_t dn) noexcept:
        return 0

    def take_frame(self, subject, reply, hdr, data):
        """Python entry to ``take`` (tests): ``subject``, ``data`` bytes; ``reply``, ``hdr``
        bytes or None. True when the frame was taken."""
        cdef const unsigned char* r = NULL
        cdef const unsigned char* h = NULL
        cdef Py_ssize_t rn = 0, hn = 0
        if type(subject) is not bytes or type(data) is not bytes or not (reply is None or type(reply) is bytes) \
                or not (hdr is None or type(hdr) is bytes):
            raise TypeError("take_frame takes bytes (reply and hdr: bytes or None)")
        if reply is not None:
            r = <const unsigned char*>PyBytes_AS_STRING(reply)
            rn = PyBytes_GET_SIZE(reply)
        if hdr is not None:
            h = <const unsigned char*>PyBytes_AS_STRING(hdr)
            hn = PyBytes_GET_SIZE(hdr)
        return self.take(<const unsigned char*>PyBytes_AS_STRING(subject), PyBytes_GET_SIZE(subject), r, rn,
                         h, hn, <const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)) != 0
