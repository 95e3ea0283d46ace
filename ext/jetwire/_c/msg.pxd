cdef class MsgBase:
    cdef object c_subject
    cdef object c_reply
    cdef object c_data
    cdef object c_headers
    cdef object c_sid
    cdef object c_client
    cdef object c_meta
    cdef public bint _ackd
