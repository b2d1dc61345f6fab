/*
 * adapters.crosskey._batch_reader: the compiled half of adapters.crosskey.columnar.ColumnarIntake.read.
 *
 * read_columns(events, field) reads a micro-batch of (key, int time, {field: float}) events
 * into columns in one pass. It is an optional accelerator (setup.py builds it when a C
 * compiler is present): it accepts exactly the batches the pure-Python reader accepts with
 * tuples as events, and returns None for anything else (a list as an event, a bool or
 * NumPy time, an int or NaN value, a dict with other fields, an unhashable key, ...), after
 * which the Python reader decides. Results never depend on which reader ran
 * (tests/adapters/test_batch_reader.py compares the two).
 *
 * Why C: reading Python objects is the bulk of the cross-key batch runtime's cost per event
 * in pure Python (about ten passes of map/zip/type checks and conversions); here it is one
 * pass (figures: docs/benchmarks.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* A writable buffer of n items of `size` bytes (NumPy views it with frombuffer). */
static PyObject *
new_column(Py_ssize_t n, size_t size)
{
    return PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)size);
}

PyDoc_STRVAR(read_columns_doc,
"read_columns(events, field) -> (keys, codes, times, values) or None\n\n"
"keys: the distinct keys in order of first appearance (dict equality, as dict.fromkeys);\n"
"codes: per event the index of its key in keys (native Py_ssize_t); times: native int64;\n"
"values: native float64 (bytearrays, in arrival order). None unless every event is a tuple\n"
"(key, int, {field: finite float}) whose time fits int64 and whose dict has no other field.");

static PyObject *
read_columns(PyObject *self, PyObject *args)
{
    PyObject *events, *field;
    if (!PyArg_ParseTuple(args, "OU:read_columns", &events, &field))
        return NULL;
    /* A private tuple of the events: a key's __hash__ / __eq__ (Python code) cannot resize
       or free what the loop reads. */
    PyObject *seq = PySequence_Tuple(events);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    PyObject *code_of = PyDict_New();
    PyObject *keys = PyList_New(0);
    PyObject *codes = new_column(n, sizeof(Py_ssize_t));
    PyObject *times = new_column(n, sizeof(long long));
    PyObject *values = new_column(n, sizeof(double));
    PyObject *result = NULL;
    if (code_of == NULL || keys == NULL || codes == NULL || times == NULL || values == NULL)
        goto done;
    Py_ssize_t *code_out = (Py_ssize_t *)PyByteArray_AS_STRING(codes);
    long long *time_out = (long long *)PyByteArray_AS_STRING(times);
    double *value_out = (double *)PyByteArray_AS_STRING(values);
    /* consecutive events with the same key object (input grouped by key) skip the lookup */
    PyObject *last_key = NULL;
    Py_ssize_t last_code = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *event = PyTuple_GET_ITEM(seq, i);
        if (!PyTuple_Check(event) || PyTuple_GET_SIZE(event) != 3)
            goto not_taken;
        PyObject *key = PyTuple_GET_ITEM(event, 0);
        PyObject *time = PyTuple_GET_ITEM(event, 1);
        PyObject *value = PyTuple_GET_ITEM(event, 2);
        /* exact types, as the Python reader's type(...) is checks (no bool, no subclass) */
        if (!PyLong_CheckExact(time) || !PyDict_CheckExact(value) ||
                PyDict_GET_SIZE(value) != 1)
            goto not_taken;
        int overflow = 0;
        long long t = PyLong_AsLongLongAndOverflow(time, &overflow);
        if (overflow)
            goto not_taken;
        PyObject *x = PyDict_GetItemWithError(value, field);  /* borrowed */
        if (x == NULL || !PyFloat_CheckExact(x))
            goto not_taken;  /* an error (if any) is cleared there */
        double v = PyFloat_AS_DOUBLE(x);
        if (!isfinite(v))
            goto not_taken;
        Py_ssize_t code = last_code;
        if (key != last_key) {
            PyObject *known = PyDict_GetItemWithError(code_of, key);  /* borrowed */
            if (known != NULL) {
                code = PyLong_AsSsize_t(known);
            } else {
                if (PyErr_Occurred())
                    goto not_taken;  /* unhashable, or its __eq__ raised */
                code = PyList_GET_SIZE(keys);
                PyObject *boxed = PyLong_FromSsize_t(code);
                if (boxed == NULL)
                    goto done;
                int failed = PyDict_SetItem(code_of, key, boxed);
                Py_DECREF(boxed);
                if (failed)
                    goto not_taken;
                if (PyList_Append(keys, key) < 0)
                    goto done;
            }
            last_key = key;
            last_code = code;
        }
        code_out[i] = code;
        time_out[i] = t;
        value_out[i] = v;
    }
    result = PyTuple_Pack(4, keys, codes, times, values);
    goto done;
not_taken:
    /* The Python reader runs next and reports or refuses the same event; an exception
       raised here by a key's own code is raised again there. Only running out of memory
       is passed on. */
    if (PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            goto done;
        PyErr_Clear();
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_DECREF(seq);
    Py_XDECREF(code_of);
    Py_XDECREF(keys);
    Py_XDECREF(codes);
    Py_XDECREF(times);
    Py_XDECREF(values);
    return result;
}

static PyMethodDef methods[] = {
    {"read_columns", read_columns, METH_VARARGS, read_columns_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batch_reader",
    "Compiled reader of a micro-batch into columns (see adapters/crosskey/columnar.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__batch_reader(void)
{
    return PyModule_Create(&module);
}
