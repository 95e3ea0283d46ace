from cpython.ref cimport PyObject


cdef object _decode_headers(const unsigned char* p, Py_ssize_t n, PyObject** keys)
