cdef class MsgBase:
    cdef object c_subject
    cdef object c_reply
    cdef object c_data
    cdef object c_headers
    cdef object c_sid
    cdef object c_client
    cdef object c_meta
    cdef public bint _ackd


cdef class FrameSink:
    cdef int take(self, const unsigned char* subject, Py_ssize_t sn, const unsigned char* reply, Py_ssize_t rn,
                  const unsigned char* hdr, Py_ssize_t hn, const unsigned char* data, Py_ssize_t dn) noexcept
